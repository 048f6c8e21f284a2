"""The review's provenance: what a committed file can honestly say; the git commit on request."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import handoff_fsm
from handoff_fsm.cli import main
from handoff_fsm.review import DIAGRAMS_DIR, REVIEW_NAME, review_markdown
from handoff_fsm.review import provenance as provenance_module
from handoff_fsm.review.provenance import GitState, Provenance, git_state, provenance
from handoff_fsm.structure import describe_chart
from tests.support.git import git

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DIAGRAMS_DIR
HEX40 = re.compile(r"\b[0-9a-f]{40}\b")


def _paragraph(review: str) -> str:
    return next(line for line in review.splitlines() if line.startswith("Provenance: "))


def test_the_committed_review_names_the_version_and_the_charts_hash_but_no_commit() -> None:
    paragraph = _paragraph((COMMITTED / REVIEW_NAME).read_text(encoding="utf-8"))
    digest = hashlib.sha256((COMMITTED / "statechart.dot").read_bytes()).hexdigest()
    assert f"`handoff-fsm` {handoff_fsm.__version__};" in paragraph
    assert f"statechart DOT SHA-256 `{digest}`" in paragraph
    assert HEX40.search(paragraph) is None
    assert "a committed file cannot name the commit that contains it" in paragraph


@pytest.mark.slow
def test_a_stamp_with_git_names_the_commit_and_whether_it_is_dirty() -> None:
    model = describe_chart()
    base = provenance(model)
    assert base.git is None
    clean = Provenance(base.version, base.chart_sha256, GitState("a" * 40, dirty=False))
    dirty = Provenance(base.version, base.chart_sha256, GitState("b" * 40, dirty=True))
    assert f"Generated from git commit `{'a' * 40}`." in _paragraph(review_markdown(stamp=clean))
    assert "(dirty)" in _paragraph(review_markdown(stamp=dirty))
    assert dirty.line() == (
        f"handoff-fsm {base.version}, chart sha256 {base.chart_sha256[:12]}, git {'b' * 40} (dirty)"
    )
    # Only the stamp differs between the two reviews.
    plain, stamped = review_markdown().splitlines(), review_markdown(stamp=clean).splitlines()
    assert [a for a, b in zip(plain, stamped, strict=True) if a != b] == [
        _paragraph("\n".join(plain))
    ]


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository holding a stand-in package, which the stamp then reports on."""
    repo = tmp_path / "repo"
    package = repo / "pkg"
    package.mkdir(parents=True)
    (package / "code.py").write_text("x = 1\n")
    (repo / "README").write_text("readme\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    monkeypatch.setattr(provenance_module, "PACKAGE_DIR", package)
    return repo


@pytest.mark.slow
def test_git_state_reports_the_commit_and_only_the_packages_changes(repository: Path) -> None:
    head = git(repository, "rev-parse", "HEAD").strip()
    assert git_state() == GitState(head, dirty=False)
    (repository / "README").write_text("changed\n")  # outside the package: still clean
    assert git_state() == GitState(head, dirty=False)
    (repository / "pkg" / "new.py").write_text("y = 2\n")  # an untracked module counts
    assert git_state() == GitState(head, dirty=True)


@pytest.mark.slow
def test_without_a_repository_or_git_there_is_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provenance_module, "PACKAGE_DIR", tmp_path)
    assert git_state() is None
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert git_state() is None


@pytest.mark.requires("dot")  # the review writes the figures it links beside it
def test_the_review_command_prints_the_commit_and_writes_it_only_withgit(
    tmp_path: Path, repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = git(repository, "rev-parse", "HEAD").strip()
    plain, travelling = tmp_path / "plain.md", tmp_path / "travelling.md"
    assert main(["review", "-o", str(plain)]) == 0
    assert f", git {head})\n" in capsys.readouterr().out
    assert head not in plain.read_text(encoding="utf-8")
    assert main(["review", "--git", "-o", str(travelling)]) == 0
    assert f"Generated from git commit `{head}`." in travelling.read_text(encoding="utf-8")

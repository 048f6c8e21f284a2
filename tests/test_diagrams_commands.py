"""The `diagrams` and `review` commands write their files, or say what is missing.

A review's links are relative to it, so ``review -o DIR/REVIEW.md`` writes the files it
links beside it, wherever DIR is; without Graphviz both commands still write every file
that needs none and name, in one line, the figures they could not draw (exit status 2);
``review --git`` outside a git checkout says there is no commit instead of writing a
review without one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.review import diagram_files, review_files
from handoff_fsm.review import provenance as provenance_module
from handoff_fsm.review.files import diagram_sources
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
FIGURE_SUFFIXES = (".svg", ".png")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.requires("dot")
def test_diagrams_writes_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["diagrams", str(out)]) == 0
    expected = diagram_files()
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == expected
    assert {"seed/statechart.svg", "a976b2bf/transitions.md"} <= set(written)
    assert f"wrote {len(expected)} files" in capsys.readouterr().out


def _relative_links(markdown: str) -> set[str]:
    """Every link of ``markdown`` that names a file (not an anchor, not a URL)."""
    targets = {link.split("#", 1)[0] for link in _LINK.findall(markdown)}
    return {t for t in targets if t and "://" not in t and not t.startswith("mailto:")}


@pytest.mark.requires("dot")
def test_a_review_written_elsewhere_has_every_file_it_links_beside_it(tmp_path: Path) -> None:
    """Not only under diagrams/: the links are relative to the review, wherever it goes."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = elsewhere / "REVIEW.md"
    assert main(["review", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.encode("utf-8") == review_files()["REVIEW.md"]
    links = _relative_links(text)
    assert len(links) > 20  # the chart, its tables, every lifecycle and trace
    assert sorted(link for link in links if not (elsewhere / link).is_file()) == []
    for name, data in diagram_files().items():
        assert (elsewhere / name).read_bytes() == data, name
    assert "make diagrams" not in text  # a wheel user has no Makefile
    assert "handoff-fsm review -o FILE" in text


def test_the_review_needs_an_existing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nested" / "REVIEW.md"
    assert main(["review", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"handoff-fsm review: {out}: No such file or directory "
        f"(the folder {out.parent} does not exist)\n"
    )
    assert not out.parent.exists()


@pytest.mark.slow
def test_review_git_outside_a_checkout_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As under a wheel install: the package is in no git working tree."""
    monkeypatch.setattr(provenance_module, "PACKAGE_DIR", tmp_path)
    out = tmp_path / "REVIEW.md"
    assert main(["review", "--git", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"handoff-fsm review: --git: the package ({tmp_path}) is not in a git checkout, "
        "or git is not installed: there is no commit to write\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.slow
def test_a_review_named_like_a_file_it_links_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "transitions.md"
    out.write_text("mine\n", encoding="utf-8")
    assert main(["review", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"handoff-fsm review: {out}: the review would be overwritten by a file it links\n"
    )
    assert out.read_text(encoding="utf-8") == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["transitions.md"]


def _without_dot(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has no Graphviz (only this Python's own folder)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    return {"PATH": str(bare), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}


def _needs_graphviz(name: str) -> bool:
    return name.endswith(FIGURE_SUFFIXES)


@pytest.mark.slow
def test_diagrams_without_dot_writes_the_rest_and_names_what_it_could_not_draw(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    result = run_cli("diagrams", str(out), env=_without_dot(tmp_path), timeout=300)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("handoff-fsm diagrams: Graphviz's `dot` program was not found")
    assert "apt-get install graphviz" in line
    names = list(diagram_sources())
    drawn = [n for n in names if not _needs_graphviz(n)]
    not_drawn = [n for n in names if _needs_graphviz(n)]
    assert line.endswith(f"; not drawn: {', '.join(not_drawn)}")
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == sorted(drawn)
    assert {"statechart.dot", "statechart.mmd", "transitions.md", "seed/transitions.md"} <= set(
        written
    )
    assert result.stdout == f"wrote {len(drawn)} files to {out}/\n"


@pytest.mark.slow
def test_diagrams_without_graphviz_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz `dot`
    assert main(["diagrams", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("handoff-fsm diagrams: Graphviz's `dot` program was not found")
    assert "apt-get install graphviz" in error and "; not drawn: " in error
    assert (tmp_path / "out" / "statechart.dot").is_file()
    assert not (tmp_path / "out" / "statechart.svg").exists()

"""The reviewer's verdict and its gates (issue 22, items 1-3), on real explorations.

A change is judged as a pull request would be: the package is committed into a fresh
repository, a chart edit is made in its work tree (the issue's own unsafe edit: the
source is released once the KV is transferred, before the destination is activated),
and ``check worktree``, ``diff git:HEAD worktree --check`` and the verdict are read
off what the two packages' own checks say. Nothing here names a verdict in advance
but the edit's known consequence (``lifecycle_order``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.model import KNOWN_VIOLATIONS, HandoffOrder, Revision
from handoff_fsm.review import files as review_files_module
from handoff_fsm.review.design import explorations, review_verdicts
from handoff_fsm.review.verdict import HEADING, MAX_LINES, gate_failures
from handoff_fsm.verify import cache, exploration, verdicts
from handoff_fsm.verify.exploration import ExplorationReport
from handoff_fsm.verify.rules import Invariant
from handoff_fsm.verify.system import Property
from handoff_fsm.verify.verdicts import judge
from tests.support.git import package_repository

ROOT = Path(__file__).resolve().parents[1]
GUARD = "held.to(releasing, cond=\"In('activated')\")"
UNSAFE = "held.to(releasing, cond=\"In('transferred')\")"


@pytest.fixture(scope="module")
def unsafe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of the package as it is, with the unsafe edit in its work tree."""
    repo = package_repository(tmp_path_factory.mktemp("unsafe"))
    chart = repo / "handoff_fsm" / "chart.py"
    text = chart.read_text(encoding="utf-8")
    assert text.count(GUARD) == 1
    chart.write_text(text.replace(GUARD, UNSAFE), encoding="utf-8")
    return repo


# ---------------------------------------------------------------------- declarations


def test_every_declared_violation_names_a_judged_property() -> None:
    names = {p.value for p in Property} | {i.value for i in Invariant}
    for revision, declared in KNOWN_VIOLATIONS.items():
        assert set(declared) <= names, revision
        assert all(len(reason) > 40 for reason in declared.values())
    assert set(KNOWN_VIOLATIONS) == set(Revision)
    assert "cancel_stops_decode" in KNOWN_VIOLATIONS[Revision.SEED]


@pytest.mark.slow
def test_this_package_passes_its_gate_only_with_its_declarations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judged = review_verdicts()
    assert gate_failures(judged) == []
    seed = next(v for v in judged if v.revision == "seed")
    assert [b.name for b in seed.known()] == ["cancel_stops_decode"]
    monkeypatch.setattr(verdicts, "KNOWN_VIOLATIONS", {})
    failures = gate_failures(judged)
    assert len(failures) == 1 and "seed: cancel_stops_decode (property)" in failures[0]


@pytest.mark.slow
def test_a_review_and_the_verdicts_it_reads_explore_each_revision_and_order_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The review's figures and verdict (``explorations()``) and the sides a ``diff -o``
    judges in this process read one exploration per revision and order: its owner is
    :func:`handoff_fsm.verify.exploration.explored`. Nothing is kept on disk here, so
    every answer is computed in this process."""
    monkeypatch.setenv(cache.ENVIRONMENT, cache.OFF)
    explored = Counter[tuple[HandoffOrder, Revision]]()
    explore = exploration.explore

    def counted(order: HandoffOrder, **options: Any) -> ExplorationReport:
        explored[HandoffOrder(order), Revision(options["revision"])] += 1
        return explore(order, **options)

    monkeypatch.setattr(exploration, "explore", counted)
    exploration._explored.cache_clear()
    verdicts._answer_here.cache_clear()
    try:
        reports = explorations()
        judged = [*judge("seed", system=False), *judge("a976b2bf", system=False)]
    finally:
        exploration._explored.cache_clear()
        verdicts._answer_here.cache_clear()
    assert explored == {(order, revision): 1 for order in HandoffOrder for revision in Revision}
    assert [v.revision for v in judged] == [r.value for r in Revision]
    assert sum(len(r) for r in reports.values()) == len(explored)


@pytest.mark.slow
def test_review_check_exits_by_the_gate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The review itself is written as ever (tests/test_diagrams_commands.py); here only
    what ``--check`` adds is judged, so the writing is left out."""
    out = tmp_path / "REVIEW.md"
    monkeypatch.setattr(review_files_module, "write_review", lambda *a, **k: [out])
    assert main(["review", "-o", str(out)]) == 0
    assert main(["review", "--check", "-o", str(out)]) == 0
    assert "OK: nothing is broken beyond" in capsys.readouterr().out
    monkeypatch.setattr(verdicts, "KNOWN_VIOLATIONS", {})
    assert main(["review", "--check", "-o", str(out)]) == 1
    assert "FAILED: seed: cancel_stops_decode (property) is violated" in capsys.readouterr().out
    assert main(["review", "-o", str(out)]) == 0  # without --check it never gates


# ---------------------------------------------------------------------- the verdict


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the headings of ``markdown``."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE):
        words = heading.strip().lower()
        anchors.add("".join(c for c in words if c.isalnum() or c in " -_").replace(" ", "-"))
    return anchors


def test_the_committed_review_opens_with_its_verdict() -> None:
    review = (ROOT / "diagrams" / "REVIEW.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## .+$", review, flags=re.MULTILINE)
    assert headings[0] == f"## {HEADING}"
    start = review.index(f"## {HEADING}")
    section = review[start : review.index("\n1. [", start)].rstrip("\n").splitlines()
    assert len(section) <= MAX_LINES
    text = "\n".join(section)
    assert "**`handoff-fsm review --check` passes**" in text
    assert "`cancel_stops_decode` (known)" in text and "**(new)**" not in text
    assert "fixes `cancel_stops_decode`" in text  # the difference a976b2bf makes
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links and set(links) <= _anchors(review), set(links) - _anchors(review)


# ---------------------------------------------------------------------- a change


@pytest.mark.slow
def test_check_takes_a_side_as_diff_spells_it(
    unsafe: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A ``git:`` or ``worktree`` side's check is its own package's, in its own process
    (its output is this one's), so the captured output is the file descriptor's."""
    capsys = capfd
    monkeypatch.chdir(unsafe)
    assert main(["check", "worktree:seed", "--order", "SourceFirst", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["revisions"] == ["seed"]
    [report] = data["orders"]
    assert "lifecycle_order" in {v["invariant"] for v in report["violations"]}
    assert main(["check", "git:HEAD:seed", "--order", "SourceFirst"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("OK: every invariant holds")
    assert main(["check", "a976b2bf", "--order", "SourceFirst", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revisions"] == ["a976b2bf"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["check", "seed", "--revision", "a976b2bf"],
        ["check", "nonsense"],
        ["check", "seed@nonsense"],
        ["check", "git:no-such-revision"],
    ],
)
def test_a_side_check_cannot_do_is_a_usage_error(
    argv: list[str], unsafe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(unsafe)
    try:
        status = main(argv)
    except SystemExit as exited:
        status = exited.code  # type: ignore[assignment]
    assert status == 2


@pytest.mark.requires("dot")  # -o draws the differences
def test_diff_check_fails_the_unsafe_edit_and_names_what_it_breaks(
    unsafe: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(unsafe)
    out = tmp_path / "review"
    argv = ["diff", "git:HEAD:seed", "worktree:seed", "--check", "-o", str(out), "--losses", "0"]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "FAILED: B (seed) breaks lifecycle_order (invariant), which A keeps" in printed
    markdown = (out / "DIFF.md").read_text(encoding="utf-8")
    verdict = markdown[markdown.index(f"## {HEADING}") : markdown.index("## Differences")]
    assert len(verdict.rstrip("\n").splitlines()) <= MAX_LINES
    assert "--check` fails**" in verdict and "lifecycle_order" in verdict
    assert re.search(r"\[\d+\]\(#difference-\d+[^)]*\) breaks `lifecycle_order`", verdict)
    for link in re.findall(r"\]\(#([^)]+)\)", verdict):
        assert link in _anchors(markdown), link
    assert "With up to" not in verdict  # --losses 0: tolerances, below and tests/test_cache.py
    # The same edit, judged on its own: the work tree's gate names it too.
    [after] = judge("worktree:seed", system=False, cwd=unsafe)
    assert [f for f in gate_failures([after]) if "lifecycle_order" in f]


@pytest.mark.requires("dot")  # -o draws the differences
def test_diff_s_verdict_gives_each_side_s_tolerance_of_one_lost_message(tmp_path: Path) -> None:
    assert main(["diff", "seed", "a976b2bf", "-o", str(tmp_path)]) == 1  # they differ
    markdown = (tmp_path / "DIFF.md").read_text(encoding="utf-8")
    verdict = markdown[markdown.index(f"## {HEADING}") : markdown.index("## Differences")]
    header = "| Side | Revision | Invariants | System properties, no message lost |"
    assert f"{header} With up to 1 message lost | Declared as known |" in verdict
    rows = {
        row.split(" | ")[1]: row.split(" | ")[4] for row in verdict.splitlines() if row[:3] == "| `"
    }
    assert rows == {"`seed`": "5/6 hold; a loss breaks nothing more", "`a976b2bf`": "6/6 hold"}
    assert main(["diff", "seed", "a976b2bf", "-o", str(tmp_path), "--losses", "0"]) == 1
    assert "With up to" not in (tmp_path / "DIFF.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_diff_check_passes_a_change_that_only_fixes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "seed", "a976b2bf", "--check"]) == 0  # they differ, and that is fine
    printed = capsys.readouterr().out
    assert "OK: B breaks no invariant or system property that A keeps" in printed
    assert main(["diff", "seed", "a976b2bf"]) == 1  # plain diff keeps its exit codes
    capsys.readouterr()
    assert main(["diff", "a976b2bf", "seed", "--check", "--json"]) == 1
    check = json.loads(capsys.readouterr().out)["check"]
    assert check["ok"] is False
    assert check["failures"] == ["B (seed) breaks cancel_stops_decode (property), which A keeps"]

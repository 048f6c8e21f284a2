"""``handoff-fsm diff git:HEAD~1 git:HEAD``: a change committed to a repository, told apart.

One temporary repository holds the package as it is now (the parent commit);
each mutant of tests/test_explore_mutants.py becomes a source edit of
``handoff_fsm/coordinator.py`` committed on its own branch, which is checked out
before the diff, so ``git:HEAD~1`` is the parent and ``git:HEAD`` the mutant.
Both sides are exported with ``git archive`` and driven in subprocesses. Every
reported trace is replayed with ``python -m handoff_fsm replay`` run against an
export of each commit, and must give exactly the reported replies.

A few representative mutants run always (about ten seconds); all of them run when
``HANDOFF_FSM_SLOW_TESTS=1`` is set. Two of the sixteen cannot be told apart
through trace replay at all, and the diff says so (see
:data:`REPLAY_CANNOT_SHOW`).
"""

from __future__ import annotations

import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.diagrams.chartdiff import Status
from handoff_fsm.diagrams.diffreview import report_chart_diff
from handoff_fsm.errors import DiffError, HandoffErrorCode
from handoff_fsm.verify.diff import DiffReport, diff
from handoff_fsm.verify.diffdriver import canonical
from tests import test_explore_mutants as mutants

ROOT = Path(__file__).resolve().parents[1]
SLOW = os.environ.get("HANDOFF_FSM_SLOW_TESTS") == "1"


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose one commit, ``parent``, is the package as it is now."""
    if shutil.which("git") is None:
        pytest.fail("git is needed for git: sides")
    path = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "handoff_fsm", path / "handoff_fsm", ignore=_ignored)
    shutil.copy(ROOT / "pyproject.toml", path / "pyproject.toml")
    _git(path, "init", "--quiet", "--initial-branch=parent")
    _git(path, "add", "-A")
    _git(path, "commit", "--quiet", "-m", "parent")
    return path


def _ignored(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "__pycache__"]


def commit_change(
    repo: Path, branch: str, path: str, edit: str | None = None, *, text: str | None = None
) -> None:
    """Branch off ``parent``, append ``edit`` to ``path`` (or replace it by ``text``), commit."""
    _git(repo, "checkout", "--quiet", "-B", branch, "parent")
    target = repo / path
    if text is None:
        assert edit is not None
        text = target.read_text(encoding="utf-8") + edit
    target.write_text(text, encoding="utf-8")
    _git(repo, "commit", "--quiet", "-am", branch)


# ---------------------------------------------------------------------- mutants as source edits

_HELPERS = {
    "AcceptsConflictingOutcome": ["_LastWordJournal"],
    "RecordsBeforeValidating": ["_RecordFirstJournal"],
    "ReusesActionIds": ["_ZeroCompleteJournal"],
    "RejectsDuplicates": ["_StrictDuplicateJournal"],
    "CrashesOnUnknownAction": ["_KeyErrorJournal"],
}
_PRELUDE = """

# ---- a deliberate bug, committed by tests/test_diff_git.py ----
from typing import Any
from handoff_fsm.errors import HandoffError, HandoffErrorCode
from handoff_fsm.journal import ActionJournal
from handoff_fsm.model import (
    CancelDestination, CancelSource, Complete, DestinationReserved, HandoffAction,
    HandoffActionOutcome, HandoffCompletion, HandoffFact, HandoffOrder, IssuedHandoffAction,
    ReleaseSource, ReserveDestination, StartTransfer, TimedOut,
)
from handoff_fsm.snapshot import HandoffSnapshot
APPLIED = HandoffActionOutcome.APPLIED
_Correct = HandoffCoordinator
"""


def mutant_edit(mutant: type) -> str:
    """The mutant as code appended to coordinator.py: it becomes ``HandoffCoordinator``."""
    sources = []
    bases = [cls for cls in mutant.__mro__[1:] if cls.__module__ == mutants.__name__]
    for cls in [
        *reversed(bases),
        *(getattr(mutants, h) for h in _HELPERS.get(mutant.__name__, [])),
        mutant,
    ]:
        # A wrapper builds the correct coordinator inside: the name will be the mutant's.
        sources.append(inspect.getsource(cls).replace("HandoffCoordinator(\n", "_Correct(\n"))
    return _PRELUDE + "\n\n".join(sources) + f"\nHandoffCoordinator = {mutant.__name__}\n"


@dataclass(frozen=True)
class Case:
    mutant: type
    order: str
    length: int
    """Length of the shortest distinguishing trace, worked out by hand."""
    kind: str
    """How its kind ends."""


CASES = [
    Case(mutants.CompletesTwice, "SourceFirst", 1, "only B issues Complete"),
    Case(mutants.CrashesOnUnknownAction, "SourceFirst", 1, "B crashes (KeyError)"),
    # Failed before start: B completes, but says it is not complete.
    Case(mutants.ForgetsCompletion, "SourceFirst", 1, "the completion differs"),
    Case(
        mutants.SharesStartsAcrossInstances,
        "SourceFirst",
        3,
        "nondeterministic: B answers the same inputs differently",
    ),
    Case(mutants.DropsCancelDestination, "DestinationFirst", 2, "only A issues CancelDestination"),
    Case(
        mutants.ForgetsCancelDestination, "DestinationFirst", 2, "only A issues CancelDestination"
    ),
    # Destination first, the reservation assumed on Accepted submits the prefill at once.
    Case(
        mutants.StartsTransferBeforeReserved,
        "DestinationFirst",
        2,
        "reservation_accepted: A issues nothing, B acts",
    ),
    Case(
        mutants.AcceptsConflictingOutcome,
        "SourceFirst",
        3,
        "A rejects (conflicting_outcome), B accepts",
    ),
    Case(
        mutants.RecordsBeforeValidating,
        "SourceFirst",
        3,
        "A accepts, B rejects (conflicting_outcome)",
    ),
    Case(
        mutants.RejectsDuplicates,
        "SourceFirst",
        3,
        "A issues nothing / B rejects it (conflicting_outcome)",
    ),
    Case(mutants.ReusesActionIds, "SourceFirst", 3, "action ids differ"),
    Case(
        mutants.IgnoresTimeoutInFlight,
        "SourceFirst",
        7,
        "A issues CancelSource, CancelDestination / B issues nothing",
    ),
    Case(
        mutants.SucceedsBeforeRelease,
        "SourceFirst",
        8,
        "A issues ReleaseSource / B issues Complete; complete (Success)",
    ),
    Case(
        mutants.CancelsInsteadOfReleasing,
        "SourceFirst",
        8,
        "A issues ReleaseSource / B issues CancelSource",
    ),
]

REPLAY_CANNOT_SHOW = {
    # Replay answers every line for a completed coordinator itself (a tombstone):
    # start() after completion never reaches the coordinator.
    mutants.CompletesAgainOnStart: "start() after completion",
    # Replay writes the coordinator's own handoff id into every action it prints.
    mutants.TransfersForAnotherHandoff: "the handoff id inside StartTransfer",
}

ALWAYS = {
    # Run in every test run; the others only with HANDOFF_FSM_SLOW_TESTS=1 (they are not
    # collected otherwise, so plain runs and `make test` skip nothing).
    mutants.CompletesTwice,  # a wrapper around the real coordinator
    mutants.SharesStartsAcrossInstances,  # state kept between coordinators
    mutants.AcceptsConflictingOutcome,  # a subclass with another journal
    mutants.IgnoresTimeoutInFlight,  # a long shortest trace
}


REVISION_MUTANTS = {
    # The mutants of the a976b2bf transitions (added with the revisions): they are told
    # apart by `check --revision` (test_explore_mutants.py); committing them as git
    # changes for `diff git:HEAD~1 git:HEAD` is not done yet.
    mutants.NeverReopens,
    mutants.CancelsSourceOnReopen,
    mutants.CompletesReopenAtOnce,
    mutants.SchedulesAnyDelay,
    mutants.ReopensUnderSeed,
    mutants.A976b2bfPassedOffAsSeed,
}


def test_every_mutant_is_covered() -> None:
    listed = {case.mutant for case in CASES} | set(REPLAY_CANNOT_SHOW)
    defined = {
        cls
        for _, cls in inspect.getmembers(mutants, inspect.isclass)
        if cls.__module__ == mutants.__name__
        and hasattr(cls, "start")
        and not cls.__name__.startswith(("_", "Bent"))
    } - REVISION_MUTANTS
    assert listed == defined
    assert len(listed) == 16


def export(repo: Path, commit: str, into: Path) -> Path:
    """The files of ``commit``, for replaying a trace against them."""
    archive = subprocess.run(
        ["git", "archive", commit], cwd=repo, capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def replay_at(root: Path, trace: tuple[str, ...]) -> list[dict[str, Any]]:
    """``python -m handoff_fsm replay -`` of that checkout, as a maintainer would run it."""
    result = subprocess.run(
        [sys.executable, "-m", "handoff_fsm", "replay", "-"],
        input="".join(f"{line}\n" for line in trace),
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    if result.returncode != 0:  # replay stopped with a traceback on the next line
        replies.append({"crash": result.stderr.strip().splitlines()[-1]})
    return replies


def assert_replays(report: DiffReport, repo: Path, tmp_path: Path) -> None:
    """Every trace, replayed at each commit, gives the reported replies; alike up to the last."""
    before = export(repo, "HEAD~1", tmp_path / "before")
    after = export(repo, "HEAD", tmp_path / "after")
    for difference in report.differences:
        replies_a = replay_at(before, difference.trace)
        replies_b = replay_at(after, difference.trace)
        for replies, expected in (
            (replies_a, difference.replies_a),
            (replies_b, difference.replies_b),
        ):
            if "crash" in expected[-1]:
                assert replies[:-1] == list(expected[:-1])
                assert replies[-1]["crash"] == expected[-1]["crash"]
            else:
                assert replies == list(expected)
        texts_a = [canonical(json.dumps(r)) for r in difference.replies_a]
        texts_b = [canonical(json.dumps(r)) for r in difference.replies_b]
        assert texts_a[:-1] == texts_b[:-1]
        assert texts_a[-1] != texts_b[-1]


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if SLOW or case.mutant in ALWAYS],
    ids=lambda case: case.mutant.__name__,
)
def test_a_committed_mutant_is_told_apart_by_a_shortest_trace(
    case: Case, repo: Path, tmp_path: Path
) -> None:
    commit_change(
        repo, case.mutant.__name__, "handoff_fsm/coordinator.py", mutant_edit(case.mutant)
    )
    report = diff("git:HEAD~1", "git:HEAD", cwd=repo)
    assert not report.equivalent
    first = report.differences[0]
    assert (first.order.value, first.inputs) == (case.order, case.length), first.jsonl()
    assert first.kind.endswith(case.kind), first.kind
    assert_replays(report, repo, tmp_path)


@pytest.mark.parametrize(
    "mutant",
    [m for m in REPLAY_CANNOT_SHOW if SLOW or m is mutants.CompletesAgainOnStart],
    ids=lambda m: m.__name__,
)
def test_a_mutant_replay_cannot_show_is_equivalent_through_replay(mutant: type, repo: Path) -> None:
    commit_change(repo, mutant.__name__, "handoff_fsm/coordinator.py", mutant_edit(mutant))
    assert diff("git:HEAD~1", "git:HEAD", cwd=repo).equivalent


# ---------------------------------------------------------------------- a chart edit

_REMOVED = '            source_idle.to(submitting, event="start", cond="source_first")\n'
_KEPT = '            submitting.to(submitted, event="prefill_submitted")\n'
_ADDED = '            submitted.to.itself(event="prefill_submitted", internal=True)\n'


def test_a_chart_with_one_added_and_one_removed_transition(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Source first, start no longer submits the prefill; a repeated acknowledgement of
    # the submission gets its own (empty) transition.
    _git(repo, "checkout", "--quiet", "parent")
    text = (repo / "handoff_fsm" / "chart.py").read_text(encoding="utf-8")
    assert _REMOVED in text
    assert _KEPT in text
    text = text.replace(_REMOVED, "").replace(_KEPT, _KEPT + _ADDED)
    commit_change(repo, "chart-edit", "handoff_fsm/chart.py", text=text)
    report = diff("git:HEAD~1", "git:HEAD", cwd=repo, charts=True)
    structure = report_chart_diff(report)
    assert structure is not None
    assert [str(e) for e in structure.of_edges(Status.ADDED)] == [
        "submitted → submitted on prefill_submitted"
    ]
    assert [str(e) for e in structure.of_edges(Status.REMOVED)] == [
        "source_idle → submitting on start [source_first]"
    ]
    assert structure.of_edges(Status.CHANGED) == ()
    assert all(s.status is Status.SAME for s in structure.states)
    assert not report.equivalent
    assert_replays(report, repo, tmp_path)
    # The command line says the same, with exit status 1, and writes the review.
    monkeypatch.chdir(repo)
    assert main(["diff", "git:HEAD~1", "git:HEAD", "-o", str(tmp_path / "review")]) == 1
    markdown = (tmp_path / "review" / "DIFF.md").read_text()
    assert "| transition | added | `submitted → submitted on prefill_submitted` |" in markdown
    assert "| transition | removed | `source_idle → submitting on start [source_first]` |" in (
        markdown
    )
    # Behaviour: source first, start issues nothing any more.
    first = report.differences[0]
    assert (first.order.value, first.inputs) == ("SourceFirst", 1)
    assert first.kind == "start: A issues SubmitPrefill / B issues nothing"


def test_review_against_a_revision_diffs_the_working_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An uncommitted edit: source first, start no longer submits the prefill.
    _git(repo, "checkout", "--quiet", "parent")
    chart = repo / "handoff_fsm" / "chart.py"
    original = chart.read_text(encoding="utf-8")
    chart.write_text(original.replace(_REMOVED, ""), encoding="utf-8")
    monkeypatch.chdir(repo)
    try:
        assert main(["review", "-o", str(tmp_path / "REVIEW.md"), "--against", "git:HEAD"]) == 0
    finally:
        chart.write_text(original, encoding="utf-8")
    review = (tmp_path / "REVIEW.md").read_text(encoding="utf-8")
    section = review[review.index("## 8. Revisions") :]
    assert "The working tree against `git:HEAD`" in section
    assert "**They differ in 1 way**" in section
    assert "start: A issues SubmitPrefill / B issues nothing" in section
    assert "| transition | removed | `source_idle → submitting on start [source_first]` |" in (
        section
    )
    # Without --against the section holds the revisions only.
    monkeypatch.chdir(ROOT)
    assert "The working tree against" not in (ROOT / "diagrams" / "REVIEW.md").read_text()


def test_a_revision_without_the_package_is_a_coded_error(tmp_path: Path) -> None:
    _git(tmp_path, "init", "--quiet")
    (tmp_path / "README.md").write_text("nothing here\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "--quiet", "-m", "no package")
    with pytest.raises(DiffError) as raised:
        diff("git:HEAD", "seed", cwd=tmp_path)
    assert raised.value.code is HandoffErrorCode.UNKNOWN_DIFF_SIDE
    assert "holds no handoff_fsm package" in str(raised.value)


def test_a_side_whose_package_does_not_load_is_a_coded_error(repo: Path) -> None:
    commit_change(
        repo, "broken", "handoff_fsm/__init__.py", '\nraise RuntimeError("broken on purpose")\n'
    )
    with pytest.raises(DiffError) as raised:
        diff("git:HEAD~1", "git:HEAD", cwd=repo)
    assert raised.value.code is HandoffErrorCode.DIFF_SIDE_FAILED
    message = str(raised.value)
    assert message.startswith("side git:HEAD (commit ")
    assert "RuntimeError: broken on purpose" in message

"""``handoff-fsm diff git:HEAD~1 git:HEAD``: a change committed to a repository, told apart.

One temporary repository holds the package as it is now (the parent commit);
each mutant of tests/test_explore_mutants.py becomes a source edit of
``handoff_fsm/coordinator.py`` committed on its own branch, which is checked out
before the diff, so ``git:HEAD~1`` is the parent and ``git:HEAD`` the mutant.
Both sides are exported with ``git archive``; the mutant is driven in a subprocess,
the parent (the running package, file for file) in this process. Every
reported trace is replayed with ``python -m handoff_fsm replay`` run against an
export of each commit, and must give exactly the reported replies.

Four representative mutants run always (a wrapper, state kept between
coordinators, a subclass with another journal, both sides on a976b2bf); all 22
run when ``HANDOFF_FSM_SLOW_TESTS=1`` is set (each takes a few CPU seconds:
two exports, four processes). Three of them are seen only because replay asks
a completed coordinator about every later line and prints each action with the
handoff id it carries.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.review.diffreview import report_chart_diff
from handoff_fsm.structure.chartdiff import Status, chart_diff
from handoff_fsm.verify import cache, verdicts
from handoff_fsm.verify.cache import is_running_package
from handoff_fsm.verify.diff import sides
from handoff_fsm.verify.diff.behaviour import DiffReport, diff
from handoff_fsm.verify.diff.driver import canonical
from handoff_fsm.verify.diff.errors import DiffError, DiffErrorCode
from handoff_fsm.verify.diff.sides import isolated_command
from tests import test_explore_mutants as mutants
from tests.support.cli import run_cli
from tests.support.git import export, git, package_repository

ROOT = Path(__file__).resolve().parents[1]
SLOW = os.environ.get("HANDOFF_FSM_SLOW_TESTS") == "1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose one commit, ``parent``, is the package as it is now."""
    return package_repository(tmp_path_factory.mktemp("repo"), branch="parent", message="parent")


def commit_change(
    repo: Path, branch: str, path: str, edit: str | None = None, *, text: str | None = None
) -> None:
    """Branch off ``parent``, append ``edit`` to ``path`` (or replace it by ``text``), commit."""
    git(repo, "checkout", "--quiet", "-B", branch, "parent")
    target = repo / path
    if text is None:
        assert edit is not None
        text = target.read_text(encoding="utf-8") + edit
    target.write_text(text, encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", branch)


# ---------------------------------------------------------------------- mutants as source edits

_PRELUDE = """

# ---- a deliberate bug, committed by tests/test_diff_git.py ----
from typing import Any
from uuid import UUID

from handoff_fsm.errors import *
from handoff_fsm.journal import ActionJournal
from handoff_fsm.model import *
from handoff_fsm.run import HandoffRun
from handoff_fsm.snapshot import HandoffSnapshot

_Correct = HandoffCoordinator
"""
"""Appended to coordinator.py before the mutant: the names its source uses, from the modules
that define them (``handoff_fsm`` itself is still being imported at that point)."""


def _definitions() -> dict[str, ast.stmt]:
    """The mutant module's top-level classes, functions and constants, by name."""
    tree = ast.parse(Path(mutants.__file__).read_text(encoding="utf-8"))
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


def mutant_edit(mutant: type) -> str:
    """The mutant, and what of the mutant module it uses, as code appended to coordinator.py.

    The mutant becomes ``HandoffCoordinator``; a wrapper that builds the correct
    coordinator inside calls it ``_Correct``.
    """
    source = Path(mutants.__file__).read_text(encoding="utf-8")
    definitions = _definitions()
    needed: set[str] = set()
    pending = [mutant.__name__]
    while pending:
        name = pending.pop()
        if name in needed or name not in definitions:
            continue
        needed.add(name)
        node = definitions[name]
        pending += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    needed -= {"HandoffCoordinator"}
    chosen = sorted(
        {id(definitions[n]): definitions[n] for n in needed}.values(), key=lambda n: n.lineno
    )
    parts = [ast.get_source_segment(source, node) or "" for node in chosen]
    code = "\n\n".join(part.replace("HandoffCoordinator(\n", "_Correct(\n") for part in parts)
    return _PRELUDE + code + f"\n\nHandoffCoordinator = {mutant.__name__}\n"


@dataclass(frozen=True)
class Case:
    mutant: type
    order: str
    length: int
    """Length of the shortest distinguishing trace, worked out by hand."""
    kind: str
    """How its kind ends."""
    revision: str | None = None
    """The protocol revision both sides run (``None``: each commit's default, the seed)."""

    @property
    def sides(self) -> tuple[str, str]:
        suffix = f":{self.revision}" if self.revision is not None else ""
        return f"git:HEAD~1{suffix}", f"git:HEAD{suffix}"


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
    # a976b2bf's own: both sides run that revision. A successful handoff takes nine
    # inputs; the terminal fact after it is the tenth.
    Case(
        mutants.NeverReopens,
        "SourceFirst",
        10,
        "failed | timed_out | canceled: A issues CancelDestination; not complete (completion "
        "Success) / B issues nothing; complete (Success)",
        revision="a976b2bf",
    ),
    Case(
        mutants.CancelsSourceOnReopen,
        "SourceFirst",
        10,
        "B issues CancelDestination, CancelSource; not complete (completion Success)",
        revision="a976b2bf",
    ),
    Case(
        mutants.CompletesReopenAtOnce,
        "SourceFirst",
        10,
        "B issues CancelDestination, Complete; complete (Canceled)",
        revision="a976b2bf",
    ),
    # Submitted, SourceHeld (destination_missing), Accepted, then the reservation whose
    # scheduled delay is infinite.
    Case(
        mutants.SchedulesAnyDelay,
        "SourceFirst",
        5,
        "destination_reserved | source_held: A rejects it (invalid_transfer_delay) / B issues "
        "StartTransfer",
        revision="a976b2bf",
    ),
    # Replay asks a completed coordinator about every later line: Failed completes the
    # handoff before it starts, and start() after that completes it once more.
    Case(mutants.CompletesAgainOnStart, "SourceFirst", 2, "start: only B issues Complete"),
    # Replay prints each action with the handoff id it carries; StartTransfer is the
    # fifth input's answer (start, Submitted, SourceHeld, Accepted, DestinationReserved).
    Case(
        mutants.TransfersForAnotherHandoff,
        "SourceFirst",
        5,
        "the handoff ids inside the actions differ (each issues StartTransfer)",
    ),
    # A seed handoff that succeeded (nine inputs) is final, and replay still gives it the
    # terminal fact: the tenth input.
    Case(
        mutants.ReopensUnderSeed,
        "SourceFirst",
        10,
        "A issues nothing; complete (Success) / B issues CancelDestination; complete (Success)",
    ),
    # Says seed, runs a976b2bf: both of a976b2bf's changes, the shorter first.
    Case(
        mutants.A976b2bfPassedOffAsSeed,
        "SourceFirst",
        5,
        "destination_reserved | source_held: A issues StartTransfer / B rejects it "
        "(invalid_transfer_delay)",
    ),
]


ALWAYS = {
    # Run in every test run; the others only with HANDOFF_FSM_SLOW_TESTS=1 (they are not
    # collected otherwise, so plain runs and `make test` skip nothing).
    mutants.CompletesTwice,  # a wrapper around the real coordinator
    mutants.SharesStartsAcrossInstances,  # state kept between coordinators
    mutants.AcceptsConflictingOutcome,  # a subclass with another journal
    mutants.SchedulesAnyDelay,  # both sides on revision a976b2bf
}


def test_every_mutant_is_covered() -> None:
    listed = {case.mutant for case in CASES}
    defined = {
        cls
        for _, cls in inspect.getmembers(mutants, inspect.isclass)
        if cls.__module__ == mutants.__name__
        and hasattr(cls, "start")
        and not cls.__name__.startswith(("_", "Bent"))
    }
    assert listed == defined
    assert len(listed) == 22


def replay_at(
    root: Path, trace: tuple[str, ...], revision: str | None = None
) -> list[dict[str, Any]]:
    """``python -m handoff_fsm replay -`` of that checkout, as a maintainer would run it."""
    options = ["--revision", revision] if revision is not None else []
    result = run_cli(
        "replay",
        *options,
        "-",
        input="".join(f"{line}\n" for line in trace),
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    if result.returncode != 0:  # replay stopped with a traceback on the next line
        replies.append({"crash": result.stderr.strip().splitlines()[-1]})
    return replies


def assert_replays(
    report: DiffReport, repo: Path, tmp_path: Path, revision: str | None = None
) -> None:
    """Every trace, replayed at each commit, gives the reported replies; alike up to the last."""
    before = export(repo, "HEAD~1", tmp_path / "before")
    after = export(repo, "HEAD", tmp_path / "after")
    for difference in report.differences:
        replies_a = replay_at(before, difference.trace, revision)
        replies_b = replay_at(after, difference.trace, revision)
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


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [case for case in CASES if SLOW or case.mutant in ALWAYS],
    ids=lambda case: case.mutant.__name__ + (f"-{case.revision}" if case.revision else ""),
)
def test_a_committed_mutant_is_told_apart_by_a_shortest_trace(
    case: Case, repo: Path, tmp_path: Path
) -> None:
    commit_change(
        repo, case.mutant.__name__, "handoff_fsm/coordinator.py", mutant_edit(case.mutant)
    )
    report = diff(*case.sides, cwd=repo)
    assert not report.equivalent
    first = report.differences[0]
    assert (first.order.value, first.inputs) == (case.order, case.length), first.jsonl()
    assert first.kind.endswith(case.kind), first.kind
    if case.mutant is mutants.SharesStartsAcrossInstances:
        # Two coordinators in one replay: the second is given the same inputs.
        assert [json.loads(line)["op"] for line in first.trace] == ["new", "start", "new", "start"]
        assert report.stopped is not None
        assert "answered the same inputs differently" in report.stopped
    else:
        assert report.exhausted
    assert_replays(report, repo, tmp_path, case.revision)


# ---------------------------------------------------------------------- a chart edit

_REMOVED = '            source_idle.to(submitting, event="start", cond="source_first")\n'
_KEPT = '            submitting.to(submitted, event="prefill_submitted")\n'
_ADDED = '            submitted.to.itself(event="prefill_submitted", internal=True)\n'


@pytest.mark.slow
def test_a_chart_with_one_added_and_one_removed_transition(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Source first, start no longer submits the prefill; a repeated acknowledgement of
    # the submission gets its own (empty) transition.
    git(repo, "checkout", "--quiet", "parent")
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
    # --losses 0: the verdict's tolerances are tested in tests/test_gate.py
    argv = ["diff", "git:HEAD~1", "git:HEAD", "-o", str(tmp_path / "review"), "--losses", "0"]
    assert main(argv) == 1
    markdown = (tmp_path / "review" / "DIFF.md").read_text()
    assert "| transition | added | `submitted → submitted on prefill_submitted` |" in markdown
    assert "| transition | removed | `source_idle → submitting on start [source_first]` |" in (
        markdown
    )
    # Behaviour: source first, start issues nothing any more.
    first = report.differences[0]
    assert (first.order.value, first.inputs) == ("SourceFirst", 1)
    assert first.kind == "start: A issues SubmitPrefill / B issues nothing"


@pytest.mark.requires("dot")  # the review writes the figures it links beside it
def test_review_against_a_revision_diffs_the_working_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An uncommitted edit: source first, start no longer submits the prefill.
    git(repo, "checkout", "--quiet", "parent")
    chart = repo / "handoff_fsm" / "chart.py"
    original = chart.read_text(encoding="utf-8")
    chart.write_text(original.replace(_REMOVED, ""), encoding="utf-8")
    monkeypatch.chdir(repo)
    try:
        argv = ["review", "-o", str(tmp_path / "REVIEW.md"), "--against", "git:HEAD"]
        assert main([*argv, "--losses", "0"]) == 0  # tolerances: tests/test_gate.py
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


@pytest.mark.slow
def test_a_side_that_is_the_running_package_file_for_file_is_answered_here(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``git:`` side whose package holds exactly the running package's files can only
    answer as this process does, so its behaviour is driven and its verdict judged here;
    one byte edited, and it is a process of its own again."""
    git(repo, "checkout", "--quiet", "parent")
    assert is_running_package(export(repo, "HEAD", tmp_path / "parent"))
    started: list[str] = []
    start = sides.SubprocessSide.__init__

    def counted(self: sides.SubprocessSide, spec: sides.SideSpec, *args: Any, **kw: Any) -> None:
        started.append(spec.text)
        start(self, spec, *args, **kw)

    monkeypatch.setattr(sides.SubprocessSide, "__init__", counted)
    assert diff("git:HEAD", "seed", cwd=repo).equivalent
    assert started == []
    monkeypatch.setenv(cache.ENVIRONMENT, cache.OFF)  # else a kept answer hides who answers
    asked: list[object] = []
    run = verdicts._run

    def ran(*given: Any) -> dict[str, Any]:
        asked.append(given)
        return run(*given)

    monkeypatch.setattr(verdicts, "_run", ran)
    here = verdicts.judge("seed", system=False)
    [side] = verdicts.judge("git:HEAD:seed", system=False, cwd=repo)
    assert asked == [] and here == (replace(side, side="seed"),)

    commit_change(repo, "one-byte", "handoff_fsm/errors.py", "\n")
    assert not is_running_package(export(repo, "HEAD", tmp_path / "edited"))
    assert diff("git:HEAD~1", "git:HEAD", cwd=repo).equivalent
    assert started and set(started) == {"git:HEAD"}  # the edited side (and its spare) only
    [edited] = verdicts.judge("git:HEAD:seed", system=False, cwd=repo)
    assert len(asked) == 1 and replace(edited, side="seed") == here[0]


@pytest.mark.slow
def test_a_revision_without_the_package_is_a_coded_error(tmp_path: Path) -> None:
    git(tmp_path, "init", "--quiet")
    (tmp_path / "README.md").write_text("nothing here\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "--quiet", "-m", "no package")
    with pytest.raises(DiffError) as raised:
        diff("git:HEAD", "seed", cwd=tmp_path)
    assert raised.value.code is DiffErrorCode.UNKNOWN_DIFF_SIDE
    assert "holds no handoff_fsm package" in str(raised.value)


@pytest.mark.slow
def test_a_side_whose_package_does_not_load_is_a_coded_error(repo: Path) -> None:
    commit_change(
        repo, "broken", "handoff_fsm/__init__.py", '\nraise RuntimeError("broken on purpose")\n'
    )
    with pytest.raises(DiffError) as raised:
        diff("git:HEAD~1", "git:HEAD", cwd=repo)
    assert raised.value.code is DiffErrorCode.DIFF_SIDE_FAILED
    message = str(raised.value)
    assert message.startswith("side git:HEAD (commit ")
    assert "RuntimeError: broken on purpose" in message


# ---------------------------------------------------------------------- the cross-version contract

BEFORE_THE_SECOND_LAYOUT = "1e41105ab7ba4ce8f61d42ecacd7394b78431701"
"""The last commit of the layout with ``handoff_fsm.diagrams``: the driver
(:mod:`handoff_fsm.verify.diff.driver`) must still drive it, and it behaves as today."""


@pytest.mark.slow
@pytest.mark.parametrize("revision", ["seed", "a976b2bf"])
def test_the_commit_before_the_second_layout_is_equivalent_to_the_work_tree(
    revision: str,
) -> None:
    if not (ROOT / ".git").exists():
        pytest.fail("the tests run from a git clone: the contract is checked against history")
    report = diff(
        f"git:{BEFORE_THE_SECOND_LAYOUT}:{revision}", f"worktree:{revision}", cwd=ROOT, charts=True
    )
    assert report.equivalent and report.exhausted, report.differences
    old, new = report.charts
    assert old is not None and new is not None, report.chart_notes
    structure = chart_diff(old, new)
    assert {delta.status for delta in structure.states} == {Status.SAME}
    assert {delta.status for delta in structure.edges} == {Status.SAME}


FIRST_COMMIT_OF_THE_SRC_LAYOUT = "e9e1a51"
"""The first commit with trace replay, its package under ``src/``; it lacks most of
today's modules, which an editable install of the working copy would otherwise offer it."""


@pytest.mark.slow
def test_a_side_imports_its_own_package_and_nothing_of_the_running_one(tmp_path: Path) -> None:
    """A side's interpreter sees none of the running package, also where the side's
    package lacks a module the running one has (an editable install's finder, a ``.pth``
    entry or ``PYTHONPATH`` would otherwise supply it)."""
    package = tmp_path / "handoff_fsm"
    package.mkdir()
    (package / "__init__.py").write_text("WHERE = 'side'\n", encoding="utf-8")
    probe = (
        "import handoff_fsm\n"
        "print(handoff_fsm.WHERE)\n"
        "try:\n"
        "    import handoff_fsm.admission\n"
        "    print('leaked', handoff_fsm.admission.__file__)\n"
        "except ModuleNotFoundError:\n"
        "    print('isolated')\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        isolated_command(tmp_path, probe),
        capture_output=True,
        text=True,
        check=True,
        env=environment,
        cwd=ROOT,
    )
    assert result.stdout.split() == ["side", "isolated"], result.stdout + result.stderr


@pytest.mark.slow
def test_the_first_commit_of_the_src_layout_is_driven_in_isolation() -> None:
    if not (ROOT / ".git").exists():
        pytest.fail("the tests run from a git clone: the contract is checked against history")
    report = diff("seed", f"git:{FIRST_COMMIT_OF_THE_SRC_LAYOUT}", cwd=ROOT)
    assert report.equivalent and report.exhausted, report.differences

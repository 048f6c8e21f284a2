"""``handoff-fsm diff``: the product exploration, its report, and what every report promises.

Sides here are in this process: the running package by revision and engine, and
the deliberately broken coordinators of tests/test_explore_mutants.py through a
replay factory. Every reported trace is replayed independently (a fresh
``handoff-fsm replay`` process, or a fresh replayer for a broken coordinator) and
must give exactly the reported replies, identical up to the last line.
Sides loaded from git revisions are tested in tests/test_diff_git.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm import HandoffOrder
from handoff_fsm.cli import main
from handoff_fsm.io import TraceReplayer
from handoff_fsm.review.diffreview import write_diff_review
from handoff_fsm.structure.revisions import revision_chart
from handoff_fsm.verify.diff.behaviour import Difference, DiffReport, diff, diff_sides
from handoff_fsm.verify.diff.driver import canonical
from handoff_fsm.verify.diff.errors import DiffError, DiffErrorCode
from handoff_fsm.verify.diff.sides import InProcessSide, SideSpec, parse_side
from tests.support.cli import run_cli
from tests.test_diagrams_mermaid import mermaid_blocks
from tests.test_explore_mutants import (
    AcceptsConflictingOutcome,
    CompletesTwice,
    CrashesOnUnknownAction,
    DropsCancelDestination,
    ForgetsCancelDestination,
    IgnoresTimeoutInFlight,
    RecordsBeforeValidating,
    SucceedsBeforeRelease,
)

ROOT = Path(__file__).resolve().parents[1]
SLOW = os.environ.get("HANDOFF_FSM_SLOW_TESTS") == "1"
SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST


@cache
def seed_against(factory: type | None, label: str) -> DiffReport:
    """``seed`` (A) against a coordinator class built by replay's factory (B)."""
    seed = InProcessSide(parse_side("seed"))
    other = InProcessSide(SideSpec(label, None, None, None), factory=factory)
    try:
        return diff_sides(seed, other)
    finally:
        seed.close()
        other.close()


# ---------------------------------------------------------------------- replaying reports


def replay_fresh(trace: tuple[str, ...], revision: str | None = None) -> list[dict[str, Any]]:
    """The trace through ``python -m handoff_fsm replay -`` in a new process."""
    lines = []
    for line in trace:
        parsed = json.loads(line)
        if parsed["op"] == "new" and revision is not None:
            parsed["revision"] = revision
        lines.append(json.dumps(parsed))
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = run_cli(
        "replay", "-", input="".join(f"{line}\n" for line in lines), check=True, env=environment
    )
    return [json.loads(line) for line in result.stdout.splitlines()]


def replay_with(factory: Callable[..., Any], trace: tuple[str, ...]) -> list[dict[str, Any]]:
    """The trace through a fresh replayer whose coordinators ``factory`` builds.

    Where replay itself raises (it would stop there with a traceback), the reply is
    ``{"coordinator": key, "crash": "<exception>"}``, as the diff reports it.
    """
    replayer = TraceReplayer(factory=factory)
    replies = []
    for number, line in enumerate(trace, start=1):
        try:
            replies.append(json.loads(replayer.reply_text(line, number)))
        except Exception as error:
            key = json.loads(line)["coordinator"]
            replies.append({"coordinator": key, "crash": f"{type(error).__name__}: {error}"})
    return replies


def assert_shows(
    difference: Difference, replies_a: list[dict[str, Any]], replies_b: list[dict[str, Any]]
) -> None:
    """What each side replayed is what the report says; alike up to the last line only."""
    assert replies_a == list(difference.replies_a)
    assert replies_b == list(difference.replies_b)
    assert replies_a[-1] == difference.a
    assert replies_b[-1] == difference.b
    texts_a = [canonical(json.dumps(reply)) for reply in replies_a]
    texts_b = [canonical(json.dumps(reply)) for reply in replies_b]
    assert texts_a[:-1] == texts_b[:-1]
    assert texts_a[-1] != texts_b[-1]


# ---------------------------------------------------------------------- equivalence


@pytest.mark.slow
def test_seed_is_equivalent_to_itself() -> None:
    report = diff("seed", "seed")
    assert report.equivalent
    assert report.exhausted
    assert report.differences == ()
    # Both orders: the product of a side with itself has the side's own states.
    assert report.explored > 300
    assert report.to_json() == {
        "a": "seed",
        "b": "seed",
        "equivalent": True,
        "explored": report.explored,
        "differences": [],
    }


@pytest.mark.slow
def test_seed_is_equivalent_on_the_statechart_engine() -> None:
    report = diff("seed", "seed@statechart")
    assert report.equivalent
    assert report.exhausted
    assert report.explored == diff("seed", "seed").explored


# ---------------------------------------------------------------------- protocol revisions


@pytest.mark.slow
def test_seed_against_a976b2bf_shows_exactly_the_observable_changes_of_the_revision() -> None:
    # docs/revisions.md: (1) a terminal fact after Success reopens cleanup and
    # cancels the destination; (2) the delay actually scheduled is validated where it is
    # scheduled. (3) and (4) are what the seed already does (§6.1, §6.2), (5) is
    # conformance and (6) is in every revision: none of them shows on the coordinator.
    report = diff("seed", "a976b2bf")
    assert [(d.order, d.inputs) for d in report.differences] == [(SF, 5), (SF, 10)]
    scheduled, reopened = report.differences
    # Submitted, SourceHeld with a destination_missing timing, Accepted, then the
    # DestinationReserved whose scheduled delay is infinite (5 inputs).
    assert scheduled.kind == (
        "destination_reserved | source_held: A issues StartTransfer / B rejects it "
        "(invalid_transfer_delay)"
    )
    assert scheduled.a["actions"][0]["action"]["StartTransfer"]["delay_ms"] == math.inf
    # The nine inputs of a successful handoff, then Failed (10 inputs).
    assert reopened.kind.startswith(
        "failed | timed_out | canceled: A issues nothing; complete (Success) / B issues "
        "CancelDestination"
    )
    for difference in report.differences:
        assert_shows(
            difference,
            replay_fresh(difference.trace, "seed"),
            replay_fresh(difference.trace, "a976b2bf"),
        )


# ---------------------------------------------------------------------- differences


MUTANTS = [
    # (coordinator, order of the shortest trace, its length (worked out by hand),
    #  the words its kind ends with)
    # Failed before start: B completes twice.
    (
        CompletesTwice,
        SF,
        1,
        "canceled | source_cancel_confirmed | destination_cancel_confirmed "
        "| release_confirmed: only B issues Complete",
    ),
    # An outcome for an id never issued.
    (
        CrashesOnUnknownAction,
        SF,
        1,
        "unknown action: A rejects it (unknown_action) / B crashes (KeyError)",
    ),
    # start, then Failed: the destination was engaged first.
    (
        DropsCancelDestination,
        DF,
        2,
        "failed | timed_out | canceled | action_failed: only A issues CancelDestination",
    ),
    (
        ForgetsCancelDestination,
        DF,
        2,
        "failed | timed_out | canceled | action_failed: only A issues CancelDestination",
    ),
    # start, Submitted, then a contradicting outcome for the submission.
    (
        AcceptsConflictingOutcome,
        SF,
        3,
        "conflicting outcome: A rejects (conflicting_outcome), B accepts",
    ),
    # start, an impossible outcome (both reject it, B keeps it), then the right one.
    # (A larger product: B's states part from A's while the replies agree.)
    (RecordsBeforeValidating, SF, 3, ": A accepts, B rejects (conflicting_outcome)"),
    # The happy path to the transfer in flight (6 inputs), then TimedOut.
    (
        IgnoresTimeoutInFlight,
        SF,
        7,
        "timed_out: A issues CancelSource, CancelDestination / B issues nothing",
    ),
    # The happy path to the activation, then Applied: B completes at once.
    (
        SucceedsBeforeRelease,
        SF,
        8,
        "activation_applied: A issues ReleaseSource / B issues Complete; complete (Success)",
    ),
]


# RecordsBeforeValidating has a larger product (B's states part from A's while the
# replies agree, ~1,500 pairs): it runs with HANDOFF_FSM_SLOW_TESTS=1 only.
RUN = [case for case in MUTANTS if SLOW or case[0] is not RecordsBeforeValidating]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mutant", "order", "length", "how"), RUN, ids=[case[0].__name__ for case in RUN]
)
def test_a_broken_coordinator_is_told_apart_by_a_shortest_trace(
    mutant: type, order: HandoffOrder, length: int, how: str
) -> None:
    report = seed_against(mutant, mutant.__name__)
    assert not report.equivalent
    first = report.differences[0]
    assert (first.order, first.inputs) == (order, length), first.jsonl()
    assert first.kind.endswith(how), first.kind
    assert [d.inputs for d in report.differences] == sorted(d.inputs for d in report.differences)
    for difference in report.differences:
        assert json.loads(difference.trace[0]) == {
            "coordinator": "explored",
            "op": "new",
            "handoff_id": "00000000-0000-4000-8000-000000000001",
            "order": difference.order.value,
            "fallback_transfer_delay_ms": 0.0,
        }
        assert difference.summary
        assert_shows(
            difference, replay_fresh(difference.trace), replay_with(mutant, difference.trace)
        )


@pytest.mark.slow
def test_no_shorter_trace_tells_them_apart() -> None:
    # The shortest trace of a report is shortest: cut the exploration one input
    # before it and the sides look alike. (IgnoresTimeoutInFlight: 7 inputs.)
    report = seed_against(IgnoresTimeoutInFlight, "IgnoresTimeoutInFlight")
    first = report.differences[0]
    for difference in report.differences:
        lines = difference.trace[:-1]
        assert replay_fresh(lines) == replay_with(IgnoresTimeoutInFlight, lines)
    assert first.inputs == min(d.inputs for d in report.differences)


@pytest.mark.slow
def test_one_behavioural_change_is_one_entry() -> None:
    # Never issuing CancelDestination shows after each failure fact and a failed
    # action, alone (destination first) or beside CancelSource (source first): one
    # entry, its shortest trace, and its other forms named in the summary.
    report = seed_against(DropsCancelDestination, "DropsCancelDestination")
    [difference] = report.differences
    assert difference.kind == (
        "failed | timed_out | canceled | action_failed: only A issues CancelDestination"
    )
    assert difference.summary.startswith("DestinationFirst, after 1 input in (source_idle, ")
    assert "more forms" in difference.summary
    assert "A issues CancelSource, CancelDestination / B issues CancelSource" in (
        difference.summary
    )


@pytest.mark.slow
def test_the_json_report_has_exactly_the_promised_shape() -> None:
    report = seed_against(DropsCancelDestination, "drops")
    data = report.to_json()
    assert set(data) == {"a", "b", "equivalent", "explored", "differences"}
    assert (data["a"], data["b"], data["equivalent"]) == ("seed", "drops", False)
    for entry in data["differences"]:
        assert set(entry) == {"kind", "summary", "trace", "a", "b"}
        assert entry["trace"][0]["op"] == "new"
        assert "revision" not in entry["trace"][0]
    lengths = [len(entry["trace"]) for entry in data["differences"]]
    assert lengths == sorted(lengths)


# ---------------------------------------------------------------------- sides


@pytest.mark.parametrize(
    ("text", "source", "revision", "engine"),
    [
        ("seed@statechart", None, None, "statechart"),
        ("git:HEAD~1", "HEAD~1", None, None),
        ("git:v1.0:seed@compiled", "v1.0", "seed", "compiled"),
        ("git:HEAD@{1}", "HEAD@{1}", None, None),
        ("worktree:a976b2bf@statechart", "worktree", "a976b2bf", "statechart"),
    ],
)
def test_side_names(
    text: str, source: str | None, revision: str | None, engine: str | None
) -> None:
    spec = parse_side(text)
    assert (spec.text, spec.source, spec.engine) == (text, source, engine)
    if source is not None:
        assert spec.revision == revision


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("nonsense", "unknown protocol revision 'nonsense'"),
        ("seed@fast", "unknown engine 'fast'"),
        ("git:", "git:REV needs a revision"),
        ("git:HEAD:not a name", "is not a protocol revision name"),
    ],
)
def test_a_side_that_names_nothing_is_a_coded_error(text: str, words: str) -> None:
    with pytest.raises(DiffError) as raised:
        parse_side(text)
    assert raised.value.code is DiffErrorCode.UNKNOWN_DIFF_SIDE
    assert words in str(raised.value)


@pytest.mark.slow
def test_a_git_side_outside_a_repository_is_a_coded_error(tmp_path: Path) -> None:
    with pytest.raises(DiffError) as raised:
        diff("git:HEAD", "seed", cwd=tmp_path)
    assert raised.value.code is DiffErrorCode.UNKNOWN_DIFF_SIDE
    assert "not inside a git repository" in str(raised.value)


@pytest.mark.slow
def test_the_bound_on_states_is_a_coded_error() -> None:
    with pytest.raises(DiffError) as raised:
        diff("seed", "seed", max_states=20)
    assert raised.value.code is DiffErrorCode.DIFF_TOO_LARGE


@pytest.mark.slow
def test_differences_found_within_the_bound_are_reported_as_not_exhaustive() -> None:
    # 20 state pairs cut source first short (its product has 27, destination first 16);
    # what was found is reported, shortest all the same, and the report says it stopped.
    seed = InProcessSide(parse_side("seed"))
    other = InProcessSide(SideSpec("drops", None, None, None), factory=DropsCancelDestination)
    report = diff_sides(seed, other, max_states=20)
    assert [d.inputs for d in report.differences] == [2]
    assert not report.exhausted
    assert report.stopped == "the bound of 20 state pairs per order was reached"
    assert seed_against(DropsCancelDestination, "DropsCancelDestination").exhausted


# ---------------------------------------------------------------------- command line


@pytest.mark.slow
def test_cli_exit_statuses_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "seed", "seed", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["equivalent"] is True
    assert data["differences"] == []
    assert main(["diff", "seed", "nonsense"]) == 2
    captured = capsys.readouterr()
    assert "unknown_diff_side" in captured.err
    assert captured.out == ""
    assert main(["diff", "seed", "seed"]) == 0
    assert "equivalent" in capsys.readouterr().out


# ---------------------------------------------------------------------- the review folder

MERMAID_CHECK = ROOT / "tools" / "mermaid-check" / "mermaid-check"


@pytest.mark.requires("node", "dot")
def test_the_review_folder_shows_every_difference_three_ways(tmp_path: Path) -> None:
    seed = InProcessSide(parse_side("seed"))
    other = InProcessSide(SideSpec("drops", None, None, None), factory=DropsCancelDestination)
    report = diff_sides(seed, other, charts=True)
    written = {path.name for path in write_diff_review(report, tmp_path)}
    count = len(report.differences)
    assert count == 1
    assert written == {
        "DIFF.md",
        "diff.json",
        "chart_diff.dot",
        "chart_diff.svg",
        "difference_01.jsonl",
        "difference_01.a.jsonl",
        "difference_01.b.jsonl",
        "difference_01.mmd",
        "difference_01.svg",
    }
    difference = report.differences[0]
    assert (tmp_path / "difference_01.jsonl").read_text().splitlines() == list(difference.trace)
    for side, replies in (("a", difference.replies_a), ("b", difference.replies_b)):
        lines = (tmp_path / f"difference_01.{side}.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in lines] == list(replies)
    assert json.loads((tmp_path / "diff.json").read_text()) == report.to_json()
    markdown = (tmp_path / "DIFF.md").read_text()
    assert "**They differ in 1 way**" in markdown
    assert difference.kind in markdown
    # The structural diff: the same chart on both sides (the broken one bends the replies).
    seed_chart = revision_chart("seed")
    assert f"| states | 0 | 0 | 0 | {len(seed_chart.states)} |" in markdown
    assert f"| transitions | 0 | 0 | 0 | {len(seed_chart.edges)} |" in markdown
    drawn = (tmp_path / "difference_01.svg").read_text()  # the sequence diagram, drawn
    assert all(f">{n}. " in drawn for n in range(1, difference.inputs + 1))
    assert "[drawn](difference_01.svg)" in markdown
    svg = (tmp_path / "chart_diff.svg").read_text()
    assert all(f">{word}</text>" in svg for word in ("added", "removed", "changed", "unchanged"))
    # Mermaid's own parser reads the diagram file and the block in DIFF.md.
    blocks = mermaid_blocks(markdown)
    assert len(blocks) == 1
    (tmp_path / "block.mmd").write_text(blocks[0])
    result = subprocess.run(
        [str(MERMAID_CHECK), str(tmp_path / "difference_01.mmd"), str(tmp_path / "block.mmd")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    mermaid = (tmp_path / "difference_01.mmd").read_text()
    steps = difference.inputs
    assert mermaid.count("    I->>A: ") == steps
    assert mermaid.count("    I->>B: ") == steps
    assert mermaid.count("rect ") == 1
    assert "participant A as A: seed" in mermaid
    assert "participant B as B: drops" in mermaid

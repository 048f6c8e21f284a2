"""Exhaustive exploration of the real coordinator, its report, its inputs and ``handoff-fsm check``.

The mutants that prove the checker can fail are in tests/test_explore_mutants.py;
the model-based path cases generated from the exploration in
tests/test_explore_paths.py.
"""

from __future__ import annotations

import importlib
import json
import math
from collections import Counter
from functools import cache, partial

import pytest

from handoff_fsm import (
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffOrder,
    IssuedHandoffAction,
    ReleaseSource,
    SourceHeld,
    StartTransfer,
)
from handoff_fsm.cli import main
from handoff_fsm.io import replay
from handoff_fsm.verify.coverage import chart_transitions, coverage_totals
from handoff_fsm.verify.exploration import (
    FOREIGN_ID,
    HANDOFF_ID,
    INVALID_TIMING,
    TRACE_KEY,
    UNSCHEDULABLE_TIMING,
    VALID_TIMING,
    ExplorationReport,
    explore,
    inputs_for,
)
from handoff_fsm.verify.invariants import InputClass, Invariant, Observation, Op, observe, reply_of
from tests.model_paths import audit, model_paths, reply_from_wire

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST


@cache
def report(order: HandoffOrder) -> ExplorationReport:
    return explore(order)


class _StartsTwice(HandoffCoordinator):
    """Answers ``start()`` with its first action twice, under the same id."""

    def start(self) -> list[IssuedHandoffAction]:
        actions = super().start()
        return actions + actions


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_the_coordinator_keeps_every_invariant(order: HandoffOrder) -> None:
    result = report(order)
    assert result.ok
    assert result.exhausted
    assert result.violations == ()
    assert [v.invariant for v in result.verdicts] == list(Invariant)
    assert all(v.holds for v in result.verdicts)
    checked = {v.invariant: v.checked for v in result.verdicts}
    assert checked[Invariant.LIVENESS] == result.states
    assert 0 < checked[Invariant.DETERMINISTIC] < result.transitions
    others = set(Invariant) - {Invariant.LIVENESS, Invariant.DETERMINISTIC}
    assert {checked[i] for i in others} == {result.transitions}
    assert 0 < result.rejected < result.transitions
    # The success path alone takes nine inputs.
    assert result.max_depth >= 9
    assert result.order is order


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_exploration_reaches_every_chart_state_and_every_transition_of_its_order(
    order: HandoffOrder,
) -> None:
    coverage = report(order).coverage
    assert coverage is not None
    totals = coverage_totals([order])
    assert coverage.states == totals.states
    assert coverage.steps < totals.steps
    # What one order leaves out are the other order's ways of engaging an owner.
    other = "destination_first" if order is SF else "source_first"
    missed = [chart_transitions()[i] for i in sorted(totals.transitions - coverage.transitions)]
    assert len(missed) == 2
    assert all(t.guard.startswith(other) for t in missed)


def test_both_orders_together_cover_every_declared_transition() -> None:
    coverage = report(SF).coverage
    other = report(DF).coverage
    assert coverage is not None
    assert other is not None
    both = coverage | other
    assert both.transitions == {t.index for t in chart_transitions()}
    assert both.states == coverage_totals().states


def test_a_second_exploration_gives_the_same_report() -> None:
    # How long it takes is `make bench-check`'s business (benchmarks/run.py), not a test's.
    for order in HandoffOrder:
        again = explore(order).to_json()
        first = report(order).to_json()
        assert again["ok"]
        assert again.pop("seconds") >= 0.0 and first.pop("seconds") >= 0.0
        assert again == first


def test_the_statechart_engine_explores_the_same_state_space() -> None:
    slow = explore(DF, factory=partial(HandoffCoordinator, engine="statechart"))
    fast = report(DF)
    assert slow.ok
    assert (slow.states, slow.transitions, slow.rejected, slow.max_depth) == (
        fast.states,
        fast.transitions,
        fast.rejected,
        fast.max_depth,
    )
    assert slow.coverage == fast.coverage


def test_inputs_in_the_initial_state() -> None:
    obs = Observation(HANDOFF_ID, SF)
    ops = inputs_for(obs)
    classes = Counter(obs.classify(op) for op in ops)
    assert classes == {
        InputClass.START: 1,
        InputClass.PROGRESS_FACT: 4,
        InputClass.INVALID_TIMING: 1,
        InputClass.FAILURE_FACT: 3,
        InputClass.FOREIGN_FACT: 8,
        InputClass.UNKNOWN_ACTION: 1,
    }
    facts = [op.fact for op in ops if op.fact is not None]
    held = [f for f in facts if isinstance(f, SourceHeld)]
    timings = (VALID_TIMING, INVALID_TIMING, UNSCHEDULABLE_TIMING)
    assert {(f.handoff_id, f.transfer_timing) for f in held} == {
        (i, t) for i in (HANDOFF_ID, FOREIGN_ID) for t in timings
    }


def test_the_alphabet_schedules_an_infinite_delay_from_a_valid_timing() -> None:
    # A finite full-prompt delay passes validation; the delay scheduled for the
    # destination's transferable tokens overflows (a976b2bf rejects it: README, revisions).
    reserved = [
        op.fact
        for op in inputs_for(Observation(HANDOFF_ID, SF))
        if isinstance(op.fact, DestinationReserved) and op.fact.handoff_id == HANDOFF_ID
    ]
    full_prompt = UNSCHEDULABLE_TIMING.full_prompt_delay_ms()
    assert full_prompt is not None
    assert math.isfinite(full_prompt)
    delays = [UNSCHEDULABLE_TIMING.delay_ms(f.transferable_prompt_tokens) for f in reserved]
    assert delays == [math.inf]
    coordinator = HandoffCoordinator(HANDOFF_ID, SF)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    [reserve] = coordinator.on_fact(
        SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=UNSCHEDULABLE_TIMING)
    )
    coordinator.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    [transfer] = coordinator.on_fact(reserved[0])
    assert isinstance(transfer.action, StartTransfer)
    assert transfer.action.delay_ms == math.inf


def test_inputs_for_outstanding_and_acknowledged_actions() -> None:
    # Drive the real coordinator honestly to a state with ReleaseSource outstanding.
    coordinator = HandoffCoordinator(HANDOFF_ID, SF)
    obs = Observation(HANDOFF_ID, SF)
    while not any(kind is ReleaseSource for _, kind in obs.outstanding()):
        op = next(op for op in inputs_for(obs) if obs.is_honest(op))
        obs, findings = observe(obs, op, reply_of(coordinator, op))
        assert findings == []
    (release_id,) = [i for i, kind in obs.outstanding() if kind is ReleaseSource]
    for_release = [op.outcome for op in inputs_for(obs) if op.action_id == release_id]
    assert for_release == [
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
        HandoffActionOutcome.failed("injected failure"),
        HandoffActionOutcome.SUBMITTED,
    ]
    classes = Counter(obs.classify(op) for op in inputs_for(obs))
    acknowledged = len(obs.outcomes)
    assert classes[InputClass.DUPLICATE_OUTCOME] == acknowledged
    assert classes[InputClass.CONFLICTING_OUTCOME] == acknowledged
    assert classes[InputClass.UNKNOWN_ACTION] == 1
    unknown = next(op for op in inputs_for(obs) if op.action_id == obs.last_id + 1)
    assert obs.classify(unknown) is InputClass.UNKNOWN_ACTION


def test_a_counterexample_is_a_replayable_trace() -> None:
    result = explore(SF, factory=_StartsTwice)
    assert not result.ok
    violation = result.violation(Invariant.ACTION_IDS_INCREASING)
    assert violation is not None
    assert violation.inputs == 1
    assert "ids must strictly increase" in violation.message
    assert str(violation).startswith("action_ids_increasing (1 inputs): issued SubmitPrefill")
    assert violation.jsonl() == "".join(line + "\n" for line in violation.trace)
    assert violation.state == ("source_idle", "destination_idle", "transfer_idle")
    assert violation.to_json()["trace"][1] == {"coordinator": TRACE_KEY, "op": "start"}
    replies = [json.loads(reply) for reply in replay(violation.trace)]
    assert len(replies) == len(violation.trace)
    assert all("error" not in reply for reply in replies)
    assert {v.invariant for v in result.violations} == {
        Invariant.ACTION_IDS_INCREASING,
        Invariant.LIFECYCLE_ORDER,
    }


def test_audit_judges_replayed_replies() -> None:
    path = max(model_paths([DF]), key=lambda p: len(p.ops))
    trace = path.trace()
    replies = list(replay(trace))
    assert audit(trace, replies) == []
    assert [reply_from_wire(json.loads(r)) for r in replies[1:]] == list(path.replies)
    # A last reply that re-issues the first action under its old id breaks the rules.
    failed = json.dumps(Op("fact", fact=Failed(handoff_id=HANDOFF_ID)).to_wire(TRACE_KEY))
    found = audit([*trace[:-1], failed], [*replies[:-1], replies[1]])
    assert Invariant.ACTION_IDS_INCREASING in {invariant for invariant, _ in found}


def test_reply_from_wire_reads_errors_and_completion() -> None:
    error = {
        "coordinator": "k",
        "error": {"code": "unknown_action", "message": "no"},
        "complete": True,
        "completion": "Canceled",
    }
    reply = reply_from_wire(error)
    assert reply.error is not None
    assert reply.error.value == "unknown_action"
    assert reply.is_complete
    assert reply.completion is HandoffCompletion.CANCELED


def test_cli_check_prints_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--order", "SourceFirst"]) == 0
    out = capsys.readouterr().out
    result = report(SF)
    assert (
        f"SourceFirst: {result.states} reachable states, {result.transitions} transitions "
        f"explored, {result.rejected} inputs rejected, {len(Invariant)} invariants checked"
    ) in out
    for invariant in Invariant:
        assert f"{invariant.value} " in out
    assert "VIOLATED" not in out
    assert out.rstrip().endswith("OK: every invariant holds")


def test_cli_check_json_for_both_orders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is True
    assert [o["order"] for o in result["orders"]] == ["SourceFirst", "DestinationFirst"]
    for entry in result["orders"]:
        expected = report(HandoffOrder(entry["order"]))
        assert entry["states"] == expected.states
        assert entry["transitions"] == expected.transitions
        assert entry["violations"] == []
        assert set(entry["invariants"]) == {i.value for i in Invariant}
    total = len(chart_transitions())
    assert result["coverage"]["transitions"] == [total, total]
    assert result["coverage"]["uncovered_transitions"] == []


def test_cli_check_fails_with_a_counterexample(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        importlib.import_module("handoff_fsm.cli.check"), "HandoffCoordinator", _StartsTwice
    )
    assert main(["check", "--order", "DestinationFirst"]) == 1
    out = capsys.readouterr().out
    assert "action_ids_increasing" in out
    assert "VIOLATED" in out
    assert '{"coordinator": "explored", "op": "start"}' in out
    assert out.rstrip().endswith("FAILED: see the counterexamples above")

    assert main(["check", "--order", "DestinationFirst", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False
    (entry,) = result["orders"]
    assert entry["violations"][0]["trace"][1] == {"coordinator": "explored", "op": "start"}

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
from collections.abc import Callable
from functools import cache, partial

import pytest

from handoff_fsm import (
    CancelDestination,
    Complete,
    ConfigurationError,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    IssuedHandoffAction,
    ReleaseSource,
    Revision,
    SourceHeld,
    StartTransfer,
    TimedOut,
)
from handoff_fsm.cli import main
from handoff_fsm.io import replay
from handoff_fsm.io.inputs import Input, reply_of
from handoff_fsm.structure.describe import Edge
from handoff_fsm.structure.transitions import chart_transitions, fireable_transitions
from handoff_fsm.verify.coverage import coverage_totals
from handoff_fsm.verify.exploration import (
    FOREIGN_ID,
    HANDOFF_ID,
    INVALID_TIMING,
    TRACE_KEY,
    UNSCHEDULABLE_TIMING,
    VALID_TIMING,
    ExplorationReport,
    explore,
    explore_graph,
    inputs_for,
    trace_lines,
)
from handoff_fsm.verify.invariants import InputClass, Observation, observe
from handoff_fsm.verify.rules import Invariant, invariants_of
from tests.model_paths import ModelPath, audit, model_paths, reply_from_wire

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST
SEED = Revision.SEED
A976 = Revision.A976B2BF
EVERY = [(revision, order) for revision in Revision for order in HandoffOrder]


@cache
def report(order: HandoffOrder, revision: Revision = SEED) -> ExplorationReport:
    return explore(order, revision=revision)


class _StartsTwice(HandoffCoordinator):
    """Answers ``start()`` with its first action twice, under the same id."""

    def start(self) -> list[IssuedHandoffAction]:
        actions = super().start()
        return actions + actions


def _guard(edge: Edge) -> str:
    return "" if edge.guard is None else edge.guard.expression


@pytest.mark.slow
@pytest.mark.parametrize(("revision", "order"), EVERY)
def test_the_coordinator_keeps_every_invariant_of_its_revision(
    revision: Revision, order: HandoffOrder
) -> None:
    result = report(order, revision)
    assert result.ok
    assert result.exhausted
    assert result.violations == ()
    assert [v.invariant for v in result.verdicts] == list(invariants_of(revision))
    assert all(v.holds for v in result.verdicts)
    checked = {v.invariant: v.checked for v in result.verdicts}
    assert checked[Invariant.LIVENESS] == result.states
    assert 0 < checked[Invariant.DETERMINISTIC] < result.transitions
    others = set(checked) - {Invariant.LIVENESS, Invariant.DETERMINISTIC}
    assert {checked[i] for i in others} == {result.transitions}
    assert 0 < result.rejected < result.transitions
    # The success path alone takes nine inputs (a976b2bf: and two more to reopen and end it).
    assert result.max_depth >= (9 if revision is SEED else 11)
    assert result.order is order
    assert result.revision is revision
    assert result.to_json()["revision"] == revision.value


@pytest.mark.slow
def test_a976b2bf_is_held_to_the_reopen_the_seed_never_does() -> None:
    assert Invariant.REOPENS_AFTER_SUCCESS not in {v.invariant for v in report(SF).verdicts}
    verdicts = {v.invariant: v for v in report(SF, A976).verdicts}
    assert verdicts[Invariant.REOPENS_AFTER_SUCCESS].holds


@pytest.mark.slow
@pytest.mark.parametrize(("revision", "order"), EVERY)
def test_exploration_covers_every_fireable_transition_of_its_revision_and_order(
    revision: Revision, order: HandoffOrder
) -> None:
    coverage = report(order, revision).coverage
    assert coverage is not None
    assert coverage.revision is revision
    totals = coverage_totals([order], revision)
    assert coverage.states == totals.states
    assert coverage.steps < totals.steps
    assert coverage.transitions == totals.transitions
    # What one order cannot fire are the other order's ways of engaging an owner ...
    other = "destination_first" if order is SF else "source_first"
    missed = fireable_transitions(revision) - totals.transitions
    engaging = {i for i in missed if _guard(chart_transitions()[i]).startswith(other)}
    assert len(engaging) == 2
    # ... and, where the scheduled delay is checked, the other order's second fact: in
    # one order the same fact always completes the pair that starts the transfer.
    second = [chart_transitions()[i] for i in sorted(missed - engaging)]
    if revision is SEED:
        assert second == []
    else:
        assert {t.events for t in second} == {("source_held",), ("destination_reserved",)}
        assert all("validates_scheduled_delay" in _guard(t) for t in second)


@pytest.mark.slow
def test_both_orders_of_both_revisions_together_cover_every_declared_transition() -> None:
    union: set[int] = set()
    for revision in Revision:
        coverage = report(SF, revision).coverage
        other = report(DF, revision).coverage
        assert coverage is not None
        assert other is not None
        both = coverage | other
        assert both.transitions == fireable_transitions(revision)
        assert both.states == coverage_totals(revision=revision).states
        union |= both.transitions
    assert union == {t.index for t in chart_transitions()}
    assert fireable_transitions(SEED) != fireable_transitions(A976)


@pytest.mark.slow
def test_a_second_exploration_gives_the_same_report() -> None:
    # How long it takes is `make bench-check`'s business (benchmarks/run.py), not a test's.
    for revision, order in ((SEED, SF), (A976, DF)):
        again = explore(order, revision=revision).to_json()
        first = report(order, revision).to_json()
        assert again["ok"]
        assert again.pop("seconds") >= 0.0 and first.pop("seconds") >= 0.0
        assert again == first


@pytest.mark.slow
def test_explore_refuses_a_coordinator_of_another_revision() -> None:
    with pytest.raises(ConfigurationError) as raised:
        explore(SF, revision=A976, factory=HandoffCoordinator)
    assert raised.value.code is HandoffErrorCode.INVALID_REVISION
    assert "following revision seed, but a976b2bf" in str(raised.value)
    with pytest.raises(ConfigurationError) as unknown:
        explore(SF, revision="b")
    assert unknown.value.code is HandoffErrorCode.INVALID_REVISION


@pytest.mark.slow
def test_a976b2bf_liveness_lets_a_refused_fact_end_by_failure() -> None:
    # Source held with a timing whose scheduled delay for the reservation is infinite:
    # a976b2bf refuses the only DestinationReserved the destination can truthfully send.
    graph = explore_graph(SF, partial(HandoffCoordinator, revision=A976), None, A976)
    refused = [node for node in graph.nodes if node.refused]
    assert refused
    assert all(node.obs.timing == UNSCHEDULABLE_TIMING for node in refused)
    assert all(not node.honest and node.failures for node in refused)
    # No honest input leaves those states: without the failure facts liveness would fail.
    verdicts = {v.invariant: v for v in report(SF, A976).verdicts}
    assert verdicts[Invariant.LIVENESS].holds


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
    # destination's transferable tokens overflows (docs/revisions.md).
    # destination's transferable tokens overflows (a976b2bf rejects it: docs/revisions.md).
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


@pytest.mark.slow
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


def _completes(path: ModelPath) -> int:
    return sum(type(a.action) is Complete for reply in path.replies for a in reply.actions)


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision))
def test_replay_of_the_longest_model_path_breaks_nothing(revision: Revision) -> None:
    # The longest of those completing most often: a976b2bf's reopens after Success.
    path = max(model_paths([DF], [revision]), key=lambda p: (_completes(p), len(p.ops)))
    assert _completes(path) == (1 if revision is SEED else 2)
    trace = path.trace()
    replies = list(replay(trace))
    assert audit(trace, replies) == []
    assert [reply_from_wire(json.loads(r)) for r in replies[1:]] == list(path.replies)


@pytest.mark.slow
def test_audit_judges_replayed_replies() -> None:
    path = max(model_paths([DF], [SEED]), key=lambda p: len(p.ops))
    trace = path.trace()
    replies = list(replay(trace))
    # A last reply that re-issues the first action under its old id breaks the rules.
    failed = json.dumps(Input("fact", fact=Failed(handoff_id=HANDOFF_ID)).to_wire(TRACE_KEY))
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


def test_inputs_in_a_reopened_cleanup() -> None:
    # a976b2bf: Success, then a time-out cancels the decoding destination.
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, revision=A976)
    obs = Observation(HANDOFF_ID, SF, A976)
    while not obs.complete:
        op = next(op for op in inputs_for(obs) if obs.is_honest(op))
        obs, findings = observe(obs, op, reply_of(coordinator, op))
        assert findings == []
    acknowledged = len(obs.outcomes)
    late = Counter(obs.classify(op) for op in inputs_for(obs))
    assert late[InputClass.DUPLICATE_OUTCOME] == acknowledged
    timed_out = Input("fact", fact=TimedOut(handoff_id=HANDOFF_ID))
    obs, findings = observe(obs, timed_out, reply_of(coordinator, timed_out))
    assert findings == []
    assert obs.reopened and not obs.complete
    (cancel,) = obs.outstanding()
    assert cancel[1] is CancelDestination
    # Every outcome for an action issued before the first Complete is for an unknown one.
    classes = Counter(obs.classify(op) for op in inputs_for(obs))
    assert InputClass.DUPLICATE_OUTCOME not in classes
    assert InputClass.CONFLICTING_OUTCOME not in classes
    assert classes[InputClass.UNKNOWN_ACTION] == 2 * acknowledged + 1
    assert classes[InputClass.OUTCOME] == 2  # Applied and Noop for the cancel


@pytest.mark.slow
def test_an_a976b2bf_counterexample_names_its_revision() -> None:
    result = explore(SF, revision=A976, factory=partial(_StartsTwice, revision=A976))
    violation = result.violation(Invariant.ACTION_IDS_INCREASING)
    assert violation is not None
    new = json.loads(violation.trace[0])
    assert new["revision"] == "a976b2bf"
    assert result.to_json()["revision"] == "a976b2bf"
    # The seed's traces keep the new line they always had (replay's default revision).
    seed = explore(SF, factory=_StartsTwice).violation(Invariant.ACTION_IDS_INCREASING)
    assert seed is not None
    assert "revision" not in json.loads(seed.trace[0])
    assert trace_lines(SF, 0.0, [], A976) == (violation.trace[0],)
    # Replay builds the coordinator of the revision the trace names.
    (new_reply, *_) = [json.loads(reply) for reply in replay(violation.trace)]
    assert "error" not in new_reply


@pytest.fixture
def explored(monkeypatch: pytest.MonkeyPatch) -> None:
    """``handoff-fsm check`` prints the explorations the tests above already ran.

    The factory the command would explore is still checked: a coordinator of the
    asked revision, on the asked engine.
    """

    def cached(
        order: HandoffOrder, *, revision: Revision, factory: Callable[..., HandoffCoordinator]
    ) -> ExplorationReport:
        built = factory(HANDOFF_ID, order)
        assert built.revision is revision
        assert built.engine == "compiled"
        return report(HandoffOrder(order), revision)

    monkeypatch.setattr(
        importlib.import_module("handoff_fsm.verify.exploration"), "explore", cached
    )


@pytest.mark.slow
@pytest.mark.usefixtures("explored")
def test_cli_check_prints_the_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--order", "SourceFirst"]) == 0
    out = capsys.readouterr().out
    for revision in Revision:
        result = report(SF, revision)
        assert (
            f"{revision.value} SourceFirst: {result.states} reachable states, "
            f"{result.transitions} transitions explored, {result.rejected} inputs rejected, "
            f"{len(invariants_of(revision))} invariants checked"
        ) in out
        totals = coverage_totals([SF], revision)
        assert (
            f"{revision.value} SourceFirst: {len(totals.states)}/{len(totals.states)} chart states"
        ) in out
    for invariant in Invariant:
        assert f"{invariant.value} " in out
    assert "VIOLATED" not in out
    # SourceFirst alone cannot engage an owner the DestinationFirst way (nor, in a976b2bf,
    # check the scheduled delay on SourceHeld).
    union: set[int] = set()
    for revision in Revision:
        coverage = report(SF, revision).coverage
        assert coverage is not None
        union |= coverage.transitions
    assert len(union) == len(chart_transitions()) - 3
    assert f"seed + a976b2bf: {len(union)}/{len(chart_transitions())} declared" in out
    assert "  a976b2bf only: decoding --failed | timed_out | canceled--> canceling_decode" in out
    assert "  seed only: active --done.state.active [not reopens_after_success]--> complete" in out
    assert out.rstrip().endswith("OK: every invariant holds")


@pytest.mark.slow
@pytest.mark.usefixtures("explored")
def test_cli_check_one_revision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--revision", "a976b2bf", "--order", "DestinationFirst"]) == 0
    out = capsys.readouterr().out
    assert "a976b2bf DestinationFirst: " in out
    assert "seed DestinationFirst: " not in out
    assert "reopens_after_success " in out
    assert "seed + a976b2bf" not in out


@pytest.mark.slow
@pytest.mark.usefixtures("explored")
def test_cli_check_json_for_both_revisions_and_orders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is True
    assert result["revisions"] == ["seed", "a976b2bf"]
    assert [(o["revision"], o["order"]) for o in result["orders"]] == [
        (revision.value, order.value) for revision, order in EVERY
    ]
    for entry in result["orders"]:
        revision = Revision(entry["revision"])
        expected = report(HandoffOrder(entry["order"]), revision)
        assert entry["states"] == expected.states
        assert entry["transitions"] == expected.transitions
        assert entry["violations"] == []
        assert list(entry["invariants"]) == [i.value for i in invariants_of(revision)]
    for revision in Revision:
        figures = result["coverage"][revision.value]
        fireable = len(fireable_transitions(revision))
        assert figures["transitions"] == [fireable, fireable]
        assert figures["uncovered_transitions"] == []
    total = len(chart_transitions())
    declared = result["declared_transitions"]
    assert declared["covered"] == [total, total]
    assert declared["uncovered"] == []
    assert len(declared["revision_specific"]["seed"]) == 1
    assert len(declared["revision_specific"]["a976b2bf"]) == 5


@pytest.mark.slow
def test_cli_check_fails_with_a_counterexample(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        importlib.import_module("handoff_fsm.coordinator"), "HandoffCoordinator", _StartsTwice
    )
    assert main(["check", "--order", "DestinationFirst"]) == 1
    out = capsys.readouterr().out
    assert "action_ids_increasing" in out
    assert "VIOLATED" in out
    assert '{"coordinator": "explored", "op": "start"}' in out
    assert '"revision": "a976b2bf"}' in out
    assert "rule (a976b2bf): action ids are unique and strictly increasing" in out
    assert out.rstrip().endswith("FAILED: see the counterexamples above")

    assert main(["check", "--order", "DestinationFirst", "--revision", "seed", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False
    (entry,) = result["orders"]
    assert entry["revision"] == "seed"
    assert entry["violations"][0]["trace"][1] == {"coordinator": "explored", "op": "start"}

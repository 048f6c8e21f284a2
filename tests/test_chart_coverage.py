"""Chart coverage: the declared transitions, and which ones each compiled step fires."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from handoff_fsm import (
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    Revision,
    SourceHeld,
)
from handoff_fsm.chart import INPUT_EVENTS, REJECTIONS
from handoff_fsm.engines.compiled import compiled_chart, document_order
from handoff_fsm.io.inputs import Input, Reply, reply_of
from handoff_fsm.structure.describe import Edge
from handoff_fsm.structure.transitions import (
    FiredTransitions,
    chart_state_of,
    chart_transitions,
    fireable_transitions,
    rejection_transition,
    revision_specific_transitions,
    step_transitions,
)
from handoff_fsm.verify.coverage import ChartCoverage, coverage_totals, event_of, step_taken
from handoff_fsm.verify.exploration import VALID_TIMING
from handoff_fsm.verify.invariants import Observation, observe

ID = UUID(int=1)
SEED = Revision.SEED
A976 = Revision.A976B2BF


def _guard(edge: Edge) -> str:
    return "" if edge.guard is None else edge.guard.expression


def _index(source: str, event: str = "", target: str | None = None) -> int:
    """The one declared transition from ``source`` on ``event`` (``""``: eventless)."""
    matches = [
        t.index
        for t in chart_transitions()
        if t.source == source
        and (event in t.events if event else not t.events)
        and (target is None or target == t.target)
    ]
    assert len(matches) == 1, matches
    return matches[0]


def test_declared_transitions_are_every_transition_but_the_implicit_initial_ones() -> None:
    every = [t for state in document_order() for t in state.transitions]
    declared = chart_transitions()
    assert len(declared) == sum(1 for t in every if not t.initial)
    assert [t.index for t in declared] == list(range(len(declared)))
    kinds = {
        "eventless": [t for t in declared if not t.events],
        "done": [t for t in declared if any(e.startswith("done.state") for e in t.events)],
        "rejecting": [t for t in declared if set(t.validators) & set(REJECTIONS)],
    }
    assert {kind: len(ts) for kind, ts in kinds.items()} == {
        "eventless": 9,
        "done": 3,
        "rejecting": len(REJECTIONS) * 2,
    }
    held = [str(t) for t in declared if t.source == "submitted" and "source_held" in t.events]
    assert held == [
        "submitted --source_held [not (validates_scheduled_delay and In('reserved'))]--> held",
        "submitted --source_held [validates_scheduled_delay and In('reserved')]--> held",
    ]
    assert str(declared[_index("held")]) == "held --(eventless) [In('activated')]--> releasing"


def test_rejection_transition_is_found_by_source_event_and_code() -> None:
    code = HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT
    leaves = ("source_idle", "destination_idle", "transfer_idle")
    assert rejection_transition(leaves, "source_held", code) == _index("source_idle", "source_held")
    submitting = ("submitting", "destination_idle", "transfer_idle")
    assert rejection_transition(submitting, "source_held", code) == _index(
        "submitting", "source_held"
    )
    assert rejection_transition(leaves, "destination_reserved", code) is None


@pytest.mark.parametrize("revision", list(Revision))
def test_every_compiled_step_maps_to_the_transitions_the_framework_fires(
    revision: Revision,
) -> None:
    compiled = compiled_chart(revision)
    mapping = step_transitions(revision)
    assert set(mapping) == {(step.source, step.event) for step in compiled.steps}
    assert all(mapping.values())
    assert set().union(*mapping.values()) == fireable_transitions(revision)
    initial = compiled.initial[HandoffOrder.SOURCE_FIRST].index
    assert mapping[(initial, "start")] == {_index("source_idle", "start")}
    # A failure in the active phase: leave it, then decide each owner's cleanup.
    failed = mapping[(initial, "failed")]
    assert failed == {
        _index("active", "failed"),
        _index("source_pending", target="source_untouched"),
        _index("destination_pending", target="destination_untouched"),
        _index("cleaning_up", "done.state.cleaning_up"),
    }


def test_each_revision_fires_its_own_transitions_and_together_every_one() -> None:
    seed, a976 = fireable_transitions(SEED), fireable_transitions(A976)
    assert seed | a976 == {t.index for t in chart_transitions()}
    specific = revision_specific_transitions()
    assert (
        specific[SEED] == seed - a976 == {_index("active", "done.state.active", target="complete")}
    )
    assert (
        specific[A976]
        == a976 - seed
        == {
            _index("active", "done.state.active", target="decoding"),
            _index("decoding", "failed"),
            _index("canceling_decode", "destination_cancel_confirmed"),
            *(t.index for t in chart_transitions() if "validate_scheduled_delay" in t.validators),
        }
    )
    assert len(specific[A976]) == 5
    # A terminal fact after Success: leave 'decoding' for 'canceling decode' (a976b2bf).
    compiled = compiled_chart(A976)
    decoding = next(s for s in compiled.states if s.leaves == ("decoding",))
    assert step_transitions(A976)[(decoding.index, "timed_out")] == {_index("decoding", "failed")}


def test_listener_on_a_live_statechart_engine_sees_the_same_transitions() -> None:
    coordinator = HandoffCoordinator(ID, HandoffOrder.SOURCE_FIRST, engine="statechart")
    listener = FiredTransitions()
    chart: Any = coordinator.chart
    chart.add_listener(listener)
    steps: list[tuple[int, str]] = []
    obs = Observation(ID, HandoffOrder.SOURCE_FIRST)
    for op in [
        Input("start"),
        Input("outcome", action_id=0, outcome=HandoffActionOutcome.SUBMITTED),
        Input("fact", fact=SourceHeld(handoff_id=ID, transfer_timing=VALID_TIMING)),
    ]:
        state = chart_state_of(coordinator.snapshot())
        assert state is not None
        event = event_of(obs, op)
        assert event is not None
        steps.append((state.index, event))
        obs, findings = observe(obs, op, reply_of(coordinator, op))
        assert findings == []
    expected = set().union(*(step_transitions()[key] for key in steps))
    assert listener.fired == expected
    assert _index("destination_idle", target="reserving") in listener.fired  # eventless


@pytest.mark.parametrize("revision", list(Revision))
def test_chart_state_of_reads_handoff_snapshots_in_their_revision(revision: Revision) -> None:
    coordinator = HandoffCoordinator(ID, HandoffOrder.DESTINATION_FIRST, revision=revision)
    state = chart_state_of(coordinator.snapshot())
    assert state is compiled_chart(revision).initial[HandoffOrder.DESTINATION_FIRST]
    assert state.revision is revision
    assert chart_state_of(("not", "a snapshot")) is None


def test_step_taken_reads_the_step_table_of_the_states_revision() -> None:
    for revision in Revision:
        initial = compiled_chart(revision).initial[HandoffOrder.SOURCE_FIRST]
        step = step_taken(initial, "start", Reply())
        assert step is not None
        assert step in compiled_chart(revision).steps


def test_step_taken_counts_runs_and_rejections_not_validation_failures() -> None:
    initial = compiled_chart().initial[HandoffOrder.SOURCE_FIRST]
    assert step_taken(initial, "start", Reply()) is not None
    rejected = Reply(error=HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT)
    step = step_taken(initial, "source_held", rejected)
    assert step is not None
    assert step.validators == ("reject_source_held_before_submit",)
    # A step whose validator checks timing is not taken when the timing is refused.
    coordinator = HandoffCoordinator(ID, HandoffOrder.SOURCE_FIRST)
    coordinator.start()
    coordinator.on_action_outcome(0, HandoffActionOutcome.SUBMITTED)
    submitted = chart_state_of(coordinator.snapshot())
    assert submitted is not None
    bad = Reply(error=HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH)
    assert step_taken(submitted, "source_held", bad) is None
    assert step_taken(submitted, "source_held", Reply()) is not None
    assert step_taken(submitted, None, Reply()) is None
    assert step_taken(submitted, "source_held", Reply(crash="boom")) is None


def test_event_of_follows_the_input_vocabulary() -> None:
    obs = Observation(ID, HandoffOrder.DESTINATION_FIRST)
    reserved = Input("fact", fact=DestinationReserved(handoff_id=ID, transferable_prompt_tokens=1))
    assert event_of(obs, Input("start")) == "start"
    assert event_of(obs, reserved) == "destination_reserved"
    acknowledgement = Input("outcome", action_id=0, outcome=HandoffActionOutcome.ACCEPTED)
    assert event_of(obs, acknowledgement) is None
    foreign = Input(
        "fact", fact=DestinationReserved(handoff_id=UUID(int=2), transferable_prompt_tokens=1)
    )
    assert event_of(obs, foreign) is None
    assert {event_of(obs, Input("start")), event_of(obs, reserved)} <= set(INPUT_EVENTS)


def test_totals_and_figures() -> None:
    compiled = compiled_chart()
    both = coverage_totals()
    assert both.states == frozenset(s.index for s in compiled.states)
    assert both.steps == frozenset((s.source, s.event) for s in compiled.steps)
    assert both.transitions == fireable_transitions(SEED)
    one = coverage_totals([HandoffOrder.SOURCE_FIRST])
    assert one.states < both.states
    # What one order cannot fire are the other order's ways of engaging an owner.
    assert {_guard(chart_transitions()[i]) for i in both.transitions - one.transitions} == {
        "destination_first",
        "destination_first and In('reserved')",
    }

    initial = compiled.initial[HandoffOrder.SOURCE_FIRST].index
    partial = ChartCoverage.of_steps([initial], [(initial, "start")])
    assert partial.transitions == {_index("source_idle", "start")}
    figures = partial.figures([HandoffOrder.SOURCE_FIRST])
    assert figures["revision"] == "seed"
    assert figures["chart_states"] == [1, len(one.states)]
    assert figures["steps"] == [1, len(one.steps)]
    assert figures["transitions"] == [1, len(one.transitions)]
    assert len(figures["uncovered_transitions"]) == len(one.transitions) - 1
    merged = partial | ChartCoverage.of_steps([], [(initial, "failed")])
    assert merged.steps == {(initial, "start"), (initial, "failed")}


def test_coverage_belongs_to_one_revision() -> None:
    for revision in Revision:
        totals = coverage_totals(revision=revision)
        assert totals.revision is revision
        assert totals.states == frozenset(s.index for s in compiled_chart(revision).states)
        assert totals.transitions == fireable_transitions(revision)
    a976 = compiled_chart(A976).initial[HandoffOrder.SOURCE_FIRST].index
    other = ChartCoverage.of_steps([a976], [(a976, "start")], A976)
    assert other.figures([HandoffOrder.SOURCE_FIRST])["revision"] == "a976b2bf"
    # State and step indexes of two compiled tables cannot be merged.
    with pytest.raises(ValueError, match="cannot merge coverage of seed and a976b2bf"):
        _ = coverage_totals() | other

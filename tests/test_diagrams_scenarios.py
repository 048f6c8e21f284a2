"""Scripted lifecycles record what a real coordinator did, with ids, delays and states."""

from __future__ import annotations

import pytest

from handoff_fsm import (
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffOrder,
    ReleaseSource,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.diagrams import SCENARIOS, Lifecycle, Scenario, lifecycles, run_scenario
from handoff_fsm.diagrams.scenarios import (
    HANDOFF_ID,
    Ack,
    Lose,
    MessageKind,
    Participant,
    Report,
    ScriptError,
    Start,
    action_owner,
    fact_sender,
)
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    Failed,
    ReserveDestination,
    TimedOut,
    TransferCompleted,
)


def _run(name: str) -> Lifecycle:
    return next(run for run in lifecycles() if run.scenario.name == name)


def test_the_five_lifecycles_end_as_their_names_say() -> None:
    ends = {run.scenario.name: run.completion for run in lifecycles()}
    assert ends == {
        "source_first_success": HandoffCompletion.SUCCESS,
        "destination_first_success": HandoffCompletion.SUCCESS,
        "failure_before_first_ack": HandoffCompletion.CANCELED,
        "timeout_after_transfer_scheduled": HandoffCompletion.CANCELED,
        "lost_release_ack": HandoffCompletion.CANCELED,
    }
    assert all(run.final_state == ("complete",) for run in lifecycles())


def test_recorded_actions_are_the_coordinators_own() -> None:
    # Replaying the same script by hand gives the same issued actions, ids and delays.
    for run in lifecycles():
        coordinator = HandoffCoordinator(HANDOFF_ID, run.scenario.order)
        issued = []
        latest: dict[type, int] = {}
        for step in run.scenario.steps:
            if isinstance(step, Start):
                new = coordinator.start()
            elif isinstance(step, Report):
                new = coordinator.on_fact(step.fact)
            elif isinstance(step, Ack):
                new = coordinator.on_action_outcome(latest[step.action], step.outcome)
            else:
                continue
            latest.update({type(a.action): a.id for a in new})
            issued += new
        assert tuple(issued) == run.issued
        assert [a.id for a in run.issued] == list(range(len(run.issued)))


def test_the_transfer_delay_is_the_timing_models() -> None:
    run = _run("destination_first_success")
    held = next(
        s.fact
        for s in run.scenario.steps
        if isinstance(s, Report) and isinstance(s.fact, SourceHeld)
    )
    reserved = next(
        s.fact
        for s in run.scenario.steps
        if isinstance(s, Report) and isinstance(s.fact, DestinationReserved)
    )
    start = next(a.action for a in run.issued if isinstance(a.action, StartTransfer))
    assert start.delay_ms == held.transfer_timing.delay_ms(reserved.transferable_prompt_tokens)
    assert any(f"delay_ms={start.delay_ms!r}" in m.text for m in run.messages)


def test_owners_are_read_from_the_chart_regions() -> None:
    assert action_owner(SubmitPrefill) is Participant.SOURCE
    assert action_owner(ReleaseSource) is Participant.SOURCE
    assert action_owner(CancelSource) is Participant.SOURCE
    assert action_owner(ReserveDestination) is Participant.DESTINATION
    assert action_owner(ActivateDestination) is Participant.DESTINATION
    assert action_owner(CancelDestination) is Participant.DESTINATION
    assert action_owner(StartTransfer) is Participant.TRANSFER
    assert action_owner(Complete) is Participant.CALLER
    assert fact_sender(SourceHeld) is Participant.SOURCE
    assert fact_sender(DestinationReserved) is Participant.DESTINATION
    assert fact_sender(TransferCompleted) is Participant.TRANSFER
    for fact in (Failed, TimedOut, Canceled):
        assert fact_sender(fact) is Participant.CALLER


def test_messages_carry_the_events_the_chart_took() -> None:
    run = _run("source_first_success")
    events = [m.event for m in run.messages if m.event is not None]
    assert events == [
        "start",
        "prefill_submitted",
        "source_held",
        "reservation_accepted",
        "destination_reserved",
        "transfer_scheduled",
        "transfer_completed",
        "activation_applied",
        "release_confirmed",
    ]
    states = [m.text for m in run.messages if m.kind is MessageKind.STATE]
    assert states[0] == "submitting, destination_idle, transfer_idle"
    assert states[-1] == "complete"


def test_a_lost_acknowledgement_never_reaches_the_coordinator() -> None:
    run = _run("lost_release_ack")
    lost = [m for m in run.messages if m.kind is MessageKind.LOST]
    assert len(lost) == 1
    assert lost[0].text.endswith("Applied (lost)")
    assert lost[0].event is None
    kinds = [type(a.action).__name__ for a in run.issued]
    assert kinds[-3:] == ["CancelSource", "CancelDestination", "Complete"]


def test_a_late_acknowledgement_after_completion_is_shown_as_ignored() -> None:
    run = _run("failure_before_first_ack")
    assert run.messages[-1].text == "#0 Submitted (late, ignored)"
    assert run.messages[-1].event is None


def test_a_script_that_acknowledges_an_action_never_issued_is_refused() -> None:
    bad = Scenario(
        name="bad",
        title="bad",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(Start(), Lose(StartTransfer, HandoffActionOutcome.SCHEDULED)),
        summary="",
    )
    with pytest.raises(ScriptError, match="no StartTransfer was issued"):
        run_scenario(bad)


def test_scenario_names_are_unique_file_stems() -> None:
    names = [scenario.name for scenario in SCENARIOS]
    assert len(set(names)) == len(names)
    assert all(name.isidentifier() for name in names)

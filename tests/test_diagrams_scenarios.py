"""Scripted lifecycles: each script becomes a trace, and the diagram is drawn from the trace."""

from __future__ import annotations

import json

import pytest

from handoff_fsm import (
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffOrder,
    ReleaseSource,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.io.lifecycle import (
    MessageKind,
    Participant,
    action_owner,
    delay_text,
    fact_sender,
)
from handoff_fsm.io.replay import replay
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
from handoff_fsm.simulate.scenarios import (
    HANDOFF_ID,
    SCENARIOS,
    Ack,
    Report,
    Scenario,
    ScenarioRun,
    ScriptError,
    Start,
    scenario_runs,
    scenario_trace,
)


def _run(name: str) -> ScenarioRun:
    return next(run for run in scenario_runs() if run.scenario.name == name)


def test_the_lifecycles_end_as_their_names_say() -> None:
    ends = {run.scenario.name: run.lifecycle.completion for run in scenario_runs()}
    assert ends == {
        "source_first_success": HandoffCompletion.SUCCESS,
        "destination_first_success": HandoffCompletion.SUCCESS,
        "failure_before_first_ack": HandoffCompletion.CANCELED,
        "timeout_after_transfer_scheduled": HandoffCompletion.CANCELED,
        "lost_release_ack": HandoffCompletion.CANCELED,
        "reservation_failed": HandoffCompletion.CANCELED,
        "destination_first_failure": HandoffCompletion.CANCELED,
    }
    assert all(run.lifecycle.final_state == ("complete",) for run in scenario_runs())


def test_a_scenario_trace_replays_to_the_issued_actions_of_its_lifecycle() -> None:
    # The diagram's ids and delays are what `handoff-fsm replay` answers to the trace.
    for run in scenario_runs():
        replies = [json.loads(reply) for reply in replay(run.trace)]
        issued = [action for reply in replies for action in reply.get("actions", [])]
        assert [action["id"] for action in issued] == [a.id for a in run.lifecycle.issued]
        assert [a.id for a in run.lifecycle.issued] == list(range(len(issued)))
        names = [next(iter(action["action"])) for action in issued]
        assert names == [type(a.action).__name__ for a in run.lifecycle.issued]


def test_the_trace_is_new_then_one_line_per_script_step() -> None:
    for run in scenario_runs():
        lines = [json.loads(line) for line in run.trace]
        assert lines[0] == {
            "coordinator": run.scenario.name,
            "op": "new",
            "handoff_id": str(HANDOFF_ID),
            "order": run.scenario.order.value,
            "fallback_transfer_delay_ms": 0.0,
        }
        assert len(lines) == 1 + len(run.scenario.steps)
        assert {line["coordinator"] for line in lines} == {run.scenario.name}


def test_the_transfer_delay_is_the_timing_models() -> None:
    run = _run("destination_first_success")
    facts = [s.fact for s in run.scenario.steps if isinstance(s, Report)]
    held = next(f for f in facts if isinstance(f, SourceHeld))
    reserved = next(f for f in facts if isinstance(f, DestinationReserved))
    start = next(a.action for a in run.lifecycle.issued if isinstance(a.action, StartTransfer))
    assert start.delay_ms == held.transfer_timing.delay_ms(reserved.transferable_prompt_tokens)
    assert any(f"(delay {delay_text(start.delay_ms)} ms)" in m.text for m in run.lifecycle.messages)
    assert any(f"delay_ms={start.delay_ms!r}" in row.reply for row in run.lifecycle.steps)


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
    lifecycle = _run("source_first_success").lifecycle
    events = [m.event for m in lifecycle.messages if m.event is not None]
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
    states = [m.text for m in lifecycle.messages if m.kind is MessageKind.STATE]
    assert states[0] == "submitting, destination_idle, transfer_idle"
    assert states[-1] == "complete"
    assert lifecycle.messages[-1].kind is MessageKind.END
    assert lifecycle.messages[-1].text == "Success after 9 inputs, none rejected"


def test_a_lost_acknowledgement_is_absent_from_the_trace_and_drawn_as_never_acknowledged() -> None:
    run = _run("lost_release_ack")
    release = next(a for a in run.lifecycle.issued if isinstance(a.action, ReleaseSource))
    outcomes = [json.loads(line) for line in run.trace if '"outcome"' in line]
    assert release.id not in {line["action_id"] for line in outcomes}
    texts = [m.text for m in run.lifecycle.messages]
    missing = [m for m in run.lifecycle.messages if m.kind is MessageKind.MISSING]
    assert [m.text for m in missing] == [f"#{release.id} ReleaseSource: never acknowledged"]
    assert missing[0].sender is Participant.SOURCE
    # Drawn where it was awaited: before the time-out that ended the active phase.
    assert texts.index(missing[0].text) + 1 == texts.index("TimedOut")
    kinds = [type(a.action).__name__ for a in run.lifecycle.issued]
    assert kinds[-3:] == ["CancelSource", "CancelDestination", "Complete"]


def test_a_late_acknowledgement_after_completion_is_shown_as_late_and_ignored() -> None:
    messages = _run("failure_before_first_ack").lifecycle.messages
    assert messages[-2].text == "#0 Submitted (late, ignored)"
    assert messages[-2].event is None
    assert messages[-1].text == "Canceled after 4 inputs, none rejected"


def test_a_failed_action_starts_cleanup() -> None:
    lifecycle = _run("reservation_failed").lifecycle
    failed = next(m for m in lifecycle.messages if "Failed(" in m.text)
    assert failed.sender is Participant.DESTINATION
    assert failed.event == "action_failed"
    kinds = [type(a.action).__name__ for a in lifecycle.issued]
    assert kinds == [
        "SubmitPrefill",
        "ReserveDestination",
        "CancelSource",
        "CancelDestination",
        "Complete",
    ]


def test_a_rejected_input_is_answered_in_red_and_changes_nothing() -> None:
    lifecycle = _run("destination_first_failure").lifecycle
    texts = [m.text for m in lifecycle.messages]
    rejected = next(m for m in lifecycle.messages if m.kind is MessageKind.REJECTED)
    assert rejected.text.startswith("✗ source_held_before_submit: source held before")
    assert rejected.receiver is Participant.SOURCE
    held = texts.index(rejected.text) - 1
    assert texts[held].startswith("SourceHeld(")
    assert lifecycle.messages[held].event is None
    # No state note between the rejected fact and the next input: nothing changed.
    assert lifecycle.messages[held + 2].text == "#1 Submitted"
    assert lifecycle.messages[-1].text == "Canceled after 8 inputs, 1 rejected"


def test_a_script_that_acknowledges_an_action_never_issued_is_refused() -> None:
    bad = Scenario(
        name="bad",
        title="bad",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(Start(), Ack(StartTransfer, HandoffActionOutcome.SCHEDULED)),
        summary="",
    )
    with pytest.raises(ScriptError, match="no StartTransfer was issued"):
        scenario_trace(bad)


def test_scenario_names_are_unique_file_stems() -> None:
    names = [scenario.name for scenario in SCENARIOS]
    assert len(set(names)) == len(names)
    assert all(name.isidentifier() for name in names)

"""What one lost message does, computed on the state graph, checked against real coordinators.

Each fate the analysis reports is replayed here by hand: the situation's
shortest trace is replayed into a fresh coordinator, the message is withheld,
and the other inputs are given to see whether the handoff completes.
"""

from __future__ import annotations

import json

import pytest

from handoff_fsm import (
    Canceled,
    Failed,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffOrder,
    TimedOut,
)
from handoff_fsm.io.inputs import Input, reply_of
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.model import Revision
from handoff_fsm.review.loss_table import trace_words
from handoff_fsm.verify.exploration import HANDOFF_ID, TRACE_KEY, explore
from handoff_fsm.verify.losses import Awaited, Fate, LossReport, Situation, lost_messages

CANCEL_SOURCE_ACK = Awaited("acknowledgement", "CancelSource")
SUBMIT_ACK = Awaited("acknowledgement", "SubmitPrefill")
RELEASE_ACK = Awaited("acknowledgement", "ReleaseSource")


@pytest.fixture(scope="module")
def source_first() -> LossReport:
    return lost_messages(HandoffOrder.SOURCE_FIRST)


def _replayed(situation: Situation) -> HandoffCoordinator:
    """A coordinator in the situation's state, through ``handoff-fsm replay``'s own code."""
    replayer = TraceReplayer(remember_completed=None)
    for number, line in enumerate(situation.trace, start=1):
        reply = replayer.reply(line, number)
        assert "error" not in reply or number > 1, reply
    live = replayer.live[TRACE_KEY]
    return live.coordinator


def _situation(report: LossReport, state: tuple[str, ...], fates: dict[Awaited, Fate]) -> Situation:
    return next(s for s in report.situations if s.state == state and dict(s.fates) == fates)


@pytest.mark.slow
def test_the_state_space_is_the_explorers(source_first: LossReport) -> None:
    assert source_first.states == explore(HandoffOrder.SOURCE_FIRST).states
    assert 0 < source_first.waiting < source_first.states
    assert sum(s.states for s in source_first.situations) == source_first.waiting


def test_every_situation_trace_reaches_that_state(source_first: LossReport) -> None:
    for situation in source_first.situations:
        coordinator = _replayed(situation)
        assert coordinator.state == situation.state
        assert not coordinator.is_complete


def test_a_lost_cancel_acknowledgement_stalls_cleanup_forever(source_first: LossReport) -> None:
    situation = _situation(
        source_first,
        ("canceling_source", "destination_untouched"),
        {CANCEL_SOURCE_ACK: Fate.STALLS},
    )
    # start, then SubmitPrefill answered Failed(..): cleanup cancels the source.
    assert [json.loads(line)["op"] for line in situation.trace] == ["new", "start", "outcome"]
    coordinator = _replayed(situation)
    cancel = max(entry.id for entry in coordinator.snapshot().issued)
    # Withhold the cancel's acknowledgement: the caller's deadline and every failure fact
    # change nothing, and no other acknowledgement exists.
    for fact in (TimedOut, Failed, Canceled):
        assert coordinator.on_fact(fact(handoff_id=HANDOFF_ID)) == []
    assert not coordinator.is_complete
    actions = coordinator.on_action_outcome(cancel, HandoffActionOutcome.APPLIED)
    assert [type(a.action).__name__ for a in actions] == ["Complete"]
    assert coordinator.is_complete  # the lost message was the only way out


def test_a_superseded_acknowledgement_is_harmless(source_first: LossReport) -> None:
    situation = _situation(
        source_first,
        ("canceling_source", "destination_untouched"),
        {CANCEL_SOURCE_ACK: Fate.STALLS, SUBMIT_ACK: Fate.HARMLESS},
    )
    coordinator = _replayed(situation)
    issued = {type(e.action).__name__: e.id for e in coordinator.snapshot().issued}
    coordinator.on_action_outcome(issued["CancelSource"], HandoffActionOutcome.APPLIED)
    assert coordinator.is_complete  # without SubmitPrefill's acknowledgement


def test_a_lost_acknowledgement_while_active_needs_the_callers_time_out(
    source_first: LossReport,
) -> None:
    situation = _situation(
        source_first, ("releasing", "activated", "transferred"), {RELEASE_ACK: Fate.TIME_OUT}
    )
    coordinator = _replayed(situation)
    cancels = coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))
    for cancel in cancels:
        noop = type(cancel.action).__name__ == "CancelSource"
        outcome = HandoffActionOutcome.NOOP if noop else HandoffActionOutcome.APPLIED
        coordinator.on_action_outcome(cancel.id, outcome)
    assert coordinator.completion is not None and coordinator.completion.value == "Canceled"


def test_fates_follow_the_protocols_phases(source_first: LossReport) -> None:
    """While active, any loss waits for the caller's time-out; in cleanup only a cancel's
    acknowledgement matters, and CancelSource's not once the release confirmed the source."""
    cleaning = {"canceling_source", "source_canceled", "source_untouched"}
    for situation in source_first.situations:
        awaited_here = {awaited for awaited, _ in situation.fates}
        for awaited, fate in situation.fates:
            if situation.state[0] not in cleaning:
                expected = Fate.TIME_OUT
            else:
                cancel = awaited.kind == "acknowledgement" and awaited.name.startswith("Cancel")
                confirmed = awaited == CANCEL_SOURCE_ACK and (
                    RELEASE_ACK in awaited_here or "source_canceled" in situation.state
                )
                expected = Fate.STALLS if cancel and not confirmed else Fate.HARMLESS
            assert fate is expected, (situation.state, awaited)


def test_each_revision_is_analysed_on_its_own_chart() -> None:
    reopening = lost_messages(HandoffOrder.DESTINATION_FIRST, revision=Revision.A976B2BF)
    decode = [s for s in reopening.situations if s.state == ("canceling_decode",)]
    assert decode and all(
        dict(s.fates) == {Awaited("acknowledgement", "CancelDestination"): Fate.STALLS}
        for s in decode
    )
    coordinator = HandoffCoordinator(
        HANDOFF_ID, HandoffOrder.DESTINATION_FIRST, revision=Revision.A976B2BF
    )
    for line in decode[0].trace[1:]:
        reply_of(coordinator, Input.from_wire(json.loads(line)))
    assert coordinator.state == ("canceling_decode",)
    assert not coordinator.is_complete
    for fact in (TimedOut, Failed, Canceled):  # a reopened cleanup ignores failure facts too
        assert coordinator.on_fact(fact(handoff_id=HANDOFF_ID)) == []
    assert not coordinator.is_complete


def test_the_trace_words_match_the_trace() -> None:
    lines = [
        json.dumps({"coordinator": TRACE_KEY, "op": "new"}),
        json.dumps(Input("start").to_wire(TRACE_KEY)),
        json.dumps(Input("fact", fact=Failed(handoff_id=HANDOFF_ID)).to_wire(TRACE_KEY)),
        json.dumps(
            Input("outcome", action_id=1, outcome=HandoffActionOutcome.NOOP).to_wire(TRACE_KEY)
        ),
    ]
    assert trace_words(lines) == "start → Failed → #1 Noop"
    assert trace_words(lines[:1]) == "(none)"

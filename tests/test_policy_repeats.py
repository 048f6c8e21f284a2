"""Answers to a repeated delivery: the first answer stands, a later different one is kept.

A real worker answers an action from what it holds when the action arrives (the action
names the request, not the coordinator's action id), so a cancel the policy sent again
after its cleanup timer fired is answered ``Noop`` by a source that the first send freed,
and a duplicated ``SubmitPrefill`` is refused as busy by a source that took the first.
Both answers reach the session, in either order; the session applies the first and keeps
the later one in ``result.ignored`` with why, never as a rejection (issue 31, item 3).
"""

from __future__ import annotations

import uuid

import pytest

import handoff_fsm as hf
from handoff_fsm import HandoffActionOutcome, HandoffCoordinator, HandoffOrder, Revision
from handoff_fsm.policy import SessionPolicy, SessionStep

HID = uuid.UUID(int=31)
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 10, 1024, 1.0)
APPLIED, NOOP = HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP
BUSY = HandoffActionOutcome.failed("the worker already holds the request")


def _policy(revision: Revision) -> SessionPolicy:
    coordinator = HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, revision=revision)
    return SessionPolicy(coordinator, deadline=100.0, ack_timeout=10.0, cleanup_ack_timeout=10.0)


def _only(step: SessionStep, kind: type[hf.HandoffAction]) -> hf.IssuedHandoffAction:
    (issued,) = [i for i in step.actions if type(i.action) is kind]
    return issued


@pytest.mark.parametrize("revision", list(Revision))
@pytest.mark.parametrize(("first", "later"), [(APPLIED, NOOP), (NOOP, APPLIED)])
def test_a_resent_cancel_answered_twice_is_no_refusal(
    revision: Revision, first: HandoffActionOutcome, later: HandoffActionOutcome
) -> None:
    """The run of issue 31: the client cancels after SourceHeld, the cleanup timer of
    CancelSource fires and the cancel is sent again with the same id; the first send's
    answer and the re-send's arrive, in either order."""
    policy = _policy(revision)
    submit = _only(policy.start(0.0), hf.SubmitPrefill)
    policy.outcome(submit.id, HandoffActionOutcome.SUBMITTED, 1.0)
    held = policy.fact(hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING), 2.0)
    _only(held, hf.ReserveDestination)
    canceled = policy.fact(hf.Canceled(handoff_id=HID), 3.0)
    cancel_source = _only(canceled, hf.CancelSource)
    cancel_destination = _only(canceled, hf.CancelDestination)
    (timer,) = [t for t in canceled.timers if t.action_id == cancel_source.id]
    again = policy.expire(timer, timer.when)
    assert list(again.actions) == [cancel_source]  # the same id, sent again

    assert policy.outcome(cancel_source.id, first, 14.0) == SessionStep()
    assert policy.outcome(cancel_source.id, later, 15.0) == SessionStep()
    done = policy.outcome(cancel_destination.id, NOOP, 16.0)
    assert [type(i.action) for i in done.actions] == [hf.Complete]

    result = policy.result
    assert result.rejected == ()
    assert result.completion is hf.HandoffCompletion.CANCELED and result.finished
    (ignored,) = result.ignored
    assert ignored.input == (cancel_source.id, later)
    assert "answered already" in ignored.reason and "repeated delivery" in ignored.reason


@pytest.mark.parametrize("revision", list(Revision))
def test_a_duplicated_submit_refused_as_busy_after_submitted_is_ignored(revision: Revision) -> None:
    policy = _policy(revision)
    submit = _only(policy.start(0.0), hf.SubmitPrefill)
    policy.outcome(submit.id, HandoffActionOutcome.SUBMITTED, 1.0)
    assert policy.outcome(submit.id, BUSY, 2.0) == SessionStep()
    assert policy.result.rejected == ()
    assert [i.input for i in policy.result.ignored] == [(submit.id, BUSY)]
    assert not policy.coordinator.is_complete  # the handoff goes on
    step = policy.fact(hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING), 3.0)
    assert [type(i.action) for i in step.actions] == [hf.ReserveDestination]


@pytest.mark.parametrize("revision", list(Revision))
def test_a_busy_answer_that_comes_first_cancels_and_the_later_submitted_is_ignored(
    revision: Revision,
) -> None:
    """The duplicate's answer may arrive first: the session cannot tell it from a real
    refusal, so it cleans up (safe, if needless), and the first send's answer is kept."""
    policy = _policy(revision)
    submit = _only(policy.start(0.0), hf.SubmitPrefill)
    cleanup = policy.outcome(submit.id, BUSY, 1.0)
    assert [type(i.action) for i in cleanup.actions] == [hf.CancelSource]
    assert policy.outcome(submit.id, HandoffActionOutcome.SUBMITTED, 2.0) == SessionStep()
    assert policy.result.rejected == ()
    assert [i.input for i in policy.result.ignored] == [(submit.id, HandoffActionOutcome.SUBMITTED)]

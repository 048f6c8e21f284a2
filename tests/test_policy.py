"""The sans-I/O session policy, rule by rule, on a fake clock (plain floats)."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest

import handoff_fsm as hf
from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    Complete,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffOrder,
    IssuedHandoffAction,
    Owner,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
    policy_checks,
)
from handoff_fsm.policy import (
    CLEANUP_ACTIONS,
    NOTHING,
    PREMATURE,
    Rejection,
    SessionPolicy,
    SessionStep,
    SessionTimer,
)

HID = uuid.UUID(int=7)
OTHER = uuid.UUID(int=8)
SUBMITTED = HandoffActionOutcome.SUBMITTED
ACCEPTED = HandoffActionOutcome.ACCEPTED
SCHEDULED = HandoffActionOutcome.SCHEDULED
APPLIED = HandoffActionOutcome.APPLIED
NOOP = HandoffActionOutcome.NOOP
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 100, 1024, 1.0)


def held(timing: hf.HandoffTransferTiming = TIMING) -> hf.SourceHeld:
    return hf.SourceHeld(handoff_id=HID, transfer_timing=timing)


def reserved() -> hf.DestinationReserved:
    return hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=100)


def transferred() -> hf.TransferCompleted:
    return hf.TransferCompleted(handoff_id=HID)


def policy(order: HandoffOrder = HandoffOrder.SOURCE_FIRST, **settings: Any) -> SessionPolicy:
    return SessionPolicy(HandoffCoordinator(HID, order), **settings)


def state(p: SessionPolicy) -> tuple[str, ...]:
    coordinator = p.coordinator
    assert isinstance(coordinator, HandoffCoordinator)
    return coordinator.state


def kinds(step: SessionStep) -> list[str]:
    return [type(issued.action).__name__ for issued in step.actions]


def only(step: SessionStep) -> IssuedHandoffAction:
    (issued,) = step.actions
    return issued


def action_timers(step: SessionStep) -> list[SessionTimer]:
    return [timer for timer in step.timers if not timer.is_deadline]


def cleaning_up(p: SessionPolicy, now: float = 1.0) -> tuple[IssuedHandoffAction, ...]:
    """Source held, destination accepted; then Failed: both cancels issued."""
    p.outcome(only(p.start(0.0)).id, SUBMITTED, now)
    p.outcome(only(p.fact(held(), now)).id, ACCEPTED, now)
    step = p.fact(hf.Failed(handoff_id=HID), now)
    assert kinds(step) == ["CancelSource", "CancelDestination"]
    return tuple(step.actions)


# --------------------------------------------------------------------- plain driving


def test_without_trouble_the_policy_passes_actions_through_and_stays_quiet() -> None:
    p = policy()
    assert kinds(p.start(0.0)) == ["SubmitPrefill"]
    assert kinds(p.outcome(0, SUBMITTED, 1.0)) == []
    assert kinds(p.fact(held(), 2.0)) == ["ReserveDestination"]
    assert kinds(p.outcome(1, ACCEPTED, 3.0)) == []
    assert kinds(p.fact(reserved(), 4.0)) == ["StartTransfer"]
    p.outcome(2, SCHEDULED, 5.0)
    assert kinds(p.fact(transferred(), 6.0)) == ["ActivateDestination"]
    assert kinds(p.outcome(3, APPLIED, 7.0)) == ["ReleaseSource"]
    last = p.outcome(4, APPLIED, 8.0)
    assert kinds(last) == ["Complete"] and last.timers == ()
    assert p.finished and p.completion is HandoffCompletion.SUCCESS
    assert p.quiet and p.result.clean


# --------------------------------------------------------------------- deadline


def test_the_deadline_is_armed_once_and_feeds_timed_out() -> None:
    p = policy(deadline=50.0)
    first = p.start(10.0)
    assert first.timers == (SessionTimer(60.0, None),)
    assert first.timers[0].is_deadline
    assert p.start(20.0) == NOTHING  # a second start issues and arms nothing
    p.outcome(0, SUBMITTED, 11.0)
    step = p.expire(first.timers[0], 60.0)
    assert kinds(step) == ["CancelSource"]
    assert p.timed_out and p.result.timed_out and not p.quiet
    assert state(p) == ("canceling_source", "destination_untouched")


def test_the_deadline_of_a_finished_handoff_does_nothing() -> None:
    p = policy(deadline=50.0)
    timer = p.start(0.0).timers[0]
    p.fact(hf.Canceled(handoff_id=HID), 1.0)
    p.outcome(1, APPLIED, 2.0)  # CancelSource
    assert p.finished
    assert p.expire(timer, 50.0) == NOTHING
    assert not p.timed_out


def test_the_deadline_during_cleanup_is_fed_and_ignored_by_the_coordinator() -> None:
    p = policy(deadline=50.0)
    timer = p.start(0.0).timers[0]
    p.fact(hf.Canceled(handoff_id=HID), 1.0)
    assert p.expire(timer, 50.0) == NOTHING
    assert p.timed_out
    assert state(p) == ("canceling_source", "destination_untouched")


def test_no_deadline_means_no_timer() -> None:
    assert policy().start(0.0).timers == ()


def test_a_deadline_of_zero_times_out_at_the_start() -> None:
    p = policy(deadline=0.0)
    (timer,) = p.start(5.0).timers
    assert timer.when == 5.0
    assert kinds(p.expire(timer, 5.0)) == ["CancelSource"]


# --------------------------------------------------------------------- acknowledgement timeout


def test_a_work_action_not_acknowledged_in_time_is_fed_as_failed() -> None:
    p = policy(ack_timeout=5.0, cleanup_ack_timeout=2.0)
    start = p.start(0.0)
    submit = only(start)
    assert action_timers(start) == [SessionTimer(5.0, submit.id, 0)]
    step = p.expire(action_timers(start)[0], 5.0)
    assert kinds(step) == ["CancelSource"]
    assert [t.when for t in step.timers] == [7.0]  # the cancel has its own, shorter timeout
    (failed,) = p.result.failed
    assert (failed.issued, failed.sends, failed.owner) == (submit, 1, Owner.SOURCE)
    assert failed.reason == "no acknowledgement 5 after it was sent"
    # The coordinator got Failed(reason) for it: its outcome is settled.
    assert all(issued.id != submit.id for issued in p.coordinator.outstanding)


def test_an_acknowledgement_after_its_action_was_failed_is_ignored_and_recorded() -> None:
    p = policy(ack_timeout=5.0)
    timer = action_timers(p.start(0.0))[0]
    p.expire(timer, 5.0)
    assert p.outcome(0, SUBMITTED, 6.0) == NOTHING  # would conflict with the Failed
    assert [i.input for i in p.result.ignored] == [(0, SUBMITTED)]
    assert p.result.ignored[0].reason == "the session stopped waiting for #0"
    assert p.result.rejected == ()


def test_a_timer_whose_acknowledgement_came_is_stale() -> None:
    p = policy(ack_timeout=5.0)
    timer = action_timers(p.start(0.0))[0]
    p.outcome(0, SUBMITTED, 1.0)
    assert p.expire(timer, 5.0) == NOTHING
    assert p.result.failed == () and p.quiet


def test_every_work_action_gets_a_timer_and_complete_none() -> None:
    p = policy(ack_timeout=5.0)
    timed = [timer.action_id for timer in action_timers(p.start(0.0))]
    p.outcome(0, SUBMITTED, 0.0)
    timed += [timer.action_id for timer in action_timers(p.fact(held(), 0.0))]
    p.outcome(1, ACCEPTED, 0.0)
    timed += [timer.action_id for timer in action_timers(p.fact(reserved(), 0.0))]
    p.outcome(2, SCHEDULED, 0.0)
    timed += [timer.action_id for timer in action_timers(p.fact(transferred(), 0.0))]
    timed += [timer.action_id for timer in action_timers(p.outcome(3, APPLIED, 0.0))]
    last = p.outcome(4, APPLIED, 0.0)
    assert timed == [0, 1, 2, 3, 4]
    assert kinds(last) == ["Complete"] and last.timers == ()


# --------------------------------------------------------------------- cleanup retry


def test_a_lost_cancel_acknowledgement_is_re_sent_then_confirmed_by_any_send() -> None:
    p = policy(ack_timeout=5.0, cleanup_retries=3)
    cancel_source, cancel_destination = cleaning_up(p, now=1.0)
    timer = SessionTimer(6.0, cancel_source.id, 0)
    again = p.expire(timer, 6.0)
    assert again.actions == (cancel_source,)  # the same action, sent again
    assert again.timers == (SessionTimer(11.0, cancel_source.id, 1),)
    assert p.expire(timer, 6.0) == NOTHING  # the first send's timer is spent
    assert p.resends == 1
    p.outcome(cancel_source.id, APPLIED, 7.0)  # the first send's late answer counts
    assert p.expire(again.timers[0], 11.0) == NOTHING
    assert kinds(p.outcome(cancel_destination.id, NOOP, 8.0)) == ["Complete"]
    assert p.completion is HandoffCompletion.CANCELED
    result = p.result
    assert result.resends == 1 and result.abandoned == () and result.clean


def test_cleanup_is_abandoned_after_its_retries_and_reported() -> None:
    p = policy(ack_timeout=5.0, cleanup_retries=2)
    cancel_source, cancel_destination = cleaning_up(p, now=0.0)
    p.outcome(cancel_destination.id, APPLIED, 1.0)
    timer = SessionTimer(5.0, cancel_source.id, 0)
    sends = 1
    while True:
        step = p.expire(timer, timer.when)
        if not step.actions:
            break
        assert step.actions == (cancel_source,)
        sends += 1
        (timer,) = step.timers
    assert sends == 3  # the first send and two retries
    assert p.finished and p.completion is HandoffCompletion.CANCELED
    assert not p.coordinator.is_complete  # nothing could complete it
    assert p.coordinator.outstanding == (cancel_source,)
    result = p.result
    (abandoned,) = result.abandoned
    assert (abandoned.issued, abandoned.sends) == (cancel_source, 3)
    assert abandoned.reason == "no acknowledgement 5 after it was sent"
    assert result.unconfirmed_owners == (Owner.SOURCE,)
    assert result.resends == 2 and not result.clean
    # After giving up, inputs are recorded, not fed.
    assert p.outcome(cancel_source.id, APPLIED, 30.0) == NOTHING
    assert p.fact(hf.Canceled(handoff_id=HID), 31.0) == NOTHING
    assert p.start(32.0) == NOTHING
    assert [i.input for i in p.result.ignored] == [
        (cancel_source.id, APPLIED),
        hf.Canceled(handoff_id=HID),
    ]
    assert {i.reason for i in p.result.ignored} == {"the session had given up on its cleanup"}
    assert not p.coordinator.is_complete


def test_the_session_waits_for_every_cleanup_before_giving_up() -> None:
    p = policy(ack_timeout=5.0, cleanup_retries=0)
    cancel_source, cancel_destination = cleaning_up(p, now=0.0)
    assert p.expire(SessionTimer(5.0, cancel_source.id, 0), 5.0) == NOTHING  # no retries
    assert len(p.result.abandoned) == 1 and not p.finished  # the destination may still answer
    p.outcome(cancel_destination.id, APPLIED, 6.0)
    assert p.finished and p.completion is HandoffCompletion.CANCELED


def test_both_cleanups_abandoned_name_both_owners() -> None:
    p = policy(ack_timeout=5.0, cleanup_retries=0)
    cancel_source, cancel_destination = cleaning_up(p, now=0.0)
    p.expire(SessionTimer(5.0, cancel_destination.id, 0), 5.0)
    p.expire(SessionTimer(5.0, cancel_source.id, 0), 5.0)
    assert p.finished
    assert p.result.unconfirmed_owners == (Owner.DESTINATION, Owner.SOURCE)


def test_without_a_cleanup_timeout_only_lost_sends_are_retried() -> None:
    p = policy(cleanup_retries=1)
    cancel_source, _ = cleaning_up(p)
    again = p.lost(cancel_source.id, "connection reset", 2.0, send=0)
    assert again == SessionStep((cancel_source,), ())
    assert p.lost(cancel_source.id, "late failure of the first send", 2.5, send=0) == NOTHING
    assert p.lost(cancel_source.id, "connection reset", 3.0, send=1) == NOTHING  # abandoned
    assert p.result.abandoned[0].reason == "connection reset"
    assert p.result.abandoned[0].sends == 2


def test_a_refused_cancel_acknowledgement_counts_as_lost() -> None:
    p = policy(cleanup_retries=3)
    cancel_source, _ = cleaning_up(p)
    refused = HandoffActionOutcome.failed("disk on fire")
    step = p.outcome(cancel_source.id, refused, 2.0)
    assert step.actions == (cancel_source,)  # re-sent
    (rejection,) = p.result.rejected
    assert rejection.input == (cancel_source.id, refused)
    assert rejection.error.code is hf.HandoffErrorCode.CLEANUP_ACTION_FAILED


# --------------------------------------------------------------------- lost sends of work actions


def test_a_lost_work_action_without_a_timer_is_failed() -> None:
    p = policy()
    submit = only(p.start(0.0))
    step = p.lost(submit.id, "perform raised OSError: refused", 1.0)
    assert kinds(step) == ["CancelSource"]
    assert p.result.failed[0].reason == "perform raised OSError: refused"


def test_an_executor_error_is_recorded_and_loses_that_send() -> None:
    p = policy(cleanup_retries=0)
    submit = only(p.start(0.0))
    step = p.executor_error(submit, "perform returned None", 1.0, send=0)
    assert kinds(step) == ["CancelSource"]  # the work action was fed Failed
    result = p.result
    (error,) = result.executor_errors
    assert (error.issued, error.send, error.reason) == (submit, 0, "perform returned None")
    assert result.failed[0].reason == "perform returned None" and not result.clean
    # Recorded even when nothing is left to lose: the executor erred all the same.
    cancel = only(step)
    p.executor_error(cancel, "perform returned 'Applied'", 2.0)
    assert p.finished and len(p.result.abandoned) == 1  # no retries: abandoned
    p.executor_error(cancel, "perform returned 'Applied'", 3.0)
    assert [e.reason for e in p.result.executor_errors] == [
        "perform returned None",
        "perform returned 'Applied'",
        "perform returned 'Applied'",
    ]


def test_losing_an_acknowledged_or_unknown_action_does_nothing() -> None:
    p = policy()
    p.start(0.0)
    p.outcome(0, SUBMITTED, 1.0)
    assert p.lost(0, "too late", 2.0) == NOTHING
    assert p.lost(99, "never issued", 2.0) == NOTHING
    assert p.quiet


def test_a_refused_work_acknowledgement_fails_the_action() -> None:
    p = policy()
    submit = only(p.start(0.0))
    step = p.outcome(submit.id, APPLIED, 1.0)  # SubmitPrefill cannot be Applied
    assert kinds(step) == ["CancelSource"]
    assert p.result.rejected[0].error.code is hf.HandoffErrorCode.INVALID_OUTCOME
    assert p.result.failed[0].issued == submit


# --------------------------------------------------------------------- premature facts


def test_a_premature_source_held_is_held_back_until_the_submission_is_acknowledged() -> None:
    p = policy()
    p.start(0.0)
    assert p.fact(held(), 1.0) == NOTHING
    assert p.result.buffered == (held(),) and p.result.held_back == 1
    step = p.outcome(0, SUBMITTED, 2.0)
    assert kinds(step) == ["ReserveDestination"]
    assert state(p) == ("held", "reserving", "transfer_idle")
    result = p.result
    assert result.buffered == () and result.unapplied == () and result.rejected == ()


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_premature_reservation_and_transfer_completion_wait_for_their_acks(
    order: HandoffOrder,
) -> None:
    p = policy(order, ack_timeout=5.0)
    first = only(p.start(0.0))
    if order is HandoffOrder.SOURCE_FIRST:
        p.outcome(first.id, SUBMITTED, 0.0)
        reserve = only(p.fact(held(), 0.0))
        assert p.fact(reserved(), 0.0) == NOTHING  # before Accepted
        transfer = only(p.outcome(reserve.id, ACCEPTED, 1.0))
    else:
        assert p.fact(reserved(), 0.0) == NOTHING
        submit = only(p.outcome(first.id, ACCEPTED, 1.0))
        assert type(submit.action) is SubmitPrefill
        p.outcome(submit.id, SUBMITTED, 1.0)
        transfer = only(p.fact(held(), 1.0))
    assert type(transfer.action) is StartTransfer
    assert p.fact(transferred(), 2.0) == NOTHING  # before Scheduled
    step = p.outcome(transfer.id, SCHEDULED, 3.0)
    assert kinds(step) == ["ActivateDestination"]
    assert action_timers(step) == [SessionTimer(8.0, step.actions[0].id, 0)]
    assert p.result.held_back == 2 and p.result.buffered == ()


def test_the_policy_counts_every_input_it_feeds_and_every_refusal() -> None:
    p = policy(deadline=10.0)
    timer = p.start(0.0).timers[0]  # 1: start
    p.fact(held(), 1.0)  # 2: refused as premature, held back
    p.fact(hf.Canceled(handoff_id=OTHER), 1.0)  # 3: refused, foreign
    p.outcome(0, SUBMITTED, 2.0)  # 4: the acknowledgement, 5: the held-back fact again
    p.expire(timer, 10.0)  # 6: TimedOut
    result = p.result
    assert p.inputs == result.inputs == 6
    assert result.refusals == {
        hf.HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT: 1,
        hf.HandoffErrorCode.FOREIGN_HANDOFF: 1,
    }
    assert len(result.rejected) == 1  # the held-back fact was handled, not rejected


def test_held_back_facts_are_applied_in_arrival_order() -> None:
    p = policy()
    p.start(0.0)
    broken = held(hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 100, 1024, -1.0))
    p.fact(broken, 1.0)  # arrives first: refused when applied (negative bandwidth)
    p.fact(held(), 2.0)
    step = p.outcome(0, SUBMITTED, 3.0)
    assert kinds(step) == ["ReserveDestination"]
    (rejection,) = p.result.rejected
    assert rejection == Rejection(broken, rejection.error)
    assert rejection.error.code is hf.HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH
    p.outcome(step.actions[0].id, ACCEPTED, 4.0)
    transfer = only(p.fact(reserved(), 5.0))
    assert transfer.action == StartTransfer.issued_with_delay(HID, 100 * 1024 / 1e9 * 1e3)


def test_a_fact_still_premature_after_another_acknowledgement_keeps_waiting() -> None:
    p = policy(HandoffOrder.DESTINATION_FIRST)
    p.start(0.0)
    p.outcome(0, ACCEPTED, 0.0)
    submit = only(p.fact(reserved(), 1.0))
    assert p.fact(held(), 2.0) == NOTHING
    assert p.outcome(0, ACCEPTED, 3.0) == NOTHING  # a duplicate: accepted, changes nothing
    assert p.result.buffered == (held(),)
    assert kinds(p.outcome(submit.id, SUBMITTED, 4.0)) == ["StartTransfer"]


def test_a_fact_whose_publisher_owes_nothing_is_refused_not_held() -> None:
    p = policy(HandoffOrder.DESTINATION_FIRST)
    p.start(0.0)  # ReserveDestination only: the source was never asked anything
    assert p.fact(held(), 1.0) == NOTHING
    (rejection,) = p.result.rejected
    assert rejection.error.code is hf.HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT
    assert p.result.buffered == () and p.result.held_back == 0


def test_held_back_facts_are_given_up_when_cleanup_begins() -> None:
    p = policy()
    p.start(0.0)
    p.fact(held(), 1.0)
    assert kinds(p.fact(hf.Failed(handoff_id=HID), 2.0)) == ["CancelSource"]
    result = p.result
    assert result.unapplied == (held(),) and result.buffered == ()
    assert not result.clean
    p.outcome(0, SUBMITTED, 3.0)  # the acknowledgement it waited for, too late
    assert p.result.unapplied == (held(),)


def test_a_lost_acknowledgement_gives_up_the_facts_that_waited_for_it() -> None:
    p = policy(ack_timeout=5.0)
    timer = action_timers(p.start(0.0))[0]
    p.fact(held(), 1.0)
    p.expire(timer, 5.0)
    assert p.result.unapplied == (held(),)


# --------------------------------------------------------------------- revision a976b2bf


def test_a_handoff_reopened_after_success_gets_the_same_cleanup_rules() -> None:
    c = HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, revision="a976b2bf")
    p = SessionPolicy(c, deadline=100.0, ack_timeout=5.0, cleanup_retries=1)
    deadline = p.start(0.0).timers[0]
    p.outcome(0, SUBMITTED, 0.0)
    p.outcome(only(p.fact(held(), 0.0)).id, ACCEPTED, 0.0)
    p.outcome(only(p.fact(reserved(), 0.0)).id, SCHEDULED, 0.0)
    release = only(p.outcome(only(p.fact(transferred(), 0.0)).id, APPLIED, 0.0))
    assert kinds(p.outcome(release.id, APPLIED, 1.0)) == ["Complete"]
    assert p.finished and p.completion is HandoffCompletion.SUCCESS and c.state == ("decoding",)

    step = p.fact(hf.Canceled(handoff_id=HID), 120.0)  # the request is canceled while decoding
    cancel = only(step)
    assert type(cancel.action) is CancelDestination and not p.finished
    assert p.expire(deadline, 121.0) == NOTHING and not p.timed_out  # it completed in time
    again = p.expire(step.timers[0], 125.0)
    assert again.actions == (cancel,)
    assert p.expire(again.timers[0], 130.0) == NOTHING  # retries spent
    assert p.finished and p.completion is HandoffCompletion.CANCELED
    assert p.result.unconfirmed_owners == (Owner.DESTINATION,)


# --------------------------------------------------------------------- refusals and settings


def test_a_refused_fact_is_recorded_and_changes_nothing() -> None:
    p = policy()
    p.start(0.0)
    foreign = hf.Canceled(handoff_id=OTHER)
    assert p.fact(foreign, 1.0) == NOTHING
    (rejection,) = p.result.rejected
    assert rejection.input == foreign
    assert rejection.error.code is hf.HandoffErrorCode.FOREIGN_HANDOFF
    assert state(p) == ("submitting", "destination_idle", "transfer_idle")


def test_an_unknown_acknowledgement_is_recorded() -> None:
    p = policy()
    p.start(0.0)
    assert p.outcome(42, APPLIED, 1.0) == NOTHING
    assert p.result.rejected[0].error.code is hf.HandoffErrorCode.UNKNOWN_ACTION


def test_not_a_fact_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="HandoffFact"):
        policy().fact("SourceHeld", 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"deadline": -1.0}, "deadline must be finite and >= 0"),
        ({"deadline": math.inf}, "deadline"),
        ({"deadline": 10**400}, "deadline must be finite"),
        ({"ack_timeout": 0.0}, "ack_timeout must be finite and > 0"),
        ({"ack_timeout": math.nan}, "ack_timeout"),
        ({"cleanup_ack_timeout": -2.0}, "cleanup_ack_timeout"),
        ({"deadline": "5"}, "deadline must be a number"),
        ({"deadline": [5]}, "deadline must be a number"),
        ({"ack_timeout": True}, "ack_timeout must be a number"),
        ({"cleanup_retries": -1}, "cleanup_retries must be >= 0"),
        ({"cleanup_retries": 2.0}, "cleanup_retries must be an int"),
        ({"cleanup_retries": True}, "cleanup_retries must be an int"),
        ({"cleanup_retries": {}}, "cleanup_retries must be an int"),
    ],
)
def test_unusable_settings_are_a_coded_configuration_error(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(hf.ConfigurationError, match=message) as raised:
        policy(**settings)
    assert raised.value.code is hf.HandoffErrorCode.INVALID_SESSION_OPTION


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"deadline": -1.0}, "deadline must be finite and >= 0"),
        ({"ack_timeout": True}, "ack_timeout must be a number"),
        ({"cleanup_retries": {}}, "cleanup_retries must be an int"),
    ],
)
def test_a_factory_checks_its_settings_when_made(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(hf.ConfigurationError, match=message) as raised:
        SessionPolicy.factory(**settings)
    assert raised.value.code is hf.HandoffErrorCode.INVALID_SESSION_OPTION


def test_a_factory_makes_the_policy_the_constructor_makes() -> None:
    settings: dict[str, Any] = {
        "deadline": 50.0,
        "ack_timeout": 5.0,
        "cleanup_ack_timeout": 2.0,
        "cleanup_retries": 1,
    }
    made = SessionPolicy.factory(**settings)
    built = made(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, 5.0))
    fresh = SessionPolicy(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, 5.0), **settings)
    assert made(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, 5.0)) is not built
    runs = []
    for p in (built, fresh):  # the same inputs, then every timer they ask for, in order
        steps = [
            p.start(0.0),
            p.outcome(0, HandoffActionOutcome.SUBMITTED, 1.0),
            p.fact(hf.Canceled(handoff_id=HID), 2.0),
        ]
        timers = sorted(timer for step in steps for timer in step.timers)
        while timers:
            timer = timers.pop(0)
            step = p.expire(timer, timer.when)
            steps.append(step)
            timers = sorted(timers + list(step.timers))
        runs.append(steps)
    assert runs[0] == runs[1]
    assert built.result == fresh.result
    assert built.result.resends == 1 and len(built.result.abandoned) == 1  # the rules ran


@pytest.mark.parametrize("thing", [None, "h1", object(), 42])
def test_a_policy_needs_a_coordinator(thing: object) -> None:
    with pytest.raises(hf.ConfigurationError, match="coordinator must be a HandoffCoordinator"):
        SessionPolicy(thing)  # type: ignore[arg-type]
    with pytest.raises(hf.ConfigurationError, match="coordinator must be a HandoffCoordinator"):
        SessionPolicy.factory()(thing)  # type: ignore[arg-type]


def test_a_class_checked_once_is_not_checked_again_but_others_are() -> None:
    """The members of a coordinator class are looked up once per class (the cache), and a
    class without them is refused however many classes were checked before it."""
    for _ in range(200):  # more classes than the cache keeps: it starts over, never grows
        kind = type("Coordinator", (HandoffCoordinator,), {})
        SessionPolicy(kind(HID, HandoffOrder.SOURCE_FIRST, 5.0))
    assert len(policy_checks._COORDINATOR_TYPES) <= 64
    with pytest.raises(hf.ConfigurationError, match="without handoff_id"):
        SessionPolicy(type("Partial", (), {})())


def test_ints_are_accepted_as_durations() -> None:
    p = policy(deadline=3, ack_timeout=1)
    assert p.start(0.0).timers == (SessionTimer(3.0, None), SessionTimer(1.0, 0, 0))


def test_facts_before_start_are_applied_and_start_then_does_nothing() -> None:
    p = policy(deadline=10.0)
    step = p.fact(hf.Canceled(handoff_id=HID), 0.0)
    assert kinds(step) == ["Complete"]  # nothing was engaged
    assert p.start(1.0) == NOTHING and p.finished
    assert p.completion is HandoffCompletion.CANCELED


def test_the_rule_tables_come_from_the_chart() -> None:
    assert {CancelSource, CancelDestination} == CLEANUP_ACTIONS
    assert {
        hf.HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT,
        hf.HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT,
        hf.HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED,
    } == PREMATURE
    assert {ReleaseSource, ActivateDestination, ReserveDestination, Complete}.isdisjoint(
        CLEANUP_ACTIONS
    )

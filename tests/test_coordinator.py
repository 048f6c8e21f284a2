"""HandoffCoordinator behaviour: the reference's scenarios, then every branch of the reference.

Every test runs on both engines (the ``engine`` fixture). Branch names in the
section headers are the reference's functions (``on_fact``, ``on_action_outcome``,
``advance_active``, ``advance_cleanup``) so each branch can be found here.
"""

from __future__ import annotations

import math
import uuid

import pytest

from handoff_fsm import (
    Canceled,
    ConfigurationError,
    Engine,
    FactError,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffError,
    HandoffErrorCode,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    OutcomeError,
    SourceHeld,
    StartTransfer,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)
from tests.support import (
    HANDOFF_ID,
    OTHER_ID,
    ack,
    destination_reserved,
    drive_to_activation,
    drive_to_transfer,
    kinds,
    one,
    source_held,
)

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST
ORDERS = (SF, DF)
S = HandoffActionOutcome

# ----------------------------------------------------------------------------
# The reference's own tests (seed) and the upstream suite's behaviours
# ----------------------------------------------------------------------------


def start_transfer_delay(
    timing: HandoffTransferTiming, fallback_ms: float, engine: Engine
) -> float:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, fallback_ms, engine=engine)
    submit = one(coordinator.start())
    assert kinds([submit]) == ["SubmitPrefill"]
    assert ack(coordinator, submit, S.SUBMITTED) == []
    reserve = one(coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing)))
    assert kinds([reserve]) == ["ReserveDestination"]
    assert ack(coordinator, reserve, S.ACCEPTED) == []
    transfer = one(coordinator.on_fact(destination_reserved(3)))
    assert isinstance(transfer.action, StartTransfer)
    return transfer.action.delay_ms


def test_missing_or_zero_bandwidth_uses_configured_fallback(engine: Engine) -> None:
    missing = HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 10)
    assert start_transfer_delay(missing, 7.5, engine) == 7.5
    zero_bandwidth = missing.model_copy(update={"kv_bytes_per_token": 1024, "bandwidth_gb_s": 0.0})
    assert start_transfer_delay(zero_bandwidth, 7.5, engine) == 7.5


@pytest.mark.parametrize("order", ORDERS)
def test_both_orders_reach_the_same_success_tail(order: HandoffOrder, engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(order, engine, delay_ms=2.5)
    assert isinstance(transfer.action, StartTransfer)
    assert transfer.action.delay_ms == 2.5
    assert ack(coordinator, transfer, S.SCHEDULED) == []
    activate = one(coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID)))
    release = one(ack(coordinator, activate, S.APPLIED))
    complete = one(ack(coordinator, release, S.APPLIED))
    assert kinds([activate, release, complete]) == [
        "ActivateDestination",
        "ReleaseSource",
        "Complete",
    ]
    assert [a.id for a in (transfer, activate, release, complete)] == [2, 3, 4, 5]
    assert coordinator.is_complete
    assert coordinator.completion is HandoffCompletion.SUCCESS
    # A late acknowledgement after completion is ignored.
    assert ack(coordinator, release, S.APPLIED) == []


@pytest.mark.parametrize(
    ("mode", "expected"),
    [(TransferTimingMode.FULL_PROMPT, 8.0), (TransferTimingMode.DESTINATION_MISSING, 4.0)],
)
def test_timing_mode_selects_full_or_destination_missing_footprint(
    mode: TransferTimingMode, expected: float, engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    timing = HandoffTransferTiming(mode, 8, 1_000_000, 1.0)
    reserve = one(coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing)))
    ack(coordinator, reserve, S.ACCEPTED)
    transfer = one(coordinator.on_fact(destination_reserved(4)))
    assert isinstance(transfer.action, StartTransfer)
    assert transfer.action.delay_ms == expected


def test_zero_missing_tokens_still_issues_a_zero_delay_transfer(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    timing = HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 8, 1_000_000, 1.0)
    reserve = one(coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing)))
    ack(coordinator, reserve, S.ACCEPTED)
    transfer = one(coordinator.on_fact(destination_reserved(0)))
    assert isinstance(transfer.action, StartTransfer)
    assert transfer.action.delay_ms == 0.0


def test_cancel_with_unacknowledged_reserve_cleans_both_owners(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    reserve = one(coordinator.on_fact(source_held()))
    cleanup = coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID))
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    assert ack(coordinator, reserve, S.ACCEPTED) == []  # late ack: recorded, no action
    completed = []
    for issued in cleanup:
        completed += ack(coordinator, issued, S.NOOP)
    assert kinds(completed) == ["Complete"]
    assert coordinator.completion is HandoffCompletion.CANCELED
    for issued in cleanup:  # repeated acks after completion: no-ops
        assert ack(coordinator, issued, S.NOOP) == []


@pytest.mark.parametrize(
    ("order", "fact"),
    [(SF, TimedOut(handoff_id=HANDOFF_ID)), (DF, Failed(handoff_id=HANDOFF_ID))],
)
def test_lost_activation_ack_is_cleaned_on_failure_or_timeout(
    order: HandoffOrder, fact: TimedOut | Failed, engine: Engine
) -> None:
    coordinator, activation = drive_to_activation(order, engine)
    cleanup = coordinator.on_fact(fact)
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    assert ack(coordinator, activation, S.APPLIED) == []
    for issued in cleanup:
        ack(coordinator, issued, S.NOOP)
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_out_of_order_facts_are_rejected(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    one(coordinator.start())
    with pytest.raises(FactError) as held:
        coordinator.on_fact(source_held())
    assert held.value.code is HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT

    coordinator = HandoffCoordinator(HANDOFF_ID, DF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.ACCEPTED)
    with pytest.raises(FactError) as completed:
        coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID))
    assert completed.value.code is HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED


@pytest.mark.parametrize("bandwidth", [-1.0, math.nan, math.inf])
def test_invalid_transfer_bandwidth_is_rejected_before_scheduling(
    bandwidth: float, engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    timing = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1_000_000, bandwidth)
    with pytest.raises(FactError, match="invalid handoff transfer bandwidth") as error:
        coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing))
    assert error.value.code is HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH
    assert error.value.handoff_id == HANDOFF_ID
    assert error.value.state == ("submitted", "destination_idle", "transfer_idle")


@pytest.mark.parametrize("order", ORDERS)
def test_timeout_before_initial_ack_cleans_only_the_issued_owner(
    order: HandoffOrder, engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    initial = one(coordinator.start())
    cleanup = one(coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID)))
    expected = "CancelSource" if order is SF else "CancelDestination"
    assert kinds([cleanup]) == [expected]
    assert ack(coordinator, initial, S.SUBMITTED if order is SF else S.ACCEPTED) == []
    complete = one(ack(coordinator, cleanup, S.NOOP))
    assert kinds([complete]) == ["Complete"]
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_destination_first_unacknowledged_prefill_cleans_both(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, DF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.ACCEPTED)
    submit = one(coordinator.on_fact(destination_reserved()))
    assert kinds([submit]) == ["SubmitPrefill"]
    cleanup = coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID))
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    assert ack(coordinator, submit, S.SUBMITTED) == []
    for issued in cleanup:
        ack(coordinator, issued, S.NOOP)
    assert coordinator.completion is HandoffCompletion.CANCELED


@pytest.mark.parametrize("order", ORDERS)
def test_timeout_after_transfer_is_scheduled_cleans_both(
    order: HandoffOrder, engine: Engine
) -> None:
    coordinator, transfer = drive_to_transfer(order, engine)
    ack(coordinator, transfer, S.SCHEDULED)
    cleanup = coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    for issued in cleanup:
        ack(coordinator, issued, S.NOOP)
    assert coordinator.completion is HandoffCompletion.CANCELED


@pytest.mark.parametrize("order", ORDERS)
def test_lost_release_ack_still_cleans_up_both(order: HandoffOrder, engine: Engine) -> None:
    coordinator, activation = drive_to_activation(order, engine)
    release = one(ack(coordinator, activation, S.APPLIED))
    cleanup = coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID))
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    assert ack(coordinator, release, S.APPLIED) == []
    for issued in cleanup:
        ack(coordinator, issued, S.NOOP)
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_duplicates_are_idempotent_but_conflicts_are_rejected(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    submit = one(coordinator.start())
    assert coordinator.start() == []
    assert ack(coordinator, submit, S.SUBMITTED) == []
    assert ack(coordinator, submit, S.SUBMITTED) == []
    with pytest.raises(OutcomeError) as conflict:
        ack(coordinator, submit, S.APPLIED)
    assert conflict.value.code is HandoffErrorCode.CONFLICTING_OUTCOME
    assert conflict.value.action_id == submit.id
    fact = source_held()
    assert len(coordinator.on_fact(fact)) == 1
    assert coordinator.on_fact(fact) == []
    with pytest.raises(FactError) as foreign:
        coordinator.on_fact(destination_reserved(handoff_id=OTHER_ID))
    assert foreign.value.code is HandoffErrorCode.FOREIGN_HANDOFF
    assert str(OTHER_ID) in str(foreign.value)


# ----------------------------------------------------------------------------
# on_fact: every branch
# ----------------------------------------------------------------------------


def completed_coordinator(engine: Engine, order: HandoffOrder = SF) -> HandoffCoordinator:
    coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    first = one(coordinator.start())
    cancel = one(coordinator.on_fact(Failed(handoff_id=HANDOFF_ID)))
    assert kinds(ack(coordinator, cancel, S.APPLIED)) == ["Complete"]
    assert ack(coordinator, first, S.SUBMITTED if order is SF else S.ACCEPTED) == []
    return coordinator


def cleaning_coordinator(engine: Engine) -> HandoffCoordinator:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    one(coordinator.start())
    assert kinds(coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))) == ["CancelSource"]
    return coordinator


def test_on_fact_foreign_id_is_rejected_in_every_phase(engine: Engine) -> None:
    phases = {
        "before start": HandoffCoordinator(HANDOFF_ID, SF, engine=engine),
        "cleaning up": cleaning_coordinator(engine),
        "complete": completed_coordinator(engine),
    }
    for phase, coordinator in phases.items():
        before = coordinator.snapshot()
        for fact in (source_held(handoff_id=OTHER_ID), TimedOut(handoff_id=OTHER_ID)):
            with pytest.raises(FactError) as error:
                coordinator.on_fact(fact)
            assert error.value.code is HandoffErrorCode.FOREIGN_HANDOFF, phase
        assert coordinator.snapshot() == before, phase


def test_on_fact_outside_active_is_ignored_without_validation(engine: Engine) -> None:
    invalid = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1, math.nan)
    for coordinator in (cleaning_coordinator(engine), completed_coordinator(engine)):
        before = coordinator.snapshot()
        for fact in (
            SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=invalid),  # premature + invalid
            destination_reserved(),  # premature
            TransferCompleted(handoff_id=HANDOFF_ID),  # premature
            Failed(handoff_id=HANDOFF_ID),
            TimedOut(handoff_id=HANDOFF_ID),
            Canceled(handoff_id=HANDOFF_ID),
        ):
            assert coordinator.on_fact(fact) == []
        assert coordinator.snapshot() == before


def test_source_held_again_is_ignored_even_when_invalid(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    one(coordinator.on_fact(source_held(2.5)))
    invalid = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1, -1.0)
    before = coordinator.snapshot()
    assert coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=invalid)) == []
    assert coordinator.snapshot() == before  # the first timing is kept


@pytest.mark.parametrize("order", ORDERS)
def test_source_held_before_submission_acknowledged_is_rejected(
    order: HandoffOrder, engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    # before start, after start (SourceFirst: submit unacknowledged), and for
    # DestinationFirst also after the prefill was submitted but not acknowledged.
    checkpoints = [coordinator.snapshot()]
    first = one(coordinator.start())
    checkpoints.append(coordinator.snapshot())
    if order is DF:
        ack(coordinator, first, S.ACCEPTED)
        one(coordinator.on_fact(destination_reserved()))
        checkpoints.append(coordinator.snapshot())
    invalid = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1, math.nan)
    for snapshot in checkpoints:
        restored = HandoffCoordinator.restore(snapshot, engine=engine)
        for timing in (invalid, source_held().transfer_timing):  # order of checks: premature wins
            with pytest.raises(FactError) as error:
                restored.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing))
            assert error.value.code is HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT
            assert "source held before prefill submission was acknowledged" in str(error.value)
        assert restored.snapshot() == snapshot


@pytest.mark.parametrize(
    ("timing", "code"),
    [
        (
            HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1, -0.5),
            HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH,
        ),
        # a finite positive bandwidth so small that the full-prompt delay overflows to +inf
        (
            HandoffTransferTiming(
                TransferTimingMode.DESTINATION_MISSING, 2**64 - 1, 2**64 - 1, 1e-300
            ),
            HandoffErrorCode.INVALID_TRANSFER_DELAY,
        ),
    ],
)
def test_source_held_with_invalid_timing_is_rejected(
    timing: HandoffTransferTiming, code: HandoffErrorCode, engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    before = coordinator.snapshot()
    with pytest.raises(FactError) as error:
        coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing))
    assert error.value.code is code
    assert coordinator.snapshot() == before
    # The same source may still report a valid timing afterwards.
    assert kinds(coordinator.on_fact(source_held())) == ["ReserveDestination"]


def test_destination_reserved_branches(engine: Engine) -> None:
    for order in ORDERS:
        coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
        with pytest.raises(FactError) as before_start:
            coordinator.on_fact(destination_reserved())
        assert before_start.value.code is HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT
    coordinator = HandoffCoordinator(HANDOFF_ID, DF, engine=engine)
    reserve = one(coordinator.start())
    with pytest.raises(FactError) as unaccepted:  # reserve issued, not yet accepted
        coordinator.on_fact(destination_reserved())
    assert unaccepted.value.code is HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT
    ack(coordinator, reserve, S.ACCEPTED)
    assert kinds(coordinator.on_fact(destination_reserved(5))) == ["SubmitPrefill"]
    before = coordinator.snapshot()
    assert coordinator.on_fact(destination_reserved(7)) == []  # already reserved: ignored
    assert coordinator.snapshot() == before
    assert before.transferable_prompt_tokens == 5


def test_transfer_completed_branches(engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(SF, engine)
    with pytest.raises(FactError) as unscheduled:  # issued but not scheduled
        coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID))
    assert unscheduled.value.code is HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED
    ack(coordinator, transfer, S.SCHEDULED)
    assert kinds(coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID))) == [
        "ActivateDestination"
    ]
    assert coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID)) == []  # repeated


@pytest.mark.parametrize("fact_type", [Failed, TimedOut, Canceled])
def test_failure_facts_begin_cleanup(fact_type: type[Failed], engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    assert kinds(coordinator.on_fact(fact_type(handoff_id=HANDOFF_ID))) == ["CancelSource"]
    assert coordinator.state == ("canceling_source", "destination_untouched")


# ----------------------------------------------------------------------------
# on_action_outcome: every branch
# ----------------------------------------------------------------------------


def test_outcomes_after_completion_are_ignored_even_for_unknown_ids(engine: Engine) -> None:
    coordinator = completed_coordinator(engine)
    before = coordinator.snapshot()
    for action_id in (0, 1, 2, 99):
        for outcome in (S.APPLIED, S.failed("late"), S.SUBMITTED):
            assert coordinator.on_action_outcome(action_id, outcome) == []
    assert coordinator.snapshot() == before


def test_unknown_action_is_rejected(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    for action_id in (0, 1, -1):
        with pytest.raises(OutcomeError) as error:
            coordinator.on_action_outcome(action_id, S.SUBMITTED)
        assert error.value.code is HandoffErrorCode.UNKNOWN_ACTION
        assert error.value.action_id == action_id
    one(coordinator.start())
    with pytest.raises(OutcomeError) as error:
        coordinator.on_action_outcome(1, S.SUBMITTED)
    assert error.value.code is HandoffErrorCode.UNKNOWN_ACTION


def test_failed_outcome_equality_includes_the_reason(engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(SF, engine)
    cleanup = ack(coordinator, transfer, S.failed("link down"))
    assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
    assert ack(coordinator, transfer, S.failed("link down")) == []  # duplicate
    with pytest.raises(OutcomeError) as error:
        ack(coordinator, transfer, S.failed("other reason"))
    assert error.value.code is HandoffErrorCode.CONFLICTING_OUTCOME


@pytest.mark.parametrize("order", ORDERS)
def test_failed_cleanup_action_is_an_error(order: HandoffOrder, engine: Engine) -> None:
    coordinator, _ = drive_to_transfer(order, engine)
    cleanup = coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID))
    for issued in cleanup:
        before = coordinator.snapshot()
        with pytest.raises(OutcomeError) as error:
            ack(coordinator, issued, S.failed("stuck"))
        assert error.value.code is HandoffErrorCode.CLEANUP_ACTION_FAILED
        assert coordinator.snapshot() == before
    for issued in cleanup:  # improvement: the failure was not recorded, a retry succeeds
        ack(coordinator, issued, S.APPLIED)
    assert coordinator.completion is HandoffCompletion.CANCELED


@pytest.mark.parametrize("order", ORDERS)
def test_failed_outcome_of_each_active_action_begins_cleanup(
    order: HandoffOrder, engine: Engine
) -> None:
    # Drive the success path and fail the n-th action instead of acknowledging it.
    script = _success_script(order)
    for failing in range(len(script)):
        coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
        pending = one(coordinator.start())
        for step, outcome, fact in script[:failing]:
            assert kinds([pending]) == [step]
            out = ack(coordinator, pending, outcome)
            pending = one(coordinator.on_fact(fact)) if fact is not None else one(out)
        assert kinds([pending]) == [script[failing][0]]
        cleanup = ack(coordinator, pending, S.failed("boom"))
        engaged = ["CancelSource", "CancelDestination"]
        if failing == 0:
            engaged = ["CancelSource"] if order is SF else ["CancelDestination"]
        assert kinds(cleanup) == engaged, (order, failing)
        assert coordinator.completion is None
        for issued in cleanup:
            ack(coordinator, issued, S.NOOP)
        assert coordinator.completion is HandoffCompletion.CANCELED


def _success_script(
    order: HandoffOrder,
) -> list[tuple[str, HandoffActionOutcome, HandoffFact | None]]:
    """(expected pending action, its good outcome, the fact that follows or None)."""
    completed = TransferCompleted(handoff_id=HANDOFF_ID)
    head: list[tuple[str, HandoffActionOutcome, HandoffFact | None]]
    if order is SF:
        head = [
            ("SubmitPrefill", S.SUBMITTED, source_held()),
            ("ReserveDestination", S.ACCEPTED, destination_reserved()),
        ]
    else:
        head = [
            ("ReserveDestination", S.ACCEPTED, destination_reserved()),
            ("SubmitPrefill", S.SUBMITTED, source_held()),
        ]
    return [
        *head,
        ("StartTransfer", S.SCHEDULED, completed),
        ("ActivateDestination", S.APPLIED, None),
        ("ReleaseSource", S.APPLIED, None),
    ]


def test_failed_outcome_during_cleanup_changes_nothing_but_is_recorded(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    submit = one(coordinator.start())
    cancel = one(coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID)))
    assert ack(coordinator, submit, S.failed("late failure")) == []
    assert coordinator.snapshot().outcomes[0].outcome == S.failed("late failure")
    assert kinds(ack(coordinator, cancel, S.NOOP)) == ["Complete"]


WRONG_OUTCOMES = {
    "SubmitPrefill": [S.ACCEPTED, S.SCHEDULED, S.APPLIED, S.NOOP],
    "ReserveDestination": [S.SUBMITTED, S.SCHEDULED, S.APPLIED, S.NOOP],
    "StartTransfer": [S.SUBMITTED, S.ACCEPTED, S.APPLIED, S.NOOP],
    "ActivateDestination": [S.SUBMITTED, S.ACCEPTED, S.SCHEDULED, S.NOOP],
    "ReleaseSource": [S.SUBMITTED, S.ACCEPTED, S.SCHEDULED],
    "CancelSource": [S.SUBMITTED, S.ACCEPTED, S.SCHEDULED],
    "CancelDestination": [S.SUBMITTED, S.ACCEPTED, S.SCHEDULED],
}


@pytest.mark.parametrize("order", ORDERS)
def test_each_action_accepts_only_its_outcomes(order: HandoffOrder, engine: Engine) -> None:
    # Walk the success path; before each good ack, every wrong outcome is rejected atomically.
    coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    pending = one(coordinator.start())
    for step, good, fact in _success_script(order):
        for wrong in WRONG_OUTCOMES[step]:
            before = coordinator.snapshot()
            with pytest.raises(OutcomeError) as error:
                ack(coordinator, pending, wrong)
            assert error.value.code is HandoffErrorCode.INVALID_OUTCOME, (step, wrong)
            assert coordinator.snapshot() == before
        out = ack(coordinator, pending, good)
        pending = one(coordinator.on_fact(fact)) if fact is not None else one(out)
    assert kinds([pending]) == ["Complete"]
    # Cleanup actions accept Applied and Noop only.
    coordinator, _ = drive_to_transfer(order, engine)
    cleanup = coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))
    for issued in cleanup:
        for wrong in WRONG_OUTCOMES[kinds([issued])[0]]:
            with pytest.raises(OutcomeError) as error:
                ack(coordinator, issued, wrong)
            assert error.value.code is HandoffErrorCode.INVALID_OUTCOME


@pytest.mark.parametrize("outcome", [S.APPLIED, S.NOOP])
def test_release_accepts_applied_or_noop(outcome: HandoffActionOutcome, engine: Engine) -> None:
    coordinator, activation = drive_to_activation(SF, engine)
    release = one(ack(coordinator, activation, S.APPLIED))
    assert kinds(ack(coordinator, release, outcome)) == ["Complete"]
    assert coordinator.completion is HandoffCompletion.SUCCESS


# ----------------------------------------------------------------------------
# advance_active / advance_cleanup: every branch
# ----------------------------------------------------------------------------


def test_advance_active_issues_one_action_per_step_in_order(engine: Engine) -> None:
    for order in ORDERS:
        coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
        issued = coordinator.start()
        trail = list(issued)
        pending = one(issued)
        for _step, good, fact in _success_script(order):
            out = ack(coordinator, pending, good)
            if fact is not None:
                assert out == []  # an acknowledgement alone advances nothing here
                out = coordinator.on_fact(fact)
            pending = one(out)
            trail.append(pending)
        assert [a.id for a in trail] == list(range(6))
        first_two = ["SubmitPrefill", "ReserveDestination"]
        if order is DF:
            first_two.reverse()
        assert kinds(trail) == [
            *first_two,
            "StartTransfer",
            "ActivateDestination",
            "ReleaseSource",
            "Complete",
        ]


def test_transfer_uses_fallback_when_the_timing_has_no_model(engine: Engine) -> None:
    for delay_ms, fallback, expected in [(None, 3.25, 3.25), (2.5, 3.25, 2.5), (None, 0.0, 0.0)]:
        _, transfer = drive_to_transfer(SF, engine, delay_ms=delay_ms, fallback_ms=fallback)
        assert isinstance(transfer.action, StartTransfer)
        assert transfer.action.delay_ms == expected


def test_destination_missing_delay_is_not_validated_like_the_reference(engine: Engine) -> None:
    # Only the full-prompt delay is validated; a huge missing-token count can still give
    # an infinite StartTransfer delay, exactly as in the reference.
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(coordinator, one(coordinator.start()), S.SUBMITTED)
    timing = HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 0, 2**64 - 1, 1e-300)
    reserve = one(coordinator.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing)))
    ack(coordinator, reserve, S.ACCEPTED)
    transfer = one(coordinator.on_fact(destination_reserved(2**64 - 1)))
    assert isinstance(transfer.action, StartTransfer)
    assert transfer.action.delay_ms == math.inf


@pytest.mark.parametrize("fact_type", [Failed, TimedOut, Canceled])
def test_cleanup_before_start_completes_immediately(
    fact_type: type[Failed], engine: Engine
) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    complete = one(coordinator.on_fact(fact_type(handoff_id=HANDOFF_ID)))
    assert kinds([complete]) == ["Complete"]
    assert complete.id == 0
    assert coordinator.completion is HandoffCompletion.CANCELED


def test_cleanup_waits_for_every_cancel_in_any_order(engine: Engine) -> None:
    for first, second in ((0, 1), (1, 0)):
        coordinator, _ = drive_to_transfer(DF, engine)
        cleanup = coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID))
        assert kinds(cleanup) == ["CancelSource", "CancelDestination"]
        assert ack(coordinator, cleanup[first], S.APPLIED) == []
        assert not coordinator.is_complete
        complete = one(ack(coordinator, cleanup[second], S.NOOP))
        assert kinds([complete]) == ["Complete"]
        assert complete.id == cleanup[1].id + 1


def test_release_ack_during_cleanup_counts_as_the_source_cleanup(engine: Engine) -> None:
    coordinator, activation = drive_to_activation(SF, engine)
    release = one(ack(coordinator, activation, S.APPLIED))
    cancel_source, cancel_destination = coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))
    assert ack(coordinator, release, S.NOOP) == []
    assert coordinator.state == ("source_canceled", "canceling_destination")
    complete = one(ack(coordinator, cancel_destination, S.APPLIED))
    assert kinds([complete]) == ["Complete"]
    assert ack(coordinator, cancel_source, S.APPLIED) == []  # late: ignored


def test_active_phase_acks_during_cleanup_are_recorded_and_ignored(engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(SF, engine)
    cleanup = coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID))
    assert ack(coordinator, transfer, S.SCHEDULED) == []
    with pytest.raises(OutcomeError):  # still judged against the action kind
        ack(coordinator, transfer, S.APPLIED)
    for issued in cleanup:
        ack(coordinator, issued, S.APPLIED)
    assert coordinator.completion is HandoffCompletion.CANCELED


# ----------------------------------------------------------------------------
# start(), construction, and the improvements over the reference
# ----------------------------------------------------------------------------


def test_start_engages_the_first_owner_by_order(engine: Engine) -> None:
    for order, first in ((SF, "SubmitPrefill"), (DF, "ReserveDestination")):
        coordinator = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
        issued = one(coordinator.start())
        assert (issued.id, kinds([issued])) == (0, [first])
        assert issued.action.handoff_id == HANDOFF_ID
        assert coordinator.start() == []


def test_start_after_completion_issues_nothing(engine: Engine) -> None:
    # Improvement 2: the reference would issue SubmitPrefill on a completed handoff here.
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    one(coordinator.on_fact(Canceled(handoff_id=HANDOFF_ID)))
    assert coordinator.start() == []
    assert coordinator.is_complete


@pytest.mark.parametrize("fallback", [-0.001, math.nan, math.inf, -math.inf])
def test_invalid_fallback_is_rejected_at_construction(fallback: float, engine: Engine) -> None:
    # Improvement 3: the reference only debug_assert!s this.
    with pytest.raises(ConfigurationError) as error:
        HandoffCoordinator(HANDOFF_ID, SF, fallback, engine=engine)
    assert error.value.code is HandoffErrorCode.INVALID_FALLBACK


def test_invalid_outcome_does_not_wedge_the_handoff(engine: Engine) -> None:
    # Improvement 1: the reference records the wrong outcome first, so the right one would
    # then be a "conflicting outcome" and the handoff could never proceed.
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    submit = one(coordinator.start())
    with pytest.raises(OutcomeError):
        ack(coordinator, submit, S.ACCEPTED)
    assert ack(coordinator, submit, S.SUBMITTED) == []
    assert kinds(coordinator.on_fact(source_held())) == ["ReserveDestination"]


def test_constructor_accepts_strings_and_rejects_wrong_types(engine: Engine) -> None:
    coordinator = HandoffCoordinator(str(HANDOFF_ID), "DestinationFirst", 1, engine=engine)
    assert coordinator.handoff_id == HANDOFF_ID
    assert coordinator.order is DF
    assert coordinator.fallback_transfer_delay_ms == 1.0
    assert coordinator.engine == engine
    with pytest.raises(ValueError, match="uuid"):
        HandoffCoordinator("not-a-uuid", SF, engine=engine)
    with pytest.raises(ValueError, match="SourceFirst"):
        HandoffCoordinator(HANDOFF_ID, "sideways", engine=engine)
    with pytest.raises(ValueError, match="float"):
        HandoffCoordinator(HANDOFF_ID, SF, True, engine=engine)
    with pytest.raises(ValueError, match="engine"):
        HandoffCoordinator(HANDOFF_ID, SF, engine="fast")  # type: ignore[arg-type]


def test_wrong_input_types_are_type_errors(engine: Engine) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    submit = one(coordinator.start())
    before = coordinator.snapshot()
    with pytest.raises(TypeError, match="HandoffFact"):
        coordinator.on_fact({"SourceHeld": {}})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="action_id"):
        coordinator.on_action_outcome(True, S.SUBMITTED)
    with pytest.raises(TypeError, match="action_id"):
        coordinator.on_action_outcome("0", S.SUBMITTED)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="HandoffActionOutcome"):
        coordinator.on_action_outcome(submit.id, "Submitted")  # type: ignore[arg-type]
    assert coordinator.snapshot() == before


# ----------------------------------------------------------------------------
# Atomicity: every error code leaves the coordinator exactly as it was
# ----------------------------------------------------------------------------


def _error_cases(engine: Engine) -> dict[HandoffErrorCode, tuple[HandoffCoordinator, object]]:
    """For each coordinator-level code, a coordinator and the call that raises it."""
    fresh = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    one(fresh.start())
    submitted = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    ack(submitted, one(submitted.start()), S.SUBMITTED)
    accepted_df = HandoffCoordinator(HANDOFF_ID, DF, engine=engine)
    accepted_df.start()
    transfer_sf, transfer = drive_to_transfer(SF, engine)
    cleaning, _ = drive_to_transfer(DF, engine)
    cancel = cleaning.on_fact(TimedOut(handoff_id=HANDOFF_ID))[0]
    conflicting = HandoffCoordinator(HANDOFF_ID, SF, engine=engine)
    first = one(conflicting.start())
    ack(conflicting, first, S.SUBMITTED)
    huge = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 2**64 - 1, 2**64 - 1, 1e-300)
    return {
        HandoffErrorCode.FOREIGN_HANDOFF: (
            fresh,
            lambda c: c.on_fact(source_held(handoff_id=OTHER_ID)),
        ),
        HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT: (fresh, lambda c: c.on_fact(source_held())),
        HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT: (
            accepted_df,
            lambda c: c.on_fact(destination_reserved()),
        ),
        HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED: (
            transfer_sf,
            lambda c: c.on_fact(TransferCompleted(handoff_id=HANDOFF_ID)),
        ),
        HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH: (
            submitted,
            lambda c: c.on_fact(
                SourceHeld(
                    handoff_id=HANDOFF_ID,
                    transfer_timing=HandoffTransferTiming(
                        TransferTimingMode.FULL_PROMPT, 1, 1, math.inf
                    ),
                )
            ),
        ),
        HandoffErrorCode.INVALID_TRANSFER_DELAY: (
            submitted,
            lambda c: c.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=huge)),
        ),
        HandoffErrorCode.UNKNOWN_ACTION: (fresh, lambda c: c.on_action_outcome(42, S.APPLIED)),
        HandoffErrorCode.CONFLICTING_OUTCOME: (
            conflicting,
            lambda c: c.on_action_outcome(first.id, S.NOOP),
        ),
        HandoffErrorCode.CLEANUP_ACTION_FAILED: (
            cleaning,
            lambda c: c.on_action_outcome(cancel.id, S.failed("x")),
        ),
        HandoffErrorCode.INVALID_OUTCOME: (
            transfer_sf,
            lambda c: c.on_action_outcome(transfer.id, S.APPLIED),
        ),
    }


def test_every_rejected_call_leaves_the_coordinator_unchanged(engine: Engine) -> None:
    cases = _error_cases(engine)
    for code, (coordinator, call) in cases.items():
        before = coordinator.snapshot()
        with pytest.raises(HandoffError) as error:
            call(coordinator)  # type: ignore[operator]
        assert error.value.code is code
        assert error.value.handoff_id == HANDOFF_ID
        assert error.value.state == coordinator.state
        assert coordinator.snapshot() == before, code
        # and a second identical call is rejected identically (nothing was recorded)
        with pytest.raises(HandoffError) as again:
            call(coordinator)  # type: ignore[operator]
        assert again.value.code is code
    # Construction and restore codes create no coordinator to leave unchanged; they
    # are tested in test_coordinator_facade.py and test_snapshot.py.
    covered = set(cases) | {
        HandoffErrorCode.INVALID_HANDOFF_ID,
        HandoffErrorCode.INVALID_ORDER,
        HandoffErrorCode.INVALID_REVISION,
        HandoffErrorCode.INVALID_ENGINE,
        HandoffErrorCode.INVALID_FALLBACK,
        HandoffErrorCode.INVALID_SNAPSHOT,
    }
    coordinator_codes = {
        code
        for code in HandoffErrorCode
        if not code.value.startswith("conformance_")
        and code
        not in {
            HandoffErrorCode.UNSUPPORTED_BACKEND,
            # a session's settings (tests/test_policy.py, tests/test_aio.py)
            HandoffErrorCode.INVALID_SESSION_OPTION,
        }
    }
    assert covered == coordinator_codes


def test_error_messages_name_the_values(engine: Engine) -> None:
    cases = _error_cases(engine)
    expectations = {
        HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH: "inf",
        HandoffErrorCode.INVALID_TRANSFER_DELAY: "inf",
        HandoffErrorCode.UNKNOWN_ACTION: "42",
        HandoffErrorCode.CONFLICTING_OUTCOME: "Noop after Submitted",
        HandoffErrorCode.CLEANUP_ACTION_FAILED: "CancelSource",
        HandoffErrorCode.INVALID_OUTCOME: (
            "Applied for action 2 (StartTransfer); expected Scheduled"
        ),
        HandoffErrorCode.FOREIGN_HANDOFF: str(OTHER_ID),
    }
    for code, needle in expectations.items():
        coordinator, call = cases[code]
        with pytest.raises(HandoffError) as error:
            call(coordinator)  # type: ignore[operator]
        assert needle in str(error.value), (code, str(error.value))


def test_foreign_fact_is_checked_before_anything_else() -> None:
    coordinator = HandoffCoordinator(uuid.uuid4(), SF)
    with pytest.raises(FactError) as error:
        coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID))
    assert error.value.code is HandoffErrorCode.FOREIGN_HANDOFF

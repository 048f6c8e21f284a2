"""SessionPolicy.snapshot / restore: an exact copy that continues as the original does;
and a late acknowledgement in a976b2bf's reopened cleanup, which the system check found.

The copy is checked by running two sessions side by side from every point of a faulty
run (refusals, held-back facts, timers, re-sends, abandonment): the original, and a
policy restored from its snapshot around a coordinator restored from the coordinator's
snapshot. Every later step, every result and every later snapshot must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from handoff_fsm import (
    Canceled,
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffOrder,
    SourceHeld,
    TransferCompleted,
)
from handoff_fsm.policy import SessionPolicy, SessionStep, SessionTimer
from handoff_fsm.verify.exploration import VALID_TIMING

HANDOFF = UUID("00000000-0000-4000-8000-0000000000aa")
MAKE = SessionPolicy.factory(
    deadline=50.0, ack_timeout=5.0, cleanup_ack_timeout=5.0, cleanup_retries=2
)

Call = Callable[[SessionPolicy], SessionStep]


def _ack(action_id: int, outcome: HandoffActionOutcome) -> Call:
    return lambda policy: policy.outcome(action_id, outcome, 1.0)


def _fact(fact: object) -> Call:
    return lambda policy: policy.fact(fact, 1.0)  # type: ignore[arg-type]


def _expire(action_id: int | None, send: int, when: float) -> Call:
    return lambda policy: policy.expire(SessionTimer(when, action_id, send), when)


# A SourceFirst run: SourceHeld comes early (held back), the reservation's acknowledgement
# is refused once (a wrong outcome), its timer fires (Failed: cleanup), the source's
# cancel is answered, the destination's cancel is re-sent twice and then abandoned.
RUN: list[Call] = [
    _fact(SourceHeld(handoff_id=HANDOFF, transfer_timing=VALID_TIMING)),
    _ack(0, HandoffActionOutcome.SUBMITTED),
    _ack(1, HandoffActionOutcome.SCHEDULED),
    _expire(1, 0, 6.0),
    _ack(2, HandoffActionOutcome.APPLIED),
    _expire(3, 0, 11.0),
    _expire(3, 1, 16.0),
    _expire(3, 2, 21.0),
    _ack(1, HandoffActionOutcome.ACCEPTED),
    _fact(Canceled(handoff_id=HANDOFF)),
]


def _started() -> tuple[HandoffCoordinator, SessionPolicy]:
    coordinator = HandoffCoordinator(HANDOFF, HandoffOrder.SOURCE_FIRST)
    policy = MAKE(coordinator)
    policy.start(0.0)
    return coordinator, policy


def _view(policy: SessionPolicy) -> tuple[object, ...]:
    """All a policy holds, with each refusal by its code and words (an error is equal only
    to itself, and a copy raises its own)."""
    taken = policy.snapshot()
    result = policy.result
    rejected = tuple((r.input, r.error.code, r.error.message) for r in result.rejected)
    others = {name: getattr(result, name) for name in result.__slots__ if name != "rejected"}
    return (taken.settings, taken.decisive, taken.inputs, rejected, others)


def _copy(coordinator: HandoffCoordinator, policy: SessionPolicy) -> SessionPolicy:
    return SessionPolicy.restore(
        HandoffCoordinator.restore(coordinator.snapshot()), policy.snapshot()
    )


@pytest.mark.parametrize("cut", range(len(RUN) + 1))
def test_a_restored_policy_continues_identically(cut: int) -> None:
    coordinator, policy = _started()
    for call in RUN[:cut]:
        call(policy)
    copy = _copy(coordinator, policy)
    assert copy.snapshot() == policy.snapshot()  # the very same state, errors and all
    for call in RUN[cut:]:
        assert call(copy) == call(policy)
        assert _view(copy) == _view(policy)
        assert copy.coordinator.snapshot() == coordinator.snapshot()  # type: ignore[attr-defined]
    assert policy.result.abandoned  # the run does reach the rare parts


def test_a_snapshot_does_not_change_with_its_policy() -> None:
    _, policy = _started()
    for call in RUN[:4]:
        call(policy)
    taken = policy.snapshot()
    kept = (taken.decisive, taken.inputs, taken.log and list(taken.log.rejected))
    for call in RUN[4:]:
        call(policy)
    assert (taken.decisive, taken.inputs, taken.log and list(taken.log.rejected)) == kept
    assert policy.snapshot() != taken


def test_decisive_state_leaves_out_only_tallies() -> None:
    """Two policies that decide alike (one refused an input more) share their decisive
    state; one that awaits another send does not."""
    _, quiet = _started()
    _, noisy = _started()
    noisy.outcome(0, HandoffActionOutcome.ACCEPTED, 1.0)  # refused: a wrong outcome
    assert noisy.result.rejected and not quiet.result.rejected
    # the refused acknowledgement counts as lost: noisy failed the submission
    assert noisy.snapshot().decisive != quiet.snapshot().decisive
    _, again = _started()
    again.fact(TransferCompleted(handoff_id=HANDOFF), 1.0)  # ignored: nothing depends on it
    assert again.result.rejected  # refused as premature and nobody owes it: a rejection
    assert again.snapshot().decisive == quiet.snapshot().decisive
    assert again.snapshot() != quiet.snapshot()


def _succeeded_and_reopened() -> tuple[HandoffCoordinator, SessionPolicy]:
    coordinator = HandoffCoordinator(HANDOFF, HandoffOrder.SOURCE_FIRST, revision="a976b2bf")
    policy = MAKE(coordinator)
    policy.start(0.0)
    policy.outcome(0, HandoffActionOutcome.SUBMITTED, 1.0)
    policy.fact(SourceHeld(handoff_id=HANDOFF, transfer_timing=VALID_TIMING), 1.0)
    policy.outcome(1, HandoffActionOutcome.ACCEPTED, 1.0)
    policy.fact(DestinationReserved(handoff_id=HANDOFF, transferable_prompt_tokens=10), 1.0)
    policy.outcome(2, HandoffActionOutcome.SCHEDULED, 1.0)
    policy.fact(TransferCompleted(handoff_id=HANDOFF), 1.0)
    policy.outcome(3, HandoffActionOutcome.APPLIED, 1.0)
    policy.outcome(4, HandoffActionOutcome.APPLIED, 1.0)
    assert coordinator.completion is HandoffCompletion.SUCCESS
    [_] = policy.fact(Canceled(handoff_id=HANDOFF), 1.0).actions  # CancelDestination
    assert not coordinator.is_complete
    return coordinator, policy


def test_a_late_acknowledgement_in_a_reopened_cleanup_is_ignored() -> None:
    """Found by ``check --system --revision a976b2bf --duplicates 1``: a duplicate of the
    release's acknowledgement that reaches the reopened cleanup was refused
    (``unknown_action``) and recorded as a rejection; the completed handoff (and every
    seed handoff) takes it silently, and now so does the session."""
    coordinator, policy = _succeeded_and_reopened()
    assert policy.outcome(4, HandoffActionOutcome.APPLIED, 2.0) == SessionStep()
    assert policy.result.rejected == ()
    assert [i.input for i in policy.result.ignored] == [(4, HandoffActionOutcome.APPLIED)]
    assert "issued before the handoff completed" in policy.result.ignored[0].reason
    assert not coordinator.is_complete  # the cleanup goes on


def test_an_unknown_id_in_a_reopened_cleanup_is_still_a_rejection() -> None:
    """Only acknowledgements of actions issued before the cleanup reopened are late
    answers; an id never issued is still the executor's mistake."""
    _, policy = _succeeded_and_reopened()
    policy.outcome(99, HandoffActionOutcome.APPLIED, 2.0)
    assert [rejection.input for rejection in policy.result.rejected] == [
        (99, HandoffActionOutcome.APPLIED)
    ]

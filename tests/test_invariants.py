"""The observer and its rules, judged on hand-built replies (no coordinator needed).

Each rule is shown to hold for what a correct coordinator answers and to fire
for the reply that breaks it; the explorer's end-to-end proof that every rule
can fail is tests/test_explore_mutants.py.
"""

from __future__ import annotations

import json
from uuid import UUID

import pytest

from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffError,
    HandoffErrorCode,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    ReleaseSource,
    ReserveDestination,
    Revision,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)
from handoff_fsm.io.inputs import Input, Reply, reply_of
from handoff_fsm.verify.invariants import InputClass, Observation, observe
from handoff_fsm.verify.rules import (
    PROMISES,
    RULES,
    STATEMENTS,
    STATEMENTS_BY_REVISION,
    Invariant,
    invariants_of,
    statement,
)

ID = UUID(int=1)
OTHER = UUID(int=2)
SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST
GOOD_TIMING = HandoffTransferTiming(
    mode="full_prompt", full_prompt_tokens=10, kv_bytes_per_token=1024, bandwidth_gb_s=1.0
)
BAD_TIMING = HandoffTransferTiming(
    mode="full_prompt", full_prompt_tokens=10, kv_bytes_per_token=1024, bandwidth_gb_s=-1.0
)
UNSCHEDULABLE_TIMING = HandoffTransferTiming(
    mode=TransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=1,
    kv_bytes_per_token=1,
    bandwidth_gb_s=1e-314,
)
"""Valid (one prompt token takes ~1e308 ms), but 10 transferable tokens take forever."""
START = Input("start")
SEED = Revision.SEED
A976 = Revision.A976B2BF


def fact(value: object) -> Input:
    return Input("fact", fact=value)  # type: ignore[arg-type]


def outcome(action_id: int, value: HandoffActionOutcome) -> Input:
    return Input("outcome", action_id=action_id, outcome=value)


def issued(action_id: int, kind: type, handoff_id: UUID = ID) -> IssuedHandoffAction:
    if kind is StartTransfer:
        return IssuedHandoffAction.trusted(
            action_id, StartTransfer.issued_with_delay(handoff_id, GOOD_TIMING.delay_ms(10) or 0.0)
        )
    return IssuedHandoffAction.trusted(action_id, kind.issued_for(handoff_id))  # type: ignore[attr-defined]


def returned(*actions: IssuedHandoffAction, completion: HandoffCompletion | None = None) -> Reply:
    return Reply(actions=actions, is_complete=completion is not None, completion=completion)


def reopened(*actions: IssuedHandoffAction) -> Reply:
    """A reply while a cleanup reopened after Success runs: not complete, completion Success."""
    return Reply(actions=actions, is_complete=False, completion=HandoffCompletion.SUCCESS)


def play(
    order: HandoffOrder, steps: list[tuple[Input, Reply]], revision: Revision = SEED
) -> tuple[Observation, list[Invariant]]:
    """Feed (input, reply) pairs to a fresh observer; the invariants broken, in order."""
    obs = Observation(ID, order, revision)
    broken: list[Invariant] = []
    for op, reply in steps:
        obs, findings = observe(obs, op, reply)
        broken += [invariant for invariant, _ in findings]
    return obs, broken


SUBMITTED = HandoffActionOutcome.SUBMITTED
ACCEPTED = HandoffActionOutcome.ACCEPTED
SCHEDULED = HandoffActionOutcome.SCHEDULED
APPLIED = HandoffActionOutcome.APPLIED
NOOP = HandoffActionOutcome.NOOP

HELD = fact(SourceHeld(handoff_id=ID, transfer_timing=GOOD_TIMING))
RESERVED = fact(DestinationReserved(handoff_id=ID, transferable_prompt_tokens=10))
TRANSFERRED = fact(TransferCompleted(handoff_id=ID))
FAILED = fact(Failed(handoff_id=ID))

SUCCESS_SF: list[tuple[Input, Reply]] = [
    (START, returned(issued(0, SubmitPrefill))),
    (outcome(0, SUBMITTED), returned()),
    (HELD, returned(issued(1, ReserveDestination))),
    (outcome(1, ACCEPTED), returned()),
    (RESERVED, returned(issued(2, StartTransfer))),
    (outcome(2, SCHEDULED), returned()),
    (TRANSFERRED, returned(issued(3, ActivateDestination))),
    (outcome(3, APPLIED), returned(issued(4, ReleaseSource))),
    (outcome(4, NOOP), returned(issued(5, Complete), completion=HandoffCompletion.SUCCESS)),
]


CHANGED_BY_A976B2BF = {
    Invariant.COMPLETE_ONCE,
    Invariant.COMPLETION_CONSISTENT,
    Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
    Invariant.CANCELED_ONLY_THROUGH_CLEANUP,
    Invariant.INVALID_INPUT_REJECTED,
    Invariant.LIVENESS,
}


def test_every_invariant_is_stated_once_per_revision_it_applies_to() -> None:
    assert set(STATEMENTS_BY_REVISION) == set(Revision)
    for revision in Revision:
        rules = [rule for rule in RULES if revision in rule.revisions]
        assert len({rule.invariant for rule in rules}) == len(rules)
        assert tuple(STATEMENTS_BY_REVISION[revision]) == invariants_of(revision)
    assert STATEMENTS_BY_REVISION[SEED] == STATEMENTS
    assert {rule.invariant for rule in RULES} == set(Invariant)
    assert all(len(rule.statement) > 40 for rule in RULES)
    # The seed promises what it promised before revisions existed; a976b2bf adds one.
    assert set(invariants_of(SEED)) == set(Invariant) - {Invariant.REOPENS_AFTER_SUCCESS}
    assert set(invariants_of(A976)) == set(Invariant)
    assert statement(Invariant.COMPLETE_ONCE, SEED) == (
        "Complete is issued at most once, last in its reply, and nothing is issued after it"
    )
    with pytest.raises(KeyError):
        statement(Invariant.REOPENS_AFTER_SUCCESS, SEED)


def test_a976b2bf_restates_exactly_the_invariants_whose_meaning_changed() -> None:
    changed = {
        invariant
        for invariant in invariants_of(SEED)
        if statement(invariant, SEED) != statement(invariant, A976)
    }
    assert changed == CHANGED_BY_A976B2BF
    assert "twice" in STATEMENTS_BY_REVISION[A976][Invariant.COMPLETE_ONCE]
    assert (
        "Success while the reopened cleanup runs"
        in (STATEMENTS_BY_REVISION[A976][Invariant.COMPLETION_CONSISTENT])
    )


def test_promises_are_stated_for_every_revision() -> None:
    assert set(PROMISES) == set(Revision)
    assert not PROMISES[SEED].reopens_after_success
    assert not PROMISES[SEED].validates_scheduled_delay
    assert PROMISES[A976].reopens_after_success
    assert PROMISES[A976].validates_scheduled_delay


def test_a_correct_success_breaks_nothing() -> None:
    obs, broken = play(SF, SUCCESS_SF)
    assert broken == []
    assert obs.complete
    assert obs.completion is HandoffCompletion.SUCCESS
    assert obs.last_id == 5
    assert list(obs.outstanding()) == []


def test_the_real_coordinator_agrees_with_the_hand_built_replies() -> None:
    coordinator = HandoffCoordinator(ID, SF)
    for op, expected in SUCCESS_SF:
        assert reply_of(coordinator, op) == expected


def test_a_correct_cleanup_breaks_nothing() -> None:
    obs, broken = play(
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (FAILED, returned(issued(1, CancelSource))),
            (
                outcome(1, APPLIED),
                returned(issued(2, Complete), completion=HandoffCompletion.CANCELED),
            ),
            # After Complete: late acknowledgements are ignored, anything issues nothing.
            (outcome(0, SUBMITTED), returned(completion=HandoffCompletion.CANCELED)),
            (outcome(9, APPLIED), returned(completion=HandoffCompletion.CANCELED)),
        ],
    )
    assert broken == []
    assert obs.completion is HandoffCompletion.CANCELED


def test_classify() -> None:
    obs, _ = play(
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (outcome(0, SUBMITTED), returned()),
            (HELD, returned(issued(1, ReserveDestination))),
        ],
    )
    cases = {
        START: InputClass.START,
        HELD: InputClass.PROGRESS_FACT,
        fact(SourceHeld(handoff_id=ID, transfer_timing=BAD_TIMING)): InputClass.INVALID_TIMING,
        fact(SourceHeld(handoff_id=OTHER, transfer_timing=BAD_TIMING)): InputClass.FOREIGN_FACT,
        fact(Canceled(handoff_id=ID)): InputClass.FAILURE_FACT,
        outcome(1, ACCEPTED): InputClass.OUTCOME,
        outcome(1, HandoffActionOutcome.failed("x")): InputClass.FAILED_OUTCOME,
        outcome(1, APPLIED): InputClass.IMPOSSIBLE_OUTCOME,
        outcome(0, SUBMITTED): InputClass.DUPLICATE_OUTCOME,
        outcome(0, HandoffActionOutcome.failed("x")): InputClass.CONFLICTING_OUTCOME,
        outcome(2, APPLIED): InputClass.UNKNOWN_ACTION,
    }
    assert {op: obs.classify(op) for op in cases} == cases


def test_a_failed_cleanup_action_is_an_impossible_outcome() -> None:
    obs, _ = play(
        SF,
        [(START, returned(issued(0, SubmitPrefill))), (FAILED, returned(issued(1, CancelSource)))],
    )
    assert obs.classify(outcome(1, HandoffActionOutcome.failed("x"))) is (
        InputClass.IMPOSSIBLE_OUTCOME
    )


def test_honest_inputs_are_acknowledgements_and_the_facts_they_make_due() -> None:
    obs = Observation(ID, SF)
    assert obs.is_honest(START)
    assert not obs.is_honest(HELD)
    obs, _ = play(SF, [(START, returned(issued(0, SubmitPrefill)))])
    assert not obs.is_honest(START)
    assert not obs.is_honest(HELD)  # the prefill was not acknowledged yet
    assert obs.is_honest(outcome(0, SUBMITTED))
    assert not obs.is_honest(outcome(0, HandoffActionOutcome.failed("x")))
    assert not obs.is_honest(FAILED)
    obs, _ = observe(obs, outcome(0, SUBMITTED), returned())
    assert obs.is_honest(HELD)
    assert not obs.is_honest(RESERVED)
    assert not obs.is_honest(fact(SourceHeld(handoff_id=OTHER, transfer_timing=GOOD_TIMING)))


BREAKS: list[tuple[str, HandoffOrder, list[tuple[Input, Reply]], list[Invariant]]] = [
    (
        "crash",
        SF,
        [(START, Reply(crash="raised KeyError: 0"))],
        [Invariant.INPUTS_HANDLED],
    ),
    (
        "two Completes in one reply",
        SF,
        [
            (
                FAILED,
                returned(
                    issued(0, Complete), issued(1, Complete), completion=HandoffCompletion.CANCELED
                ),
            )
        ],
        [Invariant.COMPLETE_ONCE],
    ),
    (
        "an action after Complete",
        SF,
        [
            (FAILED, returned(issued(0, Complete), completion=HandoffCompletion.CANCELED)),
            (START, returned(issued(1, SubmitPrefill), completion=HandoffCompletion.CANCELED)),
        ],
        [Invariant.COMPLETE_ONCE],
    ),
    (
        "an id reused",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (FAILED, returned(issued(0, CancelSource))),
        ],
        [Invariant.ACTION_IDS_INCREASING],
    ),
    (
        "an action for another handoff",
        SF,
        [(START, returned(issued(0, SubmitPrefill, OTHER)))],
        [Invariant.OWN_HANDOFF],
    ),
    (
        "complete but not saying so",
        SF,
        [(FAILED, Reply(actions=(issued(0, Complete),), completion=HandoffCompletion.CANCELED))],
        [Invariant.COMPLETION_CONSISTENT],
    ),
    (
        "a completion before Complete",
        SF,
        [(START, Reply(actions=(issued(0, SubmitPrefill),), completion=HandoffCompletion.SUCCESS))],
        [Invariant.COMPLETION_CONSISTENT],
    ),
    (
        "Canceled with the source engaged",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (FAILED, returned(issued(1, Complete), completion=HandoffCompletion.CANCELED)),
        ],
        [Invariant.OWNERS_SETTLED_BEFORE_COMPLETE],
    ),
    (
        "Success without transfer, activation or release",
        DF,
        [
            (START, returned(issued(0, ReserveDestination))),
            (
                outcome(0, ACCEPTED),
                returned(issued(1, Complete), completion=HandoffCompletion.SUCCESS),
            ),
        ],
        [Invariant.OWNERS_SETTLED_BEFORE_COMPLETE, Invariant.SUCCESS_AFTER_RELEASE],
    ),
    (
        "Canceled without a failure",
        SF,
        [(START, returned(issued(0, Complete), completion=HandoffCompletion.CANCELED))],
        [Invariant.CANCELED_ONLY_THROUGH_CLEANUP],
    ),
    (
        "progress after a failure",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (outcome(0, SUBMITTED), returned()),
            (FAILED, returned(issued(1, CancelSource))),
            (HELD, returned(issued(2, ReserveDestination))),
        ],
        [Invariant.CANCELED_ONLY_THROUGH_CLEANUP],
    ),
    (
        "a transfer before the destination is reserved",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (outcome(0, SUBMITTED), returned()),
            (HELD, returned(issued(1, StartTransfer))),
        ],
        [Invariant.TRANSFER_ONCE_WHEN_READY],
    ),
    (
        "the destination engaged first, source first",
        SF,
        [(START, returned(issued(0, ReserveDestination)))],
        [Invariant.LIFECYCLE_ORDER],
    ),
    (
        "a cancel outside cleanup",
        SF,
        [(START, returned(issued(0, SubmitPrefill), issued(1, CancelSource)))],
        [Invariant.LIFECYCLE_ORDER],
    ),
    (
        "a foreign fact accepted",
        SF,
        [(fact(Failed(handoff_id=OTHER)), returned())],
        [Invariant.INVALID_INPUT_REJECTED],
    ),
    (
        "an outcome for an unknown action accepted",
        SF,
        [(outcome(0, SUBMITTED), returned())],
        [Invariant.INVALID_INPUT_REJECTED],
    ),
    (
        "an invalid timing applied",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (outcome(0, SUBMITTED), returned()),
            (
                fact(SourceHeld(handoff_id=ID, transfer_timing=BAD_TIMING)),
                returned(issued(1, ReserveDestination)),
            ),
        ],
        [Invariant.INVALID_INPUT_REJECTED, Invariant.LIFECYCLE_ORDER],
    ),
    (
        "a duplicate answered with an error",
        SF,
        [
            (START, returned(issued(0, SubmitPrefill))),
            (outcome(0, SUBMITTED), returned()),
            (outcome(0, SUBMITTED), Reply(error=HandoffErrorCode.CONFLICTING_OUTCOME)),
        ],
        [Invariant.DUPLICATE_OUTCOME_IDEMPOTENT],
    ),
]


@pytest.mark.parametrize(
    ("order", "steps", "expected"),
    [case[1:] for case in BREAKS],
    ids=[case[0] for case in BREAKS],
)
def test_each_rule_fires_on_the_reply_that_breaks_it(
    order: HandoffOrder, steps: list[tuple[Input, Reply]], expected: list[Invariant]
) -> None:
    _, broken = play(order, steps)
    assert broken == expected
    _, before_last = play(order, steps[:-1])
    assert before_last == []


def test_a_rejected_input_teaches_the_observer_nothing() -> None:
    obs, _ = play(SF, [(START, returned(issued(0, SubmitPrefill)))])
    after, findings = observe(
        obs, outcome(0, ACCEPTED), Reply(error=HandoffErrorCode.INVALID_OUTCOME)
    )
    assert after == obs
    assert findings == []


def test_the_observer_stops_learning_after_complete() -> None:
    obs, _ = play(
        SF, [(FAILED, returned(issued(0, Complete), completion=HandoffCompletion.CANCELED))]
    )
    after, findings = observe(obs, START, returned(completion=HandoffCompletion.CANCELED))
    assert after == obs
    assert findings == []


def test_outcomes_are_remembered_by_action_id() -> None:
    # Acknowledging the two cancels in either order leaves the same memory (one state).
    cleanup = [
        (START, returned(issued(0, SubmitPrefill))),
        (outcome(0, SUBMITTED), returned()),
        (HELD, returned(issued(1, ReserveDestination))),
        (FAILED, returned(issued(2, CancelSource), issued(3, CancelDestination))),
    ]
    done = returned(issued(4, Complete), completion=HandoffCompletion.CANCELED)
    first, broken_first = play(
        SF, [*cleanup, (outcome(2, APPLIED), returned()), (outcome(3, NOOP), done)]
    )
    second, broken_second = play(
        SF, [*cleanup, (outcome(3, NOOP), returned()), (outcome(2, APPLIED), done)]
    )
    assert broken_first == broken_second == []
    assert first == second
    assert first.outcomes == ((0, SUBMITTED), (2, APPLIED), (3, NOOP))


@pytest.mark.parametrize(
    "op",
    [
        START,
        HELD,
        fact(SourceHeld(handoff_id=OTHER, transfer_timing=BAD_TIMING)),
        RESERVED,
        outcome(3, APPLIED),
        outcome(7, HandoffActionOutcome.failed("why")),
    ],
    ids=str,
)
def test_inputs_round_trip_through_trace_lines(op: Input) -> None:
    line = json.loads(json.dumps(op.to_wire("k")))
    assert line["coordinator"] == "k"
    assert Input.from_wire(line) == op


def test_reply_of_captures_actions_errors_and_crashes() -> None:
    coordinator = HandoffCoordinator(ID, SF)
    reply = reply_of(coordinator, START)
    assert reply == returned(issued(0, SubmitPrefill))
    rejected = reply_of(coordinator, outcome(5, APPLIED))
    assert rejected.error is HandoffErrorCode.UNKNOWN_ACTION
    assert rejected.rejected

    class Broken(HandoffCoordinator):
        def on_fact(self, fact: object) -> list[IssuedHandoffAction]:
            raise RuntimeError("boom")

        def start(self) -> list[IssuedHandoffAction]:
            return "nothing"  # type: ignore[return-value]

    broken = Broken(ID, SF)
    assert reply_of(broken, FAILED).crash == "raised RuntimeError: boom"
    assert "instead of a list" in (reply_of(broken, START).crash or "")
    assert issubclass(HandoffError, ValueError)


# ---------------------------------------------------------------------- a976b2bf

CANCEL_AFTER_SUCCESS: list[tuple[Input, Reply]] = [
    *SUCCESS_SF,
    (FAILED, reopened(issued(6, CancelDestination))),
]
"""a976b2bf: a terminal fact after Success cancels the decoding destination."""

REOPENED_SF: list[tuple[Input, Reply]] = [
    *CANCEL_AFTER_SUCCESS,
    # Acknowledgements of actions issued before the first Complete are unknown now.
    (
        outcome(4, NOOP),
        Reply(error=HandoffErrorCode.UNKNOWN_ACTION, completion=HandoffCompletion.SUCCESS),
    ),
    (fact(TimedOut(handoff_id=ID)), reopened()),
    (outcome(6, APPLIED), returned(issued(7, Complete), completion=HandoffCompletion.CANCELED)),
    # After the second Complete, facts are ignored.
    (FAILED, returned(completion=HandoffCompletion.CANCELED)),
    (outcome(6, APPLIED), returned(completion=HandoffCompletion.CANCELED)),
]


def test_a_correct_reopen_after_success_breaks_nothing() -> None:
    obs, broken = play(SF, REOPENED_SF, A976)
    assert broken == []
    assert obs.complete
    assert obs.reopened
    assert obs.completion is HandoffCompletion.CANCELED
    assert obs.last_id == 7
    assert [kind for _, kind in obs.issued].count(Complete) == 2


def test_the_real_a976b2bf_coordinator_agrees_with_the_hand_built_replies() -> None:
    coordinator = HandoffCoordinator(ID, SF, revision=A976)
    for op, expected in REOPENED_SF:
        assert reply_of(coordinator, op) == expected, op


def test_while_reopened_only_the_reopened_cancel_is_known() -> None:
    obs, _ = play(SF, CANCEL_AFTER_SUCCESS, A976)
    assert not obs.complete
    assert obs.completion is HandoffCompletion.SUCCESS
    assert list(obs.outstanding()) == [(6, CancelDestination)]
    assert obs.classify(outcome(4, NOOP)) is InputClass.UNKNOWN_ACTION  # was a duplicate
    assert obs.classify(outcome(0, APPLIED)) is InputClass.UNKNOWN_ACTION
    assert obs.classify(outcome(6, APPLIED)) is InputClass.OUTCOME
    assert obs.is_honest(outcome(6, NOOP))
    # Before the reopen, the same acknowledgement was a (late, ignored) duplicate.
    done, _ = play(SF, SUCCESS_SF, A976)
    assert done.classify(outcome(4, NOOP)) is InputClass.DUPLICATE_OUTCOME


def _held_unschedulable() -> list[tuple[Input, Reply]]:
    return [
        (START, returned(issued(0, SubmitPrefill))),
        (outcome(0, SUBMITTED), returned()),
        (
            fact(SourceHeld(handoff_id=ID, transfer_timing=UNSCHEDULABLE_TIMING)),
            returned(issued(1, ReserveDestination)),
        ),
        (outcome(1, ACCEPTED), returned()),
    ]


def test_a_fact_that_would_schedule_an_infinite_delay_is_unschedulable_under_a976b2bf() -> None:
    small = fact(DestinationReserved(handoff_id=ID, transferable_prompt_tokens=0))
    for revision, expected in ((SEED, InputClass.PROGRESS_FACT), (A976, InputClass.UNSCHEDULABLE)):
        obs, broken = play(SF, _held_unschedulable(), revision)
        assert broken == []
        # Only a revision that validates the scheduled delay needs the timing remembered.
        assert obs.timing == (UNSCHEDULABLE_TIMING if revision is A976 else None)
        assert obs.classify(RESERVED) is expected
        assert obs.refuses_due(RESERVED) is (revision is A976)
        assert obs.is_honest(RESERVED) is (revision is SEED)
        assert obs.is_due(RESERVED.fact)
        # No transferable tokens: nothing to move, a zero delay.
        assert obs.classify(small) is InputClass.PROGRESS_FACT
    assert obs.scheduled_delay_ms(RESERVED.fact) == float("inf")  # type: ignore[arg-type]
    assert obs.scheduled_delay_ms(small.fact) == 0.0  # type: ignore[arg-type]
    # The other way round: the destination reserved first, then the held timing decides.
    obs, _ = play(
        DF,
        [
            (START, returned(issued(0, ReserveDestination))),
            (outcome(0, ACCEPTED), returned()),
            (RESERVED, returned(issued(1, SubmitPrefill))),
            (outcome(1, SUBMITTED), returned()),
        ],
        A976,
    )
    held = fact(SourceHeld(handoff_id=ID, transfer_timing=UNSCHEDULABLE_TIMING))
    assert obs.tokens == 10
    assert obs.classify(held) is InputClass.UNSCHEDULABLE
    assert obs.classify(HELD) is InputClass.PROGRESS_FACT
    assert obs.refuses_due(held)


SUCCESS_ = HandoffCompletion.SUCCESS
CANCELED_ = HandoffCompletion.CANCELED

BREAKS_BY_REVISION: list[tuple[str, Revision, list[tuple[Input, Reply]], list[Invariant]]] = [
    (
        "seed: a cancel after Success",
        SEED,
        [*SUCCESS_SF, (FAILED, returned(issued(6, CancelDestination), completion=SUCCESS_))],
        [Invariant.COMPLETE_ONCE],
    ),
    (
        "a976b2bf: a terminal fact after Success ignored",
        A976,
        [*SUCCESS_SF, (FAILED, returned(completion=SUCCESS_))],
        [Invariant.REOPENS_AFTER_SUCCESS],
    ),
    (
        "a976b2bf: the released source canceled too",
        A976,
        [*SUCCESS_SF, (FAILED, reopened(issued(6, CancelDestination), issued(7, CancelSource)))],
        [Invariant.REOPENS_AFTER_SUCCESS],
    ),
    (
        "a976b2bf: the reopened cleanup completed before its cancel was acknowledged",
        A976,
        [
            *SUCCESS_SF,
            (
                FAILED,
                returned(issued(6, CancelDestination), issued(7, Complete), completion=CANCELED_),
            ),
        ],
        [Invariant.OWNERS_SETTLED_BEFORE_COMPLETE],
    ),
    (
        "a976b2bf: still complete while the reopened cancel is outstanding",
        A976,
        [*SUCCESS_SF, (FAILED, returned(issued(6, CancelDestination), completion=SUCCESS_))],
        [Invariant.COMPLETION_CONSISTENT],
    ),
    (
        "a976b2bf: no completion while the reopened cleanup runs",
        A976,
        [*SUCCESS_SF, (FAILED, Reply(actions=(issued(6, CancelDestination),)))],
        [Invariant.COMPLETION_CONSISTENT],
    ),
    (
        "a976b2bf: an outcome for an action before the first Complete accepted while reopened",
        A976,
        [*CANCEL_AFTER_SUCCESS, (outcome(4, NOOP), reopened())],
        [Invariant.INVALID_INPUT_REJECTED],
    ),
    (
        "a976b2bf: Success again after the reopened cleanup",
        A976,
        [
            *CANCEL_AFTER_SUCCESS,
            (outcome(6, APPLIED), returned(issued(7, Complete), completion=SUCCESS_)),
        ],
        [Invariant.CANCELED_ONLY_THROUGH_CLEANUP],
    ),
    (
        "a976b2bf: a second reopen after the second Complete",
        A976,
        [
            *CANCEL_AFTER_SUCCESS,
            (outcome(6, APPLIED), returned(issued(7, Complete), completion=CANCELED_)),
            (FAILED, returned(issued(8, CancelDestination), completion=CANCELED_)),
        ],
        [Invariant.COMPLETE_ONCE],
    ),
    (
        "a976b2bf: a reservation scheduling an infinite delay accepted",
        A976,
        [*_held_unschedulable(), (RESERVED, returned(issued(2, StartTransfer)))],
        [Invariant.INVALID_INPUT_REJECTED],
    ),
]


@pytest.mark.parametrize(
    ("revision", "steps", "expected"),
    [case[1:] for case in BREAKS_BY_REVISION],
    ids=[case[0] for case in BREAKS_BY_REVISION],
)
def test_each_revision_rule_fires_on_the_reply_that_breaks_it(
    revision: Revision, steps: list[tuple[Input, Reply]], expected: list[Invariant]
) -> None:
    _, broken = play(SF, steps, revision)
    assert broken == expected
    _, before_last = play(SF, steps[:-1], revision)
    assert before_last == []
    assert set(expected) <= set(invariants_of(revision))


def test_the_seed_accepts_what_a976b2bf_must_reject() -> None:
    # Under the seed the same reservation starts the transfer (the reference's quirk).
    _, broken = play(SF, [*_held_unschedulable(), (RESERVED, returned(issued(2, StartTransfer)))])
    assert broken == []

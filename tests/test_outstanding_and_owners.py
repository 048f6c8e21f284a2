"""What a runtime needs to know about actions: who performs them, what acknowledges them,
and which ones still wait for an acknowledgement (``HandoffCoordinator.outstanding``)."""

from __future__ import annotations

import uuid

import pytest

import handoff_fsm as hf
from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    Complete,
    Engine,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffOrder,
    IssuedHandoffAction,
    Owner,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.model import ACTION_TYPES, OUTCOME_PREFERENCE

HID = uuid.UUID(int=3)
OUT = HandoffActionOutcome
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 100, 1024, 1.0)

EXPECTED: dict[type[HandoffAction], tuple[Owner, tuple[HandoffActionOutcome, ...]]] = {
    SubmitPrefill: (Owner.SOURCE, (OUT.SUBMITTED,)),
    ReserveDestination: (Owner.DESTINATION, (OUT.ACCEPTED,)),
    StartTransfer: (Owner.TRANSFER, (OUT.SCHEDULED,)),
    ActivateDestination: (Owner.DESTINATION, (OUT.APPLIED,)),
    ReleaseSource: (Owner.SOURCE, (OUT.APPLIED, OUT.NOOP)),
    CancelSource: (Owner.SOURCE, (OUT.APPLIED, OUT.NOOP)),
    CancelDestination: (Owner.DESTINATION, (OUT.APPLIED, OUT.NOOP)),
    Complete: (Owner.COORDINATOR, ()),
}


# --------------------------------------------------------------------- owners and outcomes


@pytest.mark.parametrize("kind", ACTION_TYPES, ids=lambda kind: kind.__name__)
def test_every_action_names_its_owner_and_acknowledgements(kind: type[HandoffAction]) -> None:
    owner, outcomes = EXPECTED[kind]
    action = (
        StartTransfer.issued_with_delay(HID, 1.5) if kind is StartTransfer else kind.issued_for(HID)
    )
    assert kind.owner is owner and action.owner is owner
    assert kind.expected_outcomes == outcomes and action.expected_outcomes == outcomes
    # the shared constants, so `is` comparisons (the journal's fast path) hold
    assert all(any(o is c for c in vars(OUT).values()) for o in outcomes)


def test_owner_is_exported_and_the_owners_are_the_issue_s_four() -> None:
    assert hf.Owner is Owner
    assert [owner.name for owner in Owner] == ["SOURCE", "DESTINATION", "TRANSFER", "COORDINATOR"]


@pytest.mark.parametrize("kind", ACTION_TYPES, ids=lambda kind: kind.__name__)
def test_expected_outcomes_are_the_chart_s_accepted_outcomes_in_preference_order(
    kind: type[HandoffAction],
) -> None:
    ack = ACKNOWLEDGEMENTS.get(kind)
    accepted = set() if ack is None else set(ack.accepted)
    kinds = [outcome.kind for outcome in kind.expected_outcomes]
    assert set(kinds) == accepted
    assert kinds == [k for k in OUTCOME_PREFERENCE if k in accepted]
    assert hf.OutcomeKind.FAILED not in kinds  # Failed says the action was not done


def test_an_action_is_still_a_plain_value_with_owner_and_outcomes() -> None:
    action = SubmitPrefill(handoff_id=HID)
    assert action.model_dump() == {"handoff_id": HID}
    assert set(SubmitPrefill.model_fields) == {"handoff_id"}


def outstanding(c: HandoffCoordinator) -> list[IssuedHandoffAction]:
    return list(c.outstanding)


def _first_outcome(issued: IssuedHandoffAction) -> HandoffActionOutcome:
    return issued.action.expected_outcomes[0]


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_answering_every_action_with_its_first_expected_outcome_completes_the_handoff(
    order: HandoffOrder, engine: Engine
) -> None:
    c = HandoffCoordinator(HID, order, engine=engine)
    facts: dict[type[HandoffAction], hf.HandoffFact] = {
        SubmitPrefill: hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING),
        ReserveDestination: hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=9),
        StartTransfer: hf.TransferCompleted(handoff_id=HID),
    }
    pending = list(c.start())
    while pending:
        issued = pending.pop(0)
        if type(issued.action) is Complete:
            continue
        pending += c.on_action_outcome(issued.id, _first_outcome(issued))
        fact = facts.get(type(issued.action))
        if fact is not None:
            pending += c.on_fact(fact)
    assert c.completion is hf.HandoffCompletion.SUCCESS


# --------------------------------------------------------------------- outstanding


def test_outstanding_lists_unacknowledged_actions_in_issue_order(engine: Engine) -> None:
    c = HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, engine=engine)
    assert outstanding(c) == []
    [submit] = c.start()
    assert outstanding(c) == [submit]
    c.on_action_outcome(submit.id, OUT.SUBMITTED)
    assert outstanding(c) == []
    [reserve] = c.on_fact(hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING))
    assert outstanding(c) == [reserve]
    c.on_action_outcome(reserve.id, OUT.ACCEPTED)
    [transfer] = c.on_fact(hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=9))
    assert outstanding(c) == [transfer]  # rebuilt: the same action, delay included
    cancels = c.on_fact(hf.TimedOut(handoff_id=HID))
    assert [type(i.action) for i in cancels] == [CancelSource, CancelDestination]
    assert outstanding(c) == [transfer, *cancels]  # its acknowledgement may still come
    c.on_action_outcome(cancels[1].id, OUT.NOOP)
    assert outstanding(c) == [transfer, cancels[0]]


def test_outstanding_is_empty_once_complete_and_never_lists_complete(engine: Engine) -> None:
    c = HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST, engine=engine)
    [submit] = c.start()
    [cancel] = c.on_fact(hf.Failed(handoff_id=HID))
    [complete] = c.on_action_outcome(cancel.id, OUT.APPLIED)
    assert type(complete.action) is Complete
    assert outstanding(c) == []
    assert submit not in c.outstanding


def test_outstanding_survives_a_snapshot(engine: Engine) -> None:
    c = HandoffCoordinator(HID, HandoffOrder.DESTINATION_FIRST)
    [reserve] = c.start()
    c.on_action_outcome(reserve.id, OUT.ACCEPTED)
    [submit] = c.on_fact(hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=9))
    restored = HandoffCoordinator.restore(c.snapshot(), engine=engine)
    assert outstanding(restored) == outstanding(c) == [submit]
    snapshot = c.snapshot()
    answered = {record.action_id for record in snapshot.outcomes}
    assert c.outstanding == tuple(i for i in snapshot.issued if i.id not in answered)


def test_a_rejected_input_leaves_outstanding_as_it_was() -> None:
    c = HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST)
    [submit] = c.start()
    with pytest.raises(hf.OutcomeError):
        c.on_action_outcome(submit.id, OUT.APPLIED)
    assert outstanding(c) == [submit]

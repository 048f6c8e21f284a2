"""The hot path's decisions taken once: they change no reply, no error and no value.

The coordinator accepts a shared outcome constant through a table decided once
(``journal.SHARED_ACCEPTANCES``) and issues plain actions through ``run.issue(kind)``;
everything else is judged in full. These tests hold both against the full judgement: a
caller's equal outcome gets the same reply, a bad or unexpected one the same coded error
with nothing changed, and the values the fast path builds are the constructors' values
(equal, same fields set, same JSON, same pickle round trip).
"""

from __future__ import annotations

import copy
import pickle
import uuid

import pytest
from pydantic import ValidationError

import handoff_fsm as hf
from handoff_fsm import HandoffActionOutcome, HandoffErrorCode, OutcomeKind
from handoff_fsm.chart import ACKNOWLEDGEMENTS, PLAIN_ISSUES
from handoff_fsm.journal import SHARED_ACCEPTANCES, ActionJournal
from handoff_fsm.run import HandoffRun

HID = uuid.UUID(int=11)
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 16, 1024, 1.0)


def _submitted() -> hf.HandoffCoordinator:
    """A source-first coordinator whose SubmitPrefill (id 0) awaits its outcome."""
    c = hf.HandoffCoordinator(HID, hf.HandoffOrder.SOURCE_FIRST)
    c.start()
    return c


def test_the_table_is_the_journals_verdict_on_each_shared_constant() -> None:
    for kind, ack in ACKNOWLEDGEMENTS.items():
        for outcome_kind in OutcomeKind:
            if outcome_kind is OutcomeKind.FAILED:
                continue
            constant = getattr(HandoffActionOutcome, outcome_kind.name)
            journal = ActionJournal()
            journal.issued[0] = kind
            try:
                event: str | None = journal.acknowledge(0, constant)
            except hf.HandoffError:
                event = None
            assert SHARED_ACCEPTANCES.get((kind, id(constant))) == event
            assert (event is not None) == (outcome_kind in ack.accepted)


@pytest.mark.parametrize("revision", list(hf.Revision))
def test_an_equal_outcome_built_by_the_caller_gets_the_same_replies(revision: hf.Revision) -> None:
    """A whole handoff acknowledged with fresh, equal outcomes (the full judgement) replies
    and snapshots exactly as one acknowledged with the shared constants (the table)."""
    runs = []
    for fresh in (False, True):

        def ack(outcome: HandoffActionOutcome, fresh: bool = fresh) -> HandoffActionOutcome:
            return HandoffActionOutcome(kind=outcome.kind) if fresh else outcome

        c = hf.HandoffCoordinator(HID, hf.HandoffOrder.SOURCE_FIRST, revision=revision)
        replies = [c.start(), c.on_action_outcome(0, ack(HandoffActionOutcome.SUBMITTED))]
        replies.append(c.on_fact(hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING)))
        replies.append(c.on_action_outcome(1, ack(HandoffActionOutcome.ACCEPTED)))
        replies.append(
            c.on_fact(hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=3))
        )
        replies.append(c.on_action_outcome(2, ack(HandoffActionOutcome.SCHEDULED)))
        replies.append(c.on_fact(hf.TransferCompleted(handoff_id=HID)))
        replies.append(c.on_action_outcome(3, ack(HandoffActionOutcome.APPLIED)))
        replies.append(c.on_action_outcome(4, ack(HandoffActionOutcome.NOOP)))
        runs.append((replies, c.snapshot()))
    assert runs[0] == runs[1]
    assert runs[0][1].completion is hf.HandoffCompletion.SUCCESS


def test_a_shared_constant_the_kind_does_not_take_is_refused_as_before() -> None:
    c = _submitted()
    before = c.snapshot()
    with pytest.raises(hf.HandoffError) as error:
        c.on_action_outcome(0, HandoffActionOutcome.ACCEPTED)
    assert error.value.code is HandoffErrorCode.INVALID_OUTCOME
    assert c.snapshot() == before


def test_a_duplicate_and_a_conflict_after_the_fast_path_are_judged_in_full() -> None:
    c = _submitted()
    assert c.on_action_outcome(0, HandoffActionOutcome.SUBMITTED) == []
    after = c.snapshot()
    assert c.on_action_outcome(0, HandoffActionOutcome.SUBMITTED) == []  # exact duplicate
    with pytest.raises(hf.HandoffError) as error:
        c.on_action_outcome(0, HandoffActionOutcome.failed("late"))
    assert error.value.code is HandoffErrorCode.CONFLICTING_OUTCOME
    assert c.snapshot() == after


def test_an_unknown_id_and_a_bad_id_type_are_refused_as_before() -> None:
    c = _submitted()
    before = c.snapshot()
    with pytest.raises(hf.HandoffError) as error:
        c.on_action_outcome(7, HandoffActionOutcome.SUBMITTED)
    assert error.value.code is HandoffErrorCode.UNKNOWN_ACTION
    with pytest.raises(TypeError):
        c.on_action_outcome(True, HandoffActionOutcome.SUBMITTED)  # True == 1, not an id
    with pytest.raises(TypeError):
        c.on_action_outcome(0, "Submitted")  # type: ignore[arg-type]
    assert c.snapshot() == before


def test_an_outcome_that_skipped_validation_is_still_refused_with_nothing_changed() -> None:
    c = _submitted()
    before = c.snapshot()
    bad = HandoffActionOutcome.model_construct(kind="Submitted", reason=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        c.on_action_outcome(0, bad)
    assert c.snapshot() == before


def test_a_fact_that_skipped_validation_is_still_refused_with_nothing_changed() -> None:
    c = _submitted()
    c.on_action_outcome(0, HandoffActionOutcome.SUBMITTED)
    before = c.snapshot()
    timing = hf.HandoffTransferTiming.model_construct(
        mode=hf.TransferTimingMode.FULL_PROMPT,
        full_prompt_tokens=-1,
        kv_bytes_per_token=None,
        bandwidth_gb_s=None,
        state_bytes=0,
    )
    with pytest.raises(ValidationError):
        c.on_fact(hf.SourceHeld.model_construct(handoff_id=HID, transfer_timing=timing))
    with pytest.raises(ValidationError):
        c.on_fact(
            hf.DestinationReserved.model_construct(handoff_id=HID, transferable_prompt_tokens=2**64)
        )
    assert c.snapshot() == before


@pytest.mark.parametrize("name", list(PLAIN_ISSUES))
def test_issued_values_are_the_constructors_values(name: str) -> None:
    kind = PLAIN_ISSUES[name]
    run = HandoffRun(HID, hf.HandoffOrder.SOURCE_FIRST, 0.0, ActionJournal(5))
    issued = run.issue(kind)
    built = hf.IssuedHandoffAction(id=5, action=kind(handoff_id=HID))  # type: ignore[call-arg]
    assert issued == built
    assert type(issued.action) is kind
    assert issued.model_fields_set == built.model_fields_set
    assert issued.action.model_fields_set == built.action.model_fields_set
    assert issued.model_dump_json() == built.model_dump_json()
    assert pickle.loads(pickle.dumps(issued)) == built
    assert copy.deepcopy(issued) == built
    assert hf.IssuedHandoffAction.model_validate_json(issued.model_dump_json()) == built
    with pytest.raises(ValidationError):  # frozen as any constructed value
        issued.action.handoff_id = uuid.UUID(int=1)  # type: ignore[misc]


def test_a_user_built_action_is_still_validated() -> None:
    with pytest.raises(ValidationError):
        hf.SubmitPrefill(handoff_id="not a uuid")
    with pytest.raises(ValidationError):
        hf.IssuedHandoffAction(id=-1, action=hf.SubmitPrefill(handoff_id=HID))
    with pytest.raises(ValidationError):
        hf.IssuedHandoffAction(id=0, action={"Nope": {}})


def test_a_timing_validated_from_a_mapping_keeps_its_fields_and_refuses_any_other_key() -> None:
    """Without pydantic's private marker, pydantic calls the timing's own __init__ for a
    mapping: a field named like a parameter is a field, and an unknown key is refused."""
    read = hf.HandoffTransferTiming.model_validate({"mode": "full_prompt", "full_prompt_tokens": 1})
    assert read.model_fields_set == {"mode", "full_prompt_tokens"}
    for key in ("self", "unknown"):
        with pytest.raises(ValidationError, match=r"extra_forbidden|Extra inputs"):
            hf.HandoffTransferTiming.model_validate(
                {"mode": "full_prompt", "full_prompt_tokens": 1, key: 1}
            )
    with pytest.raises(TypeError, match="multiple values for argument 'mode'"):
        hf.HandoffTransferTiming("full_prompt", 1, mode="full_prompt")
    positional = hf.HandoffTransferTiming("full_prompt", 1, 2, 3.0, 4)
    assert positional == hf.HandoffTransferTiming(
        mode="full_prompt",
        full_prompt_tokens=1,
        kv_bytes_per_token=2,
        bandwidth_gb_s=3.0,
        state_bytes=4,
    )

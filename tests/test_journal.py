"""The action journal: ids, outcome judgement, idempotence, and clearing."""

from __future__ import annotations

import uuid

import pytest

import handoff_fsm as hf
from handoff_fsm import (
    CancelSource,
    HandoffActionOutcome,
    HandoffErrorCode,
    OutcomeError,
    ReleaseSource,
    SubmitPrefill,
)
from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED
from handoff_fsm.journal import ActionJournal

HID = uuid.UUID(int=3)
S = HandoffActionOutcome


def test_ids_increase_strictly_and_keep_counting_after_clear() -> None:
    journal = ActionJournal()
    ids = [journal.issue(SubmitPrefill.issued_for(HID)).id for _ in range(3)]
    assert ids == [0, 1, 2]
    journal.clear()
    assert journal.issued == {} and journal.outcomes == {}
    assert journal.issue(SubmitPrefill.issued_for(HID)).id == 3


def test_acknowledge_returns_the_chart_event_then_none_for_duplicates() -> None:
    journal = ActionJournal()
    release = journal.issue(ReleaseSource.issued_for(HID))
    assert journal.acknowledge(release.id, S.NOOP) == ACKNOWLEDGEMENTS[ReleaseSource].event
    assert journal.acknowledge(release.id, S.NOOP) is None
    assert journal.acknowledge(release.id, HandoffActionOutcome(kind="Noop")) is None
    with pytest.raises(OutcomeError) as error:
        journal.acknowledge(release.id, S.APPLIED)
    assert error.value.code is HandoffErrorCode.CONFLICTING_OUTCOME


def test_failures_start_cleanup_except_for_cleanup_actions() -> None:
    journal = ActionJournal()
    submit = journal.issue(SubmitPrefill.issued_for(HID))
    cancel = journal.issue(CancelSource.issued_for(HID))
    assert journal.acknowledge(submit.id, S.failed("x")) == ACTION_FAILED
    with pytest.raises(OutcomeError) as error:
        journal.acknowledge(cancel.id, S.failed("x"))
    assert error.value.code is HandoffErrorCode.CLEANUP_ACTION_FAILED
    assert cancel.id not in journal.outcomes  # rejected outcomes are never recorded


def test_unknown_and_invalid_outcomes_record_nothing() -> None:
    journal = ActionJournal()
    submit = journal.issue(SubmitPrefill.issued_for(HID))
    with pytest.raises(OutcomeError) as unknown:
        journal.acknowledge(5, S.SUBMITTED)
    assert unknown.value.code is HandoffErrorCode.UNKNOWN_ACTION
    with pytest.raises(OutcomeError) as invalid:
        journal.acknowledge(submit.id, S.APPLIED)
    assert invalid.value.code is HandoffErrorCode.INVALID_OUTCOME
    assert journal.outcomes == {}
    assert journal.acknowledge(submit.id, S.SUBMITTED) == "prefill_submitted"


def test_an_unknown_id_names_only_the_outstanding_ids_and_stays_bounded() -> None:
    coordinator = hf.HandoffCoordinator(uuid.UUID(int=5), hf.HandoffOrder.SOURCE_FIRST)
    [submit] = coordinator.start()
    coordinator.on_action_outcome(submit.id, hf.HandoffActionOutcome.SUBMITTED)
    for huge in (10**5000, 10**400, -(10**4400)):
        with pytest.raises(hf.HandoffError) as raised:
            coordinator.on_action_outcome(huge, hf.HandoffActionOutcome.SUBMITTED)
        assert raised.value.code is hf.HandoffErrorCode.UNKNOWN_ACTION
        assert len(raised.value.message) < 200
    with pytest.raises(hf.HandoffError) as raised:
        coordinator.on_action_outcome(7, hf.HandoffActionOutcome.SUBMITTED)
    assert raised.value.message.endswith("(outstanding ids: [])")  # 0 was acknowledged

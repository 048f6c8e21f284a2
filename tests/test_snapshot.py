"""Snapshots: versioned, JSON round-tripping, restorable on either engine, checked on restore."""

from __future__ import annotations

import pytest

from handoff_fsm import (
    ConfigurationError,
    Engine,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    HandoffSnapshot,
    IssuedHandoffAction,
    RecordedOutcome,
    TimedOut,
    TransferCompleted,
)
from handoff_fsm.model import Complete, ReleaseSource
from tests.support import HANDOFF_ID, OTHER_ID, ack, drive_to_transfer, kinds, one

S = HandoffActionOutcome


def test_snapshot_round_trips_through_json(engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(HandoffOrder.SOURCE_FIRST, engine, delay_ms=2.5)
    snapshot = coordinator.snapshot()
    assert snapshot.version == 1
    assert HandoffSnapshot.model_validate_json(snapshot.model_dump_json()) == snapshot
    assert snapshot.state == ("held", "reserved", "transfer_issued")
    assert [i.id for i in snapshot.issued] == [0, 1, 2]
    assert snapshot.issued[-1] == transfer


@pytest.mark.parametrize("restore_engine", ["compiled", "statechart"])
def test_restore_continues_exactly_where_it_left_off(
    engine: Engine, restore_engine: Engine
) -> None:
    original, transfer = drive_to_transfer(HandoffOrder.DESTINATION_FIRST, engine, delay_ms=2.5)
    restored = HandoffCoordinator.restore(
        HandoffSnapshot.model_validate_json(original.snapshot().model_dump_json()),
        engine=restore_engine,
    )
    assert restored.engine == restore_engine
    for coordinator in (original, restored):
        assert ack(coordinator, transfer, S.SCHEDULED) == []
        activation = one(coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID)))
        release = one(ack(coordinator, activation, S.APPLIED))
        assert kinds(ack(coordinator, release, S.NOOP)) == ["Complete"]
    assert restored.snapshot() == original.snapshot()
    assert restored.completion is HandoffCompletion.SUCCESS


def test_snapshots_of_equal_histories_are_equal_across_engines() -> None:
    compiled, _ = drive_to_transfer(HandoffOrder.SOURCE_FIRST, "compiled")
    interpreted, _ = drive_to_transfer(HandoffOrder.SOURCE_FIRST, "statechart")
    assert compiled.snapshot() == interpreted.snapshot()
    for coordinator in (compiled, interpreted):
        for issued in coordinator.on_fact(TimedOut(handoff_id=HANDOFF_ID)):
            ack(coordinator, issued, S.APPLIED)
    assert compiled.snapshot() == interpreted.snapshot()


def _broken(snapshot: HandoffSnapshot, **changes: object) -> HandoffSnapshot:
    return snapshot.model_copy(update=changes)


def test_restore_rejects_inconsistent_snapshots(engine: Engine) -> None:
    coordinator, transfer = drive_to_transfer(HandoffOrder.SOURCE_FIRST, "compiled")
    good = coordinator.snapshot()
    cases = {
        "unreachable state": _broken(good, state=("held", "activated", "transfer_idle")),
        "fields do not fit the state": _broken(good, destination_engaged=False),
        "completion before complete": _broken(good, completion=HandoffCompletion.SUCCESS),
        "held without timing": _broken(good, transfer_timing=None),
        "reserved without tokens": _broken(good, transferable_prompt_tokens=None),
        "id not below next id": _broken(good, next_action_id=2),
        "duplicate id": _broken(good, issued=(*good.issued, good.issued[0])),
        "foreign action": _broken(
            good,
            issued=(
                *good.issued[:2],
                IssuedHandoffAction(id=2, action=ReleaseSource(handoff_id=OTHER_ID)),
            ),
        ),
        "pending Complete": _broken(
            good,
            issued=(
                *good.issued,
                IssuedHandoffAction(id=2, action=Complete(handoff_id=HANDOFF_ID)),
            ),
        ),
        "outcome for unknown action": _broken(
            good, outcomes=(*good.outcomes, RecordedOutcome(action_id=9, outcome=S.APPLIED))
        ),
        "outcome that cannot acknowledge": _broken(
            good,
            outcomes=(RecordedOutcome(action_id=transfer.id, outcome=S.SUBMITTED),),
        ),
        "negative fallback": _broken(good, fallback_transfer_delay_ms=-1.0),
    }
    for reason, snapshot in cases.items():
        with pytest.raises(ConfigurationError) as error:
            HandoffCoordinator.restore(snapshot, engine=engine)
        assert error.value.code is HandoffErrorCode.INVALID_SNAPSHOT, reason
    # Its dict form is validated like the snapshot itself (restore takes both).
    assert HandoffCoordinator.restore(good.model_dump(), engine=engine).snapshot() == good
    with pytest.raises(TypeError):
        HandoffCoordinator.restore([good], engine=engine)  # type: ignore[arg-type]


def test_snapshot_rejects_unknown_versions_and_fields() -> None:
    coordinator, _ = drive_to_transfer(HandoffOrder.SOURCE_FIRST)
    data = coordinator.snapshot().model_dump(mode="json")
    HandoffSnapshot.model_validate(data)
    with pytest.raises(ValueError, match="version"):
        HandoffSnapshot.model_validate({**data, "version": 2})
    with pytest.raises(ValueError, match="extra"):
        HandoffSnapshot.model_validate({**data, "surprise": True})

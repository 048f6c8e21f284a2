"""Protocol revisions: what a976b2bf changes against the seed (DESIGN §9), on both engines."""

from __future__ import annotations

import math
from typing import Any

import pytest

import handoff_fsm as hf
from handoff_fsm import (
    Backend,
    Canceled,
    ConfigurationError,
    ConformanceError,
    DestinationReserved,
    Engine,
    FactError,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    HandoffTransferTiming,
    OutcomeError,
    Revision,
    SourceHeld,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)
from handoff_fsm.chart import REVISION_GUARDS
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.simulate import conformance_run
from tests.support import HANDOFF_ID, kinds

S = HandoffActionOutcome
A = Revision.A976B2BF
TIMING = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, 1024, 1.0)
INFINITE_WHEN_SCHEDULED = HandoffTransferTiming(
    TransferTimingMode.DESTINATION_MISSING, 1, 2**40, 1e-300
)
"""Finite for the full prompt (1 token), infinite for 2**63 transferable tokens."""


def _succeed(c: HandoffCoordinator) -> int:
    """Drive ``c`` to Success; the id of the (first) Complete."""
    if c.order is HandoffOrder.SOURCE_FIRST:
        [submit] = c.start()
        c.on_action_outcome(submit.id, S.SUBMITTED)
        [reserve] = c.on_fact(SourceHeld(handoff_id=c.handoff_id, transfer_timing=TIMING))
        c.on_action_outcome(reserve.id, S.ACCEPTED)
        [transfer] = c.on_fact(
            DestinationReserved(handoff_id=c.handoff_id, transferable_prompt_tokens=10)
        )
    else:
        [reserve] = c.start()
        c.on_action_outcome(reserve.id, S.ACCEPTED)
        [submit] = c.on_fact(
            DestinationReserved(handoff_id=c.handoff_id, transferable_prompt_tokens=10)
        )
        c.on_action_outcome(submit.id, S.SUBMITTED)
        [transfer] = c.on_fact(SourceHeld(handoff_id=c.handoff_id, transfer_timing=TIMING))
    c.on_action_outcome(transfer.id, S.SCHEDULED)
    [activate] = c.on_fact(TransferCompleted(handoff_id=c.handoff_id))
    [release] = c.on_action_outcome(activate.id, S.APPLIED)
    [complete] = c.on_action_outcome(release.id, S.NOOP)
    assert kinds([complete]) == ["Complete"]
    return complete.id


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize("terminal", [Canceled, Failed, TimedOut])
def test_a976b2bf_reopens_cleanup_after_success(
    engine: Engine, order: HandoffOrder, terminal: type[Any]
) -> None:
    c = HandoffCoordinator(HANDOFF_ID, order, revision=A, engine=engine)
    first = _succeed(c)
    assert (c.is_complete, c.is_final, c.completion) == (True, False, HandoffCompletion.SUCCESS)
    [cancel] = c.on_fact(terminal(handoff_id=HANDOFF_ID))
    assert kinds([cancel]) == ["CancelDestination"]
    assert cancel.id == first + 1
    # Not complete while the cancel is outstanding; completion still reads Success.
    assert (c.is_complete, c.completion) == (False, HandoffCompletion.SUCCESS)
    assert c.state == ("canceling_decode",)
    # Acknowledgements of actions before the first Complete are unknown now.
    with pytest.raises(OutcomeError) as error:
        c.on_action_outcome(first - 1, S.APPLIED)
    assert error.value.code is HandoffErrorCode.UNKNOWN_ACTION
    assert c.on_fact(Failed(handoff_id=HANDOFF_ID)) == []  # cleanup ignores facts
    [second] = c.on_action_outcome(cancel.id, S.APPLIED)
    assert kinds([second]) == ["Complete"] and second.id == cancel.id + 1
    assert (c.is_complete, c.is_final, c.completion) == (True, True, HandoffCompletion.CANCELED)
    assert c.on_fact(Canceled(handoff_id=HANDOFF_ID)) == []
    assert c.start() == []


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_seed_ignores_a_terminal_fact_after_success(engine: Engine, order: HandoffOrder) -> None:
    c = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    _succeed(c)
    assert c.is_final
    before = c.snapshot()
    assert c.on_fact(Canceled(handoff_id=HANDOFF_ID)) == []
    assert c.snapshot() == before


def _to_second_fact(c: HandoffCoordinator) -> None:
    """Engage both owners up to the fact that would start the transfer."""
    [first] = c.start()
    if c.order is HandoffOrder.SOURCE_FIRST:
        c.on_action_outcome(first.id, S.SUBMITTED)
        [reserve] = c.on_fact(
            SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=INFINITE_WHEN_SCHEDULED)
        )
        c.on_action_outcome(reserve.id, S.ACCEPTED)
    else:
        c.on_action_outcome(first.id, S.ACCEPTED)
        [submit] = c.on_fact(
            DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=2**63)
        )
        c.on_action_outcome(submit.id, S.SUBMITTED)


def _second_fact(order: HandoffOrder) -> Any:
    if order is HandoffOrder.SOURCE_FIRST:
        return DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=2**63)
    return SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=INFINITE_WHEN_SCHEDULED)


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a976b2bf_rejects_a_scheduled_delay_that_is_not_finite(
    engine: Engine, order: HandoffOrder
) -> None:
    c = HandoffCoordinator(HANDOFF_ID, order, revision=A, engine=engine)
    _to_second_fact(c)
    before = c.snapshot()
    with pytest.raises(FactError) as error:
        c.on_fact(_second_fact(order))
    assert error.value.code is HandoffErrorCode.INVALID_TRANSFER_DELAY
    assert c.snapshot() == before  # improvement §6.1: nothing half-applied


@pytest.mark.parametrize("order", list(HandoffOrder))
def test_seed_schedules_the_infinite_delay(engine: Engine, order: HandoffOrder) -> None:
    c = HandoffCoordinator(HANDOFF_ID, order, engine=engine)
    _to_second_fact(c)
    [transfer] = c.on_fact(_second_fact(order))
    assert transfer.action.delay_ms == math.inf  # type: ignore[union-attr]


def test_revision_is_read_back_recorded_and_restored(engine: Engine) -> None:
    c = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST, revision="a976b2bf")
    assert c.revision is A
    _succeed(c)
    snapshot = c.snapshot()
    assert snapshot.revision is A
    restored = HandoffCoordinator.restore(
        hf.HandoffSnapshot.model_validate_json(snapshot.model_dump_json()), engine=engine
    )
    assert restored.revision is A
    assert kinds(restored.on_fact(Canceled(handoff_id=HANDOFF_ID))) == ["CancelDestination"]
    # The same snapshot claimed for the seed names a state the seed never reaches.
    with pytest.raises(ConfigurationError) as error:
        HandoffCoordinator.restore(snapshot.model_copy(update={"revision": Revision.SEED}))
    assert error.value.code is HandoffErrorCode.INVALID_SNAPSHOT


@pytest.mark.parametrize("value", ["A976B2BF", "upstream", "", 1, None])
def test_an_unknown_revision_is_a_coded_error(value: object) -> None:
    with pytest.raises(ConfigurationError) as error:
        HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST, revision=value)  # type: ignore[arg-type]
    assert error.value.code is HandoffErrorCode.INVALID_REVISION


def test_each_revision_has_its_own_table_and_the_guards_say_which() -> None:
    seed, upstream = compiled_chart(Revision.SEED), compiled_chart(A)
    seed_leaves = {leaf for state in seed.states for leaf in state.leaves}
    upstream_leaves = {leaf for state in upstream.states for leaf in state.leaves}
    assert upstream_leaves - seed_leaves == {"decoding", "canceling_decode"}
    assert seed_leaves <= upstream_leaves
    assert all(state.revision is Revision.SEED for state in seed.states)
    assert all(state.revision is A for state in upstream.states)
    assert set(REVISION_GUARDS) == {"reopens_after_success", "validates_scheduled_delay"}


def test_conformance_takes_the_revision() -> None:
    record = conformance_run("vllm")
    trtllm = record.model_copy(update={"engine_type": Backend.TRTLLM})
    with pytest.raises(ConformanceError) as error:
        trtllm.validate()
    assert error.value.code is HandoffErrorCode.UNSUPPORTED_BACKEND
    trtllm.validate(revision="a976b2bf")  # handled like vLLM: SourceFirst
    with pytest.raises(ConfigurationError):
        trtllm.validate(revision="nope")

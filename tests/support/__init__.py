"""Helpers shared by the tests, one per job, each written once.

Here: small drivers for the behaviour tests (scenarios read like the reference's tests).
Beside them: :mod:`tests.support.git` (running git, a repository of the package, a
commit's files), :mod:`tests.support.cli` (the command line in a fresh interpreter),
:mod:`tests.support.browser` (a page in headless Chromium; the ``browser`` fixture of
tests/conftest.py launches it) and :mod:`tests.support.traces` (every trace of ``check``'s
exploration, as a tree, with the library's answers).
"""

from __future__ import annotations

import uuid

from handoff_fsm import (
    DestinationReserved,
    Engine,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    SourceHeld,
    TransferCompleted,
    TransferTimingMode,
)

HANDOFF_ID = uuid.UUID(int=1)
OTHER_ID = uuid.UUID(int=99)


def one(actions: list[IssuedHandoffAction]) -> IssuedHandoffAction:
    assert len(actions) == 1, actions
    return actions[0]


def kinds(actions: list[IssuedHandoffAction]) -> list[str]:
    return [type(issued.action).__name__ for issued in actions]


def ack(
    coordinator: HandoffCoordinator, issued: IssuedHandoffAction, outcome: HandoffActionOutcome
) -> list[IssuedHandoffAction]:
    return coordinator.on_action_outcome(issued.id, outcome)


def timing(delay_ms: float | None) -> HandoffTransferTiming:
    """One full-prompt token whose transfer takes ``delay_ms`` (no model for ``None``)."""
    return HandoffTransferTiming(
        mode=TransferTimingMode.FULL_PROMPT,
        full_prompt_tokens=1,
        kv_bytes_per_token=None if delay_ms is None else int(delay_ms * 1_000_000.0),
        bandwidth_gb_s=None if delay_ms is None else 1.0,
    )


def source_held(delay_ms: float | None = None, handoff_id: uuid.UUID = HANDOFF_ID) -> SourceHeld:
    return SourceHeld(handoff_id=handoff_id, transfer_timing=timing(delay_ms))


def destination_reserved(
    tokens: int = 1, handoff_id: uuid.UUID = HANDOFF_ID
) -> DestinationReserved:
    return DestinationReserved(handoff_id=handoff_id, transferable_prompt_tokens=tokens)


def drive_to_transfer(
    order: HandoffOrder,
    engine: Engine = "compiled",
    delay_ms: float | None = None,
    fallback_ms: float = 0.0,
) -> tuple[HandoffCoordinator, IssuedHandoffAction]:
    """Both owners engaged and acknowledged: returns the StartTransfer just issued."""
    coordinator = HandoffCoordinator(HANDOFF_ID, order, fallback_ms, engine=engine)
    first = one(coordinator.start())
    if order is HandoffOrder.SOURCE_FIRST:
        assert kinds([first]) == ["SubmitPrefill"]
        assert ack(coordinator, first, HandoffActionOutcome.SUBMITTED) == []
        reserve = one(coordinator.on_fact(source_held(delay_ms)))
    else:
        assert kinds([first]) == ["ReserveDestination"]
        reserve = first
    assert kinds([reserve]) == ["ReserveDestination"]
    assert ack(coordinator, reserve, HandoffActionOutcome.ACCEPTED) == []
    after_reserved = one(coordinator.on_fact(destination_reserved()))
    if order is HandoffOrder.SOURCE_FIRST:
        transfer = after_reserved
    else:
        assert kinds([after_reserved]) == ["SubmitPrefill"]
        assert ack(coordinator, after_reserved, HandoffActionOutcome.SUBMITTED) == []
        transfer = one(coordinator.on_fact(source_held(delay_ms)))
    assert kinds([transfer]) == ["StartTransfer"]
    return coordinator, transfer


def drive_to_activation(
    order: HandoffOrder, engine: Engine = "compiled"
) -> tuple[HandoffCoordinator, IssuedHandoffAction]:
    """Transfer scheduled and completed: returns the ActivateDestination just issued."""
    coordinator, transfer = drive_to_transfer(order, engine)
    assert ack(coordinator, transfer, HandoffActionOutcome.SCHEDULED) == []
    activation = one(coordinator.on_fact(TransferCompleted(handoff_id=HANDOFF_ID)))
    assert kinds([activation]) == ["ActivateDestination"]
    return coordinator, activation

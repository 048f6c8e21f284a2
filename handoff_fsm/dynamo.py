"""Dynamo's names for the same protocol (``dynamo_mocker::common::handoff``).

Rule kept here: aliases only. Dynamo's wrapper converts between its UUID DTOs and
Replay's types without changing behaviour, so in Python every Dynamo name *is*
the library's type: nothing here may add logic.
"""

from __future__ import annotations

import uuid

from handoff_fsm.conformance import NormalizedHandoffConformance, expected_normalized_handoff
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.model import (
    Backend,
    HandoffAction,
    HandoffActionId,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    TransferTimingMode,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)

EngineType = Backend
"""Dynamo's ``EngineType`` (``Vllm``, ``Sglang``, ``Trtllm``) is the library's :class:`Backend`."""

KvTransferTimingMode = TransferTimingMode
"""Dynamo's ``KvTransferTimingMode`` is the library's :class:`TransferTimingMode`."""

HandoffCoordinatorCore = HandoffCoordinator
"""Dynamo's thin wrapper around Replay's coordinator; here the coordinator itself."""


def new_handoff_id() -> HandoffId:
    """A fresh random (version 4) handoff id, as Dynamo's ``HandoffId::new()``."""
    return uuid.uuid4()


__all__ = [
    "EngineType",
    "HandoffAction",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "HandoffCoordinatorCore",
    "HandoffFact",
    "HandoffId",
    "HandoffOrder",
    "HandoffTransferTiming",
    "IssuedHandoffAction",
    "KvTransferTimingMode",
    "NormalizedHandoffConformance",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "expected_normalized_handoff",
    "new_handoff_id",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]

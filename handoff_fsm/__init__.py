"""handoff-fsm: the prefill-to-decode KV-cache handoff as a declarative statechart.

Public API only (the protocol); see README.md. ``import handoff_fsm as hf``.

Importing the package loads the protocol core and nothing else. The other layers
are subpackages, imported when used: :mod:`handoff_fsm.io` (wire format, trace
replay), :mod:`handoff_fsm.verify` (exploration, invariants, coverage),
:mod:`handoff_fsm.diagrams`, :mod:`handoff_fsm.simulate`, :mod:`handoff_fsm.cli`.
"""

from handoff_fsm.conformance import (
    NormalizedHandoffConformance,
    expected_normalized_handoff,
)
from handoff_fsm.coordinator import Engine, HandoffCoordinator
from handoff_fsm.errors import (
    ConfigurationError,
    ConformanceError,
    FactError,
    HandoffError,
    HandoffErrorCode,
    OutcomeError,
    TraceError,
)
from handoff_fsm.model import (
    ActivateDestination,
    Backend,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Failed,
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
    OutcomeKind,
    Owner,
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
from handoff_fsm.snapshot import HandoffSnapshot, RecordedOutcome
from handoff_fsm.timing import validate_transfer_delay_ms, validate_transfer_timing

__version__ = "0.1.0"

__all__ = [
    "ActivateDestination",
    "Backend",
    "CancelDestination",
    "CancelSource",
    "Canceled",
    "Complete",
    "ConfigurationError",
    "ConformanceError",
    "DestinationReserved",
    "Engine",
    "FactError",
    "Failed",
    "HandoffAction",
    "HandoffActionId",
    "HandoffActionOutcome",
    "HandoffCompletion",
    "HandoffCoordinator",
    "HandoffError",
    "HandoffErrorCode",
    "HandoffFact",
    "HandoffId",
    "HandoffOrder",
    "HandoffSnapshot",
    "HandoffTransferTiming",
    "IssuedHandoffAction",
    "NormalizedHandoffConformance",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "OutcomeKind",
    "OutcomeError",
    "Owner",
    "RecordedOutcome",
    "ReleaseSource",
    "ReserveDestination",
    "Revision",
    "SourceHeld",
    "StartTransfer",
    "SubmitPrefill",
    "TimedOut",
    "TraceError",
    "TransferCompleted",
    "TransferTimingMode",
    "__version__",
    "expected_normalized_handoff",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]

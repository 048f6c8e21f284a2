"""handoff-fsm: the prefill-to-decode KV-cache handoff as a declarative statechart.

Public API only; see README.md. ``import handoff_fsm as hf``.
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
from handoff_fsm.explore import (
    ExplorationReport,
    InvariantVerdict,
    Violation,
    explore,
)
from handoff_fsm.invariants import Invariant
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
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)
from handoff_fsm.replay import TraceReplayer, replay
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
    "ExplorationReport",
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
    "Invariant",
    "InvariantVerdict",
    "IssuedHandoffAction",
    "NormalizedHandoffConformance",
    "NormalizedHandoffEvent",
    "NormalizedStoredTiming",
    "OutcomeKind",
    "OutcomeError",
    "RecordedOutcome",
    "ReleaseSource",
    "ReserveDestination",
    "SourceHeld",
    "StartTransfer",
    "SubmitPrefill",
    "TimedOut",
    "TraceError",
    "TraceReplayer",
    "TransferCompleted",
    "TransferTimingMode",
    "Violation",
    "__version__",
    "expected_normalized_handoff",
    "explore",
    "replay",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]

"""handoff-fsm: the prefill-to-decode KV-cache handoff as a declarative statechart.

Public API only (the protocol); see the docs (docs/index.md). ``import handoff_fsm as hf``.

Importing the package loads the protocol core and nothing else. The other layers
are subpackages, imported when used, each above the ones before it:
:mod:`handoff_fsm.structure` (the chart as data), :mod:`handoff_fsm.io` (wire format,
trace replay, the one input record), :mod:`handoff_fsm.verify` (exploration,
invariants, coverage, diff), :mod:`handoff_fsm.simulate`, :mod:`handoff_fsm.render`
(pictures), :mod:`handoff_fsm.review` (documents) and :mod:`handoff_fsm.cli`.

One thing from above is named here, not imported: the drawing a coordinator shows in
Jupyter (:data:`handoff_fsm.render.notebook.DRAWING`), handed to
:mod:`handoff_fsm.display` as text, which imports it when a picture is first asked for.
So ``import handoff_fsm`` alone gives coordinators their picture, and loads nothing of
the drawing layers.
"""

from handoff_fsm.conformance import (
    NormalizedHandoffConformance,
    expected_normalized_handoff,
)
from handoff_fsm.coordinator import Engine, HandoffCoordinator
from handoff_fsm.display import install_drawing_from as _install_drawing_from
from handoff_fsm.errors import (
    ConfigurationError,
    ConformanceError,
    FactError,
    HandoffError,
    HandoffErrorCode,
    OutcomeError,
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
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff_fsm.snapshot import HandoffSnapshot, RecordedOutcome

_install_drawing_from("handoff_fsm.render.notebook:DRAWING")  # imported on first use

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
    "TransferCompleted",
    "TransferTimingMode",
    "__version__",
    "expected_normalized_handoff",
    "validate_transfer_delay_ms",
    "validate_transfer_timing",
]

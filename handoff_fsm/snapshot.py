"""A coordinator's complete state as a versioned, JSON-round-tripping value.

Rule kept here: a snapshot says everything needed to continue a handoff exactly
where it stopped, and nothing that depends on the engine that produced it (both
engines produce equal snapshots). Checking a snapshot against the chart is the
coordinator's job, on :meth:`HandoffCoordinator.restore`.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import field_validator

from handoff_fsm.chart import ChartFields
from handoff_fsm.model import (
    F64,
    U64,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffId,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    Revision,
    _Value,
)

SNAPSHOT_VERSION: Final = 1


class RecordedOutcome(_Value):
    """An accepted outcome, by the id of the action it acknowledged."""

    action_id: U64
    outcome: HandoffActionOutcome


class HandoffSnapshot(_Value):
    """Everything a :class:`~handoff_fsm.HandoffCoordinator` knows, at one moment.

    Made by :meth:`~handoff_fsm.HandoffCoordinator.snapshot`; given back (as the model,
    its JSON text or its ``dict``) to :meth:`~handoff_fsm.HandoffCoordinator.restore`,
    which continues exactly there and refuses, as ``invalid_snapshot``, any snapshot no
    sequence of inputs reaches.
    """

    version: Literal[1] = SNAPSHOT_VERSION
    """Format version; exactly the integer 1 (``true`` or ``1.0`` are refused)."""
    handoff_id: HandoffId
    order: HandoffOrder
    revision: Revision = Revision.SEED
    """The protocol revision the coordinator follows."""
    fallback_transfer_delay_ms: F64
    state: tuple[str, ...]
    """Active atomic states of the chart, in document order (e.g. ``("held", "accepted", ...)``)."""
    source_engaged: bool
    destination_engaged: bool
    completion: HandoffCompletion | None
    transfer_timing: HandoffTransferTiming | None
    transferable_prompt_tokens: U64 | None
    next_action_id: U64
    issued: tuple[IssuedHandoffAction, ...]
    """Actions issued and not yet forgotten (the journal is cleared on completion), by id."""
    outcomes: tuple[RecordedOutcome, ...]
    """Accepted outcomes, by action id."""

    @field_validator("version", mode="before")
    @classmethod
    def _integer_version(cls, value: Any) -> Any:
        if type(value) is not int:
            raise ValueError(f"version must be the integer {SNAPSHOT_VERSION}")
        return value

    def chart_fields(self) -> ChartFields:
        """The chart's declared fields this snapshot records (with ``state``, its chart state)."""
        return ChartFields(
            source_first=self.order is HandoffOrder.SOURCE_FIRST,
            revision=self.revision,
            source_engaged=self.source_engaged,
            destination_engaged=self.destination_engaged,
            completion=self.completion,
        )

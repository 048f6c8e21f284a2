"""One simulated handoff: what the driver and each fake endpoint know about it.

Rule kept here: the per-handoff state of the driver *and* of the fake
endpoints lives in one slotted record, so the hot path reaches any of it with
one attribute lookup; each field has exactly one writer (named below), and the
endpoint states are small integers with the names below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from uuid import UUID

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.errors import ErrorCode
from handoff_fsm.model import HandoffActionOutcome, HandoffCompletion, NormalizedHandoffEvent
from handoff_fsm.policy import SessionPolicy, SessionResult

_NONE: Mapping[ErrorCode, int] = MappingProxyType({})

# Source endpoint states (written by FakeSource).
SOURCE_IDLE = 0
SOURCE_PREFILLING = 1
"""Submitted: the prefill is queued or running; the source holds the request."""
SOURCE_HELD = 2
"""Prefill done: the source holds the KV cache."""
SOURCE_RELEASED = 3
SOURCE_CANCELED = 4
SOURCE_REFUSED = 5
"""The submission failed: the source never held anything."""
SOURCE_STATES = ("idle", "prefilling", "held", "released", "canceled", "refused")

# Destination endpoint states (written by FakeDestination).
DESTINATION_IDLE = 0
DESTINATION_ACCEPTED = 1
"""Ownership accepted, the reservation is being made: the destination holds room."""
DESTINATION_RESERVED = 2
DESTINATION_ACTIVATED = 3
"""KV visible, decoding: the request, not the handoff, owns the room now."""
DESTINATION_FINISHED = 4
"""Decoding finished, room freed."""
DESTINATION_CANCELED = 5
DESTINATION_REFUSED = 6
"""The reservation failed: the destination never held anything."""
DESTINATION_STATES = (
    "idle",
    "accepted",
    "reserved",
    "activated",
    "finished",
    "canceled",
    "refused",
)


def handoff_key(index: int) -> str:
    """The trace key of handoff number ``index`` (``h0``, ``h1`` ...)."""
    return f"h{index}"


class SimulatedHandoff:
    """The record of one handoff of a run (number ``index``, trace key ``key``)."""

    __slots__ = (
        "completion",
        "coordinator",
        "decode_cancel_at",
        "decoded",
        "destination",
        "destination_cancel",
        "done",
        "fed",
        "handoff_id",
        "index",
        "lifecycle",
        "policy",
        "prompt_tokens",
        "refused",
        "source",
        "source_cancel",
        "started_ms",
        "stored_blocks",
        "tallied",
        "transferable_tokens",
        "visible_blocks",
    )

    def __init__(  # noqa: PLR0917  # positional: the driver makes one per handoff
        self,
        index: int,
        handoff_id: UUID,
        coordinator: HandoffCoordinator,
        policy: SessionPolicy,
        started_ms: float,
        prompt_tokens: int,
        transferable_tokens: int,
    ) -> None:
        # driver
        self.index = index
        self.handoff_id = handoff_id
        self.coordinator = coordinator
        self.policy = policy
        """Every input goes through it (see :mod:`handoff_fsm.policy`)."""
        self.started_ms = started_ms
        self.done = False
        """The coordinator issued Complete, or the policy gave up on its cleanup."""
        self.completion: HandoffCompletion | None = None
        self.tallied: SessionResult | None = None
        """What of the policy's result the run's figures already hold (driver)."""
        self.fed = 0
        self.refused: Mapping[ErrorCode, int] = _NONE
        """The policy's input count and refusals the run's figures already hold (driver)."""
        self.lifecycle: list[NormalizedHandoffEvent] = []
        """Normalized events as the endpoints (and the driver, for Completed) observed them."""
        # workload
        self.prompt_tokens = prompt_tokens
        self.transferable_tokens = transferable_tokens
        # source endpoint
        self.source = SOURCE_IDLE
        self.source_cancel: HandoffActionOutcome | None = None
        """The source's answer to CancelSource, repeated if the cancel is re-sent."""
        # destination endpoint (stored_blocks: what the transfer landed there)
        self.destination = DESTINATION_IDLE
        self.destination_cancel: HandoffActionOutcome | None = None
        self.stored_blocks = 0
        self.visible_blocks = 0
        self.decoded = 0
        self.decode_cancel_at: float | None = None
        """When the request was canceled while the destination decoded it (fault)."""

    @property
    def key(self) -> str:
        """The handoff's key in traces and reports (``h`` and its number)."""
        return handoff_key(self.index)

    def __repr__(self) -> str:
        return (
            f"SimulatedHandoff({self.key}, source={SOURCE_STATES[self.source]}, "
            f"destination={DESTINATION_STATES[self.destination]}, done={self.done})"
        )

"""Normalized handoff conformance: does a run look like the reference's fixture?

Rule kept here: the verdicts are the reference's ``NormalizedHandoffConformance::validate``,
checked in the same order, one error code per reason.
"""

from __future__ import annotations

from handoff_fsm.errors import HandoffErrorCode, handoff_error, listed
from handoff_fsm.model import (
    BACKEND_ORDERS,
    U64,
    Backend,
    HandoffOrder,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    Revision,
    _Value,
    checked_member,
    checked_revision,
)

_E = NormalizedHandoffEvent
_EXPECTED: dict[HandoffOrder, tuple[NormalizedHandoffEvent, ...]] = {
    HandoffOrder.SOURCE_FIRST: (
        _E.SOURCE_HELD,
        _E.DESTINATION_ACCEPTED,
        _E.DESTINATION_RESERVED,
        _E.DESTINATION_ACTIVATED,
        _E.SOURCE_RELEASED,
        _E.COMPLETED,
    ),
    HandoffOrder.DESTINATION_FIRST: (
        _E.DESTINATION_ACCEPTED,
        _E.DESTINATION_RESERVED,
        _E.SOURCE_HELD,
        _E.DESTINATION_ACTIVATED,
        _E.SOURCE_RELEASED,
        _E.COMPLETED,
    ),
}


def expected_normalized_handoff(order: HandoffOrder) -> tuple[NormalizedHandoffEvent, ...]:
    """The lifecycle the endpoints observe for a successful handoff in ``order``."""
    return _EXPECTED[order]


def checked_backend(value: object) -> Backend:
    """``value`` as a :class:`Backend` (its member or value); anything else is
    ``unsupported_backend``, naming the backends there are."""
    return checked_member(Backend, value, HandoffErrorCode.UNSUPPORTED_BACKEND, "backend")


def expected_order(engine_type: Backend, revision: Revision = Revision.SEED) -> HandoffOrder:
    """The order a backend uses under ``revision`` (seed: TRT-LLM has no destination handoff)."""
    order = BACKEND_ORDERS[revision].get(engine_type)
    if order is None:
        raise handoff_error(
            HandoffErrorCode.UNSUPPORTED_BACKEND,
            f"{engine_type.value}: TRT-LLM does not support destination handoff "
            f"(revision {revision.value}; a976b2bf handles it like vLLM)",
        )
    return order


class NormalizedHandoffConformance(_Value):
    """What one single-request fixture run observed, normalized across engines.

    The fixture: one source output token, two destination output tokens, one
    completed request; KV visible at the destination only from activation on.
    """

    engine_type: Backend
    order: HandoffOrder
    lifecycle: tuple[NormalizedHandoffEvent, ...]
    source_output_tokens: U64
    destination_output_tokens: U64
    completed_requests: U64
    destination_stored: NormalizedStoredTiming
    source_drained: bool
    destination_drained: bool
    driver_drained: bool

    def validate(  # type: ignore[override]  # pydantic's deprecated classmethod
        self, revision: Revision | str = Revision.SEED
    ) -> None:
        """Raise :class:`~handoff_fsm.ConformanceError` for the first mismatch, as the reference.

        ``revision`` decides which backends have an order (a976b2bf adds TRT-LLM).
        """
        wanted = expected_order(self.engine_type, checked_revision(revision))
        if self.order is not wanted:
            raise handoff_error(
                HandoffErrorCode.CONFORMANCE_ORDER_MISMATCH,
                f"normalized handoff order mismatch: expected {wanted.value}, "
                f"got {self.order.value}",
            )
        if self.lifecycle != expected_normalized_handoff(self.order):
            raise handoff_error(
                HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH,
                "normalized handoff lifecycle mismatch: got "
                f"[{listed(self.lifecycle)}] ({len(self.lifecycle):,} events), expected "
                f"[{listed(expected_normalized_handoff(self.order))}]",
            )
        if (
            self.source_output_tokens != 1
            or self.destination_output_tokens != 2
            or self.completed_requests != 1
        ):
            raise handoff_error(
                HandoffErrorCode.CONFORMANCE_COUNTS_MISMATCH,
                "normalized handoff output/completion counts do not match the fixture: "
                f"source_output_tokens={self.source_output_tokens} (want 1), "
                f"destination_output_tokens={self.destination_output_tokens} (want 2), "
                f"completed_requests={self.completed_requests} (want 1)",
            )
        stored = self.destination_stored
        if (
            stored.before_activation != 0
            or stored.on_activation == 0
            or stored.repeated_activation_hashes_after_activation != 0
        ):
            raise handoff_error(
                HandoffErrorCode.CONFORMANCE_KV_VISIBILITY,
                "normalized handoff destination KV visibility is invalid: "
                f"before_activation={stored.before_activation} (want 0), "
                f"on_activation={stored.on_activation} (want > 0), "
                "repeated_activation_hashes_after_activation="
                f"{stored.repeated_activation_hashes_after_activation} (want 0)",
            )
        if not (self.source_drained and self.destination_drained and self.driver_drained):
            raise handoff_error(
                HandoffErrorCode.CONFORMANCE_NOT_DRAINED,
                "normalized handoff did not drain: "
                f"source_drained={self.source_drained}, "
                f"destination_drained={self.destination_drained}, "
                f"driver_drained={self.driver_drained}",
            )

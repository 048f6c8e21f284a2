"""Conformance verdicts: the reference's ``validate()``, for every combination of fields."""

from __future__ import annotations

import itertools

import pytest

from handoff_fsm import (
    Backend,
    ConformanceError,
    HandoffErrorCode,
    HandoffOrder,
    NormalizedHandoffConformance,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    expected_normalized_handoff,
)

E = NormalizedHandoffEvent
SF_LIFECYCLE = (
    E.SOURCE_HELD,
    E.DESTINATION_ACCEPTED,
    E.DESTINATION_RESERVED,
    E.DESTINATION_ACTIVATED,
    E.SOURCE_RELEASED,
    E.COMPLETED,
)
DF_LIFECYCLE = (
    E.DESTINATION_ACCEPTED,
    E.DESTINATION_RESERVED,
    E.SOURCE_HELD,
    E.DESTINATION_ACTIVATED,
    E.SOURCE_RELEASED,
    E.COMPLETED,
)


def test_expected_lifecycles() -> None:
    assert expected_normalized_handoff(HandoffOrder.SOURCE_FIRST) == SF_LIFECYCLE
    assert expected_normalized_handoff(HandoffOrder.DESTINATION_FIRST) == DF_LIFECYCLE


def reference_verdict(  # noqa: PLR0917 - one parameter per field group
    engine: Backend,
    order: HandoffOrder,
    lifecycle: tuple[NormalizedHandoffEvent, ...],
    counts: tuple[int, int, int],
    stored: tuple[int, int, int],
    drained: tuple[bool, bool, bool],
) -> HandoffErrorCode | None:
    """The seed's validate(), transcribed branch by branch (the specification)."""
    if engine is Backend.TRTLLM:
        return HandoffErrorCode.UNSUPPORTED_BACKEND
    expected_order = (
        HandoffOrder.SOURCE_FIRST if engine is Backend.VLLM else HandoffOrder.DESTINATION_FIRST
    )
    if order is not expected_order:
        return HandoffErrorCode.CONFORMANCE_ORDER_MISMATCH
    if lifecycle != (SF_LIFECYCLE if order is HandoffOrder.SOURCE_FIRST else DF_LIFECYCLE):
        return HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH
    if counts != (1, 2, 1):
        return HandoffErrorCode.CONFORMANCE_COUNTS_MISMATCH
    before, on, repeated = stored
    if before != 0 or on == 0 or repeated != 0:
        return HandoffErrorCode.CONFORMANCE_KV_VISIBILITY
    if not all(drained):
        return HandoffErrorCode.CONFORMANCE_NOT_DRAINED
    return None


LIFECYCLES = [SF_LIFECYCLE, DF_LIFECYCLE, (), tuple(reversed(SF_LIFECYCLE)), SF_LIFECYCLE[:-1]]
COUNTS = [(1, 2, 1), (0, 2, 1), (1, 1, 1), (1, 2, 0), (2, 3, 2)]
STORED = [(0, 4, 0), (1, 4, 0), (0, 0, 0), (0, 4, 1)]
DRAINED: list[tuple[bool, bool, bool]] = [
    (a, b, c) for a in (True, False) for b in (True, False) for c in (True, False)
]


def test_every_field_combination_gets_the_reference_verdict() -> None:
    checked = 0
    for engine, order, lifecycle, counts, stored, drained in itertools.product(
        Backend, HandoffOrder, LIFECYCLES, COUNTS, STORED, DRAINED
    ):
        record = NormalizedHandoffConformance(
            engine_type=engine,
            order=order,
            lifecycle=lifecycle,
            source_output_tokens=counts[0],
            destination_output_tokens=counts[1],
            completed_requests=counts[2],
            destination_stored=NormalizedStoredTiming(
                before_activation=stored[0],
                on_activation=stored[1],
                repeated_activation_hashes_after_activation=stored[2],
            ),
            source_drained=drained[0],
            destination_drained=drained[1],
            driver_drained=drained[2],
        )
        expected = reference_verdict(engine, order, lifecycle, counts, stored, drained)
        if expected is None:
            record.validate()
        else:
            with pytest.raises(ConformanceError) as error:
                record.validate()
            assert error.value.code is expected
        checked += 1
    assert checked == 3 * 2 * len(LIFECYCLES) * len(COUNTS) * len(STORED) * len(DRAINED)


def test_messages_name_the_mismatch() -> None:
    good = NormalizedHandoffConformance(
        engine_type=Backend.SGLANG,
        order=HandoffOrder.DESTINATION_FIRST,
        lifecycle=DF_LIFECYCLE,
        source_output_tokens=1,
        destination_output_tokens=2,
        completed_requests=1,
        destination_stored=NormalizedStoredTiming(on_activation=3),
        source_drained=True,
        destination_drained=True,
        driver_drained=True,
    )
    good.validate()
    with pytest.raises(ConformanceError, match="expected DestinationFirst, got SourceFirst"):
        good.model_copy(update={"order": HandoffOrder.SOURCE_FIRST}).validate()
    with pytest.raises(ConformanceError, match="destination_output_tokens=3 \\(want 2\\)"):
        good.model_copy(update={"destination_output_tokens": 3}).validate()
    with pytest.raises(ConformanceError, match="TRT-LLM does not support destination handoff"):
        good.model_copy(update={"engine_type": Backend.TRTLLM}).validate()
    with pytest.raises(ConformanceError, match="driver_drained=False"):
        good.model_copy(update={"driver_drained": False}).validate()


def test_a_message_does_not_grow_with_the_record() -> None:
    """A million-event lifecycle is shown by its start and its length."""
    record = NormalizedHandoffConformance(
        engine_type=Backend.VLLM,
        order=HandoffOrder.SOURCE_FIRST,
        lifecycle=(E.SOURCE_HELD,) * 1_000_000,
        source_output_tokens=1,
        destination_output_tokens=2,
        completed_requests=1,
        destination_stored=NormalizedStoredTiming(on_activation=3),
        source_drained=True,
        destination_drained=True,
        driver_drained=True,
    )
    with pytest.raises(ConformanceError) as error:
        record.validate()
    assert error.value.code is HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH
    message = str(error.value)
    assert len(message) < 400, len(message)
    assert "(999,992 more)" in message and "1,000,000 events" in message
    assert "expected [SourceHeld, DestinationAccepted, DestinationReserved" in message

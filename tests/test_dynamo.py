"""Dynamo's names are the library's types, not copies."""

from __future__ import annotations

import uuid

import handoff_fsm as hf
from handoff_fsm import dynamo


def test_dynamo_names_are_aliases() -> None:
    assert dynamo.EngineType is hf.Backend
    assert dynamo.KvTransferTimingMode is hf.TransferTimingMode
    assert dynamo.HandoffCoordinatorCore is hf.HandoffCoordinator
    assert dynamo.NormalizedHandoffConformance is hf.NormalizedHandoffConformance
    assert dynamo.EngineType.VLLM.value == "vllm"


def test_new_handoff_id_is_a_random_uuid4() -> None:
    first, second = dynamo.new_handoff_id(), dynamo.new_handoff_id()
    assert isinstance(first, uuid.UUID) and first.version == 4
    assert first != second


def test_conformance_takes_an_engine_type() -> None:
    record = dynamo.NormalizedHandoffConformance(
        engine_type=dynamo.EngineType.VLLM,
        order=hf.HandoffOrder.SOURCE_FIRST,
        lifecycle=dynamo.expected_normalized_handoff(hf.HandoffOrder.SOURCE_FIRST),
        source_output_tokens=1,
        destination_output_tokens=2,
        completed_requests=1,
        destination_stored=dynamo.NormalizedStoredTiming(on_activation=1),
        source_drained=True,
        destination_drained=True,
        driver_drained=True,
    )
    record.validate()


def test_a_dynamo_style_handoff_runs() -> None:
    coordinator = dynamo.HandoffCoordinatorCore(
        dynamo.new_handoff_id(), hf.HandoffOrder.SOURCE_FIRST
    )
    assert [type(a.action).__name__ for a in coordinator.start()] == ["SubmitPrefill"]

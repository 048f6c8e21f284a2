"""Conformance records from real simulated runs: valid for vLLM and SGLang, failing for faults."""

from __future__ import annotations

import pytest

from handoff_fsm import (
    Backend,
    Canceled,
    ConformanceError,
    HandoffErrorCode,
    HandoffOrder,
    NormalizedStoredTiming,
    SubmitPrefill,
    expected_normalized_handoff,
)
from handoff_fsm.simulate import (
    AckFault,
    Count,
    DestinationQuirks,
    FaultPlan,
    ScriptedAck,
    ScriptedFact,
    ScriptedTransferFailure,
    Simulation,
    SimulationConfig,
    conformance_record,
    conformance_run,
    simulate,
)

ORDERS = {Backend.VLLM: HandoffOrder.SOURCE_FIRST, Backend.SGLANG: HandoffOrder.DESTINATION_FIRST}


@pytest.mark.parametrize("backend", [Backend.VLLM, Backend.SGLANG])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_clean_fixture_run_validates(backend: Backend, seed: int) -> None:
    record = conformance_run(backend, seed=seed)
    record.validate()
    assert record.engine_type is backend and record.order is ORDERS[backend]
    assert record.lifecycle == expected_normalized_handoff(ORDERS[backend])
    assert (record.source_output_tokens, record.destination_output_tokens) == (1, 2)
    assert record.completed_requests == 1
    assert record.source_drained and record.destination_drained and record.driver_drained


def test_kv_visibility_counts_what_the_destination_made_visible() -> None:
    record = conformance_run(Backend.VLLM, prompt_tokens=Count(1000), block_tokens=16)
    assert record.destination_stored == NormalizedStoredTiming(
        before_activation=0, on_activation=1000 // 16, repeated_activation_hashes_after_activation=0
    )


def test_trtllm_is_refused_clearly() -> None:
    with pytest.raises(ConformanceError) as caught:
        conformance_run("trtllm")
    assert caught.value.code is HandoffErrorCode.UNSUPPORTED_BACKEND
    assert "TRT-LLM does not support destination handoff" in caught.value.message


def failure(record_code: HandoffErrorCode, backend: Backend, **settings: object) -> str:
    record = conformance_run(backend, **settings)  # type: ignore[arg-type]
    with pytest.raises(ConformanceError) as caught:
        record.validate()
    assert caught.value.code is record_code
    return caught.value.message


@pytest.mark.parametrize("backend", [Backend.VLLM, Backend.SGLANG])
def test_a_failed_transfer_fails_the_lifecycle(backend: Backend) -> None:
    message = failure(
        HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH,
        backend,
        faults=FaultPlan(script=(ScriptedTransferFailure(0),)),
    )
    assert "DestinationActivated" not in message.split("expected")[0]


@pytest.mark.parametrize(
    "plan",
    [
        FaultPlan(script=(ScriptedAck(0, SubmitPrefill, AckFault.LOSE),)),
        FaultPlan(script=(ScriptedAck(0, SubmitPrefill, AckFault.FAIL),)),
        FaultPlan(script=(ScriptedFact(0, Canceled, 12.0),)),
    ],
    ids=["lost-submit-ack", "failed-submit", "canceled"],
)
def test_faults_fail_the_lifecycle(plan: FaultPlan) -> None:
    failure(HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH, Backend.VLLM, faults=plan)


def test_running_the_wrong_order_fails_the_order() -> None:
    message = failure(
        HandoffErrorCode.CONFORMANCE_ORDER_MISMATCH, Backend.SGLANG, order=HandoffOrder.SOURCE_FIRST
    )
    assert "expected DestinationFirst, got SourceFirst" in message


def test_decoding_more_tokens_fails_the_counts() -> None:
    message = failure(
        HandoffErrorCode.CONFORMANCE_COUNTS_MISMATCH, Backend.VLLM, destination_output_tokens=3
    )
    assert "destination_output_tokens=3 (want 2)" in message


def test_kv_visible_before_activation_fails_the_visibility() -> None:
    message = failure(
        HandoffErrorCode.CONFORMANCE_KV_VISIBILITY,
        Backend.SGLANG,
        destination_quirks=DestinationQuirks(visible_on_store=True),
    )
    assert "before_activation=" in message and "(want 0)" in message


def test_a_prompt_too_short_for_a_full_block_shows_nothing_on_activation() -> None:
    message = failure(
        HandoffErrorCode.CONFORMANCE_KV_VISIBILITY, Backend.VLLM, prompt_tokens=Count(8)
    )
    assert "on_activation=0 (want > 0)" in message


class StickySet(set[int]):
    """A holding set that never lets go: an endpoint that forgets to free."""

    def discard(self, element: object) -> None:
        pass


def test_an_endpoint_that_does_not_free_fails_the_drain() -> None:
    simulation = Simulation(SimulationConfig(handoffs=1, concurrency=1), keep_lifecycles=True)
    simulation.destination.holding = StickySet()
    record = conformance_record(simulation.run())
    with pytest.raises(ConformanceError) as caught:
        record.validate()
    assert caught.value.code is HandoffErrorCode.CONFORMANCE_NOT_DRAINED
    assert "destination_drained=False" in caught.value.message


def test_a_record_describes_exactly_one_handoff() -> None:
    with pytest.raises(ValueError, match="one handoff"):
        conformance_record(simulate(SimulationConfig(handoffs=2), keep_lifecycles=True))
    with pytest.raises(ValueError, match="keep_lifecycles"):
        conformance_record(simulate(SimulationConfig(handoffs=1)))


@pytest.mark.parametrize("name", ["vLLM", "", "tensorrt"])
def test_an_unknown_backend_names_the_backends_there_are(name: str) -> None:
    with pytest.raises(ConformanceError) as raised:
        conformance_run(name)
    assert raised.value.code is HandoffErrorCode.UNSUPPORTED_BACKEND
    assert "expected one of vllm, sglang, trtllm" in raised.value.message

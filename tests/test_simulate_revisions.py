"""Why the revision matters: a request canceled while the destination decodes it."""

from __future__ import annotations

import io
import json

import pytest

from handoff_fsm import Backend, CancelDestination, ConformanceError, HandoffErrorCode, Revision
from handoff_fsm.io import replay
from handoff_fsm.simulate import (
    AckFaultRates,
    FaultPlan,
    SimulationConfig,
    SimulationResult,
    simulate,
)
from handoff_fsm.simulate.trace import TraceWriter

DECODE_CANCELS = FaultPlan(decode_cancel=0.3)


def _run(revision: Revision, backend: Backend) -> SimulationResult:
    config = SimulationConfig(
        handoffs=400, seed=11, faults=DECODE_CANCELS, revision=revision, backend=backend
    )
    result = simulate(config)
    assert result.ok, result.problems
    return result


@pytest.mark.parametrize("backend", [Backend.VLLM, Backend.SGLANG])
def test_the_seed_keeps_a_canceled_request_decoding_and_a976b2bf_frees_it(
    backend: Backend,
) -> None:
    seed = _run(Revision.SEED, backend)
    upstream = _run(Revision.A976B2BF, backend)
    assert seed.faults["decode_canceled"] > 50
    assert seed.faults == upstream.faults
    assert seed.destination_held_after_cancel_ms > 0.0 and seed.reopened == 0
    assert upstream.destination_held_after_cancel_ms == 0.0 and upstream.reopened > 50
    # The seed's cancels arrive after completion and issue nothing; a976b2bf acts on them.
    assert seed.late_inputs > upstream.late_inputs
    # Canceled requests never finish decoding under a976b2bf.
    assert upstream.observations.completed_requests < seed.observations.completed_requests


def test_without_cancels_after_success_the_revisions_run_identically() -> None:
    faults = FaultPlan(transfer_failure=0.1)
    a = simulate(SimulationConfig(handoffs=300, seed=4, faults=faults))
    b = simulate(SimulationConfig(handoffs=300, seed=4, faults=faults, revision=Revision.A976B2BF))
    assert (a.completed, a.succeeded, a.canceled, a.leaked) == (
        b.completed,
        b.succeeded,
        b.canceled,
        b.leaked,
    )
    assert a.latencies_ms == b.latencies_ms


def test_an_a976b2bf_trace_with_reopened_handoffs_replays_to_the_same_replies() -> None:
    out, replies = io.StringIO(), list[str]()
    config = SimulationConfig(
        handoffs=150, seed=2, faults=DECODE_CANCELS, revision=Revision.A976B2BF
    )
    simulate(config, recorder=TraceWriter(out, replies))
    lines = out.getvalue().splitlines()
    assert any(json.loads(line).get("revision") == "a976b2bf" for line in lines)
    assert list(replay(lines)) == replies
    assert any('"complete": false, "completion": "Success"' in reply for reply in replies)


def test_trtllm_runs_under_a976b2bf_only() -> None:
    with pytest.raises(ConformanceError) as error:
        SimulationConfig(backend=Backend.TRTLLM)
    assert error.value.code is HandoffErrorCode.UNSUPPORTED_BACKEND
    result = simulate(SimulationConfig(backend=Backend.TRTLLM, revision=Revision.A976B2BF))
    assert result.ok and result.succeeded == result.completed


def test_a_reopened_cleanup_whose_cancel_acknowledgement_is_lost_is_re_sent() -> None:
    plan = FaultPlan(decode_cancel=0.3, acks={CancelDestination: AckFaultRates(lose=0.5)})
    config = SimulationConfig(handoffs=400, seed=11, faults=plan, revision=Revision.A976B2BF)
    result = simulate(config)
    assert result.ok, result.problems  # nothing stuck: every reopened cleanup ended
    assert result.reopened > 50 and result.cleanup_resends > 0
    assert result.destination_held_after_cancel_ms == 0.0


def test_a_reopened_cleanup_never_acknowledged_is_abandoned_and_reported() -> None:
    plan = FaultPlan(decode_cancel=0.3, acks={CancelDestination: AckFaultRates(lose=1.0)})
    config = SimulationConfig(
        handoffs=100, seed=11, faults=plan, revision=Revision.A976B2BF, cleanup_retries=2
    )
    result = simulate(config)
    assert result.abandoned and not result.ok
    assert all("(CancelDestination) abandoned after 3 sends" in line for line in result.abandoned)
    assert len(result.abandoned) == result.reopened  # each reopened cleanup ended by giving up
    assert result.stuck == () and result.leaks == ()  # the destination did cancel
    assert result.cleanup_resends == 2 * result.reopened

"""Phases and KV holds of simulated handoffs, from the recorded run (no matplotlib).

Scripted single handoffs with fixed latencies have times that can be worked out
by hand (ack 1 ms, prefill 10 ms, reservation 2 ms, transfer ``d`` ms), and each
scenario checks them; random faulty runs check the rules that hold for any run:
the phases of a handoff add up to its latency as the run measured it, every
completed handoff is in exactly one bar of each grouping, and the recorder passes
every call on unchanged.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from dataclasses import replace
from itertools import pairwise

import pytest

from handoff_fsm.model import (
    ActivateDestination,
    Backend,
    Failed,
    HandoffCompletion,
    HandoffOrder,
    Owner,
    ReleaseSource,
    ReserveDestination,
    Revision,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.simulate import (
    AckFault,
    Count,
    FaultPlan,
    Fixed,
    ScriptedAck,
    ScriptedFact,
    ScriptedTransferFailure,
    SimulationConfig,
    SimulationResult,
    TraceWriter,
    simulate,
)
from handoff_fsm.simulate.phases import (
    FAULT_LABELS,
    NO_FAULT,
    SEVERAL_FAULTS,
    HandoffTimes,
    Phase,
    RunTimes,
    bin_counts,
    hold_spreads,
    latency_histogram,
    log_edges,
    phase_order,
    phases_by_completion,
    phases_by_fault,
    simulate_times,
    spread,
    timed_simulation,
)

ACK, PREFILL, RESERVE = 1.0, 10.0, 2.0

FIXED = SimulationConfig(
    handoffs=1,
    concurrency=1,
    prompt_tokens=Count(1000),
    ack_ms=Fixed(ACK),
    prefill_ms=Fixed(PREFILL),
    reserve_ms=Fixed(RESERVE),
)
"""One handoff whose every latency is fixed, so its times can be worked out by hand."""


def one(
    *script: ScriptedAck | ScriptedFact | ScriptedTransferFailure,
    backend: Backend = Backend.VLLM,
) -> tuple[SimulationResult, HandoffTimes, float]:
    """Run the fixed handoff with ``script``; its result, times and transfer delay."""
    config = replace(FIXED, backend=backend, faults=FaultPlan(script=script))
    result, run = simulate_times(config)
    (times,) = run.handoffs
    delay = result.transfer_delays_ms[0] if result.transfer_delays_ms else math.nan
    return result, times, delay


def phases(times: HandoffTimes) -> dict[Phase, float]:
    """The phases the handoff spent time in."""
    return {phase: ms for phase, ms in times.phases.items() if ms}


def test_a_source_first_success_by_hand() -> None:
    result, times, d = one()
    # SubmitPrefill at 0, SourceHeld at 1 + 10, Reserve acked at 12, reserved at 14,
    # StartTransfer at 14, landed at 15 + d, activation acked 16 + d, release 17 + d.
    assert phases(times) == pytest.approx(
        {
            Phase.SUBMIT: ACK + PREFILL,
            Phase.RESERVE: ACK + RESERVE,
            Phase.TRANSFER: ACK + d,
            Phase.ACTIVATION: ACK,
            Phase.RELEASE: ACK,
        },
        rel=1e-12,
    )
    assert times.completion is HandoffCompletion.SUCCESS
    assert times.latency_ms == result.latencies_ms[0] == pytest.approx(17.0 + d, rel=1e-12)
    assert times.holds == pytest.approx(
        {
            Owner.SOURCE: ACK + RESERVE + (ACK + d) + ACK,  # SourceHeld to ReleaseSource
            Owner.DESTINATION: ACK + d,  # DestinationReserved to ActivateDestination
            Owner.TRANSFER: ACK + d,  # StartTransfer to TransferCompleted
        },
        rel=1e-12,
    )
    assert times.held_at_end == () and times.faults == ()


def test_a_destination_first_success_reserves_first() -> None:
    _, times, d = one(backend=Backend.SGLANG)
    assert phases(times) == pytest.approx(
        {
            Phase.RESERVE: ACK + RESERVE,
            Phase.SUBMIT: ACK + PREFILL,
            Phase.TRANSFER: ACK + d,
            Phase.ACTIVATION: ACK,
            Phase.RELEASE: ACK,
        },
        rel=1e-12,
    )
    # The destination waits through the prefill: it holds room from t=3 to 15 + d.
    assert times.holds == pytest.approx(
        {
            Owner.SOURCE: (ACK + d) + ACK,
            Owner.DESTINATION: ACK + PREFILL + ACK + d,
            Owner.TRANSFER: ACK + d,
        },
        rel=1e-12,
    )


def test_phase_order_follows_the_handoff_order() -> None:
    assert phase_order(HandoffOrder.SOURCE_FIRST)[:2] == (Phase.SUBMIT, Phase.RESERVE)
    assert phase_order(HandoffOrder.DESTINATION_FIRST)[:2] == (Phase.RESERVE, Phase.SUBMIT)
    for order in HandoffOrder:
        assert set(phase_order(order)) == set(Phase)
        assert phase_order(order)[-1] is Phase.CLEANUP


def test_a_refused_reservation_starts_cleanup_when_its_answer_comes() -> None:
    _, times, _ = one(ScriptedAck(0, ReserveDestination, AckFault.FAIL))
    assert phases(times) == pytest.approx(
        {Phase.SUBMIT: ACK + PREFILL, Phase.RESERVE: ACK, Phase.CLEANUP: ACK}, rel=1e-12
    )
    assert times.completion is HandoffCompletion.CANCELED
    assert times.holds == pytest.approx({Owner.SOURCE: ACK})  # canceled with the Failed answer
    assert times.faults == ("ack_fail",) and times.fault_group == "ack_fail"


def test_a_lost_release_acknowledgement_waits_for_the_deadline() -> None:
    result, times, d = one(ScriptedAck(0, ReleaseSource, AckFault.LOSE))
    deadline = FIXED.deadline_ms
    assert deadline is not None
    released_at = 16.0 + d
    assert phases(times) == pytest.approx(
        {
            Phase.SUBMIT: ACK + PREFILL,
            Phase.RESERVE: ACK + RESERVE,
            Phase.TRANSFER: ACK + d,
            Phase.ACTIVATION: ACK,
            Phase.RELEASE: deadline - released_at,
            Phase.CLEANUP: ACK,
        },
        rel=1e-12,
    )
    assert times.latency_ms == result.latencies_ms[0] == deadline + ACK
    # The source let go when it was told to release, not when the cancel came.
    assert times.holds[Owner.SOURCE] == pytest.approx(released_at - (ACK + PREFILL), rel=1e-12)
    assert times.fault_group == "ack_lose"


def test_a_refused_activation_leaves_the_destination_holding_until_its_cancel() -> None:
    _, times, d = one(ScriptedAck(0, ActivateDestination, AckFault.FAIL))
    assert phases(times)[Phase.ACTIVATION] == pytest.approx(ACK)
    assert phases(times)[Phase.CLEANUP] == pytest.approx(ACK)
    # Reserved at 14, activation refused at 16 + d, CancelDestination issued then.
    assert times.holds[Owner.DESTINATION] == pytest.approx(ACK + d + ACK, rel=1e-12)


def test_a_refused_transfer_moved_nothing() -> None:
    _, times, _ = one(ScriptedAck(0, StartTransfer, AckFault.FAIL))
    assert Owner.TRANSFER not in times.holds and Owner.TRANSFER not in times.held_at_end
    assert phases(times)[Phase.TRANSFER] == pytest.approx(ACK)
    assert times.completion is HandoffCompletion.CANCELED


def test_a_failed_transfer_holds_the_kv_until_it_lands() -> None:
    _, times, d = one(ScriptedTransferFailure(0))
    assert times.holds[Owner.TRANSFER] == pytest.approx(ACK + d, rel=1e-12)
    assert Phase.ACTIVATION not in phases(times)
    assert phases(times)[Phase.CLEANUP] > 0.0
    assert times.faults == ("transfer_failed",)


def test_a_failure_before_the_first_acknowledgement_is_cleanup_from_its_arrival() -> None:
    _, times, _ = one(ScriptedFact(0, Failed, at_ms=0.5))
    # The Failed at 0.5 issues CancelSource at once; its acknowledgement completes at 1.5.
    assert phases(times) == pytest.approx({Phase.SUBMIT: 0.5, Phase.CLEANUP: ACK}, rel=1e-12)
    assert times.holds == {}  # the source was canceled while prefilling: it never held KV
    assert times.faults == ("fact_Failed",)


def test_a_held_back_fact_counts_from_when_it_first_arrived() -> None:
    result, times, _ = one(ScriptedAck(0, SubmitPrefill, AckFault.LATE))
    assert result.held_back == 1  # SourceHeld came before Submitted: held back
    deadline = FIXED.deadline_ms
    assert deadline is not None
    # The source held the KV from t=11 (its SourceHeld) until the deadline's cancel.
    assert times.holds[Owner.SOURCE] == pytest.approx(deadline - (ACK + PREFILL), rel=1e-12)
    assert phases(times)[Phase.SUBMIT] == pytest.approx(deadline)


def test_several_kinds_of_fault_make_one_group() -> None:
    _, times, _ = one(
        ScriptedAck(0, SubmitPrefill, AckFault.DUPLICATE),
        ScriptedAck(0, ReleaseSource, AckFault.LOSE),
    )
    assert times.faults == ("ack_lose", "ack_duplicate")  # FAULT_COUNTERS order
    assert times.fault_group == SEVERAL_FAULTS


def _runs() -> list[tuple[SimulationConfig, SimulationResult, RunTimes]]:
    runs = []
    for backend, revision, seed in (
        (Backend.VLLM, Revision.SEED, 1),
        (Backend.SGLANG, Revision.SEED, 2),
        (Backend.VLLM, Revision.A976B2BF, 3),
    ):
        config = SimulationConfig(
            backend=backend,
            revision=revision,
            handoffs=600,
            concurrency=16,
            seed=seed,
            faults=replace(FaultPlan.uniform(0.1), decode_cancel=0.2),
        )
        result, run = simulate_times(config)
        runs.append((config, result, run))
    return runs


RUNS = _runs()


@pytest.mark.parametrize(("config", "result", "run"), RUNS)
def test_phases_add_up_to_the_latency_the_run_measured(
    config: SimulationConfig, result: SimulationResult, run: RunTimes
) -> None:
    assert result.completed == len(run.completed) == config.handoffs
    assert sorted(h.latency_ms or 0.0 for h in run.completed) == sorted(result.latencies_ms)
    for h in run.completed:
        assert h.latency_ms is not None
        assert math.isclose(math.fsum(h.phases.values()), h.latency_ms, abs_tol=1e-9), h.key
        assert all(ms >= 0.0 for ms in h.phases.values()), h.key
        assert all(ms >= 0.0 for ms in h.holds.values()), h.key
        assert set(h.holds).isdisjoint(h.held_at_end), h.key
    assert run.order is config.handoff_order
    assert [h.index for h in run.handoffs] == list(range(config.handoffs))
    assert {h.key for h in run.handoffs} == {f"h{i}" for i in range(config.handoffs)}


@pytest.mark.parametrize(("config", "result", "run"), RUNS)
def test_every_completed_handoff_is_in_one_bar_of_each_grouping(
    config: SimulationConfig, result: SimulationResult, run: RunTimes
) -> None:
    completed = run.completed
    by_completion = phases_by_completion(run)
    assert [bar.key for bar in by_completion] == ["Success", "Canceled"]
    assert [bar.count for bar in by_completion] == [result.succeeded, result.canceled]
    by_fault = phases_by_fault(run)
    assert sum(bar.count for bar in by_fault) == len(completed)
    assert by_fault[0].key == NO_FAULT and len({bar.key for bar in by_fault}) == len(by_fault)
    for bar in (*by_completion, *by_fault):
        assert bar.label == FAULT_LABELS.get(bar.key, bar.key)
        group = [
            h
            for h in completed
            if (h.completion is not None and h.completion.value == bar.key)
            or h.fault_group == bar.key
        ]
        assert len(group) == bar.count
        for phase, mean in zip(run.phases, bar.means_ms, strict=True):
            assert mean == math.fsum(h.phases[phase] for h in group) / len(group)
        assert bar.total_ms == pytest.approx(
            math.fsum(h.latency_ms or 0.0 for h in group) / len(group), rel=1e-9
        )


@pytest.mark.parametrize(("config", "result", "run"), RUNS)
def test_every_injected_fault_is_logged_against_its_handoff(
    config: SimulationConfig, result: SimulationResult, run: RunTimes
) -> None:
    logged = Counter(kind for _, kind in result.fault_log)
    assert logged == Counter({kind: n for kind, n in result.faults.items() if n})
    assert result.faults["decode_canceled"] > 0
    for h in run.handoffs:
        assert set(h.faults) == {kind for i, kind in result.fault_log if i == h.index}


def test_the_recorder_passes_every_call_on() -> None:
    config = SimulationConfig(handoffs=200, seed=5, faults=FaultPlan.uniform(0.1))
    alone, alone_replies = io.StringIO(), list[str]()
    simulate(config, recorder=TraceWriter(alone, alone_replies))
    inner, inner_replies = io.StringIO(), list[str]()
    simulate_times(config, inner=TraceWriter(inner, inner_replies))
    assert inner.getvalue() == alone.getvalue() and inner.getvalue()
    assert inner_replies == alone_replies


def test_holds_are_summarized_per_owner_and_completion() -> None:
    _, _, run = RUNS[0]
    spreads = hold_spreads(run)
    assert [(s.owner, s.completion) for s in spreads] == [
        (owner, completion)
        for owner in (Owner.SOURCE, Owner.DESTINATION, Owner.TRANSFER)
        for completion in (HandoffCompletion.SUCCESS, HandoffCompletion.CANCELED)
    ]
    for s in spreads:
        values = sorted(
            h.holds[s.owner]
            for h in run.completed
            if h.completion is s.completion and s.owner in h.holds
        )
        assert s.spread == spread(values)
        assert s.spread.count == len(values)


def test_spread_is_nearest_rank() -> None:
    s = spread([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s is not None
    assert (s.min_ms, s.p25_ms, s.p50_ms, s.p75_ms, s.p90_ms, s.p99_ms, s.max_ms) == (
        1.0,
        2.0,
        3.0,
        4.0,
        5.0,
        5.0,
        5.0,
    )
    assert spread([]) is None


@pytest.mark.parametrize(
    ("low", "high"), [(0.12, 1020.0), (1.0, 1.0), (10.0, 100.0), (0.0031, 0.0032)]
)
def test_log_edges_cover_the_values(low: float, high: float) -> None:
    edges = log_edges(low, high)
    assert len(edges) >= 2
    assert edges[0] <= low and high <= edges[-1]
    assert all(a < b for a, b in pairwise(edges))
    assert sum(bin_counts([low, high], edges)) == 2


def test_bin_counts_close_the_last_bin() -> None:
    assert bin_counts([1.0, 1.5, 2.0, 3.0], [1.0, 2.0, 3.0]) == (2, 2)


def test_the_latency_histogram_counts_every_completed_handoff() -> None:
    _, result, run = RUNS[1]
    histogram = latency_histogram(run)
    assert histogram is not None
    counts = dict(histogram.counts)
    assert sum(counts[HandoffCompletion.SUCCESS]) == result.succeeded
    assert sum(counts[HandoffCompletion.CANCELED]) == result.canceled
    assert histogram.edges_ms[0] <= min(result.latencies_ms)
    assert max(result.latencies_ms) <= histogram.edges_ms[-1]
    assert latency_histogram(RunTimes(HandoffOrder.SOURCE_FIRST, ())) is None


def test_the_recorded_times_are_the_trace_s_times() -> None:
    """Two readers of the driver's clock agree: the phases' and the trace's ``at_ms``."""
    config = SimulationConfig(handoffs=150, seed=6, faults=FaultPlan.uniform(0.1))
    out = io.StringIO()
    simulation, recorder = timed_simulation(
        config, inner=TraceWriter(out, clock=lambda: simulation.now)
    )
    result = simulation.run()
    run = recorder.times(result.fault_log)
    at: dict[str, list[tuple[str, float]]] = {}
    for line in out.getvalue().splitlines():
        record = json.loads(line)
        at.setdefault(record["coordinator"], []).append((record["op"], record["at_ms"]))
    for h in run.handoffs:
        lines = at[h.key]
        assert ("start", h.started_ms) in lines, h.key
        assert h.completed_ms in {ms for _, ms in lines}, h.key  # fed when it completed

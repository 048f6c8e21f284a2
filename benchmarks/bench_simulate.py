"""Simulator overhead: a simulated run against the same handoffs fed straight to coordinators.

Rule kept here: both sides handle exactly the same handoffs. The inputs the
simulator fed its coordinators (same ids, same fact objects, same outcomes, in
the same interleaved order) are recorded once with an ``InputLog``; the
"direct" side replays them through ``HandoffCoordinator`` with a minimal loop
(no heap, no endpoints, no random draws, nothing built). The two sides are
timed back to back (A B, B A, ...) after a warm-up, with the garbage collector
collected before and disabled during every sample; results are medians, and
the ratio is the median of the per-pair ratios. Each side checks it did the
same work (the same number of issued actions), so a broken side cannot look fast.

Target: ``ratio <= 3``. Run as a script to print the figures, including the
100,000-handoff run at a 5 % fault rate.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from harness import quantile

from handoff_fsm import HandoffCoordinator, HandoffError
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.model import Backend
from handoff_fsm.simulate import FaultPlan, InputLog, SimulationConfig, simulate
from handoff_fsm.simulate.trace import NewHandoff

RATIO_TARGET = 3.0


def _config(handoffs: int, fault_rate: float, engine: str, seed: int = 0) -> SimulationConfig:
    return SimulationConfig(
        backend=Backend(engine),
        handoffs=handoffs,
        concurrency=64,
        seed=seed,
        faults=FaultPlan.uniform(fault_rate),
    )


NEW, START, FACT, OUTCOME = range(4)
Call = tuple[int, str, Any, Any]
"""``(op, key, a, b)``: the log's entries flattened before timing, so the baseline spends
nothing but the calls themselves."""


def calls_of(log: InputLog) -> list[Call]:
    """The logged inputs as the flat calls :func:`drive_directly` makes (not timed)."""
    calls: list[Call] = []
    for key, given in log.inputs:
        if isinstance(given, NewHandoff):
            calls.append((NEW, key, given.handoff_id, given.order))
        elif given.kind == "start":
            calls.append((START, key, None, None))
        elif given.kind == "fact":
            calls.append((FACT, key, given.fact, None))
        else:
            calls.append((OUTCOME, key, given.action_id, given.outcome))
    return calls


def drive_directly(calls: list[Call], fallback: float) -> int:
    """Make the calls straight on coordinators; returns the actions they issued."""
    coordinators: dict[str, HandoffCoordinator] = {}
    issued = 0
    for op, key, a, b in calls:
        if op == OUTCOME:
            # A bare try/except, not contextlib.suppress: the baseline must stay minimal.
            try:  # noqa: SIM105
                issued += len(coordinators[key].on_action_outcome(a, b))
            except HandoffError:
                pass
        elif op == FACT:
            try:  # noqa: SIM105
                issued += len(coordinators[key].on_fact(a))
            except HandoffError:
                pass
        elif op == START:
            issued += len(coordinators[key].start())
        else:
            coordinators[key] = HandoffCoordinator(a, b, fallback)
    return issued


def _timed(run: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()  # CPU time, as every other row of the table
        run()
        return time.process_time() - started
    finally:
        gc.enable()


def measure(
    handoffs: int = 20000,
    repeats: int = 5,
    *,
    fault_rate: float = 0.0,
    engine: str = "vllm",
) -> dict[str, float]:
    """Median seconds to simulate ``handoffs`` handoffs vs. to drive them directly.

    Returns ``handoffs``, ``simulated_s``, ``direct_s``, ``ratio`` (median of the
    per-pair ratios), ``ratio_p10`` and ``ratio_p90``, ``simulated_us_per_handoff`` and
    ``direct_us_per_handoff``.
    """
    compiled_chart()  # built once per process; not part of either side
    config = _config(handoffs, fault_rate, engine)
    log = InputLog()
    reference = simulate(config, recorder=log)
    if not reference.ok:
        raise AssertionError(f"the benchmarked run is not clean: {reference.problems[:3]}")
    calls, fallback = calls_of(log), log.fallback_ms
    if drive_directly(calls, fallback) != log.issued:
        raise AssertionError("the direct loop did not issue the actions the simulation did")
    warmup = _config(min(handoffs, 2000), fault_rate, engine)
    simulate(warmup)
    drive_directly(calls, fallback)

    simulated: list[float] = []
    direct: list[float] = []
    for i in range(repeats):
        sides = ("simulated", "direct") if i % 2 == 0 else ("direct", "simulated")
        for side in sides:
            if side == "simulated":
                simulated.append(_timed(lambda: simulate(config)))
            else:
                direct.append(_timed(lambda: drive_directly(calls, fallback)))
    ratios = [s / d for s, d in zip(simulated, direct, strict=True)]
    return {
        "handoffs": float(handoffs),
        "fault_rate": fault_rate,
        "simulated_s": statistics.median(simulated),
        "direct_s": statistics.median(direct),
        "ratio": statistics.median(ratios),
        "ratio_p10": quantile(ratios, 0.1),
        "ratio_p90": quantile(ratios, 0.9),
        "simulated_us_per_handoff": statistics.median(simulated) / handoffs * 1e6,
        "direct_us_per_handoff": statistics.median(direct) / handoffs * 1e6,
    }


def measure_end_to_end(
    handoffs: int = 100_000, fault_rate: float = 0.05, engine: str = "vllm"
) -> dict[str, float]:
    """One whole run, as ``handoff-fsm simulate`` does it: seconds, throughput, leaks."""
    compiled_chart()
    result = simulate(_config(handoffs, fault_rate, engine))
    return {
        "handoffs": float(result.completed),
        "fault_rate": fault_rate,
        "wall_s": result.wall_s,
        "handoffs_per_s": result.completed / result.wall_s,
        "leaked": float(result.leaked),
        "problems": float(len(result.problems)),
    }


def main() -> int:
    ok = True
    for fault_rate in (0.0, 0.05):
        figures = measure(fault_rate=fault_rate)
        ok = ok and figures["ratio"] <= RATIO_TARGET
        print(
            f"simulate vs direct, {figures['handoffs']:.0f} handoffs at {fault_rate:.0%} faults: "
            f"{figures['simulated_s']:.3f} s vs {figures['direct_s']:.3f} s "
            f"({figures['simulated_us_per_handoff']:.1f} vs "
            f"{figures['direct_us_per_handoff']:.1f} us/handoff), "
            f"ratio {figures['ratio']:.2f} (p10-p90 {figures['ratio_p10']:.2f}-"
            f"{figures['ratio_p90']:.2f}, target <= {RATIO_TARGET})"
        )
    run = measure_end_to_end()
    ok = ok and run["problems"] == 0
    print(
        f"end to end: {run['handoffs']:.0f} handoffs at {run['fault_rate']:.0%} faults in "
        f"{run['wall_s']:.2f} s ({run['handoffs_per_s']:,.0f} handoffs/s), "
        f"leaked {run['leaked']:.0f}, problems {run['problems']:.0f}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Sweep scaling: a grid of ``simulate`` runs on an embedded LocalCluster of 2 workers vs 1.

Rule kept here: every side computes the same cells (by default 40: both backends, two
fault rates, ten seeds, 10,000 handoffs each, through
:func:`handoff_fsm.simulate.sweep.run_cells`, as ``handoff-fsm sweep`` runs them), and each
side checks it got exactly the summaries of the others, so a broken side cannot look fast.
A cluster is started and warmed up (every worker has imported the simulator and run a small
cell) before its clock starts, and stopped after it stops: the clock runs from the first
submitted cell to the last result, in wall time, since running cells side by side is the
point. The engine's overhead is what one worker's sweep takes beyond the time its worker
spent computing the cells, as Dask's own task stream records each task's ``compute`` span:
scheduling, moving arguments and results, the worker's bookkeeping. (The in-process side,
the same cells one after another here through the same function,
:func:`~handoff_fsm.simulate.sweep.run_cell`, checks the summaries and is shown for
scale: a worker process computes at its own speed, which on a shared machine differs
from this one's by more than the overhead measured.)

Targets: the 2-worker sweep at least 1.7x faster than the 1-worker one on a 2-core
machine, and an overhead under 5% of a cell's time. A measurement means something only
with nothing heavy beside it. Run as a script to print the figures.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from distributed import get_task_stream

from handoff_fsm.simulate.sweep import Cell, Summary, grid, local_client, run_cell, run_cells

SPEEDUP_TARGET = 1.7
OVERHEAD_TARGET = 0.05


def cells_of(handoffs: int, count: int) -> list[Cell]:
    """``count`` cells of ``handoffs`` handoffs: vLLM and SGLang, fault rates 0 and 0.05,
    and as many seeds as that takes."""
    options = {"backend": ("vllm", "sglang"), "handoffs": (handoffs,), "fault_rate": (0.0, 0.05)}
    seeds = range(-(-count // 4))
    return grid(options, seeds)[:count]


def _warm() -> int:
    """Run on each worker before timing: the simulator imported, its table compiled."""
    run_cell({"handoffs": 20}, 0)
    return os.getpid()


def in_process(cells: Sequence[Cell]) -> tuple[float, list[Summary]]:
    """Seconds (wall) to compute ``cells`` one after another here, and their summaries."""
    run_cell({"handoffs": 20}, 0)  # the same warm-up as a worker's
    started = time.perf_counter()
    summaries = [run_cell(dict(cell.configuration), cell.seed) for cell in cells]
    return time.perf_counter() - started, summaries


def on_cluster(cells: Sequence[Cell], workers: int) -> tuple[float, float, list[Summary]]:
    """Seconds (wall) for a warm LocalCluster of ``workers`` processes to compute ``cells``,
    the seconds its workers spent computing them (Dask's own task stream: each task's
    ``compute`` span), and the summaries."""
    done: dict[Cell, Summary] = {}
    with local_client(workers) as client:
        client.wait_for_workers(workers)
        client.run(_warm)
        # Dask's context manager collects the tasks recorded after its entry by the
        # scheduler's own count, not by a time: a time bound drops tasks when the client
        # and the workers differ in latency or clock (Dask's own docstring says so).
        with get_task_stream(client=client) as stream:
            started = time.perf_counter()
            run_cells(client, cells, done.__setitem__)
            seconds = time.perf_counter() - started
    computing = sum(
        span["stop"] - span["start"]
        for task in stream.data
        for span in task["startstops"]
        if span["action"] == "compute"
    )
    if not computing > 0.0:
        raise RuntimeError(f"Dask's task stream recorded no compute span of {len(cells)} cells")
    return seconds, computing, [done[cell] for cell in cells]


def measure(handoffs: int = 10_000, count: int = 40) -> dict[str, Any]:
    """The three sides on the same cells: ``in_process_s``, ``one_worker_s``,
    ``two_workers_s``, the ``speedup`` (one over two), the ``overhead`` (one worker over in
    process, less one) and the ``overhead_ms_per_cell``."""
    cells = cells_of(handoffs, count)
    serial_s, expected = in_process(cells)
    one_s, computing_s, one = on_cluster(cells, 1)
    two_s, _, two = on_cluster(cells, 2)
    if not one == two == expected:
        raise AssertionError("the sides did not compute the same summaries")
    return {
        "cells": len(cells),
        "handoffs": handoffs,
        "in_process_s": serial_s,
        "one_worker_s": one_s,
        "one_worker_computing_s": computing_s,
        "two_workers_s": two_s,
        "speedup": one_s / two_s,
        "overhead": one_s / computing_s - 1.0,
        "overhead_ms_per_cell": (one_s - computing_s) / len(cells) * 1e3,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    handoffs, count = (int(args[0]), int(args[1])) if len(args) == 2 else (10_000, 40)
    figures = measure(handoffs, count)
    ok = figures["speedup"] >= SPEEDUP_TARGET and figures["overhead"] < OVERHEAD_TARGET
    print(
        f"sweep of {figures['cells']} cells x {handoffs:,} handoffs: in process "
        f"{figures['in_process_s']:.2f} s, 1 worker {figures['one_worker_s']:.2f} s "
        f"(computing {figures['one_worker_computing_s']:.2f} s), "
        f"2 workers {figures['two_workers_s']:.2f} s; speed-up {figures['speedup']:.2f}x "
        f"(target >= {SPEEDUP_TARGET}), engine overhead {figures['overhead']:.1%} "
        f"({figures['overhead_ms_per_cell']:.1f} ms per cell; target < {OVERHEAD_TARGET:.0%})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

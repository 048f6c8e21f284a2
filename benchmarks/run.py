"""``make bench``: the library against a hand-written coordinator and plain JSON, one table.

Rule kept here: this script only orchestrates and reports; the measuring lives
in :mod:`harness`, :mod:`bench_coordinator`, :mod:`bench_replay`,
:mod:`bench_simulate`, :mod:`bench_sweep`, :mod:`bench_explore`, :mod:`bench_system`,
:mod:`bench_diff` and :mod:`bench_import`, and every
number in the table was measured in this run, on this machine. A ratio is
library cost over yardstick cost (lower is better); ``--check`` exits 1 naming
each target that was missed or could not be measured. Timing is never asserted
in the test suite: machines are noisy, so targets are checked here, on demand.

Usage: ``python benchmarks/run.py [--quick] [--check] [--only GROUP ...]``; ``--only``
measures some groups of rows (``coordinator``, ``replay``, ``sweep``, ``simulate``,
``explore``, ``system``, ``aio``, ``diff``, ``import``) instead of all of them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import bench_aio as aio
import bench_coordinator as coordinator
import bench_diff as behavioural_diff
import bench_explore as exploration
import bench_import as package_import
import bench_replay as replay
import bench_system as system_check
import harness
import own_objects

import handoff_fsm as hf

TIMES, DASH = "\N{MULTIPLICATION SIGN}", "\N{EN DASH}"

SIMULATE_MODULE = "bench_simulate"
"""Optional benchmark of ``handoff_fsm.simulate``; included whenever its file exists."""
SWEEP_MODULE = "bench_sweep"
"""The benchmark of ``handoff-fsm sweep`` on Dask (imported only when measured: it needs the
``sweep`` extra)."""


@dataclass(frozen=True)
class Profile:
    """How much to measure: the full run, or a quick smoke run."""

    name: str
    pairs: int
    min_sample_s: float
    live_instances: int
    trace_lines: int
    prefix_lines: int
    replay_repeats: int
    in_process_lines: int
    in_process_pairs: int
    simulate_handoffs: int
    simulate_repeats: int
    explore_repeats: int
    aio_handoffs: int
    aio_pairs: int
    diff_repeats: int
    sweep_handoffs: int
    sweep_cells: int
    import_pairs: int


FULL = Profile(
    name="full",
    pairs=21,
    min_sample_s=0.05,
    live_instances=10_000,
    trace_lines=1_000_000,
    prefix_lines=250_000,
    replay_repeats=3,
    in_process_lines=20_000,
    in_process_pairs=7,
    simulate_handoffs=20_000,
    simulate_repeats=9,
    explore_repeats=3,
    aio_handoffs=20_000,
    aio_pairs=5,
    diff_repeats=3,
    sweep_handoffs=10_000,
    sweep_cells=40,
    import_pairs=21,
)
QUICK = Profile(
    name="quick",
    pairs=3,
    min_sample_s=0.005,
    live_instances=1_000,
    trace_lines=20_000,
    prefix_lines=5_000,
    replay_repeats=1,
    in_process_lines=2_000,
    in_process_pairs=3,
    simulate_handoffs=500,
    simulate_repeats=1,
    explore_repeats=1,
    aio_handoffs=2_000,
    aio_pairs=1,
    diff_repeats=1,
    sweep_handoffs=100,
    sweep_cells=4,
    import_pairs=3,
)


@dataclass(frozen=True)
class Row:
    """One line of the table; ``target`` is the largest acceptable ratio, if there is one."""

    benchmark: str
    library: str
    baseline: str
    ratio: float | None
    target: float | None = None
    stretch: float | None = None
    spread: tuple[float, float] | None = None
    failure: str | None = None
    """Why the benchmark could not be measured (its target then counts as missed)."""

    @property
    def missed(self) -> bool:
        if self.failure is not None:
            return self.target is not None
        return self.target is not None and self.ratio is not None and self.ratio > self.target

    @property
    def verdict(self) -> str:
        if self.failure is not None:
            return "NOT MEASURED"
        if self.target is None or self.ratio is None:
            return "info"
        if self.ratio > self.target:
            return "MISSED"
        if self.stretch is not None:
            return "met (stretch met)" if self.ratio <= self.stretch else "met (stretch missed)"
        return "met"

    def cells(self) -> list[str]:
        if self.ratio is None:
            ratio = "—"
        else:
            ratio = f"{self.ratio:.2f}{TIMES}"
            if self.spread is not None:
                ratio += f" ({self.spread[0]:.2f}{DASH}{self.spread[1]:.2f})"
        target = "—" if self.target is None else f"≤ {self.target:g}{TIMES}"
        if self.stretch is not None:
            target += f" (stretch {self.stretch:g}{TIMES})"
        return [self.benchmark, self.library, self.baseline, ratio, target, self.verdict]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f} µs"


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _throughput(lines: int, cpu_seconds: float, wall_seconds: float) -> str:
    return f"{lines / cpu_seconds:,.0f} /s ({cpu_seconds:.1f} s CPU, {wall_seconds:.1f} s wall)"


def _progress(message: str) -> None:
    print(f"… {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- rows

TIMED: tuple[tuple[str, coordinator.Workload, float | None, float | None], ...] = (
    # (label, workload, target, stretch)
    ("construction", coordinator.construction, 1.0, None),
    ("full handoff, source first", coordinator.success_source_first, 1.3, None),
    ("full handoff, destination first", coordinator.success_destination_first, 1.3, None),
    ("timeout and cleanup handoff", coordinator.timeout_cleanup, 1.3, None),
    ("no-op duplicate fact (fact built per call)", coordinator.duplicate_fact, None, None),
    ("no-op duplicate fact (same fact object)", coordinator.duplicate_fact_prebuilt, None, None),
)

LIVE: tuple[tuple[str, coordinator.LiveBuilder], ...] = (
    ("fresh", coordinator.fresh_coordinators),
    ("mid-handoff", coordinator.mid_handoff_coordinators),
)

MEMORY_TARGET = 0.8
REPLAY_TARGET = 2.0
FLAT_MEMORY_TARGET = 1.10
"""Peak RSS on the whole trace over peak RSS on its first quarter: at most 10% growth."""
SIMULATE_TARGET = 2.0
AIO_TARGET = 3.0
AIO_CONCURRENCY = 1000
IMPORT_TARGET = 2.5
"""``import handoff_fsm`` over importing pydantic and python-statemachine: about 2.1 times when
the import stays as it is, about 3 times once it loads the drawing layers too."""


def _timed(side: coordinator.Side, workload: coordinator.Workload) -> harness.Timed:
    return lambda n: workload(side, harness.handoff_ids(n))


def _built(
    side: coordinator.Side, builder: coordinator.LiveBuilder
) -> Callable[[list[object], Sequence[UUID]], None]:
    return lambda slots, ids: builder(side, slots, ids)


TIMED_A976B2BF: tuple[tuple[str, coordinator.Workload, float | None, float | None], ...] = (
    ("full handoff, source first (a976b2bf)", coordinator.success_source_first, 1.3, None),
    (
        "full handoff, destination first (a976b2bf)",
        coordinator.success_destination_first,
        1.3,
        None,
    ),
    ("timeout and cleanup handoff (a976b2bf)", coordinator.timeout_cleanup, 1.3, None),
)
"""The same workloads on the a976b2bf revision, against the same (seed) yardstick."""

FLOOR_TARGET = 1.1
FLOOR_ROWS: tuple[tuple[coordinator.Side, str, coordinator.Workload], ...] = (
    (coordinator.LIBRARY, "full handoff, source first", coordinator.success_source_first),
    (
        coordinator.LIBRARY,
        "full handoff, destination first",
        coordinator.success_destination_first,
    ),
    (coordinator.LIBRARY, "timeout and cleanup handoff", coordinator.timeout_cleanup),
    (
        coordinator.LIBRARY_A976B2BF,
        "full handoff, source first (a976b2bf)",
        coordinator.success_source_first,
    ),
)
"""The library against the floor (:mod:`floor`: the hand-written coordinator returning the
library's own value types): what the library's machinery costs beyond its types."""


OWN_OBJECTS: tuple[tuple[str, harness.Timed], ...] = (
    ("model_construct", lambda n: own_objects.model_construct(harness.handoff_ids(n))),
    (
        "writing pydantic's slots (not done by the library)",
        lambda n: own_objects.slot_writes(harness.handoff_ids(n)),
    ),
)
"""What the library's own objects of a handoff cost, against the other ways to build them."""


def own_object_rows(profile: Profile) -> list[Row]:
    """The coordinator's own objects per full handoff: public API against the alternatives."""
    rows = []
    for label, baseline in OWN_OBJECTS:
        _progress(f"own objects, pydantic's validator vs {label}")
        result = harness.compare(
            lambda n: own_objects.library(harness.handoff_ids(n)),
            baseline,
            pairs=profile.pairs,
            min_sample_s=profile.min_sample_s,
        )
        rows.append(
            Row(
                "a full handoff's own objects (6 actions, 6 issued), pydantic's validator "
                f"vs {label}",
                _us(result.library_median),
                _us(result.baseline_median),
                result.ratio,
                spread=result.ratio_spread,
            )
        )
    return rows


def coordinator_rows(profile: Profile) -> list[Row]:
    rows = []
    floor = "vs the hand-written coordinator on the library's value types"
    runs = [
        (coordinator.LIBRARY, coordinator.HANDWRITTEN, label, workload, target, stretch)
        for label, workload, target, stretch in TIMED
    ]
    runs += [
        (coordinator.LIBRARY_A976B2BF, coordinator.HANDWRITTEN, label, workload, target, stretch)
        for label, workload, target, stretch in TIMED_A976B2BF
    ]
    runs += [
        (side, coordinator.FLOOR, f"floor: {label}, {floor}", workload, FLOOR_TARGET, None)
        for side, label, workload in FLOOR_ROWS
    ]
    for side, yardstick, label, workload, target, stretch in runs:
        _progress(label)
        result = harness.compare(
            _timed(side, workload),
            _timed(yardstick, workload),
            pairs=profile.pairs,
            min_sample_s=profile.min_sample_s,
        )
        rows.append(
            Row(
                label,
                _us(result.library_median),
                _us(result.baseline_median),
                result.ratio,
                target,
                stretch,
                result.ratio_spread,
            )
        )
    live = [(coordinator.LIBRARY, label, builder) for label, builder in LIVE]
    live.append((coordinator.LIBRARY_A976B2BF, "mid-handoff (a976b2bf)", LIVE[-1][1]))
    for side, label, builder in live:
        _progress(f"memory, {label}")
        library = harness.bytes_per_live_object(_built(side, builder), profile.live_instances)
        baseline = harness.bytes_per_live_object(
            _built(coordinator.HANDWRITTEN, builder), profile.live_instances
        )
        rows.append(
            Row(
                f"bytes per live coordinator, {label} ({profile.live_instances:,} live)",
                f"{library:,.0f} B",
                f"{baseline:,.0f} B",
                library / baseline,
                MEMORY_TARGET,
            )
        )
    return rows + own_object_rows(profile)


def replay_rows(profile: Profile) -> list[Row]:
    _progress(f"replay of a {profile.trace_lines:,}-line trace (subprocesses)")
    result = replay.measure(profile.trace_lines, profile.prefix_lines, profile.replay_repeats)
    lines = f"{profile.trace_lines:,}"
    _progress("replay, in-process per line")
    per_line = replay.in_process(profile.in_process_lines, pairs=profile.in_process_pairs)
    ratios = result.ratios
    return [
        Row(
            f"replay {lines}-line trace, end to end (lines/s)",
            _throughput(result.lines, result.library_seconds, result.library_wall_seconds),
            _throughput(result.lines, result.baseline_seconds, result.baseline_wall_seconds),
            result.ratio,
            REPLAY_TARGET,
            spread=(min(ratios), max(ratios)) if len(ratios) > 1 else None,
        ),
        Row(
            f"replay {lines}-line trace under a976b2bf, end to end (lines/s)",
            _throughput(
                result.lines, result.library_a976b2bf_seconds, result.library_a976b2bf_wall_seconds
            ),
            _throughput(result.lines, result.baseline_seconds, result.baseline_wall_seconds),
            result.ratio_a976b2bf,
            REPLAY_TARGET,
            spread=(min(result.ratios_a976b2bf), max(result.ratios_a976b2bf))
            if len(ratios) > 1
            else None,
        ),
        Row(
            f"replay peak RSS growth, {result.prefix_lines:,} → {lines} lines (flat = 1.00{TIMES})",
            f"{_mb(result.library_prefix.max_rss_bytes)} → {_mb(result.library_rss)}",
            f"{_mb(result.baseline_prefix.max_rss_bytes)} → {_mb(result.baseline_rss)}",
            result.library_growth,
            FLAT_MEMORY_TARGET,
        ),
        Row(
            "replay start-up (empty trace)",
            f"{result.library_startup.seconds:.2f} s CPU",
            f"{result.baseline_startup.seconds:.2f} s CPU",
            result.library_startup.seconds / result.baseline_startup.seconds,
        ),
        Row(
            f"replay in-process, per line ({profile.in_process_lines:,} lines)",
            _us(per_line.library_median),
            _us(per_line.baseline_median),
            per_line.ratio,
            spread=per_line.ratio_spread,
        ),
    ]


def simulate_row(profile: Profile) -> Row:
    label = "simulate N handoffs vs driving them directly"
    if not Path(__file__).with_name(f"{SIMULATE_MODULE}.py").exists():
        return Row(label, "—", "—", None, SIMULATE_TARGET, failure="benchmark missing")
    _progress("simulation")
    try:
        module = importlib.import_module(SIMULATE_MODULE)
        result: dict[str, float] = module.measure(
            handoffs=profile.simulate_handoffs, repeats=profile.simulate_repeats
        )
        handoffs = result["handoffs"]
        return Row(
            f"simulate {handoffs:,.0f} handoffs vs driving them directly",
            _us(result["simulated_s"] / handoffs) + " / handoff",
            _us(result["direct_s"] / handoffs) + " / handoff",
            result["ratio"],
            SIMULATE_TARGET,
            spread=(result["ratio_p10"], result["ratio_p90"]),
        )
    except Exception as error:  # report it in the table, keep the other results
        return Row(
            label, "—", "—", None, SIMULATE_TARGET, failure=f"{type(error).__name__}: {error}"
        )


def sweep_rows(profile: Profile) -> list[Row]:
    """``handoff-fsm sweep``'s cells on an embedded LocalCluster: 2 workers against 1 (wall
    time: the speed-up, as a ratio of times), and 1 worker's wall time against the time its
    worker spent computing the cells (Dask's task stream): the engine's overhead per cell."""
    cells, handoffs = profile.sweep_cells, profile.sweep_handoffs
    size = f"{cells} cells of {handoffs:,} handoffs"
    speed = f"sweep, {size}: 2 workers' wall time / 1 worker's (speed-up >= 1.7{TIMES})"
    overhead = f"sweep, {size}: 1 worker's wall time / its time computing the cells (overhead < 5%)"
    speed_target, overhead_target = 1.0 / 1.7, 1.05
    _progress(f"sweep of {size} on Dask, 1 and 2 workers")
    try:
        module = importlib.import_module(SWEEP_MODULE)
        figures: dict[str, float] = module.measure(handoffs, cells)
    except Exception as error:  # report it in the table, keep the other results
        failure = f"{type(error).__name__}: {error}"
        return [
            Row(speed, "—", "—", None, speed_target, failure=failure),
            Row(overhead, "—", "—", None, overhead_target, failure=failure),
        ]
    per_cell = figures["overhead_ms_per_cell"]
    return [
        Row(
            speed,
            f"{figures['two_workers_s']:.2f} s wall (speed-up {figures['speedup']:.2f}{TIMES})",
            f"{figures['one_worker_s']:.2f} s wall",
            figures["two_workers_s"] / figures["one_worker_s"],
            round(speed_target, 3),
        ),
        Row(
            overhead,
            f"{figures['one_worker_s']:.2f} s wall ({per_cell:.1f} ms per cell)",
            f"{figures['one_worker_computing_s']:.2f} s computing "
            f"(in this process: {figures['in_process_s']:.2f} s)",
            figures["one_worker_s"] / figures["one_worker_computing_s"],
            overhead_target,
        ),
    ]


def explore_row(profile: Profile) -> Row:
    """No yardstick explores this state space: the ratio is CPU time over a fixed budget."""
    _progress("exhaustive exploration, both orders, both revisions")
    label = "exhaustive exploration, both orders, both revisions (`handoff-fsm check`)"
    budget = f"budget {exploration.BUDGET_S:g} s CPU"
    try:
        seconds = exploration.measure(repeats=profile.explore_repeats)
    except Exception as error:  # report it in the table, keep the other results
        return Row(label, "—", budget, None, 1.0, failure=f"{type(error).__name__}: {error}")
    return Row(label, f"{seconds:.2f} s CPU", budget, seconds / exploration.BUDGET_S, 1.0)


def system_rows(profile: Profile) -> list[Row]:
    """``handoff-fsm check --system`` for both revisions, against its CPU budgets; the
    rate is world states per CPU second. A quick run measures a small world only."""
    cases = [system_check.SMOKE] if profile is QUICK else list(system_check.BUDGETS)
    rows = []
    for case in cases:
        _progress(case.label)
        target = None if case.budget_s is None else 1.0
        budget = "—" if case.budget_s is None else f"budget {case.budget_s:g} s CPU"
        try:
            states, cpu = system_check.measure(case)
        except Exception as error:  # report it in the table, keep the other results
            failure = f"{type(error).__name__}: {error}"
            rows.append(Row(case.label, "—", budget, None, target, failure=failure))
            continue
        shown = f"{cpu:.2f} s CPU, {states / cpu:,.0f} world states/s ({states:,} states)"
        ratio = None if case.budget_s is None else cpu / case.budget_s
        rows.append(Row(case.label, shown, budget, ratio, target))
    return rows


def aio_row(profile: Profile) -> Row:
    _progress(f"asyncio sessions, {AIO_CONCURRENCY:,} concurrent")
    figures = aio.measure(profile.aio_handoffs, AIO_CONCURRENCY, pairs=profile.aio_pairs)

    def rate(seconds: float) -> str:
        return f"{1 / seconds:,.0f} handoffs/s ({_us(seconds)} each)"

    return Row(
        f"asyncio HandoffSession, {AIO_CONCURRENCY:,} concurrent, one core "
        f"({profile.aio_handoffs:,} handoffs)",
        rate(figures["session_s"]),
        rate(figures["glue_s"]),
        figures["ratio"],
        AIO_TARGET,
    )


def diff_rows(profile: Profile) -> list[Row]:
    """``handoff-fsm diff`` as a user runs it; seed → a976b2bf against a CPU budget.

    A quick run measures that one alone (the others take much longer; their times are in
    the full run's table).
    """
    rows = []
    budget = f"budget {behavioural_diff.BUDGET_S:g} s CPU"
    cases: list[tuple[behavioural_diff.Case, float | None]] = [
        (behavioural_diff.SEED_A976B2BF, 1.0)
    ]
    if profile is not QUICK:
        cases += [(behavioural_diff.STATECHART, None), (behavioural_diff.GIT, None)]
    for case, target in cases:
        _progress(f"behavioural diff {case.a} {case.b}")
        try:
            cpu, wall = behavioural_diff.measure(case, repeats=profile.diff_repeats)
        except Exception as error:  # report it in the table, keep the other results
            failure = f"{type(error).__name__}: {error}"
            rows.append(Row(case.label, "—", budget, None, target, failure=failure))
            continue
        ratio = cpu / behavioural_diff.BUDGET_S if target is not None else None
        shown = f"{cpu:.2f} s CPU ({wall:.2f} s wall)"
        rows.append(Row(case.label, shown, budget if target else "—", ratio, target))
    return rows


def import_rows(profile: Profile) -> list[Row]:
    """``import handoff_fsm`` in a fresh interpreter, against importing its core's
    dependencies; and, for information, the first notebook picture."""
    label = "`import handoff_fsm`, fresh interpreter, vs `import pydantic, statemachine`"
    picture = "first notebook picture: `import handoff_fsm`, a coordinator, its `_repr_svg_()`"
    _progress(f"import time, {profile.import_pairs} pairs of fresh interpreters")
    try:
        result = package_import.measure(profile.import_pairs)
    except Exception as error:  # report it in the table, keep the other results
        failure = f"{type(error).__name__}: {error}"
        return [
            Row(label, "—", "—", None, IMPORT_TARGET, failure=failure),
            Row(picture, "—", "—", None, failure=failure),
        ]

    def cpu(seconds: float, wall: float) -> str:
        return f"{seconds * 1e3:.0f} ms CPU ({wall * 1e3:.0f} ms wall)"

    first = result.first_picture
    return [
        Row(
            label,
            cpu(result.library_seconds, result.library_wall_seconds),
            cpu(result.baseline_seconds, result.baseline_wall_seconds),
            result.ratio,
            IMPORT_TARGET,
            spread=result.spread,
        ),
        Row(
            picture,
            cpu(first.seconds, first.wall_seconds),
            cpu(result.library_seconds, result.library_wall_seconds) + " (the import alone)",
            first.seconds / result.library_seconds,
        ),
    ]


GROUPS: dict[str, Callable[[Profile], Sequence[Row]]] = {
    "coordinator": coordinator_rows,
    "replay": replay_rows,
    "sweep": sweep_rows,
    "simulate": lambda profile: [simulate_row(profile)],
    "explore": lambda profile: [explore_row(profile)],
    "system": system_rows,
    "aio": lambda profile: [aio_row(profile)],
    "diff": diff_rows,
    "import": import_rows,
}
"""The table's groups of rows, in its order (``--only`` picks some)."""


# ----------------------------------------------------------------------------- report


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"{usable} CPUs usable (nproc), {cpu}; {platform.python_implementation()} "
        f"{platform.python_version()} on {platform.system()} {platform.release()}; "
        f"handoff-fsm {hf.__version__}"
    )


def table(rows: Sequence[Row]) -> str:
    header = ["benchmark", "library", "hand-written / baseline", "ratio", "target", "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def report(rows: Sequence[Row], profile: Profile, command: str, seconds: float) -> str:
    notes = [
        f"Command: `{command}` ({profile.name} run, {seconds:.0f} s). Machine: {machine()}.",
        "Ratio = library cost / yardstick cost (time, bytes or peak-RSS growth; lower is "
        "better). Times are CPU time (other processes on the machine do not inflate them), "
        "medians of interleaved pairs; the ratio is the median of the "
        f"per-pair ratios, with p10{DASH}p90 in parentheses (min{DASH}max for the replay runs).",
        "Yardstick: `benchmarks/handwritten.py`, the reference coordinator ported to plain "
        "Python with slotted dataclasses; baseline for replay: `benchmarks/json_roundtrip.py` "
        "(json.loads + json.dumps per line), both as subprocesses, start-up included; "
        "baseline for asyncio: the hand-written glue of `benchmarks/bench_aio.py` (a task "
        "per action around a bare coordinator, no timers), same fake workers; baseline for "
        "the import: importing pydantic and python-statemachine, the core's dependencies, "
        "in a fresh interpreter (`benchmarks/bench_import.py`).",
    ]
    if profile is QUICK:
        notes.append("Quick run: a smoke test with small sizes; its numbers are not results.")
    failures = [f"{row.benchmark}: {row.failure}" for row in rows if row.failure is not None]
    notes += [f"Not measured: {failure}." for failure in failures]
    return table(rows) + "\n\n" + "\n".join(f"- {note}" for note in notes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark the library against its yardsticks.")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--check", action="store_true", help="exit 1 if any target is missed")
    parser.add_argument(
        "--only", nargs="+", choices=list(GROUPS), default=list(GROUPS), help="groups of rows"
    )
    args = parser.parse_args(argv)
    profile = QUICK if args.quick else FULL
    command = " ".join(["python benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
    start = time.perf_counter()
    rows = [row for group in GROUPS if group in args.only for row in GROUPS[group](profile)]
    print(report(rows, profile, command, time.perf_counter() - start))
    missed = [row for row in rows if row.missed]
    if args.check and missed:
        for row in missed:
            reason = row.failure or f"{row.ratio:.2f}{TIMES} > {row.target:g}{TIMES}"
            print(f"target missed: {row.benchmark}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Replay throughput and memory: ``handoff-fsm replay`` against a JSON round trip.

Rule kept here: both commands run as fresh subprocesses of the same interpreter
on the same cached trace file, writing to the null device, interleaved; each
run's time is the child's own CPU time (user + system, from ``os.wait4``; wall
time is kept beside it) and its peak RSS is the child's own (reported by
:mod:`peak_rss`). A run includes start-up, as a user sees it; start-up is also
measured on its own (empty trace), and the per-line cost in-process, without
start-up or file I/O.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import harness
import tracegen

from handoff_fsm.io import replay

BASELINE_SCRIPT = Path(__file__).with_name("json_roundtrip.py")
PEAK_RSS_SCRIPT = Path(__file__).with_name("peak_rss.py")


@dataclass(frozen=True)
class Run:
    """One subprocess run: its CPU seconds (user + system), wall seconds and peak RSS."""

    seconds: float
    wall_seconds: float
    max_rss_bytes: int


def run_command(program: list[str]) -> Run:
    """Run ``python PROGRAM`` (a script, or ``-m MODULE``) to completion, under :mod:`peak_rss`."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "peak_rss"
        errors = Path(scratch) / "stderr"
        argv = [sys.executable, str(PEAK_RSS_SCRIPT), str(report), *program]
        with errors.open("wb") as stderr:
            start = time.perf_counter()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            message = errors.read_text(errors="replace")
            raise RuntimeError(f"{' '.join(argv)} exited {process.returncode}:\n{message}")
        cpu = usage.ru_utime + usage.ru_stime
        return Run(cpu, wall, int(report.read_text(encoding="ascii")))


def replay_command(trace: Path, revision: str = "seed") -> list[str]:
    return ["-m", "handoff_fsm", "replay", str(trace), "-o", os.devnull, "--revision", revision]


def baseline_command(trace: Path) -> list[str]:
    return [str(BASELINE_SCRIPT), str(trace), "-o", os.devnull]


@dataclass(frozen=True)
class ReplayResult:
    """Interleaved end-to-end runs on the full trace, plus prefix and start-up runs."""

    lines: int
    library: tuple[Run, ...]
    baseline: tuple[Run, ...]
    library_a976b2bf: tuple[Run, ...]
    """The same trace replayed under a976b2bf (``--revision``), one run beside each pair."""
    prefix_lines: int
    library_prefix: Run
    baseline_prefix: Run
    library_startup: Run
    baseline_startup: Run

    @property
    def library_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.library)

    @property
    def baseline_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.baseline)

    @property
    def library_wall_seconds(self) -> float:
        return statistics.median(run.wall_seconds for run in self.library)

    @property
    def baseline_wall_seconds(self) -> float:
        return statistics.median(run.wall_seconds for run in self.baseline)

    def _over_baseline(self, runs: tuple[Run, ...]) -> tuple[float, ...]:
        """CPU time of ``runs`` over the baseline's, per repeat (each run beside its pair)."""
        return tuple(a.seconds / b.seconds for a, b in zip(runs, self.baseline, strict=True))

    @property
    def ratios(self) -> tuple[float, ...]:
        """Library CPU time over baseline CPU time, per interleaved pair."""
        return self._over_baseline(self.library)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def ratios_a976b2bf(self) -> tuple[float, ...]:
        """The a976b2bf replay's CPU time over the baseline's, per repeat."""
        return self._over_baseline(self.library_a976b2bf)

    @property
    def ratio_a976b2bf(self) -> float:
        return statistics.median(self.ratios_a976b2bf)

    @property
    def library_a976b2bf_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.library_a976b2bf)

    @property
    def library_a976b2bf_wall_seconds(self) -> float:
        return statistics.median(run.wall_seconds for run in self.library_a976b2bf)

    @property
    def library_rss(self) -> int:
        return max(run.max_rss_bytes for run in self.library)

    @property
    def baseline_rss(self) -> int:
        return max(run.max_rss_bytes for run in self.baseline)

    @property
    def library_growth(self) -> float:
        """Peak RSS on the whole trace over peak RSS on its prefix (1.0 is flat)."""
        return self.library_rss / self.library_prefix.max_rss_bytes

    @property
    def baseline_growth(self) -> float:
        return self.baseline_rss / self.baseline_prefix.max_rss_bytes


def measure(lines: int, prefix_lines: int, repeats: int) -> ReplayResult:
    """Replay a ``lines``-line trace ``repeats`` times each way, interleaved."""
    trace = tracegen.cached_trace(lines)
    prefix = tracegen.cached_trace(prefix_lines)
    empty = tracegen.cached_trace(0)
    library: list[Run] = []
    baseline: list[Run] = []
    a976b2bf: list[Run] = []
    for i in range(repeats):
        if i % 2 == 0:
            library.append(run_command(replay_command(trace)))
            baseline.append(run_command(baseline_command(trace)))
            a976b2bf.append(run_command(replay_command(trace, "a976b2bf")))
        else:
            a976b2bf.append(run_command(replay_command(trace, "a976b2bf")))
            baseline.append(run_command(baseline_command(trace)))
            library.append(run_command(replay_command(trace)))
    return ReplayResult(
        lines=lines,
        library=tuple(library),
        baseline=tuple(baseline),
        library_a976b2bf=tuple(a976b2bf),
        prefix_lines=prefix_lines,
        library_prefix=run_command(replay_command(prefix)),
        baseline_prefix=run_command(baseline_command(prefix)),
        library_startup=run_command(replay_command(empty)),
        baseline_startup=run_command(baseline_command(empty)),
    )


def in_process(lines: int, *, pairs: int) -> harness.Comparison:
    """Per-line cost without start-up or file I/O: :func:`handoff_fsm.io.replay` vs loads+dumps.

    Every sample replays the trace's first ``lines`` lines with a new replayer.
    """
    with tracegen.cached_trace(lines).open(encoding="utf-8") as source:
        text = source.readlines()

    def library(n: int) -> float:
        chunk = text[:n]
        start = harness.clock()
        for _ in replay(chunk):
            pass
        return harness.clock() - start

    def baseline(n: int) -> float:
        chunk = text[:n]
        loads, dumps = json.loads, json.dumps
        start = harness.clock()
        for line in chunk:
            dumps(loads(line), allow_nan=True)
        return harness.clock() - start

    return harness.compare(library, baseline, pairs=pairs, operations=len(text))

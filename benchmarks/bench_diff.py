"""Behavioural diff (``handoff-fsm diff``): CPU and wall seconds end to end, against a budget.

Rule kept here: nothing else explores the product of two coordinators, so the
target is an absolute budget (:data:`BUDGET_S`: ``diff seed a976b2bf`` in at most
5 CPU seconds, "a few seconds" on a 2-core machine), measured as the command a
user runs: ``python -m handoff_fsm diff A B --json`` in a subprocess, start-up
included, CPU time of that process and its children. Every run must give the
verdict it should (exit status and number of differences), so a broken diff
cannot look fast.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 5.0
"""CPU seconds allowed for ``handoff-fsm diff seed a976b2bf``."""


@dataclass(frozen=True)
class Case:
    label: str
    a: str
    b: str
    equivalent: bool


SEED_A976B2BF = Case("`diff seed a976b2bf`, end to end", "seed", "a976b2bf", False)
STATECHART = Case("`diff seed seed@statechart`, end to end", "seed", "seed@statechart", True)
GIT = Case(
    "`diff git:HEAD git:HEAD`, end to end (two exported commits; a subprocess per side "
    "unless the commit's package is the running one)",
    "git:HEAD",
    "git:HEAD",
    True,
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(case: Case) -> tuple[float, float]:
    """One run: (CPU seconds, wall seconds); raises if the verdict is not the expected one."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    cpu, wall = _children_cpu(), time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "handoff_fsm", "diff", case.a, case.b, "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=environment,
    )
    cpu, wall = _children_cpu() - cpu, time.perf_counter() - wall
    expected = 0 if case.equivalent else 1
    if result.returncode != expected:
        raise AssertionError(f"exit status {result.returncode}, not {expected}: {result.stderr}")
    report = json.loads(result.stdout)
    if report["equivalent"] is not case.equivalent:
        raise AssertionError(f"{case.a} vs {case.b}: equivalent is {report['equivalent']}")
    return cpu, wall


def measure(case: Case, repeats: int = 3) -> tuple[float, float]:
    """Median CPU and wall seconds of ``repeats`` runs of ``case``."""
    samples = [run_once(case) for _ in range(repeats)]
    return (
        statistics.median(cpu for cpu, _ in samples),
        statistics.median(wall for _, wall in samples),
    )


def main() -> int:
    """``python benchmarks/bench_diff.py``: these rows alone (``make bench`` has them too)."""
    for case in (SEED_A976B2BF, STATECHART, GIT):
        cpu, wall = measure(case)
        print(f"{case.label}: {cpu:.2f} s CPU, {wall:.2f} s wall (median of 3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

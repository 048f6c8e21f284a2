"""Importing the package: ``python -c "import handoff_fsm"`` against importing what it needs.

Rule kept here: every run is a fresh subprocess of the same interpreter (start-up
included, as a user meets it), the library's runs interleaved with the yardstick's, and
each run's time is the child's own CPU time (user + system, from ``os.wait4``; wall
time kept beside it). The yardstick imports the package's own runtime dependencies of
the core, pydantic and python-statemachine, which no version of it can avoid, so the
ratio is what the package's own modules add. Each library run also checks that the
import loaded nothing of the drawing layers (``handoff_fsm.render``, ``graphviz``): an
import that pulls them in fails the measurement instead of only looking slower. The
first notebook picture (the import, one coordinator, its ``_repr_svg_``: where the
drawing's cost went) is measured beside it, for information.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Final

import harness

LIBRARY: Final = (
    "import sys\n"
    "import handoff_fsm\n"
    "drawing = [m for m in sys.modules if m.startswith(('handoff_fsm.render', 'graphviz'))]\n"
    "sys.exit(f'import handoff_fsm loaded the drawing layers: {drawing}' if drawing else 0)\n"
)
BASELINE: Final = "import pydantic, statemachine\n"
FIRST_PICTURE: Final = (
    "import uuid\n"
    "import handoff_fsm as hf\n"
    "c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST)\n"
    "assert c._repr_svg_().startswith('<svg')\n"
)


@dataclass(frozen=True)
class Run:
    """One subprocess: its CPU seconds (user + system, its children's included) and wall."""

    seconds: float
    wall_seconds: float


def run_python(code: str) -> Run:
    """``python -c CODE`` in a fresh interpreter, to its end; raises if it fails."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.stderr.close()
    returncode = os.waitstatus_to_exitcode(status)
    if returncode != 0:
        message = errors.decode("utf-8", "replace").strip()
        raise RuntimeError(f"python -c ... exited {returncode}: {message}")
    return Run(usage.ru_utime + usage.ru_stime, wall)


@dataclass(frozen=True)
class ImportResult:
    library: tuple[Run, ...]
    baseline: tuple[Run, ...]
    first_picture: Run

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(
            a.seconds / b.seconds for a, b in zip(self.library, self.baseline, strict=True)
        )

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> tuple[float, float]:
        """p10 and p90 of the per-pair ratios."""
        return harness.quantile(self.ratios, 0.1), harness.quantile(self.ratios, 0.9)

    @property
    def library_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.library)

    @property
    def library_wall_seconds(self) -> float:
        return statistics.median(run.wall_seconds for run in self.library)

    @property
    def baseline_seconds(self) -> float:
        return statistics.median(run.seconds for run in self.baseline)

    @property
    def baseline_wall_seconds(self) -> float:
        return statistics.median(run.wall_seconds for run in self.baseline)


def measure(pairs: int) -> ImportResult:
    """``pairs`` interleaved pairs (after one warm-up pair: the file cache), then one
    first picture."""
    run_python(LIBRARY)
    run_python(BASELINE)
    library: list[Run] = []
    baseline: list[Run] = []
    for i in range(pairs):
        if i % 2 == 0:
            library.append(run_python(LIBRARY))
            baseline.append(run_python(BASELINE))
        else:
            baseline.append(run_python(BASELINE))
            library.append(run_python(LIBRARY))
    return ImportResult(tuple(library), tuple(baseline), run_python(FIRST_PICTURE))

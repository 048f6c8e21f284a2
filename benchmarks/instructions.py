"""Instructions per replayed line (or simulated handoff), counted by valgrind: noise cannot move it.

Rule kept here: a count, not a time. On a shared VM the CPU time of the same run
varies by more than the changes worth measuring; the number of instructions a run
executes does not vary. Each workload runs in a child process under
``valgrind --tool=callgrind`` on the first ``N`` and the first ``2N`` lines of the
benchmark trace; the difference over ``N`` is the cost of one line, without
start-up, imports or the chart's one-time compilation. Instructions are not time
(the interpreter's loop runs at a lower rate than ``json``'s C code), so this
compares two versions of the library, not the library with the baseline.

Usage: ``python benchmarks/instructions.py [--lines N] [--workload replay json simulate
coordinator handwritten]`` (needs ``valgrind``). ``simulate`` runs the simulate
benchmark's configuration on N and 2N handoffs: instructions per handoff.
``coordinator`` and ``handwritten`` run the ``make bench`` row "full handoff, source
first" (:func:`bench_coordinator.success_source_first`, facts built in the loop) on N
and 2N handoffs, for the library and for the hand-written yardstick.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import tracegen

TRACE_LINES = 250_000
BENCHMARKS = Path(__file__).resolve().parent
_CHILD = """
import itertools, json, sys
if sys.argv[1] in ("coordinator", "handwritten"):  # make bench's "full handoff, source first"
    sys.path.insert(0, BENCHMARKS)
    import bench_coordinator, harness
    sides = {"coordinator": bench_coordinator.LIBRARY, "handwritten": bench_coordinator.HANDWRITTEN}
    ids = harness.handoff_ids(int(sys.argv[3]))
    bench_coordinator.success_source_first(sides[sys.argv[1]], ids)
    raise SystemExit
if sys.argv[1] == "simulate":  # the simulate benchmark's run: vLLM, 64 at a time, no faults
    from handoff_fsm.simulate import SimulationConfig, simulate
    simulate(SimulationConfig(handoffs=int(sys.argv[3])))
    raise SystemExit
with open(sys.argv[2], "rb") as trace:
    lines = list(itertools.islice(trace, int(sys.argv[3])))
from handoff_fsm.io import replay
if sys.argv[1] == "replay":
    for _ in replay(lines):
        pass
else:
    for line in lines:
        json.dumps(json.loads(line.decode()), allow_nan=True)
""".replace("BENCHMARKS", repr(str(BENCHMARKS)))
UNIT = {
    "replay": "line",
    "json": "line",
    "simulate": "handoff",
    "coordinator": "handoff",
    "handwritten": "handoff",
}
"""What N counts for each workload: trace lines, or (simulated or driven) handoffs."""
_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(workload: str, trace: Path, lines: int) -> int:
    """Instructions a child executes to import everything and run ``workload`` on ``lines``."""
    result = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            _CHILD,
            workload,
            str(trace),
            str(lines),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    match = _COLLECTED.search(result.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no count:\n{result.stderr[-2000:]}")
    return int(match.group(1))


def per_line(workload: str, lines: int) -> float:
    """Instructions per line (per handoff for ``simulate``) of ``workload``, between
    ``lines`` and ``2 * lines`` of them."""
    trace = tracegen.cached_trace(TRACE_LINES)
    return (instructions(workload, trace, 2 * lines) - instructions(workload, trace, lines)) / lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=5000, help="N (default 5000)")
    parser.add_argument("--workload", nargs="+", choices=list(UNIT), default=["replay", "json"])
    args = parser.parse_args(argv)
    if not 0 < args.lines <= TRACE_LINES // 2:
        parser.error(f"--lines must be in 1..{TRACE_LINES // 2}")
    if shutil.which("valgrind") is None:
        print("instructions.py needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    for workload in args.workload:
        count = per_line(workload, args.lines)
        unit = UNIT[workload]
        window = f"{unit}s {args.lines:,}-{2 * args.lines:,}"
        print(f"{workload}: {count:,.0f} instructions per {unit} ({window})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

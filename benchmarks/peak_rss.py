"""Run a Python program in this process, then write this process's peak RSS to a file.

Rule kept here: the number written is the peak resident set of the program's own
address space (``VmHWM``), never inherited from whoever started it. (A child's
``ru_maxrss`` on Linux includes the parent's memory at the moment of ``exec``,
so the benchmark process cannot read it from ``wait4``.) The program runs as
``python -m MODULE`` or ``python SCRIPT`` would run it.
Usage: ``python benchmarks/peak_rss.py REPORT (-m MODULE | SCRIPT) [ARGS...]``.
"""

from __future__ import annotations

import os
import resource
import runpy
import sys
from pathlib import Path


def peak_rss_bytes() -> int:
    """Peak RSS of this process: ``VmHWM`` where ``/proc`` has it, else ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def main() -> None:
    report, *program = sys.argv[1:]
    try:
        if program[0] == "-m":
            sys.argv = program[1:]
            sys.path[0] = os.getcwd()
            runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = program
            sys.path[0] = str(Path(program[0]).resolve().parent)
            runpy.run_path(program[0], run_name="__main__")
    finally:
        Path(report).write_text(str(peak_rss_bytes()), encoding="ascii")


if __name__ == "__main__":
    main()

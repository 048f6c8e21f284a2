"""``handoff-fsm simulate``: run many handoffs and print a summary.

Rule kept here: stdout carries only the summary (a table, or one JSON object
with ``--json``); the progress bar goes to stderr, only when stderr is a
terminal, the run is long and ``--json`` is off. Exit status: 0 for a clean
run, 1 when the run reported a problem (a leak, a stuck handoff, a late input
that issued actions, something undrained), 2 for a usage error (for example
``--backend trtllm``, which has no handoff order).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from handoff_fsm.cli.files import named_errors
from handoff_fsm.errors import HandoffError
from handoff_fsm.model import Backend, Revision
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.driver import Simulation
from handoff_fsm.simulate.faults import FaultPlan
from handoff_fsm.simulate.summary import render, summarize
from handoff_fsm.simulate.trace import TraceWriter

LONG_RUN = 20_000
"""Runs of at least this many handoffs show a progress bar (on a terminal)."""


def cli_simulate(args: argparse.Namespace) -> int:
    """``handoff-fsm simulate --backend B --handoffs N --concurrency C --fault-rate P --seed S``."""
    try:
        config = SimulationConfig(
            backend=Backend(args.backend),
            handoffs=args.handoffs,
            concurrency=args.concurrency,
            seed=args.seed,
            faults=replace(
                FaultPlan.uniform(args.fault_rate), decode_cancel=args.decode_cancel_rate
            ),
            coordinator_engine=args.engine,
            revision=Revision(args.revision),
        )
    except HandoffError as error:  # unsupported_backend
        return _usage_error(args, error.code.value, error.message)
    except ValueError as error:
        return _usage_error(args, "invalid_argument", str(error))

    show_progress = (
        not args.json
        and not args.no_progress
        and config.handoffs >= LONG_RUN
        and sys.stderr.isatty()
    )
    with ExitStack() as stack:
        trace: TextIO | None = None
        if args.trace:
            stack.enter_context(named_errors(args.trace))  # a full disk names the trace file
            trace = stack.enter_context(open(args.trace, "w", encoding="utf-8"))
        on_progress = stack.enter_context(_progress_bar(config.handoffs)) if show_progress else None
        simulation = Simulation(
            config,
            # each line carries the virtual time it was fed at (read while the run runs)
            recorder=TraceWriter(trace, clock=lambda: simulation.now) if trace else None,
            on_progress=on_progress,
            progress_every=max(1, config.handoffs // 200),
        )
        result = simulation.run()

    summary = summarize(result)
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        render(summary, Console(highlight=False))
    return 0 if result.ok else 1


def _usage_error(args: argparse.Namespace, code: str, message: str) -> int:
    print(f"handoff-fsm simulate: {code}: {message}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    return 2


@contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[int], None]]:
    progress = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        auto_refresh=False,  # redrawn on each update: no refresh thread beside the run
    )
    task = progress.add_task("handoffs", total=total)
    with progress:

        def advance(completed: int) -> None:
            progress.update(task, completed=completed, refresh=True)

        yield advance

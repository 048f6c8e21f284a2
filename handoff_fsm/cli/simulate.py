"""``handoff-fsm simulate``: run many handoffs and print a summary.

Rule kept here: stdout carries only the summary (a table, or one JSON object
with ``--json``); the progress bar goes to stderr, only when stderr is a
terminal, the run is long and ``--json`` is off. ``--plots DIR`` records every
handoff's times (:mod:`handoff_fsm.simulate.phases`) and writes the plots and
``summary.md`` (:mod:`handoff_fsm.review.simulation`) after the run, saying so on
stderr; matplotlib, which only it needs, is checked for before the run. Exit
status: 0 for a clean run, 1 when the run reported a problem (a leak, a stuck
handoff, a late input that issued actions, something undrained), 2 for a usage
error (for example ``--backend trtllm``, which has no handoff order, or
``--plots`` without matplotlib). The options that decide a run are declared once
(:func:`add_run_options`), and ``handoff-fsm sweep`` takes each of them as a comma list.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

    from handoff_fsm.simulate.phases import PhaseRecorder

from handoff_fsm.cli.common import (
    Commands,
    add_choice,
    add_engine,
    add_revision,
    fail,
    natural,
    real_number,
)
from handoff_fsm.cli.files import (
    Kind,
    Output,
    UsageError,
    check_outputs,
    create_parent_folders,
    named_errors,
    output_text,
)
from handoff_fsm.errors import HandoffError
from handoff_fsm.model import Backend

LONG_RUN = 20_000
"""Runs of at least this many handoffs show a progress bar (on a terminal)."""


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "simulate",
        help="run many handoffs against fake engines in virtual time",
        description="Simulate N interleaved handoffs with fake source/destination/transfer "
        "endpoints, optional fault injection, and print a summary.",
    )
    add_run_options(parser)
    parser.add_argument(
        "--trace",
        metavar="OUT",
        help="also write every coordinator input to OUT (JSONL, each line with its virtual "
        "time at_ms)",
    )
    parser.add_argument(
        "--plots",
        metavar="DIR",
        help="also write SVG plots (latency, time per phase, KV holds) and summary.md to DIR "
        "(needs matplotlib: pip install 'handoff-fsm[plots]')",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for long runs, never with --json)",
    )
    parser.set_defaults(run=cli_simulate)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options that decide the run, each the keyword of
    :func:`~handoff_fsm.simulate.config.command_config` its ``dest`` names (read back by
    :func:`run_options`); ``handoff-fsm sweep`` takes each of them as a comma list."""
    add_choice(
        parser,
        "--backend",
        Backend,
        "serving engine the fake endpoints behave like: vllm (SourceFirst, default), "
        "sglang (DestinationFirst); trtllm is refused (no destination handoff)",
        default=Backend.VLLM,
    )
    parser.add_argument(
        "--handoffs",
        type=natural,
        default=1000,
        metavar="N",
        help="how many handoffs to run (default 1000)",
    )
    parser.add_argument(
        "--concurrency",
        type=natural,
        default=64,
        metavar="C",
        help="how many handoffs are in flight at once (default 64)",
    )
    parser.add_argument(
        "--fault-rate",
        type=real_number,
        default=0.0,
        metavar="P",
        help="probability in [0, 1] of a fault per acknowledgement, transfer and handoff "
        "(default 0)",
    )
    parser.add_argument(
        "--decode-cancel-rate",
        type=real_number,
        default=0.0,
        metavar="P",
        help="probability in [0, 1] that a request whose handoff succeeded is canceled while "
        "the destination decodes it (default 0)",
    )
    add_revision(
        parser,
        "protocol revision the coordinators follow (default: seed; a976b2bf cancels "
        "the decoding destination on a late cancel, and runs TRT-LLM SourceFirst)",
    )
    parser.add_argument(
        "--seed", type=natural, default=0, metavar="S", help="random seed (default 0)"
    )
    _add_session_options(parser)
    add_engine(parser)


def run_actions() -> list[argparse.Action]:
    """The options :func:`add_run_options` adds, as a parser of their own holds them (what
    ``handoff-fsm sweep`` turns into comma lists)."""
    probe = argparse.ArgumentParser(add_help=False)
    add_run_options(probe)
    return list(probe._actions)


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options :func:`add_run_options` read, as
    :func:`~handoff_fsm.simulate.config.command_config`'s keyword arguments (a session
    option only when given)."""
    return {a.dest: getattr(args, a.dest) for a in run_actions() if hasattr(args, a.dest)}


def _ms_or_off(text: str) -> float | None:
    """``off`` (no such timer) or a number of virtual ms, read by the one float reader (the
    configuration judges the number)."""
    if text == "off":
        return None
    try:
        return real_number(text)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error} (a number of ms, or off)") from None


SESSION_OPTIONS: tuple[tuple[str, Callable[[str], float | int | None], str, str], ...] = (
    (
        "--deadline-ms",
        _ms_or_off,
        "MS|off",
        "a handoff not complete MS virtual ms after it started gets TimedOut (default 1000; "
        "off: no deadline)",
    ),
    (
        "--ack-timeout-ms",
        _ms_or_off,
        "MS|off",
        "a work action not acknowledged MS virtual ms after it was sent is fed as Failed "
        "(default off: the deadline ends a handoff whose acknowledgement was lost)",
    ),
    (
        "--cleanup-retry-ms",
        real_number,
        "MS",
        "a cancel not acknowledged MS virtual ms after it was sent is sent again (default 20)",
    ),
    (
        "--cleanup-retries",
        natural,
        "N",
        "how many times a cancel is sent again before it is abandoned (default 10)",
    ),
)
"""The session policy's settings, named as :class:`~handoff_fsm.simulate.SimulationConfig`
names them; an option not given leaves the configuration's default (which the help quotes,
and tests/test_simulate_cli.py checks against the configuration)."""


def _add_session_options(parser: argparse.ArgumentParser) -> None:
    for option, read, metavar, help in SESSION_OPTIONS:
        parser.add_argument(
            option, type=read, default=argparse.SUPPRESS, metavar=metavar, help=help
        )


def _session(args: argparse.Namespace) -> dict[str, Any]:
    """The session settings given on the command line, by configuration field name."""
    names = (option.removeprefix("--").replace("-", "_") for option, *_ in SESSION_OPTIONS)
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def cli_simulate(args: argparse.Namespace) -> int:
    """``handoff-fsm simulate --backend B --handoffs N --concurrency C --fault-rate P --seed S``."""
    from rich.console import Console

    from handoff_fsm.render.plots import PlotsUnavailableError, require_matplotlib
    from handoff_fsm.simulate.config import command_config, settings
    from handoff_fsm.simulate.driver import Simulation
    from handoff_fsm.simulate.phases import timed_simulation
    from handoff_fsm.simulate.summary import summarize
    from handoff_fsm.simulate.trace import TraceWriter

    try:
        config = command_config(**run_options(args))
    except HandoffError as error:  # unsupported_backend
        return _usage_error(args, error.code.value, error.message)
    except ValueError as error:
        return _usage_error(args, "invalid_argument", str(error))
    plots = Path(args.plots) if args.plots is not None else None
    if plots is not None:
        try:
            require_matplotlib()  # before the run, which may be long
        except PlotsUnavailableError as error:
            return _usage_error(args, "missing_dependency", str(error))
    try:
        outputs = _outputs(args)  # before the run: a misnamed output costs nothing
    except UsageError as error:
        return _usage_error(args, "invalid_argument", str(error))

    show_progress = (
        not args.json
        and not args.no_progress
        and config.handoffs >= LONG_RUN
        and sys.stderr.isatty()
    )
    with ExitStack() as stack:
        trace: TextIO | None = None
        if args.trace is not None:  # streamed, and replaces the file only once the run ends
            create_parent_folders(outputs)  # --trace DIR/run.jsonl --plots DIR, DIR new
            trace = stack.enter_context(output_text(args.trace))
        on_progress = stack.enter_context(_progress_bar(config.handoffs)) if show_progress else None
        # each trace line carries the virtual time it was fed at (read while the run runs)
        writer = TraceWriter(trace, clock=lambda: simulation.now) if trace is not None else None
        every = max(1, config.handoffs // 200)
        phases: PhaseRecorder | None = None
        if plots is not None:
            simulation, phases = timed_simulation(
                config, inner=writer, on_progress=on_progress, progress_every=every
            )
        else:
            simulation = Simulation(
                config, recorder=writer, on_progress=on_progress, progress_every=every
            )
        result = simulation.run()
    status = 0 if result.ok else 1

    if plots is not None and phases is not None:
        from handoff_fsm.review.simulation import write_plots

        with named_errors(str(plots)):
            written = write_plots(plots, result, phases.times(result.fault_log))
        names = ", ".join(path.name for path in written)
        print(f"handoff-fsm simulate: wrote {names} to {plots}", file=sys.stderr)
    summary = summarize(result)
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        print_summary(summary, Console(highlight=False), settings(config))
    return status


def _outputs(args: argparse.Namespace) -> list[Output]:
    """``--trace`` and ``--plots``, checked by the one output rule (refusing one into the other)."""
    from handoff_fsm.review.simulation import PLOT_FILES

    outputs = []
    if args.trace is not None:
        why = "standard output carries the summary"
        outputs.append(Output("--trace", args.trace, Kind.FILE, why=why))
    if args.plots is not None:
        why = "the plots are several files, written into a folder"
        owns = PLOT_FILES.__contains__
        outputs.append(Output("--plots", args.plots, Kind.FOLDER, owns=owns, why=why))
    check_outputs(outputs)
    return outputs


def _usage_error(args: argparse.Namespace, code: str, message: str) -> int:
    return fail("simulate", message, code=code, json_output=args.json)


@contextmanager
def _progress_bar(total: int) -> Iterator[Callable[[int], None]]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

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


def print_summary(
    summary: dict[str, Any], console: Console, settings: Sequence[tuple[str, str]] = ()
) -> None:
    """Print the run's ``settings`` (every one, :func:`~handoff_fsm.simulate.config.settings`),
    then ``summary`` as a table (with wall-clock throughput), then any problems."""
    from rich.markup import escape
    from rich.table import Table

    from handoff_fsm.simulate.summary import rows, title

    if settings:
        said = "; ".join(f"{name} {value}" for name, value in settings)
        console.print(escape(f"handoff-fsm simulate: {said}"))
    table = Table(title=None if settings else title(summary), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for metric, value in rows(summary):
        alarm = metric == "leaked" and summary["leaked"]
        table.add_row(escape(metric), f"[bold red]{value}[/]" if alarm else escape(value))
    console.print(table)
    for problem in summary["first_problems"]:
        console.print(f"[bold red]problem:[/] {escape(problem)}", highlight=False)
    hidden = summary["problems"] - len(summary["first_problems"])
    if hidden > 0:
        console.print(f"[bold red]... and {hidden} more problems[/]")

"""``handoff-fsm sweep``: a grid of ``simulate`` runs on Dask, compared across seeds.

Rule kept here: the sweep's options *are* ``simulate``'s, each taking a comma list: they
are read from :func:`~handoff_fsm.cli.simulate.run_actions` (the same readers, the same
checks, the same help), so an option ``simulate`` gains is one ``sweep`` sweeps. Everything
is checked before any work, and a mistake writes nothing: Dask and matplotlib installed
(else one line: ``pip install 'handoff-fsm[sweep]'``, exit 2), every configuration of the
grid one ``simulate`` would run (else its error code, exit 2), the output folder by the one
output rule (:mod:`~handoff_fsm.cli.files`). The cells run on an embedded ``LocalCluster``
(one process per core, ``--workers N``) or on a running scheduler (``--scheduler``); each
finished cell is kept in ``DIR/cells/`` as it arrives, so Ctrl-C (exit 130) loses only the
cells still running and ``--resume`` reuses the finished ones. Progress goes to stderr: a
bar on a terminal, one line per cell elsewhere. Exit status: 0, or 1 when a cell reported a
problem (a leak, a stuck handoff, ...: the run ``simulate`` exits 1 for).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_fsm.cli.common import Commands, fail, natural, positive, real_number
from handoff_fsm.cli.files import Kind, Output, UsageError, check_outputs, named_errors
from handoff_fsm.cli.simulate import run_actions
from handoff_fsm.errors import HandoffError, quoted

if TYPE_CHECKING:
    from distributed import Client

    from handoff_fsm.simulate.sweep import Cell, CellStore, Summary, Value

SWEEP_JSON: Final = "sweep.json"
SUMMARY_MD: Final = "summary.md"
CONNECT_TIMEOUT_S: Final = 30.0
_SKIPPED: Final = frozenset({"seed"})
"""``simulate``'s run options that ``sweep`` does not take as such (``--seeds`` instead)."""


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "sweep",
        help="run a grid of simulations on Dask and compare them across seeds",
        description="Run every combination of the given simulate options, each with every "
        "seed, on Dask (an embedded LocalCluster, or --scheduler), and write sweep.json, "
        "summary.md and SVG plots into DIR. Every option below that handoff-fsm simulate "
        "takes may be a comma list (--fault-rate 0,0.01,0.05); each cell is exactly what "
        "simulate --json prints for its options, less the wall clock. Needs "
        "pip install 'handoff-fsm[sweep]'.",
    )
    for action in run_actions():
        if action.dest in _SKIPPED or not action.option_strings:
            continue
        _add_listed(parser, action)
    parser.add_argument(
        "--seeds",
        type=_seeds,
        default=(0,),
        metavar="A-B|S,...",
        help="the seeds each configuration runs with: a range A-B (both included), a comma "
        "list, or both (0-4,9); default 0",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="the folder to write sweep.json, summary.md and the plots into (created); "
        "finished cells are kept in DIR/cells until the sweep is written",
    )
    parser.add_argument(
        "--workers",
        type=positive,
        metavar="N",
        help="worker processes of the embedded LocalCluster (default: one per core)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="run on the workers of this running Dask scheduler instead of an embedded cluster",
    )
    parser.add_argument(
        "--timeout",
        type=real_number,
        default=CONNECT_TIMEOUT_S,
        metavar="S",
        help=f"with --scheduler: seconds to wait for it and its first worker "
        f"(default {CONNECT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="reuse the cells a stopped or earlier sweep into DIR finished (those whose "
        "configuration and seed match); without it every cell runs again",
    )
    parser.add_argument(
        "--metrics",
        metavar="M,...",
        help="the metrics to plot, by their keys in a cell's summary (default: all that "
        "summary.md gives)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar or lines on stderr (a bar on a terminal, else a line per cell)",
    )
    parser.set_defaults(run=cli_sweep)


def _add_listed(parser: argparse.ArgumentParser, action: argparse.Action) -> None:
    """``simulate``'s ``action`` again, taking a comma list of what it takes."""
    shown = action.metavar or "{" + ",".join(map(str, action.choices or ())) + "}"
    default = action.default
    parser.add_argument(
        *action.option_strings,
        dest=action.dest,
        type=_listed(action),
        default=default if default is argparse.SUPPRESS else (default,),
        metavar=f"{shown}[,...]",
        help=action.help,
    )


def _listed(action: argparse.Action) -> Callable[[str], tuple[Any, ...]]:
    """The reader of a comma list of ``action``'s values: each read by its own reader."""
    read: Callable[[str], Any] = action.type if callable(action.type) else str
    choices = action.choices

    def values(text: str) -> tuple[Any, ...]:
        found: list[Any] = []
        for item in text.split(","):
            if not item:
                raise argparse.ArgumentTypeError(
                    f"an empty value in {quoted(text)} (separate the values by single commas)"
                )
            value = read(item)
            if choices is not None and value not in choices:
                names = ", ".join(map(repr, choices))
                raise argparse.ArgumentTypeError(
                    f"invalid choice: {quoted(item)} (choose from {names})"
                )
            if value in found:
                raise argparse.ArgumentTypeError(f"{quoted(item)} is given twice in {quoted(text)}")
            found.append(value)
        return tuple(found)

    values.__name__ = f"{action.dest} list"
    return values


def _seeds(text: str) -> tuple[int, ...]:
    """``A-B`` (both included), ``S,...``, or both: every seed once, in the order given."""
    found: list[int] = []
    for item in text.split(","):
        first, dash, last = item.partition("-")
        low = natural(first)
        high = natural(last) if dash else low
        if high < low:
            raise argparse.ArgumentTypeError(f"the range {quoted(item)} is empty (A-B: A <= B)")
        for seed in range(low, high + 1):
            if seed in found:
                raise argparse.ArgumentTypeError(f"seed {seed} is given twice in {quoted(text)}")
            found.append(seed)
    return tuple(found)


def _usage_error(code: str, message: str) -> int:
    return fail("sweep", message, code=code)


def _grid_options(args: argparse.Namespace) -> dict[str, tuple[Value, ...]]:
    from handoff_fsm.simulate.sweep import plain

    return {
        action.dest: tuple(plain(value) for value in getattr(args, action.dest))
        for action in run_actions()
        if action.dest not in _SKIPPED and hasattr(args, action.dest)
    }


def _described(options: Mapping[str, Sequence[Value]]) -> Callable[[Cell], str]:
    """How progress lines and errors name a cell: its swept options and its seed."""
    from handoff_fsm.simulate.sweep import option_text
    from handoff_fsm.simulate.sweep_report import option_name, swept

    names = swept(options)

    def described(cell: Cell) -> str:
        values = dict(cell.configuration)
        words = [f"{option_name(name)} {option_text(values[name])}" for name in names]
        return ", ".join([*words, f"seed {cell.seed}"])

    return described


def cli_sweep(args: argparse.Namespace) -> int:
    """``handoff-fsm sweep --backend vllm,sglang --fault-rate 0,0.05 --seeds 0-9 -o DIR``."""
    from handoff_fsm.render.plots import PlotsUnavailableError, require_matplotlib
    from handoff_fsm.simulate.sweep import (
        INSTALL_HINT,
        CellStore,
        DaskUnavailableError,
        assembled,
        configurations,
        default_workers,
        grid,
        require_dask,
    )
    from handoff_fsm.simulate.sweep_report import METRIC_NAMES, is_plot_name

    try:
        require_dask()
    except DaskUnavailableError as error:
        return _usage_error("missing_dependency", str(error))
    try:
        require_matplotlib()
    except PlotsUnavailableError:
        message = f"the sweep's plots draw with matplotlib, which is not installed: {INSTALL_HINT}"
        return _usage_error("missing_dependency", message)
    if args.workers is not None and args.scheduler is not None:
        return _usage_error(
            "invalid_argument", "--workers is the embedded cluster's: not with --scheduler"
        )
    if args.scheduler is not None and not args.scheduler:
        return _usage_error("invalid_argument", "--scheduler: an empty address")
    if not args.timeout > 0:
        return _usage_error("invalid_argument", f"--timeout must be > 0, got {args.timeout!r}")
    metrics = METRIC_NAMES
    if args.metrics is not None:
        metrics = tuple(dict.fromkeys(args.metrics.split(",")))
        unknown = [name for name in metrics if name not in METRIC_NAMES]
        if unknown:
            return _usage_error(
                "invalid_argument",
                f"--metrics: unknown metric {quoted(unknown[0])} (choose from "
                f"{', '.join(METRIC_NAMES)})",
            )

    options = _grid_options(args)
    cells = grid(options, args.seeds)
    described = _described(options)
    for configuration in configurations(cells):
        first = next(cell for cell in cells if cell.configuration == configuration)
        try:
            first.config()
        except HandoffError as error:  # unsupported_backend
            where = described(first).rpartition(", seed ")[0] or "the configuration"
            return _usage_error(error.code.value, f"{where}: {error.message}")
        except ValueError as error:
            where = described(first).rpartition(", seed ")[0] or "the configuration"
            return _usage_error("invalid_argument", f"{where}: {error}")

    def owns(name: str) -> bool:
        return name in (SWEEP_JSON, SUMMARY_MD) or is_plot_name(name)

    output = Output(
        "-o", args.output, Kind.FOLDER, owns=owns, why="a sweep is several files, in a folder"
    )
    try:
        check_outputs([output])
    except UsageError as error:
        return _usage_error("invalid_argument", str(error))

    folder = Path(args.output)
    store = CellStore(folder)
    done: dict[str, Summary] = {}
    if args.resume:
        earlier = assembled(folder / SWEEP_JSON)
        for cell in cells:
            summary = store.load(cell) or earlier.get(cell.key)
            if summary is not None:
                done[cell.key] = summary
    todo = [cell for cell in cells if cell.key not in done]
    where = (
        f"the scheduler {args.scheduler}"
        if args.scheduler is not None
        else _local(args.workers or default_workers())
    )
    reused = f", {len(done)} reused from {folder}" if args.resume else ""
    print(
        f"handoff-fsm sweep: {len(cells)} cells ({len(configurations(cells))} "
        f"configurations x {len(args.seeds)} seeds){reused}; "
        + (f"{len(todo)} to run on {where}" if todo else "nothing to run"),
        file=sys.stderr,
    )
    if (
        todo
    ):  # DIR is created with the first finished cell: a sweep that cannot start writes nothing
        status = _run(args, todo, store, done, described)
        if status is not None:
            return status
    return _write(
        args,
        folder=folder,
        cells=cells,
        options=options,
        metrics=metrics,
        done=done,
        store=store,
        owns=owns,
    )


def _run(
    args: argparse.Namespace,
    todo: Sequence[Cell],
    store: CellStore,
    done: dict[str, Summary],
    described: Callable[[Cell], str],
) -> int | None:
    """Run ``todo`` on the cluster, keeping each finished cell in ``store`` and ``done``;
    an exit status if the sweep cannot go on (``None``: every cell finished)."""
    from distributed import KilledWorker

    from handoff_fsm.simulate.sweep import run_cells

    with _progress(len(todo), args.no_progress, described) as advance:

        def on_done(cell: Cell, summary: Summary) -> None:
            with named_errors(str(store.path(cell))):
                store.save(cell, summary)
            done[cell.key] = summary
            advance(cell)

        try:
            with _client(args) as client:
                run_cells(client, todo, on_done)
        except _UnreachableError as error:
            return _usage_error("scheduler_unreachable", str(error))
        except KeyboardInterrupt:
            finished = len(todo) - sum(cell.key not in done for cell in todo)
            _stopped(args, store, finished, len(todo))
            return 130
        except KilledWorker as error:
            print(
                f"handoff-fsm sweep: worker_lost: {error}; the finished cells are kept in "
                f"{store.folder}: run again with --resume",
                file=sys.stderr,
            )
            return 2
    return None


def _stopped(args: argparse.Namespace, store: CellStore, finished: int, total: int) -> None:
    print(
        f"handoff-fsm sweep: stopped: {finished} of the {total} cells to run finished, kept "
        f"in {store.folder}; run the same command with --resume to finish",
        file=sys.stderr,
    )


class _UnreachableError(Exception):
    """No scheduler at ``--scheduler``'s address, or no worker joined it in time."""


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[Client]:
    from handoff_fsm.simulate.sweep import default_workers, local_client, remote_client

    if args.scheduler is None:
        with local_client(args.workers or default_workers()) as client:
            yield client
        return
    with ExitStack() as stack:
        try:
            client = stack.enter_context(remote_client(args.scheduler, args.timeout))
        except TimeoutError as error:  # no worker joined
            raise _UnreachableError(
                f"no worker joined the scheduler {args.scheduler} within {args.timeout:g} s"
                f" ({error})"
            ) from None
        except (OSError, ValueError) as error:
            raise _UnreachableError(
                f"cannot reach the scheduler {args.scheduler}: {error}"
            ) from None
        yield client


@contextmanager
def _progress(
    total: int, quiet: bool, described: Callable[[Cell], str]
) -> Iterator[Callable[[Cell], None]]:
    """``advance(cell)`` after each finished cell: a rich bar on a terminal (stderr), one
    plain line per cell elsewhere, nothing with ``--no-progress``."""
    if quiet:
        yield lambda cell: None
        return
    if not sys.stderr.isatty():
        count = 0

        def line(cell: Cell) -> None:
            nonlocal count
            count += 1
            print(f"handoff-fsm sweep: {count}/{total} {described(cell)}", file=sys.stderr)

        yield line
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("sweeping"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("", total=total)
    with progress:
        yield lambda cell: progress.update(task, advance=1, description=described(cell))


def _write(
    args: argparse.Namespace,
    *,
    folder: Path,
    cells: Sequence[Cell],
    options: Mapping[str, Sequence[Value]],
    metrics: Sequence[str],
    done: Mapping[str, Summary],
    store: CellStore,
    owns: Callable[[str], bool],
) -> int:
    """Write sweep.json, summary.md and the plots (each atomically), then drop the cells."""
    from handoff_fsm.io.atomic import write_files
    from handoff_fsm.render.sweep_plots import svg, sweep_plot
    from handoff_fsm.simulate.sweep import sweep_document
    from handoff_fsm.simulate.sweep_report import METRICS, groups, plotted, series, summary_markdown

    finished = [(cell, done[cell.key]) for cell in cells]
    found = groups(finished)
    plots: dict[str, bytes] = {}
    for metric in METRICS:
        if metric.name not in metrics:
            continue
        for rate in plotted(options):
            plot = sweep_plot(
                metric, rate, series(found, options, metric.name, rate), len(args.seeds)
            )
            plots[plot.name] = svg(plot)
    files = {
        SWEEP_JSON: sweep_document(finished, options, args.seeds),
        SUMMARY_MD: summary_markdown(finished, options, args.seeds, list(plots)).encode("utf-8"),
        **plots,
    }
    with named_errors(str(folder)):
        write_files(folder, files, owns=owns)
    with named_errors(str(store.folder)):
        store.clear()
    troubled = sum(1 for _, summary in finished if summary["problems"])
    drawn = f" and {len(plots)} plot{'s' if len(plots) != 1 else ''}" if plots else ""
    print(
        f"handoff-fsm sweep: wrote {SWEEP_JSON}, {SUMMARY_MD}{drawn} to {folder}", file=sys.stderr
    )
    if troubled:
        print(
            f"handoff-fsm sweep: {troubled} of {len(finished)} cells reported problems (their "
            f"first_problems are in {folder / SWEEP_JSON})",
            file=sys.stderr,
        )
    return 1 if troubled else 0


def _local(workers: int) -> str:
    return f"a local cluster of {workers} worker process{'es' if workers != 1 else ''}"

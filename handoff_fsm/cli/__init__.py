"""The ``handoff-fsm`` command line: thin argument parsing over the library.

Rule kept here: no behaviour of its own. This module only declares the
subcommands and their arguments; each runs a ``cli_<command>(args) -> int``
function in a module of this package (``cli/<command>.py``), imported only
when used, so ``handoff-fsm --help`` starts fast. Exit statuses: 0 ok, 1 the
checked thing failed, 2 usage or environment error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import cast

_RUNNERS: dict[str, str] = {
    "replay": "handoff_fsm.cli.replay:cli_replay",
    "diagrams": "handoff_fsm.cli.diagrams:cli_diagrams",
    "diagram": "handoff_fsm.cli.diagrams:cli_diagram",
    "review": "handoff_fsm.cli.diagrams:cli_review",
    "check": "handoff_fsm.cli.check:cli_check",
    "simulate": "handoff_fsm.cli.simulate:cli_simulate",
    "diff": "handoff_fsm.cli.diff:cli_diff",
}

_ENGINES = ("compiled", "statechart")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handoff-fsm",
        description="The prefill-to-decode KV-cache handoff as a statechart: trace replay, "
        "diagrams and design review, exhaustive checking, and simulation.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    replay = commands.add_parser(
        "replay",
        help="replay a JSONL trace through coordinators; one JSON reply per line",
        description="Replay TRACE (JSON lines, '-' for stdin) and write one JSON reply per "
        "input line, in order (format: README, 'Trace replay').",
    )
    replay.add_argument("trace", metavar="TRACE", help="trace file (JSON lines), or - for stdin")
    replay.add_argument(
        "-o", "--output", default="-", help="where to write replies (default: stdout)"
    )
    replay.add_argument(
        "--engine",
        choices=_ENGINES,
        default="compiled",
        help="compiled table (default) or python-statemachine's interpreter",
    )
    replay.add_argument(
        "--remember",
        default="10000",
        metavar="N",
        type=lambda v: v if v == "all" or (v.isdigit()) else _bad_remember(v),
        help="completed coordinators that still answer late lines, newest first "
        "(default 10000; 'all' keeps every one, memory then grows with the trace)",
    )

    diagrams = commands.add_parser(
        "diagrams",
        help="render the statechart, tables and lifecycle diagrams into OUTDIR",
        description="Write the statechart (DOT, SVG, PNG, Mermaid), transition tables and "
        "lifecycle sequence diagrams into OUTDIR, deterministically.",
    )
    diagrams.add_argument(
        "outdir", nargs="?", default="diagrams", metavar="OUTDIR", help="default: diagrams/"
    )

    diagram = commands.add_parser(
        "diagram",
        help="draw the statechart with one coordinator's path through a trace highlighted",
    )
    diagram.add_argument("--trace", required=True, metavar="TRACE", help="trace file (JSON lines)")
    diagram.add_argument(
        "--coordinator",
        metavar="KEY",
        help="which coordinator of the trace to draw (default: the first one)",
    )
    diagram.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output file: .svg, .png or .dot"
    )

    review = commands.add_parser(
        "review", help="write the design review report (Markdown) generated from the code"
    )
    review.add_argument(
        "-o", "--output", default="diagrams/REVIEW.md", help="default: diagrams/REVIEW.md"
    )
    review.add_argument(
        "--against",
        metavar="git:REV",
        help="add the behavioural diff of the working tree against that git revision",
    )

    check = commands.add_parser(
        "check",
        help="explore every reachable coordinator state and check the invariants",
        description="Breadth-first exploration of every reachable coordinator state, "
        "checking every invariant; exit status 1 on any violation.",
    )
    check.add_argument(
        "--order",
        choices=("SourceFirst", "DestinationFirst", "both"),
        default="both",
        help="which handoff order to explore (default: both)",
    )
    check.add_argument("--engine", choices=_ENGINES, default="compiled")
    check.add_argument("--json", action="store_true", help="print one JSON object")

    simulate = commands.add_parser(
        "simulate",
        help="run many handoffs against fake engines in virtual time",
        description="Simulate N interleaved handoffs with fake source/destination/transfer "
        "endpoints, optional fault injection, and print a summary.",
    )
    simulate.add_argument("--engine", choices=("vllm", "sglang", "trtllm"), default="vllm")
    simulate.add_argument("--handoffs", type=int, default=1000, metavar="N")
    simulate.add_argument("--concurrency", type=int, default=64, metavar="C")
    simulate.add_argument("--fault-rate", type=float, default=0.0, metavar="P")
    simulate.add_argument("--seed", type=int, default=0, metavar="S")
    simulate.add_argument("--trace", metavar="OUT", help="write every coordinator input (JSONL)")
    simulate.add_argument("--json", action="store_true", help="print the summary as JSON")
    simulate.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (shown on a terminal for long runs, never with --json)",
    )
    simulate.add_argument(
        "--coordinator-engine", choices=_ENGINES, default="compiled", help=argparse.SUPPRESS
    )
    _add_diff(commands)
    return parser


def _add_diff(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    diff = commands.add_parser(
        "diff",
        help="compare two coordinators' observable behaviour; shortest trace per difference",
        description="Explore the product of two sides breadth-first and report every kind of "
        "difference in their replies with its shortest trace. A side is REVISION[@ENGINE] "
        "(seed, seed@statechart, ...), git:REV[:REVISION][@ENGINE] (the project committed "
        "at REV of the repository containing the working directory) or "
        "worktree[:REVISION][@ENGINE]. Exit status 0 equivalent, 1 different, 2 error.",
    )
    diff.add_argument("a", metavar="A", help="the side before the change")
    diff.add_argument("b", metavar="B", help="the side after the change")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.add_argument("-o", "--output", metavar="DIR", help="write a review of the change to DIR")
    diff.add_argument(
        "--max-states",
        type=int,
        default=50_000,
        metavar="N",
        help="state pairs explored per order before giving up (default 50000)",
    )
    diff.add_argument(
        "--processes",
        action="store_true",
        help="drive this package's sides in subprocesses, one per core (helps on an idle "
        "machine; default: in this process)",
    )


def _bad_remember(value: str) -> str:
    raise argparse.ArgumentTypeError(f"expected a count or 'all', got {value!r}")


def _runner(command: str) -> Callable[[argparse.Namespace], int]:
    module, _, function = _RUNNERS[command].partition(":")
    return cast(
        Callable[[argparse.Namespace], int], getattr(importlib.import_module(module), function)
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _runner(args.command)(args)
    except FileNotFoundError as error:
        print(f"handoff-fsm: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0

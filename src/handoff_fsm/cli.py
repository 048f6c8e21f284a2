"""The ``handoff-fsm`` command line: thin argument parsing over the library.

Rule kept here: no behaviour of its own. Each subcommand parses its arguments,
calls one library function, prints, and maps failures to exit statuses
(0 ok, 1 the checked thing failed, 2 usage or environment error).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from typing import TextIO


def _replay(args: argparse.Namespace) -> int:
    from handoff_fsm.replay import replay

    with ExitStack() as stack:
        source: TextIO = (
            sys.stdin
            if args.trace == "-"
            else stack.enter_context(open(args.trace, encoding="utf-8"))
        )
        out: TextIO = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        write = out.write
        for reply in replay(source, engine=args.engine):
            write(reply)
            write("\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="handoff-fsm",
        description="The prefill-to-decode KV-cache handoff as a statechart: replay, "
        "diagrams, review, checking and simulation.",
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
        "-o", "--output", default="-", help="where to write replies (default stdout)"
    )
    replay.add_argument(
        "--engine",
        choices=("compiled", "statechart"),
        default="compiled",
        help="compiled table (default) or python-statemachine's interpreter",
    )
    replay.set_defaults(run=_replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except FileNotFoundError as error:
        print(f"handoff-fsm: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return status

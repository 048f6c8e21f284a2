"""``handoff-fsm replay``: stream a trace file through :func:`handoff_fsm.io.replay.replay`.

Rule kept here: argument handling and file plumbing only; every line's reply
is the library's.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import BinaryIO, TextIO

from handoff_fsm.io.replay import replay


def cli_replay(args: argparse.Namespace) -> int:
    """``handoff-fsm replay TRACE|- [-o OUT] [--engine ...]``."""
    with ExitStack() as stack:
        # Bytes in: a line that is not UTF-8 is one invalid_input reply, not a crash.
        source: BinaryIO = (
            sys.stdin.buffer if args.trace == "-" else stack.enter_context(open(args.trace, "rb"))
        )
        out: TextIO = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        write = out.write
        remember = None if args.remember == "all" else int(args.remember)
        for reply in replay(source, engine=args.engine, remember_completed=remember):
            write(reply)
            write("\n")
    return 0

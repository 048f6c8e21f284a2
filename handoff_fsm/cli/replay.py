"""``handoff-fsm replay``: stream a trace file through :func:`handoff_fsm.io.replay.replay`.

Rule kept here: argument handling and file plumbing only; every line's reply
is the library's. Lines are read in bounded memory
(:func:`~handoff_fsm.io.lines.bounded_lines`), so even a gigabyte line costs at
most ``--max-line-bytes``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from handoff_fsm.cli.files import OverwriteError, input_bytes, named_errors, output_text, same_file
from handoff_fsm.io.lines import bounded_lines
from handoff_fsm.io.replay import replay
from handoff_fsm.model import Revision


def cli_replay(args: argparse.Namespace) -> int:
    """``handoff-fsm replay TRACE|- [-o OUT] [--engine E] [--revision R] [--remember N] ...``."""
    if same_file(args.trace, args.output):
        raise OverwriteError("the output would overwrite the trace it replays", args.output)
    with input_bytes(args.trace) as source, output_text(args.output) as out:
        lines = _reading(bounded_lines(source, args.max_line_bytes), args.trace)
        write = out.write
        for reply in replay(
            lines,
            engine=args.engine,
            remember_completed=args.remember,
            max_line_bytes=args.max_line_bytes,
            revision=Revision(args.revision),
        ):
            write(reply)
            write("\n")
    return 0


def _reading(lines: Iterator[bytes], name: str) -> Iterator[bytes]:
    """``lines``, with read errors naming the trace (not the output being written)."""
    with named_errors("<stdin>" if name == "-" else name):
        yield from lines

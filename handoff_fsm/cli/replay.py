"""``handoff-fsm replay``: stream a trace file through :func:`handoff_fsm.io.replay.replay`.

Rule kept here: argument handling and file plumbing only; every line's reply
is the library's. The trace is read by the one trace opener
(:func:`~handoff_fsm.cli.files.trace_lines`), in bounded memory, so even a
gigabyte line costs at most ``--max-line-bytes``.
"""

from __future__ import annotations

import argparse

from handoff_fsm.cli.files import OverwriteError, output_text, same_file, trace_lines
from handoff_fsm.io.replay import replay
from handoff_fsm.model import Revision


def cli_replay(args: argparse.Namespace) -> int:
    """``handoff-fsm replay TRACE|- [-o OUT] [--engine E] [--revision R] [--remember N] ...``."""
    if same_file(args.trace, args.output):
        raise OverwriteError("the output would overwrite the trace it replays", args.output)
    with trace_lines(args.trace, args.max_line_bytes) as lines, output_text(args.output) as out:
        write = out.write
        for reply in replay(
            lines,
            engine=args.engine,
            remember_completed=args.remember,
            max_line_bytes=args.max_line_bytes,
            revision=Revision(args.revision),
        ):
            write(f"{reply}\n")
    return 0

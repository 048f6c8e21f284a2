"""``handoff-fsm replay``: stream a trace file through the trace replayer.

Rule kept here: argument handling and file plumbing only; every line's reply
is the library's (:class:`~handoff_fsm.io.replay.TraceReplayer`, the same object
:func:`~handoff_fsm.io.replay.replay` runs, read here for ``--strict``'s count of
refused lines). The trace is read by the one trace opener
(:func:`~handoff_fsm.cli.files.trace_lines`), in bounded memory, so even a
gigabyte line costs at most ``--max-line-bytes``. The replies stream into their
output by the one output rule (:func:`~handoff_fsm.cli.files.check_outputs`,
:func:`~handoff_fsm.cli.files.output_text`): a file is replaced only once every
line is answered, so a failed run leaves the previous output whole.
"""

from __future__ import annotations

import argparse

from handoff_fsm.cli.common import Commands, add_engine, add_revision, add_trace, natural, positive
from handoff_fsm.cli.files import Kind, Output, check_outputs, output_text, trace_lines
from handoff_fsm.errors import quoted
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES, LARGEST_MAX_LINE_BYTES
from handoff_fsm.io.replay import (
    DEFAULT_REMEMBER_BYTES,
    DEFAULT_REMEMBER_COMPLETED,
    KEPT_COORDINATOR_BYTES,
    TraceReplayer,
)


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "replay",
        help="replay a JSONL trace through coordinators; one JSON reply per line",
        description="Replay TRACE (JSON lines, '-' for stdin) and write one JSON reply per "
        "input line, in order (format: the docs' 'Trace replay' guide).",
    )
    add_trace(parser)
    parser.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="OUT",
        help="where to write the replies (default: - for stdout)",
    )
    add_engine(parser)
    add_revision(
        parser,
        "protocol revision of 'new' lines that name none (default: seed; a line's own "
        '"revision" wins)',
    )
    parser.add_argument(
        "--remember",
        default=str(DEFAULT_REMEMBER_COMPLETED),
        metavar="N",
        type=_remember,
        help=f"how many completed coordinators are kept whole, answering late lines exactly "
        f"as the coordinator would (default {DEFAULT_REMEMBER_COMPLETED}, within "
        "--remember-bytes); older ones are kept by key and completion only (a second 'new' "
        "is duplicate_coordinator, any other line forgotten_coordinator), except one that "
        "can still change (a976b2bf after Success), kept as a record of its snapshot that "
        "still answers exactly; 'all' keeps every one in full, whatever its size",
    )
    parser.add_argument(
        "--remember-bytes",
        default=str(DEFAULT_REMEMBER_BYTES),
        metavar="B",
        type=_remember_bytes,
        help=f"what the coordinators --remember keeps may count in all (default "
        f"{DEFAULT_REMEMBER_BYTES}, 16 MiB): each counts {KEPT_COORDINATOR_BYTES} bytes plus "
        "its key's UTF-8 length, so long keys keep fewer; 'all': no bound",
    )
    parser.add_argument(
        "--max-line-bytes",
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="B",
        type=_line_bytes,
        help=f"longest line read, in bytes without the newline (default {DEFAULT_MAX_LINE_BYTES}"
        "); a longer line is skipped in bounded memory and answered line_too_long",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit status 1 when any line was refused (an error reply), for CI; "
        "every line is still answered",
    )
    parser.set_defaults(run=cli_replay)


def _remember(text: str) -> int | None:
    if text == "all":
        return None
    try:
        return natural(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a count or 'all', got {quoted(text)}") from None


def _remember_bytes(text: str) -> int | None:
    if text == "all":
        return None
    try:
        return natural(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes or 'all', got {quoted(text)}"
        ) from None


def _line_bytes(text: str) -> int:
    value = positive(text)
    if value > LARGEST_MAX_LINE_BYTES:
        raise argparse.ArgumentTypeError(
            f"expected at most {LARGEST_MAX_LINE_BYTES} bytes, got {quoted(text)}"
        )
    return value


def cli_replay(args: argparse.Namespace) -> int:
    """``handoff-fsm replay TRACE|- [-o OUT] [--engine E] [--revision R] [--remember N] ...``."""
    check_outputs([Output("-o", args.output, Kind.STREAM)], inputs=[args.trace])
    with trace_lines(args.trace, args.max_line_bytes) as lines, output_text(args.output) as out:
        replayer = TraceReplayer(
            engine=args.engine,
            remember_completed=args.remember,
            remember_bytes=args.remember_bytes,
            max_line_bytes=args.max_line_bytes,
            revision=args.revision,
        )
        write = out.write
        reply_text = replayer.reply_text
        for number, line in enumerate(lines, start=1):
            write(f"{reply_text(line, number)}\n")
    return 1 if args.strict and replayer.refused else 0

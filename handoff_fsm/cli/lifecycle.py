"""``handoff-fsm lifecycle``: the sequence diagram of one coordinator's run in a trace.

Rule kept here: argument handling and file plumbing only. The trace is read
by the one trace opener (:func:`~handoff_fsm.cli.files.trace_lines`), the run
is followed and worded by the library (:func:`~handoff_fsm.io.follow.follow`,
:func:`~handoff_fsm.io.lifecycle.lifecycle_of`) and drawn by
:func:`~handoff_fsm.render.sequence.lifecycle_bytes`, the same functions that
draw the committed lifecycles. A problem the user can fix (no such
coordinator, a trace that creates none, e.g. one that is not UTF-8, an unknown
output suffix, Graphviz missing) is one line on stderr, naming the trace and
the code where it has one, and exit status 2 (a file that cannot be read
or written is :func:`handoff_fsm.cli.main`'s one line, naming the file);
lines of the trace that name no coordinator are listed on stderr and drawn
nowhere. ``-o`` follows the one output rule
(:func:`~handoff_fsm.cli.files.check_outputs`), checked before the trace is
read, and the drawing replaces it atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from handoff_fsm.cli.common import (
    Commands,
    add_coordinator,
    add_revision,
    add_trace,
    fail,
    shown_key,
    warn_unattributed,
)
from handoff_fsm.cli.files import Kind, Output, check_outputs, trace_lines, trace_name, write_output
from handoff_fsm.errors import HandoffError

if TYPE_CHECKING:
    from handoff_fsm.io.follow import CoordinatorSummary


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "lifecycle",
        help="draw one coordinator's run in a trace as a sequence diagram",
        description="Replay TRACE (JSON lines as for replay, '-' for stdin) and draw one "
        "coordinator's run as a sequence diagram (Caller, Coordinator, Source, Destination, "
        "Transfer): inputs, rejections, issued actions, chart states, the completion.",
    )
    add_trace(parser)
    add_coordinator(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="output file: .mmd (Mermaid), .md (Markdown with a Mermaid block), .svg or .png",
    )
    parser.add_argument(
        "--title", metavar="TEXT", help="the diagram's title (default: Lifecycle of KEY)"
    )
    add_revision(
        parser,
        "protocol revision of 'new' lines that name none, as for replay (default: seed)",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the trace's coordinators with their inputs and completion instead",
    )
    parser.set_defaults(run=cli_lifecycle)


def _fail(message: str) -> int:
    return fail("lifecycle", message)


def _print_list(coordinators: tuple[CoordinatorSummary, ...]) -> None:
    rows = [("coordinator", "order", "revision", "inputs", "rejected", "completion")]
    rows += [
        (
            shown_key(c.coordinator),
            c.order.value,
            c.revision.value,
            str(c.inputs),
            str(c.rejected),
            c.completion.value if c.completion is not None else "not complete",
        )
        for c in coordinators
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [
            cell.rjust(width) if i in (3, 4) else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())


def cli_lifecycle(args: argparse.Namespace) -> int:
    """``handoff-fsm lifecycle TRACE|- [--coordinator KEY] [--title T] [--revision R] -o OUT``.

    ``--list`` prints the trace's coordinators instead of drawing one.
    """
    from handoff_fsm.io.follow import follow, list_coordinators
    from handoff_fsm.io.lifecycle import lifecycle_of
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.render.sequence import LIFECYCLE_SUFFIXES, lifecycle_bytes

    output = Path(args.output) if args.output is not None else None
    if args.list and (args.coordinator is not None or output is not None or args.title):
        given = "--coordinator" if args.coordinator is not None else "-o" if output else "--title"
        args.parser.error(f"--list prints every coordinator: it takes no {given}")
    if not args.list:
        if output is None:
            return _fail("say where to draw it: -o OUT (.mmd, .md, .svg or .png), or use --list")
        formats = ", ".join(LIFECYCLE_SUFFIXES)
        why = f"a lifecycle's format is its file's suffix ({formats})"
        check_outputs([Output("-o", args.output, Kind.FILE, why=why)], inputs=[args.trace])
        if output.suffix.lower() not in LIFECYCLE_SUFFIXES:
            return _fail(f"-o {output.name}: a lifecycle is written as {formats}")
    try:
        with trace_lines(args.trace) as lines:  # a file error is main()'s one line
            if args.list:
                _print_list(list_coordinators(lines, revision=args.revision))
                return 0
            run = follow(lines, args.coordinator, revision=args.revision)
    except HandoffError as error:  # e.g. a trace that is not UTF-8 creates no coordinator
        return _fail(f"{trace_name(args.trace)}: {error.code.value}: {error.message}")
    warn_unattributed("lifecycle", run, "not drawn")
    assert output is not None
    try:
        data = lifecycle_bytes(lifecycle_of(run, title=args.title), output.suffix)
    except GraphvizError as error:
        return _fail(str(error))
    write_output(args.output, data)
    print(f"wrote {output} (coordinator {shown_key(run.coordinator)}, {run.inputs} inputs)")
    return 0

"""``handoff-fsm inspect``: one HTML page that steps through a trace on the chart.

Rule kept here: argument handling and file plumbing only. The trace is read by the
one trace opener (:func:`~handoff_fsm.cli.files.trace_lines`), replayed and followed
by the library (:func:`~handoff_fsm.io.follow.follow_all`, every coordinator in one
replay) and made into the page by :func:`~handoff_fsm.render.inspector.inspector_html`.
``-o`` follows the one output rule (:func:`~handoff_fsm.cli.files.check_outputs`),
checked before the trace is read: the page is a file (``-`` is a usage error: standard
output carries the summary), its folder must exist, and it is replaced atomically. A
problem the user can fix (no such coordinator, a trace that creates none, an output
that is not ``.html``, Graphviz missing) is one line on stderr, naming the trace and the
code where it has one, exit status 2, and nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Final

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
    pass

SUFFIXES: Final = (".html", ".htm")


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "inspect",
        help="write an HTML page that steps through a trace on the chart",
        description="Replay TRACE (JSON lines as for replay, '-' for stdin) and write one "
        "self-contained HTML page: the revision's statechart with the active states and "
        "the transition just taken marked, the coordinator's lifecycle beside it, and each "
        "step's input, reply, outstanding actions, completion and time. Arrow keys, a "
        "slider, a click on the lifecycle or #step=N in the address step through it; a "
        "trace of several coordinators gets a selector.",
    )
    add_trace(parser)
    add_coordinator(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=True,
        help="the page to write (.html); it loads nothing from elsewhere",
    )
    add_revision(
        parser,
        "protocol revision of 'new' lines that name none, as for replay (default: seed)",
    )
    parser.set_defaults(run=cli_inspect)


def _fail(message: str) -> int:
    return fail("inspect", message)


def cli_inspect(args: argparse.Namespace) -> int:
    """``handoff-fsm inspect TRACE|- [--coordinator KEY] [--revision R] -o page.html``."""
    from handoff_fsm.io.follow import follow_all
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.render.inspector import MAX_COORDINATORS, inspector_html

    output = Path(args.output)
    why = "the page is a file (standard output carries the summary)"
    check_outputs([Output("-o", args.output, Kind.FILE, why=why)], inputs=[args.trace])
    if output.suffix.lower() not in SUFFIXES:
        return _fail(f"-o {output.name}: an inspector page is written as .html")
    include = [args.coordinator] if args.coordinator is not None else []
    try:
        with trace_lines(args.trace) as lines:  # a file error is main()'s one line
            trace = follow_all(
                lines,
                revision=args.revision,
                max_coordinators=MAX_COORDINATORS,
                include=include,
            )
    except HandoffError as error:  # e.g. a trace that is not UTF-8 creates no coordinator
        return _fail(f"{trace_name(args.trace)}: {error.code.value}: {error.message}")
    warn_unattributed("inspect", trace.runs[0], "names no coordinator")
    name = Path(trace_name(args.trace)).name
    try:
        page = inspector_html(trace, name=name, shown=args.coordinator)
    except GraphvizError as error:
        return _fail(str(error))
    write_output(args.output, page.encode("utf-8"))
    shown = args.coordinator if args.coordinator is not None else trace.runs[0].coordinator
    count = len(trace.runs) + trace.not_followed
    print(
        f"wrote {output} ({count} coordinator{'s' if count != 1 else ''}; "
        f"showing {shown_key(shown)} first)"
    )
    return 0

"""``handoff-fsm diagrams``, ``diagram`` and ``review``: argument handling only.

Rule kept here: each command calls one library function and turns the
failures a user can fix (Graphviz missing or failing, a trace without that coordinator,
or creating none, e.g. one that is not UTF-8, an unknown output format) into a
one-line message, naming the trace where it concerns one, and exit status 2; file
errors are :func:`handoff_fsm.cli.main`'s, named after the file they concern. A
trace is read by the one trace opener (:func:`~handoff_fsm.cli.files.trace_lines`).
The library is imported when a command runs, not when its parser is built.
"""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path

from handoff_fsm.cli.common import Commands, add_coordinator, add_revision, add_trace, fail
from handoff_fsm.cli.files import STDIN, named_errors, trace_lines, trace_name
from handoff_fsm.errors import HandoffError
from handoff_fsm.io.errors import TraceError


def register(commands: Commands) -> None:
    diagrams = commands.add_parser(
        "diagrams",
        help="render the statechart, tables and lifecycle diagrams into OUTDIR",
        description="Write the statechart (DOT, SVG, PNG, Mermaid), transition tables and "
        "lifecycle sequence diagrams into OUTDIR, deterministically; each protocol revision's "
        "own chart, tables and simulated decode-phase cancel go into OUTDIR/<revision>/.",
    )
    diagrams.add_argument(
        "outdir",
        nargs="?",
        default="diagrams",
        metavar="OUTDIR",
        help="directory to write into, created if missing (default: diagrams)",
    )
    diagrams.set_defaults(run=cli_diagrams)

    diagram = commands.add_parser(
        "diagram",
        help="draw the statechart with one coordinator's path through a trace highlighted",
        description="Replay TRACE and draw the statechart with one coordinator's visited "
        "states and numbered transitions highlighted, and the trace's errors beside it.",
    )
    add_trace(diagram, option=True)
    add_coordinator(diagram)
    diagram.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output file: .svg, .png or .dot"
    )
    add_revision(
        diagram,
        "protocol revision of 'new' lines that name none, as for replay (default: seed)",
    )
    diagram.set_defaults(run=cli_diagram)

    review = commands.add_parser(
        "review",
        help="write the design review report (Markdown) generated from the code",
        description="Write the design review (chart, tables, lifecycles, error codes, "
        "improvements, state space) as one Markdown file.",
    )
    review.add_argument(
        "-o",
        "--output",
        default="diagrams/REVIEW.md",
        metavar="OUT",
        help="Markdown file to write (default: diagrams/REVIEW.md)",
    )
    review.add_argument(
        "--against",
        metavar="git:REV",
        help="add the behavioural diff of the working tree against that git revision",
    )
    review.add_argument(
        "--git",
        action="store_true",
        help="also write the working tree's git commit (and whether it is dirty) into the "
        "review's provenance; the committed review leaves it out (it cannot name its own commit)",
    )
    review.set_defaults(run=cli_review)


def cli_diagrams(args: argparse.Namespace) -> int:
    """``handoff-fsm diagrams [OUTDIR]``: write every diagram and table into OUTDIR."""
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.review.files import write_diagrams

    outdir = Path(args.outdir)
    if outdir.exists() and not outdir.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", args.outdir)
    try:
        with named_errors(str(outdir)):
            written = write_diagrams(outdir)
    except GraphvizError as error:
        return fail("diagrams", str(error))
    print(f"wrote {len(written)} files to {outdir}/")
    return 0


def cli_diagram(args: argparse.Namespace) -> int:
    """``handoff-fsm diagram --trace T|- [--coordinator K] -o OUT``: the trace overlay."""
    from handoff_fsm.io.follow import follow
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.render.overlay import OVERLAY_SUFFIXES, overlay_bytes, overlay_dot

    output = Path(args.output)
    if output.suffix.lower() not in OVERLAY_SUFFIXES:  # before any reading
        return fail("diagram", f"-o {output.name}: an overlay is written as .svg, .png or .dot")
    name = trace_name(args.trace)
    try:
        with trace_lines(args.trace) as lines:  # a file error is main()'s one line
            run = follow(lines, args.coordinator, revision=args.revision)
    except TraceError as error:  # e.g. a trace that is not UTF-8 creates no coordinator
        return fail("diagram", f"{name}: {error.code.value}: {error.message}")
    source = overlay_dot(run, name="" if args.trace == STDIN else Path(args.trace).name)
    try:
        data = overlay_bytes(source, output.suffix)
    except GraphvizError as error:
        return fail("diagram", str(error))
    with named_errors(args.output):
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(data)
    print(f"wrote {output}")
    return 0


def cli_review(args: argparse.Namespace) -> int:
    """``handoff-fsm review [-o diagrams/REVIEW.md] [--against git:REV] [--git]``: the review.

    The provenance printed always names the working tree's git commit when there is
    one; the file carries it only with ``--git`` (see :mod:`handoff_fsm.review.provenance`).
    """
    from handoff_fsm.review.files import write_review
    from handoff_fsm.review.provenance import provenance
    from handoff_fsm.structure.describe import describe_chart

    try:
        with named_errors(args.output):
            if Path(args.output).is_dir():  # said now, not after the review is computed
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), args.output)
            output = write_review(Path(args.output), against=args.against, git=args.git)
    except HandoffError as error:
        return fail("review", str(error))
    stamp = provenance(describe_chart(), git=True)
    print(f"wrote {output} ({stamp.line()})")
    return 0

"""``handoff-fsm diagrams``, ``diagram`` and ``review``: argument handling only.

Rule kept here: each command calls one library function and turns the
failures a user can fix (Graphviz missing or failing, a trace without that coordinator,
or creating none, e.g. one that is not UTF-8, an unknown output format, ``--git``
outside a git checkout) into a one-line message, naming the trace where it concerns
one, and exit status 2; file errors are :func:`handoff_fsm.cli.main`'s, named after
the file they concern. A trace is read by the one trace opener
(:func:`~handoff_fsm.cli.files.trace_lines`); every output follows the one output
rule (:func:`~handoff_fsm.cli.files.check_outputs`), checked before any work, and
is written atomically. Without Graphviz, ``diagrams`` and ``review`` still write
every file that needs none and name, in their one line, the figures they could not
draw (exit status 2: the environment lacks a tool). The library is imported when a
command runs, not when its parser is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from handoff_fsm.cli.common import (
    Commands,
    add_coordinator,
    add_losses,
    add_revision,
    add_trace,
    fail,
    trace_of,
)
from handoff_fsm.cli.files import (
    STDIN,
    Kind,
    Output,
    check_outputs,
    named_errors,
    trace_lines,
    trace_name,
    write_output,
)
from handoff_fsm.errors import HandoffError
from handoff_fsm.io.errors import TraceError
from handoff_fsm.model import Revision


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

    revisions = ",".join(revision.value for revision in Revision)
    diagram = commands.add_parser(
        "diagram",
        usage=f"%(prog)s [-h] TRACE -o OUT [--coordinator KEY] [--revision {{{revisions}}}]",
        help="draw the statechart with one coordinator's path through a trace highlighted",
        description="Replay TRACE (JSON lines as for replay, '-' for stdin) and draw the "
        "statechart with one coordinator's visited states and numbered transitions "
        "highlighted, and the trace's errors beside it.",
    )
    add_trace(diagram, old_option=True)
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
        help="Markdown file to write, in an existing folder; the files it links are written "
        "beside it (default: diagrams/REVIEW.md)",
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
        "review's provenance; the committed review leaves it out (it cannot name its own "
        "commit); an error outside a git checkout",
    )
    review.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a revision breaks an invariant or system property it does not "
        "declare as known (the review is written either way)",
    )
    add_losses(review)
    review.set_defaults(run=cli_review)


def cli_diagrams(args: argparse.Namespace) -> int:
    """``handoff-fsm diagrams [OUTDIR]``: write every diagram and table into OUTDIR."""
    from handoff_fsm.review.files import NotDrawnError, write_diagrams

    why = "the diagrams are many files, written into a folder"
    check_outputs([Output("OUTDIR", args.outdir, Kind.FOLDER, why=why)])
    outdir = Path(args.outdir)
    try:
        written = write_diagrams(outdir)
    except NotDrawnError as error:
        print(f"wrote {len(error.written)} files to {outdir}/")
        return fail("diagrams", str(error))
    print(f"wrote {len(written)} files to {outdir}/")
    return 0


def cli_diagram(args: argparse.Namespace) -> int:
    """``handoff-fsm diagram TRACE|- [--coordinator K] -o OUT``: the trace overlay."""
    from handoff_fsm.io.follow import follow
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.render.overlay import OVERLAY_SUFFIXES, overlay_bytes, overlay_dot

    trace = trace_of(args)
    why = "an overlay's format is its file's suffix (.svg, .png or .dot)"
    check_outputs([Output("-o", args.output, Kind.FILE, why=why)], inputs=[trace])
    output = Path(args.output)
    if output.suffix.lower() not in OVERLAY_SUFFIXES:  # before any reading
        return fail("diagram", f"-o {output.name}: an overlay is written as .svg, .png or .dot")
    name = trace_name(trace)
    try:
        with trace_lines(trace) as lines:  # a file error is main()'s one line
            run = follow(lines, args.coordinator, revision=args.revision)
    except TraceError as error:  # e.g. a trace that is not UTF-8 creates no coordinator
        return fail("diagram", f"{name}: {error.code.value}: {error.message}")
    source = overlay_dot(run, name="" if trace == STDIN else Path(trace).name)
    try:
        data = overlay_bytes(source, output.suffix)
    except GraphvizError as error:
        return fail("diagram", str(error))
    write_output(args.output, data)
    print(f"wrote {output}")
    return 0


def cli_review(args: argparse.Namespace) -> int:
    """``handoff-fsm review [-o diagrams/REVIEW.md] [--against git:REV] [--git] [--check]
    [--losses N]``:
    the review, and beside it the files it links; with ``--check``, exit status 1 when the
    verdict it opens with fails (:func:`~handoff_fsm.review.verdict.gate_failures`).

    The provenance printed always names the working tree's git commit when there is
    one; the file carries it only with ``--git`` (see :mod:`handoff_fsm.review.provenance`),
    which is refused where there is none (an installed wheel), not silently left out.
    """
    from handoff_fsm.review.files import NotDrawnError, write_review
    from handoff_fsm.review.provenance import PACKAGE_DIR, git_state, provenance
    from handoff_fsm.structure.describe import describe_chart

    why = "the review links files written beside it"
    check_outputs([Output("-o", args.output, Kind.FILE, why=why)])
    if args.git and git_state() is None:
        return fail(
            "review",
            f"--git: the package ({PACKAGE_DIR}) is not in a git checkout, or git is not "
            "installed: there is no commit to write",
        )
    output = Path(args.output)
    try:
        with named_errors(args.output):
            written = write_review(output, against=args.against, git=args.git, losses=args.losses)
    except NotDrawnError as error:
        beside = len(error.written) - 1
        print(f"wrote {output} and beside it {beside} of its figures, tables and traces")
        return fail("review", str(error))
    except HandoffError as error:
        return fail("review", str(error))
    stamp = provenance(describe_chart(), git=True)
    beside = len(written) - 1
    print(f"wrote {output} and beside it its {beside} figures, tables and traces ({stamp.line()})")
    if not args.check:
        return 0
    from handoff_fsm.review.design import review_verdicts
    from handoff_fsm.review.verdict import gate_failures

    failures = gate_failures(review_verdicts())
    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print("OK: nothing is broken beyond what each revision declares as known")
    return 1 if failures else 0

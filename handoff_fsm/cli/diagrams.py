"""``handoff-fsm diagrams``, ``diagram`` and ``review``: argument handling only.

Rule kept here: each command calls one library function and turns the
failures a user can fix (Graphviz missing or failing, a trace without that coordinator,
an unknown output format) into a one-line message and exit status 2; file
errors are :func:`handoff_fsm.cli.main`'s, named after the file they concern.
"""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

from handoff_fsm.cli.files import named_errors
from handoff_fsm.diagrams.files import write_diagrams, write_review
from handoff_fsm.diagrams.model import describe_chart
from handoff_fsm.diagrams.overlay import TraceOverlayError, write_overlay
from handoff_fsm.diagrams.provenance import provenance
from handoff_fsm.diagrams.render import GraphvizError
from handoff_fsm.errors import HandoffError


def _fail(command: str, error: Exception) -> int:
    print(f"handoff-fsm {command}: {error}", file=sys.stderr)
    return 2


def cli_diagrams(args: argparse.Namespace) -> int:
    """``handoff-fsm diagrams [OUTDIR]``: write every diagram and table into OUTDIR."""
    outdir = Path(args.outdir)
    if outdir.exists() and not outdir.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", args.outdir)
    try:
        with named_errors(str(outdir)):
            written = write_diagrams(outdir)
    except GraphvizError as error:
        return _fail("diagrams", error)
    print(f"wrote {len(written)} files to {outdir}/")
    return 0


def cli_diagram(args: argparse.Namespace) -> int:
    """``handoff-fsm diagram --trace T [--coordinator K] -o OUT``: the trace overlay."""
    try:
        with named_errors(args.output):
            output = write_overlay(
                Path(args.trace), Path(args.output), args.coordinator, revision=args.revision
            )
    except (GraphvizError, TraceOverlayError, ValueError) as error:
        return _fail("diagram", error)
    print(f"wrote {output}")
    return 0


def cli_review(args: argparse.Namespace) -> int:
    """``handoff-fsm review [-o diagrams/REVIEW.md] [--against git:REV] [--git]``: the review.

    The provenance printed always names the working tree's git commit when there is
    one; the file carries it only with ``--git`` (see :mod:`handoff_fsm.diagrams.provenance`).
    """
    try:
        with named_errors(args.output):
            output = write_review(Path(args.output), against=args.against, git=args.git)
    except HandoffError as error:
        return _fail("review", error)
    stamp = provenance(describe_chart(), git=True)
    print(f"wrote {output} ({stamp.line()})")
    return 0

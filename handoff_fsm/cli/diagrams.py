"""``handoff-fsm diagrams``, ``diagram`` and ``review``: argument handling only.

Rule kept here: each command calls one library function and turns the
failures a user can fix (Graphviz missing or failing, a trace without that coordinator,
or creating none, e.g. one that is not UTF-8, an unknown output format) into a
one-line message, naming the trace where it concerns one, and exit status 2; file
errors are :func:`handoff_fsm.cli.main`'s, named after the file they concern. A
trace is read by the one trace opener (:func:`~handoff_fsm.cli.files.trace_lines`).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from handoff_fsm.cli.files import STDIN, named_errors, trace_lines, trace_name
from handoff_fsm.diagrams.files import write_diagrams, write_review
from handoff_fsm.diagrams.model import describe_chart
from handoff_fsm.diagrams.overlay import (
    OVERLAY_SUFFIXES,
    TraceOverlayError,
    overlay_bytes,
    overlay_dot,
)
from handoff_fsm.diagrams.provenance import provenance
from handoff_fsm.diagrams.render import GraphvizError
from handoff_fsm.errors import HandoffError


def _fail(command: str, error: Exception | str) -> int:
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
    """``handoff-fsm diagram --trace T|- [--coordinator K] -o OUT``: the trace overlay."""
    output = Path(args.output)
    if output.suffix.lower() not in OVERLAY_SUFFIXES:  # before any reading
        return _fail("diagram", f"-o {output.name}: an overlay is written as .svg, .png or .dot")
    name = trace_name(args.trace)
    try:
        with trace_lines(args.trace) as lines:  # a file error is main()'s one line
            source = overlay_dot(
                lines,
                args.coordinator,
                name="" if args.trace == STDIN else Path(args.trace).name,
                revision=args.revision,
            )
    except TraceOverlayError as error:  # e.g. a trace that is not UTF-8 creates no coordinator
        return _fail("diagram", f"{name}: {error.code.value}: {error.message}")
    try:
        data = overlay_bytes(source, output.suffix)
    except GraphvizError as error:
        return _fail("diagram", error)
    with named_errors(args.output):
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(data)
    print(f"wrote {output}")
    return 0


def cli_review(args: argparse.Namespace) -> int:
    """``handoff-fsm review [-o diagrams/REVIEW.md] [--against git:REV] [--git]``: the review.

    The provenance printed always names the working tree's git commit when there is
    one; the file carries it only with ``--git`` (see :mod:`handoff_fsm.diagrams.provenance`).
    """
    try:
        with named_errors(args.output):
            if Path(args.output).is_dir():  # said now, not after the review is computed
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), args.output)
            output = write_review(Path(args.output), against=args.against, git=args.git)
    except HandoffError as error:
        return _fail("review", error)
    stamp = provenance(describe_chart(), git=True)
    print(f"wrote {output} ({stamp.line()})")
    return 0

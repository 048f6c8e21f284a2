"""``handoff-fsm diff A B``: where two coordinators answer the same inputs differently.

Rule kept here: argument handling and printing only; the exploration is
:func:`handoff_fsm.verify.diff.diff`, the review folder
:func:`handoff_fsm.review.diffreview.write_diff_review`. ``-o DIR`` follows the
one output rule (:func:`~handoff_fsm.cli.files.check_outputs`), checked before
the exploration runs, and so does ``--html PAGE`` (one file, replaced atomically:
:func:`handoff_fsm.review.diffpage.diff_page`, each difference stepped through on both
sides' charts). Exit status 0 when the sides are equivalent, 1 when they
differ, 2 when the diff could not run; with ``--check``, 1 exactly when B violates an
invariant or system property that A keeps (a gate for a change), else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from handoff_fsm.cli.common import Commands, add_losses, fail, positive
from handoff_fsm.cli.files import Kind, Output, check_outputs, write_output
from handoff_fsm.errors import HandoffError

if TYPE_CHECKING:
    from handoff_fsm.verify.diff import DiffReport
    from handoff_fsm.verify.verdicts import ChangeVerdict

DEFAULT_MAX_STATES = 50_000
"""State pairs explored per order before giving up (``--max-states``)."""


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "diff",
        help="compare two coordinators' observable behaviour; shortest trace per difference",
        description="Explore the product of two sides breadth-first and report every kind of "
        "difference in their replies with its shortest trace. A side is REVISION[@ENGINE] "
        "(seed, seed@statechart, ...), git:REV[:REVISION][@ENGINE] (the project committed "
        "at REV of the repository containing the working directory) or "
        "worktree[:REVISION][@ENGINE]. Exit status 0 equivalent, 1 different, 2 error.",
    )
    parser.add_argument("a", metavar="A", help="the side before the change")
    parser.add_argument("b", metavar="B", help="the side after the change")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("-o", "--output", metavar="DIR", help="write a review of the change to DIR")
    parser.add_argument(
        "--html",
        metavar="PAGE",
        help="write one self-contained HTML page (.html) that steps through each difference "
        "on both sides' charts, side by side",
    )
    parser.add_argument(
        "--max-states",
        type=positive,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help=f"state pairs explored per order before giving up (default {DEFAULT_MAX_STATES})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="also run each side's invariants and default system check; exit 1 when B "
        "violates something A does not (naming it), 0 otherwise",
    )
    add_losses(parser, "-o's verdict")
    parser.set_defaults(run=cli_diff)


def cli_diff(args: argparse.Namespace) -> int:
    """``handoff-fsm diff A B [--json] [-o DIR [--losses N]] [--html PAGE] [--max-states N]
    [--check]``;
    ``-o`` and ``--check`` judge both sides (:func:`~handoff_fsm.verify.verdicts.judge_change`)."""
    from handoff_fsm.verify.diff import diff

    if args.output is not None:
        from handoff_fsm.review.diffreview import OWNED

        why = "the review of a change is many files, written into a folder"
        check_outputs([Output("-o", args.output, Kind.FOLDER, owns=OWNED.fullmatch, why=why)])
    if args.html is not None:  # --html PAGE: a file in a folder that exists (no name -o owns)
        from handoff_fsm.cli.inspect import SUFFIXES

        why = "the page is a file (standard output carries the report)"
        check_outputs([Output("--html", args.html, Kind.FILE, why=why)])
        if Path(args.html).suffix.lower() not in SUFFIXES:
            return fail("diff", f"--html {Path(args.html).name}: the page is written as .html")
    try:
        report = diff(
            args.a,
            args.b,
            max_states=args.max_states,
            charts=args.output is not None or args.html is not None,
        )
    except HandoffError as error:
        return fail("diff", str(error), code=error.code.value)
    judged = None
    if args.check or args.output is not None:
        from handoff_fsm.verify.verdicts import judge_change

        try:
            judged = judge_change(report, losses=args.losses if args.output else 0)
        except HandoffError as error:
            return fail("diff", str(error), code=error.code.value)
    failures = _failures(judged)
    status = (1 if failures else 0) if args.check else 0 if report.equivalent else 1
    if args.output is not None:
        from handoff_fsm.review.diffreview import write_diff_review

        try:
            command = f"handoff-fsm diff {args.a} {args.b} -o {args.output}"
            written = write_diff_review(report, Path(args.output), command=command, judged=judged)
        except (HandoffError, RuntimeError) as error:
            return fail("diff", str(error))
        if not args.json:
            print(f"wrote {len(written)} files to {args.output}/")
    if args.html is not None:
        from handoff_fsm.render.graphviz import GraphvizError
        from handoff_fsm.review.diffpage import diff_page

        try:
            write_output(args.html, diff_page(report).encode("utf-8"))
        except GraphvizError as error:
            return fail("diff", str(error))
        if not args.json:
            print(f"wrote {args.html}")
    if args.json:
        data = report.to_json()
        if args.check:
            data["check"] = {"ok": not failures, "failures": failures}
        print(json.dumps(data, indent=2))
    else:
        print_report(report)
        if args.check:
            print()
            for failure in failures:
                print(f"FAILED: {failure}")
            if not failures:
                print("OK: B breaks no invariant or system property that A keeps")
    if report.stopped is not None:
        print(
            f"handoff-fsm diff: not every pair of states was explored: {report.stopped}",
            file=sys.stderr,
        )
    return status


def _failures(judged: ChangeVerdict | None) -> list[str]:
    if judged is None:
        return []
    from handoff_fsm.review.diffreview import change_failures

    return change_failures(judged)


def print_report(report: DiffReport) -> None:
    write = sys.stdout.write
    count = len(report.differences)
    verdict = (
        "equivalent" if report.equivalent else f"{count} difference{'' if count == 1 else 's'}"
    )
    write(
        f"A = {report.a}, B = {report.b}: {verdict} "
        f"({report.explored} state pairs explored, {report.seconds:.2f} s)\n"
    )
    for number, difference in enumerate(report.differences, start=1):
        write(f"\n{number}. {difference.kind} ({difference.inputs} inputs)\n")
        write(f"   {difference.summary}\n")
        for line in difference.trace:
            write(f"     {line}\n")
        write(f"   A: {json.dumps(difference.a)}\n")
        write(f"   B: {json.dumps(difference.b)}\n")

"""``handoff-fsm diff A B``: where two coordinators answer the same inputs differently.

Rule kept here: argument handling and printing only; the exploration is
:func:`handoff_fsm.verify.diff.diff`, the review folder
:func:`handoff_fsm.diagrams.diffreview.write_diff_review`. Exit status 0 when
the sides are equivalent, 1 when they differ, 2 when the diff could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from handoff_fsm.errors import HandoffError
from handoff_fsm.verify.diff import DiffReport, diff


def cli_diff(args: argparse.Namespace) -> int:
    """``handoff-fsm diff A B [--json] [-o DIR] [--max-states N]``."""
    try:
        report = diff(
            args.a,
            args.b,
            max_states=args.max_states,
            charts=args.output is not None,
        )
    except HandoffError as error:
        print(f"handoff-fsm diff: {error.code.value}: {error}", file=sys.stderr)
        return 2
    if args.output is not None:
        from handoff_fsm.diagrams.diffreview import write_diff_review

        try:
            command = f"handoff-fsm diff {args.a} {args.b} -o {args.output}"
            written = write_diff_review(report, Path(args.output), command=command)
        except (HandoffError, RuntimeError) as error:
            print(f"handoff-fsm diff: {error}", file=sys.stderr)
            return 2
        if not args.json:
            print(f"wrote {len(written)} files to {args.output}/")
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)
    if report.stopped is not None:
        print(
            f"handoff-fsm diff: not every pair of states was explored: {report.stopped}",
            file=sys.stderr,
        )
    return 0 if report.equivalent else 1


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

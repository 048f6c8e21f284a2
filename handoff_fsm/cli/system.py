"""``handoff-fsm check --system``: explore the whole system and print each property's verdict.

Rule kept here: argument handling, printing and file plumbing only. The world, its
exploration and the counterexamples come from :mod:`handoff_fsm.verify.system`, the
drawings from :func:`~handoff_fsm.render.sequence.render_sequence` (the lifecycle
renderer every trace goes through), imported when the command runs. The options are
declared by ``check`` (:mod:`handoff_fsm.cli.check`), which hands the run here.
``--counterexamples DIR`` is a folder output (:mod:`handoff_fsm.cli.files`), checked
before anything is explored, whose files are replaced atomically; files an earlier run
wrote there for properties that now hold are removed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Final

from handoff_fsm.cli.common import BOTH, fail, natural, revisions_named
from handoff_fsm.cli.files import Kind, Output, check_outputs, named_errors
from handoff_fsm.errors import HandoffError, quoted
from handoff_fsm.model import HandoffOrder

if TYPE_CHECKING:
    from handoff_fsm.verify.system import PropertyVerdict, SystemReport

SYSTEM_ONLY: Final = (
    "losses",
    "duplicates",
    "cleanup_retries",
    "no_deadline",
    "workers",
    "answers",
    "matrix",
    "counterexamples",
)
"""The options that only ``--system`` takes (argument names)."""

OWNED: Final = re.compile(r"[a-z0-9]+_[a-z_]+\.(txt|jsonl|svg|html)")
"""The files ``--counterexamples`` writes: ``<revision>_<property>.<txt|jsonl|svg|html>``."""


def add_system_options(parser: argparse.ArgumentParser) -> None:
    """``check``'s options for ``--system`` (DESIGN §10)."""
    group = parser.add_argument_group("the whole system (--system)")
    group.add_argument(
        "--system",
        action="store_true",
        help="explore the coordinator inside the session policy, with honest workers, a "
        "client that may cancel, workers that may fail and a network that reorders, "
        "loses and duplicates messages, and judge the system's properties",
    )
    group.add_argument(
        "--losses", type=natural, metavar="N", help="messages lost in a run, at most (default 0)"
    )
    group.add_argument(
        "--duplicates",
        type=natural,
        metavar="N",
        help="messages duplicated in a run, at most (default 0)",
    )
    group.add_argument(
        "--cleanup-retries",
        type=natural,
        default=None,
        metavar="N",
        help="the policy's re-sends of a cleanup action (default: the policy's, 3)",
    )
    group.add_argument("--no-deadline", action="store_true", help="a policy without a deadline")
    group.add_argument(
        "--workers",
        type=partial(_assumed, "Workers"),
        metavar="KIND",
        help="assumption: what a worker does with work on a request it was already told to "
        "cancel: refuse it (remembering, the default) or take it (forgetful)",
    )
    group.add_argument(
        "--answers",
        type=partial(_assumed, "Answers"),
        metavar="KIND",
        help="assumption: how a worker answers an action delivered again (a duplicate, a "
        "re-sent cancel): from what it holds when it arrives (by-state, the default: what a "
        "real worker does) or exactly as the first time (by-id: an idempotent worker)",
    )
    group.add_argument(
        "--matrix",
        action="store_true",
        help="explore every combination of --answers and --workers (with the --losses and "
        "--duplicates given) and print one table of verdicts per revision: which verdict "
        "rests on which assumption (exit status: the default assumptions' verdicts)",
    )
    group.add_argument(
        "--counterexamples",
        metavar="DIR",
        help="write each violated property's world steps and assumptions (.txt), trace "
        "(.jsonl), lifecycle (.svg) and inspector page (.html) to DIR",
    )


def _assumed(kind: str, text: str) -> object:
    """An assumption's value as the world's own enum ``kind`` (looked up only when given)."""
    from handoff_fsm.verify.system import assumptions

    enum: type[StrEnum] = getattr(assumptions, kind)
    try:
        return enum(text)
    except ValueError:
        names = ", ".join(repr(member.value) for member in enum)
        raise argparse.ArgumentTypeError(
            f"invalid choice: {quoted(text)} (choose from {names})"
        ) from None


def refuse_system_options(args: argparse.Namespace) -> None:
    """A usage error for an option of ``--system`` given without it."""
    given = [
        name
        for name in SYSTEM_ONLY
        if getattr(args, name) is not None and getattr(args, name) is not False
    ]
    if given:
        option = "--" + given[0].replace("_", "-")
        args.parser.error(f"{option} is an option of --system")


def cli_system(args: argparse.Namespace) -> int:
    """``handoff-fsm check --system [--revision R|both] [--order O|both] [--losses N]
    [--duplicates N] [--cleanup-retries N] [--no-deadline] [--workers W] [--answers A]
    [--matrix] [--json] [--counterexamples DIR]``."""
    from handoff_fsm.verify.system import check_system

    if args.engine != "compiled":
        args.parser.error("--system runs the compiled coordinator: it takes no --engine")
    if args.matrix:
        varied = [o for o, v in (("--answers", args.answers), ("--workers", args.workers)) if v]
        if varied:
            args.parser.error(f"--matrix explores every {varied[0][2:]}: it takes no {varied[0]}")
        if args.counterexamples is not None:
            args.parser.error("--matrix prints a table of verdicts: it takes no --counterexamples")
    if args.counterexamples is not None:
        why = "counterexamples are many files, written into a folder"
        owned = Output("--counterexamples", args.counterexamples, Kind.FOLDER, OWNED.fullmatch, why)
        check_outputs([owned])
    orders = tuple(HandoffOrder) if args.order == BOTH else (HandoffOrder(args.order),)
    retries = 3 if args.cleanup_retries is None else args.cleanup_retries
    settings = {
        "losses": args.losses or 0,
        "duplicates": args.duplicates or 0,
        "cleanup_retries": retries,
        "deadline": not args.no_deadline,
        "orders": orders,
    }
    if args.matrix:
        return _cli_matrix(args, settings)
    assumed = {
        name: value
        for name, value in (("workers", args.workers), ("answers", args.answers))
        if value is not None
    }
    try:
        reports = [
            check_system(revision, **settings, **assumed)  # type: ignore[arg-type]
            for revision in revisions_named(args.revision)
        ]
    except HandoffError as error:
        return fail("check", error.message, code=error.code.value, json_output=args.json)
    status = 0 if all(report.ok for report in reports) else 1
    if args.counterexamples is not None:
        written = _write_counterexamples(Path(args.counterexamples), reports)
        if isinstance(written, str):
            return fail("check", written)
        if not args.json:
            print(f"wrote {written} files to {args.counterexamples}/")
    if args.json:
        print(json.dumps({"results": [report.to_json() for report in reports]}, indent=2))
        return status
    _print_assumptions(reports[0])
    for report in reports:
        _print_report(report)
    broken = sorted({v.name.value for r in reports for v in r.verdicts if not v.holds})
    print(
        "OK: every property holds"
        if not broken
        else f"FAILED: {', '.join(broken)} (counterexamples above)"
    )
    return status


def _print_assumptions(report: SystemReport, varied: str = "") -> None:
    """The header every text report opens with: what every verdict below rests on."""
    write = sys.stdout.write
    write(
        "assumptions (about what the project does not control; every verdict below rests "
        f"on them{varied}):\n"
    )
    for line in report.settings.assumptions.header():
        write(f"  {line}\n")
    write("\n")


def _cli_matrix(args: argparse.Namespace, settings: dict[str, object]) -> int:
    """``--matrix``: every revision's table of verdicts, property by set of assumptions."""
    from handoff_fsm.verify.system.matrix import check_matrix, matrix_lines

    try:
        tables = [
            check_matrix(revision, **settings)  # type: ignore[arg-type]
            for revision in revisions_named(args.revision)
        ]
    except HandoffError as error:
        return fail("check", error.message, code=error.code.value, json_output=args.json)
    status = 0 if all(table.reports[0].ok for table in tables) else 1
    if args.json:
        print(json.dumps({"matrix": [table.to_json() for table in tables]}, indent=2))
        return status
    _print_assumptions(
        tables[0].reports[0], "; the columns vary answers and workers, the first is the default"
    )
    for table in tables:
        for line in matrix_lines(table):
            print(line)
        print()
    return status


def _print_report(report: SystemReport) -> None:
    from handoff_fsm.verify.system import STATEMENTS

    write = sys.stdout.write
    write(f"{report.revision.value}: {report.settings.describe()}\n")
    write(
        f"  {report.states:,} world states, {report.transitions:,} transitions explored "
        f"({report.session_states:,} session states, {report.session_moves:,} session "
        f"moves), max depth {report.max_depth}, {report.seconds:.2f} s"
        + ("" if report.exhausted else " (NOT exhausted: max_states reached)")
        + "\n"
    )
    width = max(len(v.name.value) for v in report.verdicts)
    for judged in report.verdicts:
        if judged.holds:
            status = "holds"
        else:
            assert judged.counterexample is not None
            status = f"VIOLATED (counterexample: {len(judged.counterexample.world)} steps)"
        tolerance = f"; {_tolerance(judged)}" if report.settings.assumptions.losses else ""
        write(f"  {judged.name.value:<{width}}  {status}{tolerance}\n")
    for judged in report.verdicts:
        example = judged.counterexample
        if example is None:
            continue
        write(
            f"\n  counterexample {judged.name.value} ({len(example.world)} steps, "
            f"{example.order.value}): {example.message}\n"
        )
        write(f"    property: {STATEMENTS[judged.name]}\n")
        for number, step in enumerate(example.world, start=1):
            write(f"    {number:>2}. {step.kind}: {step.text}\n")
        write("    trace (handoff-fsm replay):\n")
        for line in example.trace:
            write(f"      {line}\n")
    write("\n")


def _tolerance(judged: PropertyVerdict) -> str:
    """Item 4 of the report: the most lost messages with which the property still holds."""
    if judged.tolerance is None:
        return "broken without any lost message"
    if judged.holds:
        return f"holds with up to {_lost(judged.tolerance)}"
    if judged.tolerance == 0:
        return "holds without a lost message, broken with 1"
    return f"holds with up to {_lost(judged.tolerance)}, broken with {judged.tolerance + 1}"


def _lost(number: int) -> str:
    return "1 lost message" if number == 1 else f"{number} lost messages"


def _write_counterexamples(folder: Path, reports: list[SystemReport]) -> int | str:
    """Each violated property's world steps, trace and lifecycle, into ``folder``; the
    number of files written, or why the lifecycles could not be drawn."""
    from handoff_fsm.io.atomic import write_files
    from handoff_fsm.io.follow import follow_all
    from handoff_fsm.render.graphviz import GraphvizError
    from handoff_fsm.render.inspector import PageNote, inspector_html
    from handoff_fsm.render.sequence import render_sequence
    from handoff_fsm.verify.system import system_lifecycle

    files: dict[str, bytes] = {}
    problem = None
    for report in reports:
        for judged in report.verdicts:
            example = judged.counterexample
            if example is None:
                continue
            name = f"{report.revision.value}_{judged.name.value}"
            steps = "".join(
                f"{number}. {step.kind}: {step.text}\n"
                for number, step in enumerate(example.world, start=1)
            )
            assumed = "".join(f"  {line}\n" for line in report.settings.assumptions.header())
            files[f"{name}.txt"] = (
                f"{judged.name.value} ({report.revision.value}, {example.order.value}): "
                f"{example.message}\n{steps}\nassumptions:\n{assumed}"
            ).encode()
            files[f"{name}.jsonl"] = example.jsonl().encode()
            title = f"{judged.name.value}: counterexample ({report.revision.value})"
            note = PageNote(
                f"{judged.name.value} violated ({example.order.value}): {example.message}; "
                f"what the world assumed ({len(report.settings.assumptions.items())} assumptions)",
                tuple(report.settings.assumptions.header()),
            )
            try:
                files[f"{name}.svg"] = render_sequence(system_lifecycle(example, title=title))
                followed = follow_all(list(example.trace), revision=report.revision)
                page = inspector_html(followed, name=f"{name}.jsonl", note=note)
                files[f"{name}.html"] = page.encode("utf-8")
            except GraphvizError as error:
                problem = f"the lifecycles were not drawn: {error}"
    with named_errors(str(folder)):
        write_files(folder, files, owns=OWNED.fullmatch)
    return problem if problem is not None else len(files)

"""``handoff-fsm check``: explore every reachable state and print the verdicts.

Rule kept here: argument handling and printing only; the exploration, the
invariants, the coverage figures and the verdict on each step no input took
(:func:`~handoff_fsm.verify.coverage.untaken_steps`: expected or not, and why) come
from :mod:`handoff_fsm.verify`, imported when the command runs (the parser is built
without them).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from handoff_fsm.cli.common import (
    BOTH,
    Commands,
    add_engine,
    add_revision,
    fail,
    revisions_named,
)
from handoff_fsm.cli.system import add_system_options, cli_system, refuse_system_options
from handoff_fsm.model import HandoffOrder, Revision

if TYPE_CHECKING:
    from handoff_fsm.engines.compiled import ChartState
    from handoff_fsm.verify.coverage import ChartCoverage
    from handoff_fsm.verify.exploration import ExplorationReport


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "check",
        help="explore every reachable coordinator state and check the invariants",
        description="Breadth-first exploration of every reachable coordinator state, "
        "checking every invariant; exit status 1 on any violation.",
    )
    parser.add_argument(
        "side",
        nargs="?",
        metavar="SIDE",
        help="what to check, spelled as `handoff-fsm diff` spells a side: a revision "
        "(REVISION[@ENGINE]), git:REV[:REVISION][@ENGINE] or worktree[:REVISION][@ENGINE] "
        "(those run their own package's check; default: this package)",
    )
    parser.add_argument(
        "--order",
        choices=(*(order.value for order in HandoffOrder), BOTH),
        default=BOTH,
        help="which handoff order to explore (default: both)",
    )
    add_revision(
        parser,
        "which protocol revision to explore, with the invariants it promises (default: both)",
        both=True,
    )
    add_engine(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object (each report names its revision)"
    )
    add_system_options(parser)
    parser.set_defaults(run=cli_check)


# ---------------------------------------------------------------------- command line


def cli_check(args: argparse.Namespace) -> int:
    """``handoff-fsm check [--revision R|both] [--order O|both] [--engine E] [--json]``;
    with ``--system``, :func:`~handoff_fsm.cli.system.cli_system`."""
    if args.side is not None:
        handed = _side(args)
        if handed is not None:
            return handed
    if args.system:
        return cli_system(args)
    refuse_system_options(args)
    from handoff_fsm.coordinator import HandoffCoordinator
    from handoff_fsm.structure.transitions import chart_transitions, revision_specific_transitions
    from handoff_fsm.verify.exploration import explore

    revisions = revisions_named(args.revision)
    orders = list(HandoffOrder) if args.order == BOTH else [HandoffOrder(args.order)]
    reports = [
        explore(
            order,
            revision=revision,
            factory=partial(HandoffCoordinator, revision=revision, engine=args.engine),
        )
        for revision in revisions
        for order in orders
    ]
    ok = all(report.ok for report in reports)
    status = 0 if ok else 1
    coverages = _coverage_by_revision(reports)
    if args.json:
        print(json.dumps(_json(args.engine, revisions, orders, reports), indent=2))
        return status
    for report in reports:
        _print_report(report)
    exhausted = all(report.exhausted for report in reports)
    for revision, coverage in coverages.items():
        print(f"{_label(revision, orders)}: {_coverage_line(coverage, orders)}")
        for line in _coverage_gaps(coverage, orders, exhausted=exhausted):
            print(f"  {line}")
    if exhausted and coverages:
        print(_unreachable_verdict(coverages.values(), orders))
    if len(coverages) > 1:
        covered = _transitions_covered(coverages.values())
        print(
            f"{' + '.join(r.value for r in coverages)}: {len(covered)}/{len(chart_transitions())}"
            " declared chart transitions covered"
        )
    print(
        "declared chart transitions only one revision can fire (each revision's guards "
        "exclude the other's, so neither exploration takes them, as expected):"
    )
    for revision, specific in revision_specific_transitions().items():
        for index in sorted(specific):
            print(f"  {revision.value} only: {chart_transitions()[index]}")
    print("OK: every invariant holds" if ok else "FAILED: see the counterexamples above")
    return status


def _side(args: argparse.Namespace) -> int | None:
    """``check SIDE``: a revision of this package becomes ``--revision``/``--engine``
    (``None``: go on here); a ``git:`` or ``worktree`` side runs its own package's
    ``check`` with the rest of the arguments, and its exit status is this one's."""
    from handoff_fsm.errors import HandoffError
    from handoff_fsm.verify.diff import parse_side

    try:
        spec = parse_side(args.side)
    except HandoffError as error:
        args.parser.error(error.message)
    if spec.in_process:
        if args.revision not in (BOTH, spec.revision):
            args.parser.error(
                f"SIDE {args.side} names its revision ({spec.revision}); "
                f"--revision {args.revision} contradicts it"
            )
        assert spec.revision is not None, "a side of this package names its revision"
        args.revision = Revision(spec.revision)
        args.engine = spec.engine or args.engine
        return None
    from handoff_fsm.verify.verdicts import run_side_command

    told: list[str] = args.argv[args.argv.index("check") + 1 :]
    rest = next((r for r in _without(told, args.side) if _parsed_side(args, r) is None), told)
    if spec.revision is not None:
        rest += ["--revision", spec.revision]
    if spec.engine is not None:
        rest += ["--engine", spec.engine]
    try:
        return run_side_command(spec, ["check", *rest])
    except HandoffError as error:
        return fail("check", error.message, code=error.code.value)


def _without(told: list[str], side: str) -> Iterator[list[str]]:
    """``told`` less one of its tokens equal to ``side`` (each candidate in turn)."""
    for index, token in enumerate(told):
        if token == side:
            yield told[:index] + told[index + 1 :]


def _parsed_side(args: argparse.Namespace, told: list[str]) -> str | None:
    side: str | None = args.parser.parse_known_args(told)[0].side
    return side


def _coverage_by_revision(reports: Iterable[ExplorationReport]) -> dict[Revision, ChartCoverage]:
    """Each revision's coverage over the orders explored (reports without coverage skipped)."""
    merged: dict[Revision, ChartCoverage] = {}
    for report in reports:
        if report.coverage is not None:
            known = merged.get(report.revision)
            merged[report.revision] = report.coverage if known is None else known | report.coverage
    return merged


def _unreachable_verdict(coverages: Iterable[ChartCoverage], orders: Sequence[HandoffOrder]) -> str:
    """One line: are all the unreachable steps listed above expected?"""
    from handoff_fsm.verify.coverage import untaken_steps

    judged = [step for coverage in coverages for step in untaken_steps(coverage, orders)]
    unexpected = sum(not step.expected for step in judged)
    if not judged:
        return "every compiled step was taken"
    if not unexpected:
        return (
            f"all {len(judged)} unreachable steps are expected: each waits for an outcome of "
            "an action never outstanding in its state"
        )
    return f"{unexpected} of {len(judged)} unreachable steps are NOT expected (see above)"


def _transitions_covered(coverages: Iterable[ChartCoverage]) -> frozenset[int]:
    return frozenset().union(*(coverage.transitions for coverage in coverages))


def _json(
    engine: str,
    revisions: Sequence[Revision],
    orders: Sequence[HandoffOrder],
    reports: Sequence[ExplorationReport],
) -> dict[str, Any]:
    from handoff_fsm.structure.transitions import chart_transitions, revision_specific_transitions
    from handoff_fsm.verify.coverage import untaken_steps

    declared = chart_transitions()
    coverages = _coverage_by_revision(reports)
    covered = _transitions_covered(coverages.values())
    return {
        "ok": all(report.ok for report in reports),
        "engine": engine,
        "revisions": [revision.value for revision in revisions],
        "orders": [report.to_json() for report in reports],
        "coverage": {
            revision.value: coverage.figures(orders) for revision, coverage in coverages.items()
        },
        "unreachable_steps": {
            revision.value: [
                {
                    "state": list(step.state.leaves),
                    "order": step.state.order.value,
                    "event": step.event,
                    "expected": step.expected,
                    "why": step.why,
                }
                for step in untaken_steps(coverage, orders)
            ]
            for revision, coverage in coverages.items()
            if all(report.exhausted for report in reports)
        },
        "declared_transitions": {
            "covered": [len(covered), len(declared)],
            "uncovered": [str(declared[i]) for i in range(len(declared)) if i not in covered],
            "revision_specific": {
                revision.value: [str(declared[i]) for i in sorted(specific)]
                for revision, specific in revision_specific_transitions().items()
            },
        },
    }


def _label(revision: Revision, orders: Iterable[HandoffOrder]) -> str:
    return f"{revision.value} {' + '.join(o.value for o in orders)}"


def _coverage_line(coverage: ChartCoverage, orders: Iterable[HandoffOrder]) -> str:
    figures = coverage.figures(orders)
    return (
        "{0[0]}/{0[1]} chart states, {1[0]}/{1[1]} compiled steps, "
        "{2[0]}/{2[1]} fireable declared chart transitions covered"
    ).format(figures["chart_states"], figures["steps"], figures["transitions"])


def _coverage_gaps(
    coverage: ChartCoverage, orders: Iterable[HandoffOrder], *, exhausted: bool
) -> list[str]:
    from handoff_fsm.engines.compiled import compiled_chart
    from handoff_fsm.structure.transitions import chart_transitions
    from handoff_fsm.verify.coverage import coverage_totals, untaken_steps

    totals = coverage_totals(orders, coverage.revision)
    lines = [
        f"transition never fired: {chart_transitions()[i]}"
        for i in sorted(totals.transitions - coverage.transitions)
    ]
    if not exhausted:  # a state left unexplored may take any of them: no verdict
        states = compiled_chart(coverage.revision).states
        for source, event in sorted(totals.steps - coverage.steps):
            state = states[source]
            lines.append(f"step {event} in {_where(state)}: not reached")
        return lines
    for step in untaken_steps(coverage, orders):
        verdict = "as expected" if step.expected else "NOT expected"
        lines.append(
            f"step {step.event} in {_where(step.state)}: unreachable, {verdict}: {step.why}"
        )
    return lines


def _where(state: ChartState) -> str:
    return f"{state.order.value} ({', '.join(state.leaves)})"


def _print_report(report: ExplorationReport) -> None:
    from handoff_fsm.verify.rules import statement

    write = sys.stdout.write
    write(
        f"{report.revision.value} {report.order.value}: {report.states} reachable states, "
        f"{report.transitions} transitions explored, {report.rejected} inputs rejected, "
        f"{len(report.verdicts)} invariants checked, max depth {report.max_depth}, "
        f"{report.seconds:.2f} s"
        + ("" if report.exhausted else " (NOT exhausted: max_states reached)")
        + "\n"
    )
    if report.coverage is not None:
        write(f"  coverage: {_coverage_line(report.coverage, [report.order])}\n")
    width = max(len(v.invariant.value) for v in report.verdicts)
    for judged in report.verdicts:
        status = "holds" if judged.holds else f"VIOLATED ({judged.violated}x)"
        write(f"  {judged.invariant.value:<{width}}  {judged.checked:>6} checks  {status}\n")
    for violation in report.violations:
        write(f"\n  counterexample: {violation}\n")
        rule = statement(violation.invariant, report.revision)
        write(f"    rule ({report.revision.value}): {rule}\n")
        if violation.state:
            write(f"    state: {', '.join(violation.state)}\n")
        for line in violation.trace:
            write(f"    {line}\n")
    write("\n")

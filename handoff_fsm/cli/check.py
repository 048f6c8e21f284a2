"""``handoff-fsm check``: explore every reachable state and print the verdicts.

Rule kept here: argument handling and printing only; the exploration, the
invariants and the coverage figures come from :mod:`handoff_fsm.verify`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.verify.coverage import (
    ChartCoverage,
    chart_transitions,
    coverage_totals,
    revision_specific_transitions,
)
from handoff_fsm.verify.exploration import ExplorationReport, explore
from handoff_fsm.verify.invariants import statement

# ---------------------------------------------------------------------- command line


def cli_check(args: argparse.Namespace) -> int:
    """``handoff-fsm check [--revision R|both] [--order O|both] [--engine E] [--json]``."""
    revisions = list(Revision) if args.revision == "both" else [Revision(args.revision)]
    orders = list(HandoffOrder) if args.order == "both" else [HandoffOrder(args.order)]
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
    coverages = _coverage_by_revision(reports)
    if args.json:
        print(json.dumps(_json(args.engine, revisions, orders, reports), indent=2))
        return 0 if ok else 1
    for report in reports:
        _print_report(report)
    exhausted = all(report.exhausted for report in reports)
    for revision, coverage in coverages.items():
        print(f"{_label(revision, orders)}: {_coverage_line(coverage, orders)}")
        for line in _coverage_gaps(coverage, orders, exhausted=exhausted):
            print(f"  {line}")
    if len(coverages) > 1:
        covered = _transitions_covered(coverages.values())
        print(
            f"{' + '.join(r.value for r in coverages)}: {len(covered)}/{len(chart_transitions())}"
            " declared chart transitions covered"
        )
    print("declared chart transitions only one revision can fire:")
    for revision, specific in revision_specific_transitions().items():
        for index in sorted(specific):
            print(f"  {revision.value} only: {chart_transitions()[index]}")
    print("OK: every invariant holds" if ok else "FAILED: see the counterexamples above")
    return 0 if ok else 1


def _coverage_by_revision(reports: Iterable[ExplorationReport]) -> dict[Revision, ChartCoverage]:
    """Each revision's coverage over the orders explored (reports without coverage skipped)."""
    merged: dict[Revision, ChartCoverage] = {}
    for report in reports:
        if report.coverage is not None:
            known = merged.get(report.revision)
            merged[report.revision] = report.coverage if known is None else known | report.coverage
    return merged


def _transitions_covered(coverages: Iterable[ChartCoverage]) -> frozenset[int]:
    return frozenset().union(*(coverage.transitions for coverage in coverages))


def _json(
    engine: str,
    revisions: Sequence[Revision],
    orders: Sequence[HandoffOrder],
    reports: Sequence[ExplorationReport],
) -> dict[str, Any]:
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
    totals = coverage_totals(orders, coverage.revision)
    lines = [
        f"transition never fired: {chart_transitions()[i]}"
        for i in sorted(totals.transitions - coverage.transitions)
    ]
    why = "unreachable (no explored input takes it)" if exhausted else "not reached"
    states = compiled_chart(coverage.revision).states
    for source, event in sorted(totals.steps - coverage.steps):
        state = states[source]
        lines.append(f"step {event} in {state.order.value} ({', '.join(state.leaves)}): {why}")
    return lines


def _print_report(report: ExplorationReport) -> None:
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
    for verdict in report.verdicts:
        status = "holds" if verdict.holds else f"VIOLATED ({verdict.violated}x)"
        write(f"  {verdict.invariant.value:<{width}}  {verdict.checked:>6} checks  {status}\n")
    for violation in report.violations:
        write(f"\n  counterexample: {violation}\n")
        rule = statement(violation.invariant, report.revision)
        write(f"    rule ({report.revision.value}): {rule}\n")
        if violation.state:
            write(f"    state: {', '.join(violation.state)}\n")
        for line in violation.trace:
            write(f"    {line}\n")
    write("\n")

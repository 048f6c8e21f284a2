"""``handoff-fsm check``: explore every reachable state and print the verdicts.

Rule kept here: argument handling and printing only; the exploration, the
invariants and the coverage figures come from :mod:`handoff_fsm.verify`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from functools import partial

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.model import HandoffOrder
from handoff_fsm.verify.coverage import ChartCoverage, chart_transitions, coverage_totals
from handoff_fsm.verify.exploration import ExplorationReport, Factory, explore
from handoff_fsm.verify.invariants import STATEMENTS

# ---------------------------------------------------------------------- command line


def cli_check(args: argparse.Namespace) -> int:
    """``handoff-fsm check [--order SourceFirst|DestinationFirst|both] [--engine E] [--json]``."""
    factory: Factory = partial(HandoffCoordinator, engine=args.engine)
    orders = list(HandoffOrder) if args.order == "both" else [HandoffOrder(args.order)]
    reports = [explore(order, factory=factory) for order in orders]
    ok = all(report.ok for report in reports)
    combined: ChartCoverage | None = None
    for coverage in (report.coverage for report in reports if report.coverage is not None):
        combined = coverage if combined is None else combined | coverage
    if args.json:
        result = {
            "ok": ok,
            "engine": args.engine,
            "orders": [report.to_json() for report in reports],
            "coverage": None if combined is None else combined.figures(orders),
        }
        print(json.dumps(result, indent=2))
        return 0 if ok else 1
    for report in reports:
        _print_report(report)
    if combined is not None:
        print(f"{' + '.join(o.value for o in orders)}: {_coverage_line(combined, orders)}")
        exhausted = all(report.exhausted for report in reports)
        for line in _coverage_gaps(combined, orders, exhausted=exhausted):
            print(f"  {line}")
    print("OK: every invariant holds" if ok else "FAILED: see the counterexamples above")
    return 0 if ok else 1


def _coverage_line(coverage: ChartCoverage, orders: Iterable[HandoffOrder]) -> str:
    figures = coverage.figures(orders)
    return (
        "{0[0]}/{0[1]} chart states, {1[0]}/{1[1]} compiled steps, "
        "{2[0]}/{2[1]} declared chart transitions covered"
    ).format(figures["chart_states"], figures["steps"], figures["transitions"])


def _coverage_gaps(
    coverage: ChartCoverage, orders: Iterable[HandoffOrder], *, exhausted: bool
) -> list[str]:
    totals = coverage_totals(orders)
    lines = [
        f"transition never fired: {chart_transitions()[i]}"
        for i in sorted(totals.transitions - coverage.transitions)
    ]
    why = "unreachable (no explored input takes it)" if exhausted else "not reached"
    states = compiled_chart().states
    for source, event in sorted(totals.steps - coverage.steps):
        state = states[source]
        lines.append(f"step {event} in {state.order.value} ({', '.join(state.leaves)}): {why}")
    return lines


def _print_report(report: ExplorationReport) -> None:
    write = sys.stdout.write
    write(
        f"{report.order.value}: {report.states} reachable states, {report.transitions} "
        f"transitions explored, {report.rejected} inputs rejected, {len(report.verdicts)} "
        f"invariants checked, max depth {report.max_depth}, {report.seconds:.2f} s"
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
        write(f"    rule: {STATEMENTS[violation.invariant]}\n")
        if violation.state:
            write(f"    state: {', '.join(violation.state)}\n")
        for line in violation.trace:
            write(f"    {line}\n")
    write("\n")

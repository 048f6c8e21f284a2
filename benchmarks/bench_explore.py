"""Exhaustive exploration (``handoff-fsm check``): CPU seconds for both orders of every
protocol revision, against a budget.

Rule kept here: nothing else explores this state space, so there is no yardstick
to divide by; the target is an absolute budget instead (:data:`BUDGET_S`: both
orders of every revision explored and every invariant judged in at most 30 CPU
seconds, what ``handoff-fsm check`` does by default, so the check
stays something one runs on every change). Each measured run must come back clean,
so a broken exploration cannot look fast. The compiled chart is built before
timing: it is shared with everything else in the process.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial

import harness

from handoff_fsm import HandoffCoordinator, HandoffOrder, Revision
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.verify import explore

BUDGET_S = 30.0
"""CPU seconds allowed for exploring both orders of every revision."""

Factory = Callable[..., HandoffCoordinator]


def explore_both(factory: Factory = HandoffCoordinator) -> None:
    """Explore both orders of every revision; raise if any invariant is broken or the space
    was cut short. ``factory`` is given the revision (``revision=``)."""
    for revision in Revision:
        for order in HandoffOrder:
            report = explore(order, revision=revision, factory=partial(factory, revision=revision))
            if not (report.ok and report.exhausted):
                broken = [v.invariant.value for v in report.violations]
                raise AssertionError(
                    f"{revision.value} {order.value}: exploration not clean (violated: {broken})"
                )


def measure(repeats: int = 3, factory: Factory = HandoffCoordinator) -> float:
    """Median CPU seconds of :func:`explore_both` over ``repeats`` runs."""
    compiled_chart()
    samples = []
    for _ in range(repeats):
        began = harness.clock()
        explore_both(factory)
        samples.append(harness.clock() - began)
    return statistics.median(samples)

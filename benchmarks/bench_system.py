"""The system check (``handoff-fsm check --system``): world states explored per CPU second,
against a budget.

Rule kept here: nothing else explores this world, so there is no yardstick to divide
by; each row's target is an absolute CPU budget for the run a user starts (both
revisions, both orders: issues 21's and 31's speed targets, :data:`BUDGETS`; the matrix
row explores every set of assumptions), and the row also
reports world states per CPU second, the figure docs/verification.md quotes. The
compiled charts are built before timing: they are shared with everything else in
the process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import harness

from handoff_fsm import HandoffOrder, Revision
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.verify.system import SystemAssumptions, check_system
from handoff_fsm.verify.system.assumptions import matrix


@dataclass(frozen=True)
class Case:
    label: str
    losses: int
    budget_s: float | None
    """CPU seconds allowed (``None``: a smoke run, reported only)."""
    small: bool = False
    """One revision, one order, no cleanup retries: the quick run's smoke test."""
    matrix: bool = False
    """Every set of assumptions (``check --system --matrix``), not only the defaults."""


DEFAULTS: Final = Case("system check, both revisions (`handoff-fsm check --system`)", 0, 10.0)
ONE_LOSS: Final = Case(
    "system check, both revisions, one lost message (`check --system --losses 1`)", 1, 60.0
)
MATRIX_ONE_LOSS: Final = Case(
    "system matrix, both revisions, one lost message (`check --system --matrix --losses 1`)",
    1,
    120.0,
    matrix=True,
)
BUDGETS: Final = (DEFAULTS, ONE_LOSS, MATRIX_ONE_LOSS)
SMOKE: Final = Case(
    "system check, smoke run (seed, SourceFirst, no cleanup retries)", 0, None, True
)


def measure(case: Case) -> tuple[int, float]:
    """World states explored and CPU seconds of ``check --system --losses N`` for every
    revision (one run: the exploration is deterministic, and long enough to time)."""
    for revision in Revision:
        compiled_chart(revision)
    began = harness.clock()
    if case.small:
        states = check_system(
            Revision.SEED, orders=(HandoffOrder.SOURCE_FIRST,), cleanup_retries=0
        ).states
    elif case.matrix:  # each column explored afresh, as --matrix does before it keeps them
        states = sum(
            check_system(
                revision,
                losses=case.losses,
                answers=column.answers,
                workers=column.workers,
            ).states
            for revision in Revision
            for column in matrix(SystemAssumptions(losses=case.losses))
        )
    else:
        states = sum(check_system(revision, losses=case.losses).states for revision in Revision)
    return states, harness.clock() - began

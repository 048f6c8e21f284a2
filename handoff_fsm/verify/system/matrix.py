"""``check --system --matrix``: the same world explored under every set of assumptions.

Rule kept here: a cell of the matrix is a verdict of a real exploration
(:func:`~handoff_fsm.verify.system.report.check_system`) under one set of assumptions,
never derived from another cell; the columns are
:func:`~handoff_fsm.verify.system.assumptions.matrix` (every combination of what can be
varied, with the budgets given, the default first), so a reviewer reads off which
verdict rests on which assumption. The default column with no budget is the review's own
report (:func:`~handoff_fsm.verify.system.report.default_report`), and every column
with the policy's defaults is kept on disk as that one is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from handoff_fsm.model import HandoffOrder, Revision, checked_revision
from handoff_fsm.verify.system.assumptions import SystemAssumptions, matrix
from handoff_fsm.verify.system.properties import (
    Property,
    PropertyVerdict,
    SystemReport,
    SystemSettings,
)
from handoff_fsm.verify.system.report import check_system, default_report, system_settings


@dataclass(frozen=True, slots=True)
class SystemMatrix:
    """One revision's verdicts under every set of assumptions (a report per column)."""

    revision: Revision
    reports: tuple[SystemReport, ...]
    """One per column of :func:`~handoff_fsm.verify.system.assumptions.matrix`, the
    default assumptions first."""

    @property
    def columns(self) -> tuple[SystemAssumptions, ...]:
        return tuple(report.settings.assumptions for report in self.reports)

    def cell(self, name: Property, column: int) -> PropertyVerdict:
        return self.reports[column].verdict(name)

    def rests_on(self, name: Property) -> bool:
        """Whether the property's verdict changes with the assumptions."""
        return len({self.cell(name, c).holds for c in range(len(self.reports))}) > 1

    def to_json(self) -> dict[str, Any]:
        """The table: its columns (each an ``assumptions`` object) and, per property,
        one cell per column (holds, tolerance, violations)."""
        return {
            "revision": self.revision.value,
            "settings": self.reports[0].settings.to_json(),
            "columns": [column.to_json() for column in self.columns],
            "properties": [
                {
                    "name": name.value,
                    "rests_on_assumptions": self.rests_on(name),
                    "cells": [
                        {
                            "holds": cell.holds,
                            "tolerance": cell.tolerance,
                            "violations": cell.violations,
                        }
                        for cell in (self.cell(name, c) for c in range(len(self.reports)))
                    ],
                }
                for name in Property
            ],
        }


def check_matrix(
    revision: Revision | str = Revision.SEED,
    *,
    losses: int = 0,
    duplicates: int = 0,
    cleanup_retries: int = 3,
    deadline: bool = True,
    orders: tuple[HandoffOrder, ...] | None = None,
) -> SystemMatrix:
    """``check_system(revision, ...)`` under every set of assumptions that can be varied,
    with the budgets ``losses`` and ``duplicates`` (errors as ``check_system``'s). With
    the policy's and the orders' defaults, each column is the kept report
    (:func:`~handoff_fsm.verify.system.report.default_report`)."""
    chosen = checked_revision(revision)
    settings = system_settings(
        chosen,
        losses=losses,
        duplicates=duplicates,
        cleanup_retries=cleanup_retries,
        deadline=deadline,
        orders=orders,
    )  # every setting checked before anything is explored
    if settings == SystemSettings(revision=chosen, assumptions=settings.assumptions):
        columns = matrix(settings.assumptions)
        return SystemMatrix(chosen, tuple(default_report(chosen, c) for c in columns))
    reports = tuple(
        check_system(
            chosen,
            losses=column.losses,
            duplicates=column.duplicates,
            cleanup_retries=cleanup_retries,
            deadline=deadline,
            orders=orders,
            workers=column.workers,
            answers=column.answers,
        )
        for column in matrix(settings.assumptions)
    )
    return SystemMatrix(chosen, reports)


def cell_words(cell: PropertyVerdict, losses: int) -> str:
    """A cell as the tables print it: the verdict, and with a loss budget its tolerance."""
    if cell.holds:
        return "holds" if not losses else f"holds (up to {_lost(losses)})"
    if cell.tolerance is None:
        return "VIOLATED"
    return f"VIOLATED with {_lost(cell.tolerance + 1)}"


def _lost(number: int) -> str:
    return "1 lost message" if number == 1 else f"{number} lost messages"


def column_label(column: SystemAssumptions, first: bool) -> str:
    """A column's heading: the assumptions it varies (the default's marked)."""
    return f"{column.label()}{' (default)' if first else ''}"


def matrix_lines(table: SystemMatrix) -> list[str]:
    """The table as text, one line per property (``*``: its verdict rests on the
    assumptions), under a line naming the revision and the policy explored."""
    losses = table.reports[0].settings.assumptions.losses
    heads = [column_label(c, i == 0) for i, c in enumerate(table.columns)]
    rows = [
        [
            f"{name.value}{' *' if table.rests_on(name) else ''}",
            *(cell_words(table.cell(name, c), losses) for c in range(len(heads))),
        ]
        for name in Property
    ]
    widths = [
        max(len(row[i]) for row in [["property", *heads], *rows]) for i in range(len(heads) + 1)
    ]
    lines = [f"{table.revision.value}: {table.reports[0].settings.describe()}"]
    for row in [["property", *heads], *rows]:
        lines.append(
            "  "
            + " | ".join(
                text.ljust(width) for text, width in zip(row, widths, strict=True)
            ).rstrip()
        )
    lines.append("  (* the verdict depends on the assumptions)")
    return lines

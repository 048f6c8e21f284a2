"""The named conditions a chart's guards read besides ``In(...)``, as data a document can carry.

Rule kept here: a guard reads the configuration (``In('held')``) and a few named
conditions (``source_first``, ``source_engaged``, ...; docs/architecture.md §4.1). What
each of them is, is asked of the chart itself, never written down again: its value
when a handoff starts, for every order and every revision the description covers, is
read off a :class:`~handoff_fsm.chart.HandoffChart` built for that order and revision
(the way :func:`~handoff_fsm.structure.revisions.constant_guard_parts` reads them), and
the states whose entry sets it are the description's
(:attr:`~handoff_fsm.structure.describe.StateNode.entry_fields`). So a view that must
*run* the chart elsewhere (an exported SCXML, JSON, YAML or XState document) carries
each condition as a variable: a *parameter* when the order or the revision decides it
(set before the first event), else a flag the chart sets as it runs.

The completion (``Success`` / ``Canceled``) is the chart's one other field: no guard reads
it, and the transitions that record it say so
(:attr:`~handoff_fsm.structure.describe.Edge.completion`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from handoff_fsm.chart import HandoffChart
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.structure.describe import ChartModel, field_text
from handoff_fsm.structure.transitions import QuietModel


@dataclass(frozen=True, slots=True)
class Condition:
    """One named condition some guard of a chart reads."""

    name: str
    """As guards spell it (``destination_first``)."""
    text: str
    """For people (``destination first``; a revision's guard names its revisions)."""
    start: tuple[tuple[HandoffOrder, Revision, bool], ...]
    """Its value when a handoff starts, for every order and revision the chart covers."""
    set_by: tuple[str, ...]
    """The states whose entry makes it true (``submitting`` for ``source_engaged``)."""

    def value(self, order: HandoffOrder, revision: Revision) -> bool:
        """Its value when a handoff of ``order`` and ``revision`` starts."""
        for given_order, given_revision, value in self.start:
            if (given_order, given_revision) == (order, revision):
                return value
        raise KeyError(f"{self.name}: no value for {order.value}, {revision.value}")

    @property
    def by_order(self) -> bool:
        """The order decides it (its start value differs between the orders)."""
        return any(
            len({value for _, r, value in self.start if r is revision}) > 1
            for revision in self.revisions
        )

    @property
    def by_revision(self) -> bool:
        """The revision decides it (its start value differs between revisions)."""
        return any(
            len({value for o, _, value in self.start if o is order}) > 1 for order in HandoffOrder
        )

    @property
    def parameter(self) -> bool:
        """Set before the first event (by the order or the revision), never by the chart."""
        return not self.set_by and (self.by_order or self.by_revision)

    @property
    def revisions(self) -> tuple[Revision, ...]:
        return tuple(dict.fromkeys(revision for _, revision, _ in self.start))


@cache
def chart_conditions(
    model: ChartModel, chart: type[HandoffChart] = HandoffChart
) -> tuple[Condition, ...]:
    """The conditions the guards of ``model`` read, in the order they are first read.

    ``model`` is the family's description (every revision) or one revision's
    (:func:`~handoff_fsm.structure.revisions.revision_chart`), whose guards no longer read
    what that revision decides. Read once per description and chart.
    """
    return _conditions(model, chart)


def _conditions(model: ChartModel, chart: type[HandoffChart]) -> tuple[Condition, ...]:
    names = tuple(
        dict.fromkeys(
            name for edge in model.edges if edge.guard is not None for name in edge.guard.fields
        )
    )
    revisions = tuple(Revision) if model.revision is None else (model.revision,)
    machines: dict[tuple[HandoffOrder, Revision], Any] = {
        (order, revision): chart(QuietModel(), order, revision)
        for revision in revisions
        for order in HandoffOrder
    }
    return tuple(
        Condition(
            name=name,
            text=field_text(name),
            start=tuple(
                (order, revision, bool(getattr(machine, name)))
                for (order, revision), machine in machines.items()
            ),
            set_by=tuple(state.id for state in model.states if name in state.entry_fields),
        )
        for name in names
    )

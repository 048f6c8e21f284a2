"""Chart coverage: which of the chart's declared transitions a set of inputs exercised.

Rule kept here: a run's coverage is the set of compiled steps it took (read from
the coordinator's snapshots before each input) mapped through
:func:`~handoff_fsm.structure.transitions.step_transitions`, which asks
python-statemachine's own interpreter which declared transitions each step fires;
nothing here infers a transition from the compiled table. Every revision compiles
its own table (its own state and step indexes), so a :class:`ChartCoverage` belongs
to one revision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.engines.compiled import ChartState, Step, compiled_chart
from handoff_fsm.io.inputs import Input, Reply
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.structure.transitions import chart_transitions, step_transitions
from handoff_fsm.verify.invariants import InputClass, Observation


@cache
def _steps_by_key(revision: Revision) -> dict[tuple[int, str], Step]:
    return {(step.source, step.event): step for step in compiled_chart(revision).steps}


_REACHES_THE_CHART: Final = frozenset(
    {
        InputClass.START,
        InputClass.PROGRESS_FACT,
        InputClass.FAILURE_FACT,
        InputClass.INVALID_TIMING,
        InputClass.UNSCHEDULABLE,
        InputClass.OUTCOME,
        InputClass.FAILED_OUTCOME,
    }
)
"""The classes of input the coordinator gives its chart (the others stop before it)."""


def event_of(obs: Observation, op: Input) -> str | None:
    """The chart event an input becomes, by the protocol (``None``: the journal stops it)."""
    if obs.classify(op) not in _REACHES_THE_CHART:
        return None
    return op.chart_event(obs.kind_of(op.action_id) if op.kind == "outcome" else None)


def step_taken(state: ChartState, event: str | None, reply: Reply) -> Step | None:
    """The compiled step an input took in ``state``: it ran, or it is a rejection that rejected."""
    if event is None or reply.crash is not None:
        return None
    step = _steps_by_key(state.revision).get((state.index, event))
    if step is None or not reply.rejected:
        return step
    rejecting = bool(step.validators) and all(
        v in REJECTIONS and REJECTIONS[v].code is reply.error for v in step.validators
    )
    return step if rejecting else None


@dataclass(frozen=True, slots=True)
class ChartCoverage:
    """Which parts of one revision's chart some inputs exercised (or, from
    :func:`coverage_totals`, which exist)."""

    states: frozenset[int]
    """Indexes of the revision's compiled chart states reached."""
    steps: frozenset[tuple[int, str]]
    """Compiled steps taken, as ``(source state index, event)``."""
    transitions: frozenset[int]
    """Indexes of :func:`chart_transitions` exercised."""
    revision: Revision = Revision.SEED
    """Whose compiled table ``states`` and ``steps`` index."""

    @classmethod
    def of_steps(
        cls,
        states: Iterable[int],
        steps: Iterable[tuple[int, str]],
        revision: Revision = Revision.SEED,
    ) -> ChartCoverage:
        """Coverage of these states and steps, transitions as the framework fires them."""
        taken = frozenset(steps)
        mapping = step_transitions(revision)
        return cls(
            frozenset(states),
            taken,
            frozenset(i for key in taken for i in mapping[key]),
            revision,
        )

    def __or__(self, other: ChartCoverage) -> ChartCoverage:
        if other.revision is not self.revision:
            raise ValueError(
                f"cannot merge coverage of {self.revision.value} and {other.revision.value}: "
                "their compiled tables differ (merge their transitions instead)"
            )
        return ChartCoverage(
            self.states | other.states,
            self.steps | other.steps,
            self.transitions | other.transitions,
            self.revision,
        )

    def figures(self, orders: Iterable[HandoffOrder] = tuple(HandoffOrder)) -> dict[str, Any]:
        """Covered/total counts and what is not covered, against :func:`coverage_totals`.

        ``transitions`` counts against the declared transitions this revision's steps
        for these orders can fire.
        """
        totals = coverage_totals(orders, self.revision)
        return {
            "revision": self.revision.value,
            "chart_states": [len(self.states & totals.states), len(totals.states)],
            "steps": [len(self.steps & totals.steps), len(totals.steps)],
            "transitions": [
                len(self.transitions & totals.transitions),
                len(totals.transitions),
            ],
            "uncovered_transitions": [
                str(chart_transitions()[i]) for i in sorted(totals.transitions - self.transitions)
            ],
            "untaken_steps": [list(key) for key in sorted(totals.steps - self.steps)],
        }


def coverage_totals(
    orders: Iterable[HandoffOrder] = tuple(HandoffOrder),
    revision: Revision = Revision.SEED,
) -> ChartCoverage:
    """Everything there is to cover for these orders of ``revision``.

    The revision's compiled chart states and steps of these orders, and the declared
    transitions those steps fire (:func:`fireable_transitions`: each order engages
    its owners its own way, each revision has transitions of its own). The compiler
    sends every event in every chart state, so a few steps are out of reach of any
    input (an ``action_failed`` where no action that may fail is outstanding): an
    exhaustive exploration that never takes them shows they are unreachable.
    """
    wanted = {order is HandoffOrder.SOURCE_FIRST for order in orders}
    compiled = compiled_chart(revision)
    states = frozenset(s.index for s in compiled.states if s.fields.source_first in wanted)
    steps = frozenset((s.source, s.event) for s in compiled.steps if s.source in states)
    mapping = step_transitions(revision)
    transitions = frozenset(i for key in steps for i in mapping[key])
    return ChartCoverage(states, steps, transitions, revision)

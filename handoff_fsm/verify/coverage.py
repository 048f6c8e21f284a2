"""Chart coverage: which of the chart's declared transitions a set of inputs exercised.

Rule kept here: a run's coverage is the set of compiled steps it took (read from
the coordinator's snapshots before each input) mapped through
:func:`~handoff_fsm.structure.transitions.step_transitions`, which asks
python-statemachine's own interpreter which declared transitions each step fires;
nothing here infers a transition from the compiled table. Every revision compiles
its own table (its own state and step indexes), so a :class:`ChartCoverage` belongs
to one revision. A compiled step an exhaustive exploration never took is judged by
:func:`untaken_steps` from what the exploration saw, never from a list: it is
expected exactly when only an outcome of some action kinds raises its event and no
explored state of that chart state had an action of those kinds outstanding.
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
from handoff_fsm.structure.describe import EventKind, input_events
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
    awaited: frozenset[tuple[int, str]] = frozenset()
    """``(chart state index, action kind)``: an action of that kind was outstanding in some
    state reached with that chart state (what an outcome there can acknowledge)."""

    @classmethod
    def of_steps(
        cls,
        states: Iterable[int],
        steps: Iterable[tuple[int, str]],
        revision: Revision = Revision.SEED,
        awaited: Iterable[tuple[int, str]] = (),
    ) -> ChartCoverage:
        """Coverage of these states and steps, transitions as the framework fires them."""
        taken = frozenset(steps)
        mapping = step_transitions(revision)
        return cls(
            frozenset(states),
            taken,
            frozenset(i for key in taken for i in mapping[key]),
            revision,
            frozenset(awaited),
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
            self.awaited | other.awaited,
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


@dataclass(frozen=True, slots=True)
class UntakenStep:
    """A compiled step no explored input took, and whether the exploration explains why."""

    state: ChartState
    event: str
    expected: bool
    """The exploration shows no input can take it (see :func:`untaken_steps`)."""
    why: str
    """The reason in words, or what should have taken it."""


def untaken_steps(
    coverage: ChartCoverage, orders: Iterable[HandoffOrder] = tuple(HandoffOrder)
) -> list[UntakenStep]:
    """Every step of these orders' chart states ``coverage`` did not take, judged.

    The compiler sends every event in every chart state; an exploration gives each
    reachable state every input. So a step stays untaken only when the input that raises
    its event never reaches the chart there: an acknowledgement (or a ``Failed``
    outcome) of an action of a kind none of the explored states of that chart state
    had outstanding (``coverage.awaited``). That is *expected*: the journal refuses an
    outcome of an action not outstanding before the chart sees it. Any other untaken
    step (a fact, ``start()``, an outcome of an action that was outstanding) is not:
    some input the exploration gave should have taken it.
    """
    totals = coverage_totals(orders, coverage.revision)
    states = compiled_chart(coverage.revision).states
    raised_by = {event.event: event for event in input_events()}
    judged = []
    for source, event in sorted(totals.steps - coverage.steps):
        state = states[source]
        known = raised_by.get(event)
        said = "this input" if known is None else known.text.replace("`", "")
        outstanding = sorted(kind for index, kind in coverage.awaited if index == source)
        there = ", ".join(outstanding) or "nothing"
        if known is None or known.kind not in (EventKind.ACKNOWLEDGEMENT, EventKind.ACTION_FAILED):
            judged.append(
                UntakenStep(state, event, False, f"{said} was given in every state explored")
            )
            continue
        kinds = set(known.acknowledges)
        if kinds.isdisjoint(outstanding):
            why = (
                f"only {said} raises it, and no explored state here has one "
                f"outstanding (outstanding here: {there})"
            )
            judged.append(UntakenStep(state, event, True, why))
        else:
            awaited = ", ".join(sorted(kinds.intersection(outstanding)))
            why = f"{awaited} is outstanding here, yet no outcome of it took this step"
            judged.append(UntakenStep(state, event, False, why))
    return judged

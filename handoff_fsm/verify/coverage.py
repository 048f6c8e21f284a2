"""Chart coverage: which of the chart's declared transitions a set of inputs exercised.

Rule kept here: whether a declared transition fired is decided by
python-statemachine's own interpreter, never inferred from the compiled table.
Each compiled step (one chart state, one event) is sent once more through the
framework with a :class:`FiredTransitions` listener, which records every
declared transition the framework fires for it: the event's own, the eventless
ones it enables and the ``done.state`` ones. A rejecting transition (an
internal self-transition whose validator always raises) never fires; it counts
as exercised when it rejects an input, and is identified by its source, event
and error code (:func:`rejection_transition`). A run's coverage is then the
set of steps it took (read from the coordinator's snapshots before each input)
mapped through :func:`step_transitions`.

Every revision compiles its own table (its own state and step indexes), so a
:class:`ChartCoverage` belongs to one revision. The declared transitions are shared
(one chart shows every revision): what a revision can fire is what its compiled
steps fire (:func:`fireable_transitions`), and :func:`revision_specific_transitions`
tells which only some revisions fire.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from statemachine.orderedset import OrderedSet
from statemachine.transition import Transition

from handoff_fsm.chart import (
    ACKNOWLEDGEMENTS,
    ACTION_FAILED,
    FACT_EVENTS,
    PAYLOAD,
    REJECTIONS,
    START,
    HandoffChart,
)
from handoff_fsm.engines.compiled import (
    ChartState,
    Step,
    compiled_chart,
    configuration_of,
    document_order,
)
from handoff_fsm.engines.harness import Rejected, effects_model, rejecting
from handoff_fsm.errors import HandoffErrorCode
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.verify.invariants import InputClass, Observation, Op, Reply


@dataclass(frozen=True, slots=True)
class ChartTransition:
    """One transition declared in :class:`~handoff_fsm.chart.HandoffChart`."""

    index: int
    """Position among the declared transitions, document order."""
    source: str
    targets: tuple[str, ...]
    events: tuple[str, ...]
    guard: str
    validators: tuple[str, ...]

    def __str__(self) -> str:
        events = [e for e in self.events if not e.startswith("done_state_")]
        guard = f" [{self.guard}]" if self.guard else ""
        return f"{self.source} --{' | '.join(events) or '(eventless)'}{guard}--> " + ", ".join(
            self.targets
        )


def _declared() -> list[Transition]:
    """The chart's declared transitions, document order.

    The framework's implicit initial transitions (into a compound state's initial
    child) are left out: the chart does not declare them and no listener sees them.
    """
    return [t for state in document_order() for t in state.transitions if not t.initial]


@cache
def chart_transitions() -> tuple[ChartTransition, ...]:
    """Every transition the chart declares: evented, eventless, ``done.state``, rejecting."""
    return tuple(
        ChartTransition(
            index=i,
            source=t.source.id,
            targets=tuple(target.id for target in t.targets),
            events=tuple(str(event) for event in t.events),
            guard=" and ".join(str(cond) for cond in t.cond),
            validators=tuple(str(validator) for validator in t.validators),
        )
        for i, t in enumerate(_declared())
    )


class FiredTransitions:
    """A python-statemachine listener: the indexes of the declared transitions that fired."""

    def __init__(self) -> None:
        self._index = {transition: i for i, transition in enumerate(_declared())}
        self.fired: set[int] = set()

    def on_transition(self, transition: Transition) -> None:
        self.fired.add(self._index[transition])


def rejection_transition(leaves: Iterable[str], event: str, code: HandoffErrorCode) -> int | None:
    """The rejecting transition that turned ``event`` down with ``code`` in these leaf states."""
    active = set(leaves)
    matches = [
        t.index
        for t in chart_transitions()
        if t.source in active
        and event in t.events
        and any(v in REJECTIONS and REJECTIONS[v].code is code for v in t.validators)
    ]
    if len(matches) > 1:
        raise AssertionError(f"{event} is rejected by several transitions: {matches}")
    return matches[0] if matches else None


def _quiet(_model: Any, name: str, _args: tuple[Any, ...]) -> None:
    """Effects do nothing; a rejecting validator raises, as the real ones do."""
    if rejecting(name):
        raise Rejected(name)


_QuietModel = effects_model("_QuietModel", _quiet)
"""A model for the chart whose effects do nothing."""


@cache
def step_transitions(
    revision: Revision = Revision.SEED,
) -> dict[tuple[int, str], frozenset[int]]:
    """For each compiled step ``(source state index, event)`` of ``revision``: the declared
    transitions it fires.

    Asks the framework: each step is sent once through python-statemachine's
    interpreter, from the step's configuration and fields, with a listener (the
    way :func:`~handoff_fsm.engines.compiled.compile_chart` recorded it), and must land
    in the step's target.
    """
    compiled = compiled_chart(revision)
    model = _QuietModel()
    listener = FiredTransitions()
    charts: dict[HandoffOrder, HandoffChart] = {}
    mapping: dict[tuple[int, str], frozenset[int]] = {}
    for step in compiled.steps:
        state = compiled.states[step.source]
        chart = charts.get(state.order)
        if chart is None or chart.is_terminated:  # a final configuration stops the framework
            chart = charts[state.order] = HandoffChart(model, state.order, revision)
            chart.add_listener(listener)  # type: ignore[no-untyped-call]
        model.state = OrderedSet(state.configuration)
        chart.load_fields(state.fields)
        listener.fired.clear()
        payload = {PAYLOAD: None} if step.event in FACT_EVENTS.values() else {}
        try:
            chart.send(step.event, **payload)
        except Rejected as rejected:
            rejection = REJECTIONS[rejected.validator]
            index = rejection_transition(state.leaves, step.event, rejection.code)
            if index is None:
                raise AssertionError(f"no declared transition rejects {step}") from None
            listener.fired.add(index)
        reached = configuration_of(chart)
        target = compiled.states[step.target]
        if (reached, chart.fields()) != (target.configuration, target.fields):
            raise AssertionError(f"the framework disagrees with compiled {step}: {reached}")
        mapping[(step.source, step.event)] = frozenset(listener.fired)
    return mapping


@cache
def _steps_by_key(revision: Revision) -> dict[tuple[int, str], Step]:
    return {(step.source, step.event): step for step in compiled_chart(revision).steps}


def chart_state_of(snapshot: Hashable) -> ChartState | None:
    """The compiled chart state a ``HandoffSnapshot`` is in, in its revision's table.

    ``None`` for anything else, or for a snapshot no input sequence reaches.
    """
    if type(snapshot) is not HandoffSnapshot:
        return None
    return compiled_chart(snapshot.revision).lookup(snapshot.state, snapshot.chart_fields())


def event_of(obs: Observation, op: Op) -> str | None:
    """The chart event an input becomes, by the protocol (``None``: the journal stops it)."""
    cls = obs.classify(op)
    if cls is InputClass.START:
        return START
    if cls in (
        InputClass.PROGRESS_FACT,
        InputClass.FAILURE_FACT,
        InputClass.INVALID_TIMING,
        InputClass.UNSCHEDULABLE,
    ):
        return FACT_EVENTS[type(op.fact)]
    if cls is InputClass.OUTCOME:
        kind = obs.kind_of(op.action_id)
        return None if kind is None else ACKNOWLEDGEMENTS[kind].event
    if cls is InputClass.FAILED_OUTCOME:
        return ACTION_FAILED
    return None


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


def fireable_transitions(revision: Revision) -> frozenset[int]:
    """The declared transitions some compiled step of ``revision`` fires (either order)."""
    return coverage_totals(tuple(HandoffOrder), revision).transitions


def revision_specific_transitions() -> dict[Revision, frozenset[int]]:
    """Per revision, the declared transitions only it can fire (no other revision can)."""
    fireable = {revision: fireable_transitions(revision) for revision in Revision}
    return {
        revision: mine.difference(*(t for r, t in fireable.items() if r is not revision))
        for revision, mine in fireable.items()
    }

"""The chart's declared transitions, and which of them each compiled step fires.

Rule kept here: a declared transition is an :class:`~handoff_fsm.structure.describe.Edge`
of the one description (:func:`~handoff_fsm.structure.describe.describe_chart`), numbered
in document order, and whether it fired is decided by python-statemachine's own
interpreter, never inferred from the compiled table. Each compiled step (one chart
state, one event) is sent once more through the framework with a
:class:`FiredTransitions` listener, which records every declared transition the
framework fires for it, in the order it fires them: the event's own, the eventless
ones it enables and the ``done.state`` ones. A rejecting transition (an internal
self-transition whose validator always raises) never fires; it counts as taken when it
rejects an input, and is identified by its source, event and error code
(:func:`rejection_transition`).

Every revision compiles its own table (its own state and step indexes), so a step
belongs to one revision; the declared transitions are shared (one chart shows every
revision): what a revision can fire is what its compiled steps fire
(:func:`fireable_transitions`), and :func:`revision_specific_transitions` tells which
only some revisions fire. Coverage of a run (:mod:`handoff_fsm.verify.coverage`) and a
trace's path over the chart (:mod:`handoff_fsm.io.follow`) both read it here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from functools import cache
from typing import Any

from statemachine.orderedset import OrderedSet
from statemachine.transition import Transition

from handoff_fsm.chart import FACT_EVENTS, PAYLOAD, REJECTIONS, HandoffChart
from handoff_fsm.engines.compiled import (
    ChartState,
    compiled_chart,
    configuration_of,
    document_order,
)
from handoff_fsm.engines.harness import Rejected, effects_model, rejecting
from handoff_fsm.errors import ErrorCode
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.structure.describe import Edge, describe_chart


def _declared() -> list[Transition]:
    """The framework's transition objects of the declared transitions, document order.

    The framework's implicit initial transitions (into a compound state's initial
    child) are left out: the chart does not declare them and no listener sees them.
    """
    return [t for state in document_order() for t in state.transitions if not t.initial]


@cache
def chart_transitions() -> tuple[Edge, ...]:
    """Every transition the chart declares (evented, eventless, ``done.state``, rejecting):
    the description's edges, whose numbers the listener's indexes are.

    Raises if the framework's declared transitions and the description's edges do not
    line up one for one, so an index can never name the wrong transition.
    """
    edges = describe_chart().edges
    declared = _declared()
    mismatched = [
        (edge.index, edge.source, edge.target, str(t.source.id), [s.id for s in t.targets])
        for edge, t in zip(edges, declared, strict=False)
        if (edge.source, (edge.target,)) != (t.source.id, tuple(s.id for s in t.targets))
    ]
    if len(edges) != len(declared) or mismatched:
        raise AssertionError(f"description and chart disagree on transitions: {mismatched}")
    return edges


class FiredTransitions:
    """A python-statemachine listener: the indexes of the declared transitions that fired.

    ``fired`` is the set; ``order`` the same indexes in the order the framework fired them
    (an input's own transition before the eventless and ``done.state`` ones it enables).
    """

    def __init__(self) -> None:
        chart_transitions()  # the indexes below are the description's
        self._index = {transition: i for i, transition in enumerate(_declared())}
        self.fired: set[int] = set()
        self.order: list[int] = []

    def on_transition(self, transition: Transition) -> None:
        self.add(self._index[transition])

    def add(self, index: int) -> None:
        if index not in self.fired:
            self.fired.add(index)
            self.order.append(index)

    def clear(self) -> None:
        self.fired.clear()
        self.order.clear()


def rejection_transition(
    leaves: Iterable[str], event: str, code: ErrorCode, validator: str | None = None
) -> int | None:
    """The rejecting transition that turned ``event`` down with ``code`` (raised by
    ``validator``, when named) in these leaf states.

    A chart may reject one event in two active regions alike (a proposed chart under
    review, say): the framework runs the transitions it selected in document order, and
    the first one's validator raises, so the first such transition is the one."""
    active = set(leaves)
    matches = [
        edge.index
        for edge in chart_transitions()
        if edge.source in active
        and event in edge.events
        and edge.rejection is code
        and (validator is None or validator in edge.validators)
    ]
    return matches[0] if matches else None


def _quiet(_model: Any, name: str, _args: tuple[Any, ...]) -> None:
    """Effects do nothing; a rejecting validator raises, as the real ones do."""
    if rejecting(name):
        raise Rejected(name)


QuietModel = effects_model("QuietModel", _quiet)
"""A model for the chart whose effects do nothing (guards and rejections still decide)."""


@cache
def step_transitions(
    revision: Revision = Revision.SEED,
) -> dict[tuple[int, str], frozenset[int]]:
    """For each compiled step ``(source state index, event)`` of ``revision``: the declared
    transitions it fires (:func:`fired_in_order`, as sets).
    """
    return {key: frozenset(order) for key, order in fired_in_order(revision).items()}


@cache
def fired_in_order(
    revision: Revision = Revision.SEED,
) -> dict[tuple[int, str], tuple[int, ...]]:
    """For each compiled step ``(source state index, event)`` of ``revision``: the declared
    transitions it fires, in the order the framework fires them.

    Asks the framework: each step is sent once through python-statemachine's
    interpreter, from the step's configuration and fields, with a listener (the
    way :func:`~handoff_fsm.engines.compiled.compile_chart` recorded it), and must land
    in the step's target.
    """
    compiled = compiled_chart(revision)
    model = QuietModel()
    listener = FiredTransitions()
    charts: dict[HandoffOrder, HandoffChart] = {}
    mapping: dict[tuple[int, str], tuple[int, ...]] = {}
    for step in compiled.steps:
        state = compiled.states[step.source]
        chart = charts.get(state.order)
        if chart is None or chart.is_terminated:  # a final configuration stops the framework
            chart = charts[state.order] = HandoffChart(model, state.order, revision)
            chart.add_listener(listener)  # type: ignore[no-untyped-call]
        model.state = OrderedSet(state.configuration)
        chart.load_fields(state.fields)
        listener.clear()
        payload = {PAYLOAD: None} if step.event in FACT_EVENTS.values() else {}
        try:
            chart.send(step.event, **payload)
        except Rejected as rejected:
            rejection = REJECTIONS[rejected.validator]
            index = rejection_transition(
                state.leaves, step.event, rejection.code, rejected.validator
            )
            if index is None:
                raise AssertionError(f"no declared transition rejects {step}") from None
            listener.add(index)
        reached = configuration_of(chart)
        target = compiled.states[step.target]
        if (reached, chart.fields()) != (target.configuration, target.fields):
            raise AssertionError(f"the framework disagrees with compiled {step}: {reached}")
        mapping[(step.source, step.event)] = tuple(listener.order)
    return mapping


def fireable_transitions(revision: Revision) -> frozenset[int]:
    """The declared transitions some compiled step of ``revision`` fires (either order)."""
    return frozenset().union(*step_transitions(revision).values())


def revision_specific_transitions() -> dict[Revision, frozenset[int]]:
    """Per revision, the declared transitions only it can fire (no other revision can)."""
    fireable = {revision: fireable_transitions(revision) for revision in Revision}
    return {
        revision: mine.difference(*(t for r, t in fireable.items() if r is not revision))
        for revision, mine in fireable.items()
    }


def chart_state_of(snapshot: Hashable) -> ChartState | None:
    """The compiled chart state a ``HandoffSnapshot`` is in, in its revision's table.

    ``None`` for anything else, or for a snapshot no input sequence reaches.
    """
    if type(snapshot) is not HandoffSnapshot:
        return None
    return compiled_chart(snapshot.revision).lookup(snapshot.state, snapshot.chart_fields())

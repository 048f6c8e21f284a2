"""The compiled engine: the chart's decisions, taken once by the framework, replayed fast.

Rule kept here: nothing in this module decides control flow. :func:`compile_chart`
lets python-statemachine's own interpreter run every input event in every
reachable chart state (configuration + declared fields) once, records the
effects it calls, and turns each (state, event) pair into a tiny generated
Python function: run the validators, move to the target state, run the effects,
return the actions they issued. Change the chart and the table changes with it.

This is sound because guards read only ``In(...)`` and the declared fields, and
event data only reaches validators and effects (see :mod:`handoff_fsm.chart` and
docs/architecture.md §4).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from statemachine import State
from statemachine.orderedset import OrderedSet

from handoff_fsm.chart import (
    FACT_EVENTS,
    INPUT_EVENTS,
    PAYLOAD,
    PLAIN_ISSUES,
    VALIDATORS,
    ChartFields,
    HandoffChart,
)
from handoff_fsm.engines.harness import (
    Rejected,
    effect_parameters,
    effects_model,
    rejecting,
    returns_action,
)
from handoff_fsm.engines.state import StepFunction
from handoff_fsm.model import HandoffCompletion, HandoffOrder, Revision


@dataclass(eq=False)
class ChartState:
    """One reachable state of the chart: a configuration plus the declared fields."""

    index: int
    configuration: tuple[str, ...]
    """Every active state id (compound and parallel ancestors included), document order."""
    leaves: tuple[str, ...]
    """The active atomic states, document order: what a person reads as "the state"."""
    fields: ChartFields
    is_complete: bool
    completion: HandoffCompletion | None
    steps: dict[str, StepFunction] = field(default_factory=dict, repr=False)
    """Event name -> generated step; an event missing here is ignored in this state."""
    is_final: bool = False
    """No input changes this state any more (complete, and nothing can reopen it)."""

    @property
    def order(self) -> HandoffOrder:
        return (
            HandoffOrder.SOURCE_FIRST
            if self.fields.source_first
            else HandoffOrder.DESTINATION_FIRST
        )

    @property
    def revision(self) -> Revision:
        return self.fields.revision


@dataclass(frozen=True, slots=True)
class Step:
    """What the chart does for ``event`` in ``source``: the recorded decision."""

    source: int
    event: str
    validators: tuple[str, ...]
    effects: tuple[str, ...]
    target: int


@dataclass(eq=False)
class CompiledChart:
    """One revision's reachable chart states with one recorded :class:`Step` per transition."""

    revision: Revision
    states: list[ChartState]
    steps: list[Step]
    initial: dict[HandoffOrder, ChartState]
    _index: dict[tuple[tuple[str, ...], ChartFields], ChartState] = field(repr=False)

    def lookup(self, leaves: tuple[str, ...], fields: ChartFields) -> ChartState | None:
        """The state with these active leaves and fields, or ``None`` if it is unreachable."""
        return self._index.get((leaves, fields))


# ---------------------------------------------------------------- chart introspection


def document_order(chart: type[HandoffChart] = HandoffChart) -> list[State]:
    """All states of the chart, parents before children, in declaration order."""

    def walk(states: Any) -> Iterator[State]:
        for state in states:
            yield state
            yield from walk(state.states)

    return list(walk(chart.states))


@cache
def _layout(chart: type[HandoffChart]) -> tuple[dict[str, int], frozenset[str]]:
    """Each state's document position, and the ids of the atomic states."""
    states = document_order(chart)
    return {s.id: i for i, s in enumerate(states)}, frozenset(s.id for s in states if s.is_atomic)


@cache
def completing_states(chart: type[HandoffChart] = HandoffChart) -> frozenset[str]:
    """Ids of the states whose entry issues ``Complete``: being in one means "complete"."""
    return frozenset(
        state.id
        for state in document_order(chart)
        if any(c.func == "issue_complete" for c in state.enter if not c.is_convention)
    )


def configuration_of(sm: HandoffChart) -> tuple[str, ...]:
    """A live chart's active state ids, in document order (the framework's order varies)."""
    position, _ = _layout(type(sm))
    return tuple(sorted((s.id for s in sm.configuration), key=position.__getitem__))


def leaves_of(
    configuration: tuple[str, ...], chart: type[HandoffChart] = HandoffChart
) -> tuple[str, ...]:
    """The atomic states of ``configuration``: what a person reads as "the state"."""
    _, atomic = _layout(chart)
    return tuple(s for s in configuration if s in atomic)


def _record(model: Any, name: str, _args: tuple[Any, ...]) -> None:
    model.log.append(name)
    if rejecting(name):
        raise Rejected(name)


_Recorder = effects_model("_Recorder", _record)
"""A model for the chart that records the names of the effects it is asked for."""


# ---------------------------------------------------------------- compilation

_FACT_EVENT_NAMES = frozenset(FACT_EVENTS.values())
_FACT_PAYLOAD = {PAYLOAD: None}


def compile_chart(
    chart: type[HandoffChart] = HandoffChart, revision: Revision = Revision.SEED
) -> CompiledChart:
    """Explore every reachable chart state of ``revision`` breadth-first, recording each step.

    The framework decides every (state, event) pair exactly once; the result is
    the complete transition table of the chart for that revision (both orders),
    with generated step functions.
    """
    completing = completing_states(chart)
    recorder = _Recorder()
    recorder.log = []

    def key_of(sm: HandoffChart) -> tuple[tuple[str, ...], ChartFields]:
        return configuration_of(sm), sm.fields()

    index: dict[tuple[tuple[str, ...], ChartFields], ChartState] = {}
    states: list[ChartState] = []
    steps: list[Step] = []
    queue: deque[ChartState] = deque()

    def intern(key: tuple[tuple[str, ...], ChartFields]) -> ChartState:
        known = index.get(key)
        if known is not None:
            return known
        configuration, fields = key
        state = ChartState(
            index=len(states),
            configuration=configuration,
            leaves=leaves_of(configuration, chart),
            fields=fields,
            is_complete=not completing.isdisjoint(configuration),
            completion=fields.completion,
        )
        index[key] = state
        states.append(state)
        queue.append(state)
        return state

    machines: dict[bool, HandoffChart] = {}
    initial: dict[HandoffOrder, ChartState] = {}
    for order in HandoffOrder:
        sm = chart(recorder, order, revision)
        machines[order is HandoffOrder.SOURCE_FIRST] = sm
        initial[order] = intern(key_of(sm))
    if recorder.log:
        raise AssertionError(f"entering the initial configuration issued effects: {recorder.log}")

    while queue:
        source = queue.popleft()
        for event in INPUT_EVENTS:
            sm = machines[source.fields.source_first]
            if sm.is_terminated:  # a final configuration stops the framework's engine
                sm = chart(recorder, source.order, revision)
                machines[source.fields.source_first] = sm
            recorder.state = OrderedSet(source.configuration)
            sm.load_fields(source.fields)
            recorder.log.clear()
            try:
                sm.send(event, **(_FACT_PAYLOAD if event in _FACT_EVENT_NAMES else {}))
            except Rejected:
                if sm.is_terminated or recorder.log[-1:] != recorder.log[:1]:
                    raise AssertionError(
                        f"{event}: rejected after effects: {recorder.log}"
                    ) from None
            log = tuple(recorder.log)
            target = intern(key_of(sm))
            if not log and target is source:
                continue  # ignored here
            checked = 0
            while checked < len(log) and log[checked] in VALIDATORS:
                checked += 1
            if any(name in VALIDATORS for name in log[checked:]):
                raise AssertionError(f"{event}: validators ran after effects: {log}")
            # The framework runs the validators of every transition it considers; they
            # only check, so each runs once, in first-seen order.
            validators = tuple(dict.fromkeys(log[:checked]))
            steps.append(Step(source.index, event, validators, log[checked:], target.index))

    by_leaves = {(state.leaves, state.fields): state for state in states}
    compiled = CompiledChart(
        revision=revision, states=states, steps=steps, initial=initial, _index=by_leaves
    )
    _bind_steps(compiled)
    return compiled


def _bind_steps(compiled: CompiledChart) -> None:
    """Generate one small function per step and file it under its source state."""
    for step in compiled.steps:
        compiled.states[step.source].steps[step.event] = _generate(
            step, compiled.states[step.target]
        )
    for state in compiled.states:
        state.is_final = state.is_complete and not any(
            step.target != state.index or step.effects
            for step in compiled.steps
            if step.source == state.index
        )


def _generate(step: Step, target: ChartState) -> StepFunction:
    def call(name: str) -> str:
        return f"c.{name}(data)" if effect_parameters(name) else f"c.{name}()"

    namespace: dict[str, Any] = {"TARGET": target}
    lines = ["def step(c, data):"]
    lines += [f"    {call(name)}" for name in step.validators]
    lines.append("    c.state = TARGET")
    issued: list[str] = []
    for name in step.effects:
        kind = PLAIN_ISSUES.get(name)
        if kind is not None:  # the kind is decided here, once (see PLAIN_ISSUES)
            namespace[kind.__name__] = kind
            issued.append(f"a{len(issued)}")
            lines.append(f"    {issued[-1]} = c.issue({kind.__name__})  # {name}")
        elif returns_action(name):
            issued.append(f"a{len(issued)}")
            lines.append(f"    {issued[-1]} = {call(name)}")
        else:
            lines.append(f"    {call(name)}")
    lines.append(f"    return [{', '.join(issued)}]")
    exec("\n".join(lines), namespace)
    function: StepFunction = namespace["step"]
    function.__qualname__ = f"step[{step.source}:{step.event}->{step.target}]"
    function.__doc__ = "\n".join(lines)
    return function


def compiled_chart(revision: Revision = Revision.SEED) -> CompiledChart:
    """The compiled :class:`HandoffChart` of ``revision``, built on first use and kept.

    One chart per revision however it is asked for (``compiled_chart()``,
    ``compiled_chart(Revision.SEED)`` and ``compiled_chart(revision=...)`` are the same
    object): a cache keyed on the call's spelling would compile the seed twice.
    """
    return _compiled_chart(Revision(revision))


@cache
def _compiled_chart(revision: Revision) -> CompiledChart:
    return compile_chart(HandoffChart, revision)

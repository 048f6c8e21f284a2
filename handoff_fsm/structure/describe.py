"""ONE description of the statechart, read off :class:`~handoff_fsm.chart.HandoffChart`.

Rule kept here: every picture, table and report is rendered from the
:class:`ChartModel` built here by introspecting the chart class
(python-statemachine's ``states``, ``transitions``, ``cond``, ``validators``,
``on`` and entry callbacks). Nothing about the chart's structure is written
down a second time; the renderers only decide how it looks. Words meant for
people (guards, actions, state names) are made here too, once, so DOT,
Mermaid and the tables all say the same thing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from handoff_fsm.chart import (
    ACKNOWLEDGEMENTS,
    ACTION_FAILED,
    FACT_EVENTS,
    INPUT_EVENTS,
    REJECTIONS,
    REVISION_GUARDS,
    START,
    VALIDATORS,
    HandoffChart,
)
from handoff_fsm.engines.compiled import document_order
from handoff_fsm.errors import HandoffErrorCode
from handoff_fsm.model import ACTION_TYPES, HandoffCompletion, Revision

_ACTION_NAMES = frozenset(action.__name__ for action in ACTION_TYPES)
_ISSUE_PREFIX = "issue_"
_COMPLETIONS = {
    "mark_success": HandoffCompletion.SUCCESS,
    "mark_canceled": HandoffCompletion.CANCELED,
}
_ENGAGES = re.compile(r"^engage_(\w+)$")


class StateKind(StrEnum):
    """How a state is drawn: parallel states and their regions become clusters."""

    PARALLEL = "parallel"
    REGION = "region"
    """A compound state directly inside a parallel state (runs concurrently with its siblings)."""
    COMPOUND = "compound"
    ATOMIC = "atomic"


class EdgeKind(StrEnum):
    """Why a transition fires."""

    EVENT = "event"
    """An input event (a fact, an acknowledgement, ``start``)."""
    EVENTLESS = "eventless"
    """Taken as soon as its guard holds (cross-region ordering, cleanup decisions)."""
    DONE = "done"
    """``done.state.<id>``: every region of a parallel state reached a final state."""
    REJECTION = "rejection"
    """An internal self-transition whose validator always raises: the event is an error here."""


class EventKind(StrEnum):
    """What makes an event happen: which kind of input, or the chart itself."""

    START = "start"
    """``start()``."""
    FACT = "fact"
    """A fact about the source, the destination or the transfer."""
    ACKNOWLEDGEMENT = "acknowledgement"
    """An accepted outcome of an issued action."""
    ACTION_FAILED = "action failed"
    """A ``Failed(..)`` outcome of an action that may fail."""
    DONE = "done"
    """``done.state.<id>``: raised by the chart when a parallel state's regions are done."""


@dataclass(frozen=True, slots=True)
class InputEvent:
    """One event an input becomes, and which inputs become it."""

    event: str
    kind: EventKind
    fact: str | None = None
    """For a fact: its class name (``SourceHeld``)."""
    acknowledges: tuple[str, ...] = ()
    """For an acknowledgement or ``action_failed``: the action kinds whose outcome it is."""
    outcomes: tuple[str, ...] = ()
    """For an acknowledgement: the outcomes accepted (``Submitted``)."""

    @property
    def text(self) -> str:
        """The input in words: ``start()``, ``fact SourceHeld``, ``Submitted for SubmitPrefill``."""
        if self.kind is EventKind.START:
            return "`start()`"
        if self.kind is EventKind.FACT:
            return f"fact `{self.fact}`"
        kinds = ", ".join(f"`{name}`" for name in self.acknowledges)
        if self.kind is EventKind.ACTION_FAILED:
            return f"`Failed(..)` for {kinds}"
        return " or ".join(f"`{outcome}`" for outcome in self.outcomes) + f" for {kinds}"


@cache
def input_events() -> tuple[InputEvent, ...]:
    """Every event an input can become, in :data:`~handoff_fsm.chart.INPUT_EVENTS` order."""
    events = [InputEvent(START, EventKind.START)]
    events += [
        InputEvent(event, EventKind.FACT, fact=kind.__name__) for kind, event in FACT_EVENTS.items()
    ]
    events += [
        InputEvent(
            ack.event,
            EventKind.ACKNOWLEDGEMENT,
            acknowledges=(kind.__name__,),
            outcomes=tuple(o.value for o in sorted(ack.accepted)),
        )
        for kind, ack in ACKNOWLEDGEMENTS.items()
    ]
    failing = tuple(kind.__name__ for kind, ack in ACKNOWLEDGEMENTS.items() if ack.may_fail)
    events.append(InputEvent(ACTION_FAILED, EventKind.ACTION_FAILED, acknowledges=failing))
    if tuple(e.event for e in events) != INPUT_EVENTS:
        raise AssertionError("the input events and the chart's INPUT_EVENTS disagree")
    return tuple(events)


def event_kind(event: str) -> EventKind:
    """Which kind of input (or the chart itself) raises ``event``."""
    if event.startswith("done.state."):
        return EventKind.DONE
    for known in input_events():
        if known.event == event:
            return known.kind
    raise KeyError(f"{event!r} is no event of the chart")


@dataclass(frozen=True, slots=True)
class Guard:
    """A transition's condition: the chart's expression and the same thing in words."""

    expression: str
    """As python-statemachine reads it, e.g. ``destination_first and In('reserved')``."""
    text: str
    """For people, e.g. ``destination first and destination reserved``."""
    states: tuple[str, ...]
    """State ids the guard reads with ``In(...)``, in order of appearance."""
    fields: tuple[str, ...]
    """Declared fields the guard reads, in order of appearance."""


@dataclass(frozen=True, slots=True)
class StateNode:
    """One state of the chart, with what entering it does."""

    id: str
    label: str
    """Short name for people (``idle``, ``in flight``, ``Cleaning up``)."""
    kind: StateKind
    parent: str | None
    children: tuple[str, ...]
    initial: bool
    """The initial child of its parent (or of the chart)."""
    final: bool
    region: str | None
    """The region (or top-level state) this state belongs to: itself for regions."""
    entry_actions: tuple[str, ...]
    """Action class names issued on entry (``SubmitPrefill``), from ``issue_*`` callbacks."""
    entry_fields: tuple[str, ...]
    """Declared fields set on entry (``source_engaged`` from ``engage_source``)."""

    @property
    def is_cluster(self) -> bool:
        return self.kind is not StateKind.ATOMIC


@dataclass(frozen=True, slots=True)
class Edge:
    """One declared transition (one ``a.to(b, ...)``), with everything a picture shows."""

    index: int
    """Position among the chart's declared transitions (document order); stable across
    renders. A revision's chart (:mod:`~handoff_fsm.structure.revisions`) keeps the numbers
    of the transitions it keeps, so they still name the declared transition."""
    source: str
    target: str
    kind: EdgeKind
    events: tuple[str, ...]
    """Event names (``()`` for eventless; ``("done.state.active",)`` for done events)."""
    event_kinds: tuple[EventKind, ...]
    """What raises each of ``events``, in the same order: a fact, an acknowledgement, ..."""
    guard: Guard | None
    validators: tuple[str, ...]
    rejection: HandoffErrorCode | None
    """For :attr:`EdgeKind.REJECTION`: the error code the event is rejected with."""
    effects: tuple[str, ...]
    """Explicit ``on`` callbacks of the transition (bookkeeping, ``mark_success``)."""
    completion: HandoffCompletion | None
    """The completion this transition records (``mark_success`` / ``mark_canceled``)."""
    actions: tuple[str, ...]
    """Actions issued by taking it: the entry actions of its target."""
    region: str | None
    """The region that owns the transition (the source's region; ``None`` at top level)."""

    @property
    def event_text(self) -> str:
        """The events for people: ``failed | timed_out``; empty for eventless transitions."""
        return " | ".join(self.events)

    def __str__(self) -> str:
        """One line naming the transition: ``source --events [guard]--> target``."""
        guard = f" [{self.guard.expression}]" if self.guard is not None else ""
        return f"{self.source} --{self.event_text or '(eventless)'}{guard}--> {self.target}"


@dataclass(frozen=True, slots=True)
class ChartModel:
    """The chart as data: states in document order, transitions in document order."""

    name: str
    states: tuple[StateNode, ...]
    edges: tuple[Edge, ...]
    top_level: tuple[str, ...]
    """Ids of the chart's top-level states, in order."""
    initial: str
    """The chart's initial top-level state."""
    revision: Revision | None = None
    """``None`` for the chart family (every revision); else the one revision it shows
    (:func:`~handoff_fsm.structure.revisions.revision_chart`)."""

    @property
    def inputs(self) -> tuple[InputEvent, ...]:
        """Every event an input can become (the same for every revision's chart)."""
        return input_events()

    @property
    def title(self) -> str:
        """What the chart is called in its pictures and tables."""
        if self.revision is None:
            return self.name
        return f"{self.name}, revision {self.revision.value}"

    def state(self, state_id: str) -> StateNode:
        for state in self.states:
            if state.id == state_id:
                return state
        raise KeyError(state_id)

    def children(self, state_id: str) -> tuple[StateNode, ...]:
        return tuple(self.state(child) for child in self.state(state_id).children)

    @property
    def regions(self) -> tuple[StateNode, ...]:
        """Every region (concurrent compound state), document order."""
        return tuple(s for s in self.states if s.kind is StateKind.REGION)

    def edges_of(self, region: str | None) -> tuple[Edge, ...]:
        """The transitions a region owns (``None``: the top-level ones)."""
        return tuple(edge for edge in self.edges if edge.region == region)

    def state_phrase(self, state_id: str) -> str:
        """A state named so it reads alone: ``source held``, ``transferred``."""
        state = self.state(state_id)
        region = state.region
        if region is None or region == state.id:
            return state.label.lower()
        owner = self.state(region).label.lower()
        return state.label if state.label.startswith(owner) else f"{owner} {state.label}"


# ------------------------------------------------------------------ words for people


def action_of(effect: str) -> str | None:
    """``issue_submit_prefill`` -> ``SubmitPrefill``; ``None`` for effects that issue nothing.

    Raises if an ``issue_*`` effect names no action type, so a renamed action
    cannot silently disappear from the diagrams.
    """
    if not effect.startswith(_ISSUE_PREFIX):
        return None
    name = "".join(part.capitalize() for part in effect[len(_ISSUE_PREFIX) :].split("_"))
    if name not in _ACTION_NAMES:
        raise ValueError(f"effect {effect!r} names no action type ({name!r})")
    return name


def field_text(name: str) -> str:
    """A declared field in words: ``source_first`` -> ``source first``.

    A guard by which revisions differ names them: ``reopens after success (a976b2bf)``.
    """
    words = name.replace("_", " ")
    revisions = REVISION_GUARDS.get(name)
    if revisions:
        words += f" ({', '.join(sorted(r.value for r in revisions))})"
    return words


def effect_text(effect: str) -> str:
    """A bookkeeping effect in words: ``store_transfer_timing`` -> ``store transfer timing``."""
    completion = _COMPLETIONS.get(effect)
    if completion is not None:
        return f"completion = {completion.value}"
    return effect.replace("_", " ")


# ------------------------------------------------------------------ introspection


def describe_chart(chart: type[HandoffChart] = HandoffChart) -> ChartModel:
    """Read the chart class into a :class:`ChartModel` (the class is never instantiated)."""
    if chart is HandoffChart:
        return _default_model()
    return _describe(chart)


@cache
def _default_model() -> ChartModel:
    return _describe(HandoffChart)


def _describe(chart: type[HandoffChart]) -> ChartModel:
    raw_states: list[Any] = document_order(chart)

    def kind_of(state: Any) -> StateKind:
        if state.parallel:
            return StateKind.PARALLEL
        if state.states:
            parent = state.parent
            return (
                StateKind.REGION if parent is not None and parent.parallel else StateKind.COMPOUND
            )
        return StateKind.ATOMIC

    def region_of(state: Any) -> str | None:
        node = state
        while node is not None:
            if kind_of(node) is StateKind.REGION:
                return str(node.id)
            node = node.parent
        return None

    nodes: list[StateNode] = []
    for state in raw_states:
        entry = [c.func for c in state.enter if not c.is_convention and isinstance(c.func, str)]
        kind = kind_of(state)
        actions = tuple(a for a in (action_of(name) for name in entry) if a is not None)
        engaged = tuple(
            f"{match.group(1)}_engaged" for match in (_ENGAGES.match(n) for n in entry) if match
        )
        unknown = [n for n in entry if action_of(n) is None and not _ENGAGES.match(n)]
        if unknown:
            raise ValueError(f"state {state.id!r}: entry callbacks not understood: {unknown}")
        label = str(state.name)
        if kind is StateKind.ATOMIC:
            label = label[:1].lower() + label[1:]
        nodes.append(
            StateNode(
                id=state.id,
                label=label,
                kind=kind,
                parent=state.parent.id if state.parent is not None else None,
                children=tuple(child.id for child in state.states),
                initial=bool(state.initial),
                final=bool(state.final),
                region=region_of(state),
                entry_actions=actions,
                entry_fields=engaged,
            )
        )

    # Guards name states, so they are worded against the states read so far.
    states_only = ChartModel(
        name=chart.__name__,
        states=tuple(nodes),
        edges=(),
        top_level=tuple(state.id for state in chart.states),
        initial=next(str(state.id) for state in chart.states if state.initial),
    )
    edges: list[Edge] = []
    for state in raw_states:
        for transition in state.transitions:
            edge = _edge(transition, len(edges), region_of(state), states_only)
            if edge is not None:
                edges.append(edge)
    return ChartModel(
        name=states_only.name,
        states=states_only.states,
        edges=tuple(edges),
        top_level=states_only.top_level,
        initial=states_only.initial,
    )


def _edge(
    transition: Any,
    index: int,
    region: str | None,
    model: ChartModel,
) -> Edge | None:
    source = transition.source
    targets = [target.id for target in transition.targets]
    events = _events(transition)
    if transition.initial:
        return None  # the implicit "enter the initial child" transition: drawn as a marker
    if len(targets) != 1:
        raise ValueError(f"transition from {source.id!r} has {len(targets)} targets")
    target = targets[0]
    validators = tuple(str(c.func) for c in transition.validators)
    unknown = [name for name in validators if name not in VALIDATORS]
    if unknown:
        raise ValueError(f"transition from {source.id!r}: unknown validators {unknown}")
    effects = tuple(
        str(c.func) for c in transition.on if not c.is_convention and isinstance(c.func, str)
    )
    rejection = next((REJECTIONS[name].code for name in validators if name in REJECTIONS), None)
    if rejection is not None:
        kind = EdgeKind.REJECTION
    elif any(event.startswith("done.state.") for event in events):
        kind = EdgeKind.DONE
    elif events:
        kind = EdgeKind.EVENT
    else:
        kind = EdgeKind.EVENTLESS
    completion = next((_COMPLETIONS[e] for e in effects if e in _COMPLETIONS), None)
    guard_expression = _guard_expression(transition)
    return Edge(
        index=index,
        source=source.id,
        target=target,
        kind=kind,
        events=events,
        event_kinds=tuple(event_kind(event) for event in events),
        guard=word_guard(guard_expression, model) if guard_expression else None,
        validators=validators,
        rejection=rejection,
        effects=effects,
        completion=completion,
        actions=() if transition.internal else model.state(target).entry_actions,
        region=region,
    )


def _events(transition: Any) -> tuple[str, ...]:
    """Event names, each once: the dotted SCXML form of ``done_state_x`` aliases is kept."""
    names = [str(event) for event in transition.events]
    dotted = {name.replace(".", "_"): name for name in names if "." in name}
    return tuple(dotted.get(name, name) for name in names if name not in dotted.values())


def _guard_expression(transition: Any) -> str:
    parts: list[str] = []
    for spec in transition.cond:
        if not isinstance(spec.func, str):
            raise ValueError(f"guard {spec!r} of {transition.source.id!r} is not an expression")
        text = spec.func
        if spec.expected_value is False:
            text = f"not ({text})" if " " in text else f"not {text}"
        parts.append(text)
    return " and ".join(parts)


def word_guard(expression: str, model: ChartModel) -> Guard:
    """Parse a guard expression (python-statemachine's grammar) and put it in words."""
    source = re.sub(r"!(?!=)", "not ", expression)
    tree = ast.parse(source, mode="eval").body
    states: list[str] = []
    fields: list[str] = []

    def words(node: ast.expr, parent_op: type | None = None) -> str:
        if isinstance(node, ast.BoolOp):
            joiner = " and " if isinstance(node.op, ast.And) else " or "
            text = joiner.join(words(value, type(node.op)) for value in node.values)
            return f"({text})" if parent_op not in (None, type(node.op)) else text
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return f"not {words(node.operand, ast.Not)}"
        if isinstance(node, ast.Name):
            fields.append(node.id)
            return field_text(node.id)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "In"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            state_id = node.args[0].value
            states.append(state_id)
            return model.state_phrase(state_id)
        raise ValueError(f"guard {expression!r}: cannot put {ast.dump(node)} in words")

    text = words(tree)
    return Guard(expression=expression, text=text, states=tuple(states), fields=tuple(fields))

"""A chart description that crossed a process boundary, read back as a :class:`ChartModel`.

Rule kept here: the plain data is the side's own description and is only read, never
completed from this package's chart. A side of ``handoff-fsm diff`` describes its chart
in its own process (``describe`` of :mod:`handoff_fsm.verify.diff.driver`: the
dataclasses of :mod:`~handoff_fsm.structure.describe` as JSON values, possibly written
by another version of the package); :func:`chart_from_plain` turns those values back
into the same dataclasses, so the side's chart is drawn by the one chart drawing with
its own states and transitions. A field an older description lacks takes the value
that says nothing (no guard, no entry actions); only the kind of event an older
description does not record is looked up, by the event's name. What cannot be read
(a missing state id, a kind or a code this package has no word for) raises
``ValueError`` naming it: the caller says the chart is not drawn, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from handoff_fsm.errors import HandoffErrorCode
from handoff_fsm.model import HandoffCompletion, Revision
from handoff_fsm.structure.describe import (
    ChartModel,
    Edge,
    EdgeKind,
    EventKind,
    Guard,
    StateKind,
    StateNode,
    event_kind,
)

_E = TypeVar("_E", EdgeKind, EventKind, StateKind, HandoffErrorCode, HandoffCompletion)


def _texts(data: Mapping[str, Any], name: str) -> tuple[str, ...]:
    return tuple(str(value) for value in data.get(name) or ())


def _enum(kind: type[_E], value: Any, what: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not one this package knows") from None


def _optional(kind: type[_E], value: Any, what: str) -> _E | None:
    return None if value is None else _enum(kind, value, what)


def _state(data: Mapping[str, Any]) -> StateNode:
    if "id" not in data:
        raise ValueError(f"a state without an id: {dict(data)!r}")
    children = _texts(data, "children")
    default = StateKind.COMPOUND if children else StateKind.ATOMIC
    return StateNode(
        id=str(data["id"]),
        label=str(data.get("label") or data["id"]),
        kind=_enum(StateKind, data.get("kind", default), "the state kind"),
        parent=data.get("parent"),
        children=children,
        initial=bool(data.get("initial")),
        final=bool(data.get("final")),
        region=data.get("region"),
        entry_actions=_texts(data, "entry_actions"),
        entry_fields=_texts(data, "entry_fields"),
    )


def _guard(data: Mapping[str, Any] | None) -> Guard | None:
    if data is None:
        return None
    expression = str(data.get("expression") or data.get("text") or "")
    return Guard(
        expression=expression,
        text=str(data.get("text") or expression),
        states=_texts(data, "states"),
        fields=_texts(data, "fields"),
    )


def _event_kinds(data: Mapping[str, Any], events: tuple[str, ...]) -> tuple[EventKind, ...]:
    given = data.get("event_kinds")
    if given is not None and len(given) == len(events):
        return tuple(_enum(EventKind, kind, "the event kind") for kind in given)
    try:  # an older description: what raises each event, by its name
        return tuple(event_kind(event) for event in events)
    except KeyError as error:
        raise ValueError(f"no kind of input raises {error}") from None


def _edge(data: Mapping[str, Any], position: int) -> Edge:
    events = _texts(data, "events")
    return Edge(
        index=int(data.get("index", position)),
        source=str(data["source"]),
        target=str(data["target"]),
        kind=_enum(EdgeKind, data.get("kind", EdgeKind.EVENT.value), "the transition kind"),
        events=events,
        event_kinds=_event_kinds(data, events),
        guard=_guard(data.get("guard")),
        validators=_texts(data, "validators"),
        rejection=_optional(HandoffErrorCode, data.get("rejection"), "the rejection code"),
        effects=_texts(data, "effects"),
        completion=_optional(HandoffCompletion, data.get("completion"), "the completion"),
        actions=_texts(data, "actions"),
        region=data.get("region"),
    )


def chart_from_plain(data: Mapping[str, Any]) -> ChartModel:
    """The chart ``data`` describes (the module's rule); ``ValueError`` says what it lacks."""
    try:
        states = tuple(_state(state) for state in data["states"])
        edges = tuple(_edge(edge, position) for position, edge in enumerate(data["edges"]))
    except (KeyError, TypeError) as error:
        raise ValueError(f"the chart's description has no {error}") from None
    known = {state.id for state in states}
    named = {state.parent for state in states if state.parent is not None}
    named |= {end for edge in edges for end in (edge.source, edge.target)}
    if named - known:
        raise ValueError(f"the chart names states it does not describe: {sorted(named - known)}")
    tops = _texts(data, "top_level") or tuple(s.id for s in states if s.parent is None)
    if not tops:
        raise ValueError("the chart's description has no states")
    revision = data.get("revision")
    return ChartModel(
        name=str(data.get("name") or "chart"),
        states=states,
        edges=edges,
        top_level=tops,
        initial=str(data.get("initial") or tops[0]),
        revision=Revision(revision) if revision in {r.value for r in Revision} else None,
    )

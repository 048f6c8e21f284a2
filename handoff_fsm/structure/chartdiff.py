"""The structural diff of two charts: which states and transitions were added, removed, changed.

Rule kept here: both charts arrive as plain data, the JSON form of
:func:`~handoff_fsm.structure.describe_chart`'s :class:`~.describe.ChartModel`
(a side loaded from another git revision describes its chart in its own
process and ships it that way), and only what a chart *says* is compared:
states by id (parent, kind, initial, final, entry actions and fields, name)
and transitions by what they are (source, target, events, guard, checks,
rejection code, effects), never by their position in the document. A
transition present in both with the same meaning is unchanged; one whose
target, guard, checks or effects moved while its source and events (and
target or guard) stayed is *changed*; everything else is added or removed.
Derived fields (the actions a transition issues, its completion, its kind)
follow from those and are not compared twice.

The picture of a diff is drawn by :mod:`handoff_fsm.render.chartdiff`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

Chart = Mapping[str, Any]
"""A chart as plain data (``dataclasses.asdict`` of a ``ChartModel``, enums as values)."""


class Status(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    SAME = "unchanged"


STATE_FIELDS: Final = (
    ("parent", "parent"),
    ("kind", "kind"),
    ("initial", "initial"),
    ("final", "final"),
    ("entry_actions", "entry"),
    ("entry_fields", "entry fields"),
    ("label", "name"),
)
EDGE_FIELDS: Final = (
    ("events", "events"),
    ("target", "target"),
    ("guard", "guard"),
    ("validators", "checks"),
    ("rejection", "rejection"),
    ("effects", "effects"),
)


def field_value(data: Mapping[str, Any], name: str) -> Any:
    value = data.get(name)
    if name == "guard":
        return None if value is None else value.get("expression")
    return tuple(value) if isinstance(value, list) else value


def value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) if value else "none"
    return str(value)


def _present(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """A delta's description: the new side where there is one, else the removed one."""
    data = after if after is not None else before
    assert data is not None
    return data


@dataclass(frozen=True, slots=True)
class StateDelta:
    id: str
    status: Status
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    changes: tuple[str, ...] = ()
    """For a changed state: ``what: before → after`` for each field that moved."""

    @property
    def data(self) -> Mapping[str, Any]:
        return _present(self.before, self.after)


@dataclass(frozen=True, slots=True)
class EdgeDelta:
    status: Status
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    changes: tuple[str, ...] = ()

    @property
    def data(self) -> Mapping[str, Any]:
        return _present(self.before, self.after)

    @property
    def is_rejection(self) -> bool:
        return self.data.get("kind") == "rejection"

    def __str__(self) -> str:
        return transition_text(self.data)


def transition_text(edge: Mapping[str, Any]) -> str:
    """``source → target on event [guard] / effects`` (a rejection: ``source: event ✗ code``)."""
    events = " | ".join(edge.get("events") or ())
    if edge.get("kind") == "rejection":
        return f"{edge['source']}: {events} ✗ {edge.get('rejection')}"
    text = f"{edge['source']} → {edge['target']}"
    if events:
        text += f" on {events}"
    guard = edge.get("guard")
    if guard is not None:
        text += f" [{guard.get('expression')}]"
    checks = edge.get("validators") or ()
    if checks:
        text += f" check {', '.join(checks)}"
    effects = edge.get("effects") or ()
    if effects:
        text += f" / {', '.join(effects)}"
    return text


@dataclass(frozen=True, slots=True)
class ChartDiff:
    """What changed between chart A and chart B."""

    a_name: str
    b_name: str
    states: tuple[StateDelta, ...]
    """Every state of either chart (B's order, removed ones after), with its status."""
    edges: tuple[EdgeDelta, ...]
    """Every transition of either chart, with its status."""

    def of_states(self, status: Status) -> tuple[StateDelta, ...]:
        return tuple(s for s in self.states if s.status is status)

    def of_edges(self, status: Status) -> tuple[EdgeDelta, ...]:
        return tuple(e for e in self.edges if e.status is status)

    @property
    def same(self) -> bool:
        return all(d.status is Status.SAME for d in self.states) and all(
            d.status is Status.SAME for d in self.edges
        )

    def counts(self) -> dict[str, dict[Status, int]]:
        return {
            "states": {s: len(self.of_states(s)) for s in Status},
            "transitions": {s: len(self.of_edges(s)) for s in Status},
        }


def _state_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for name, words in STATE_FIELDS:
        old, new = field_value(before, name), field_value(after, name)
        if old != new:
            out.append(f"{words}: {value_text(old)} → {value_text(new)}")
    return tuple(out)


def _edge_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for name, words in EDGE_FIELDS:
        old, new = field_value(before, name), field_value(after, name)
        if old != new:
            out.append(f"{words}: {value_text(old)} → {value_text(new)}")
    return tuple(out)


def _identity(edge: Mapping[str, Any]) -> tuple[Any, ...]:
    return (edge.get("source"), *(field_value(edge, name) for name, _ in EDGE_FIELDS))


_PAIRINGS: Final = (
    ("source", "target", "events"),
    ("source", "events", "guard"),
    ("source", "target", "guard"),
)
"""How a transition that changed is recognised, in order: same ends and events (its guard,
checks or effects moved); same source, events and guard (it was retargeted); same ends and
guard with at least one event in common (it gained or lost events)."""


def chart_diff(a: Chart, b: Chart) -> ChartDiff:
    """Compare two charts (plain data); see the module docstring for what counts."""
    states_a = {s["id"]: s for s in a["states"]}
    states_b = {s["id"]: s for s in b["states"]}
    states: list[StateDelta] = []
    for state_id, after in states_b.items():
        before = states_a.get(state_id)
        if before is None:
            states.append(StateDelta(state_id, Status.ADDED, None, after))
            continue
        changes = _state_changes(before, after)
        status = Status.CHANGED if changes else Status.SAME
        states.append(StateDelta(state_id, status, before, after, changes))
    states += [
        StateDelta(state_id, Status.REMOVED, before, None)
        for state_id, before in states_a.items()
        if state_id not in states_b
    ]

    left = list(a["edges"])
    right = list(b["edges"])
    paired: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
    for key in (_identity, *(_fields_key(fields) for fields in _PAIRINGS)):
        pool: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
        for edge in left:
            pool.setdefault(key(edge), []).append(edge)
        unmatched = []
        for edge in right:
            events = set(field_value(edge, "events") or ())
            bucket = pool.get(key(edge), [])
            match = next(
                (
                    old
                    for old in bucket
                    if events & set(field_value(old, "events") or ()) or not events
                ),
                None,
            )
            if match is not None:
                bucket.remove(match)
                paired.append((match, edge))
            else:
                unmatched.append(edge)
        right = unmatched
        left = [edge for bucket in pool.values() for edge in bucket]
        left.sort(key=lambda edge: int(edge.get("index", 0)))
    edges: list[EdgeDelta] = []
    for before, after in paired:
        changes = _edge_changes(before, after)
        edges.append(EdgeDelta(Status.CHANGED if changes else Status.SAME, before, after, changes))
    edges += [EdgeDelta(Status.ADDED, None, edge) for edge in right]
    edges += [EdgeDelta(Status.REMOVED, edge, None) for edge in left]
    order = {id(edge): i for i, edge in enumerate(b["edges"])}
    edges.sort(
        key=lambda d: (
            d.after is None,
            order.get(id(d.after), 0) if d.after is not None else int(d.data.get("index", 0)),
        )
    )
    return ChartDiff(
        a_name=str(a.get("name", "A")),
        b_name=str(b.get("name", "B")),
        states=tuple(states),
        edges=tuple(edges),
    )


def _fields_key(fields: tuple[str, ...]) -> Any:
    def key(edge: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(field_value(edge, name) for name in fields)

    return key

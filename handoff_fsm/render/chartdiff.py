"""The picture of a structural chart diff: both charts as one statechart, coloured by status.

Rule kept here: the picture draws what :func:`~handoff_fsm.structure.chart_diff`
found and nothing else, drawn by the chart's own writer
(:func:`~handoff_fsm.render.dot.diff_dot`), so it is laid out like every other chart
(top to bottom, each region a column, phases stacked; being read down ``DIFF.md``'s
column, it stacks a parallel state's regions too, see :mod:`~handoff_fsm.render.dot`)
and worded like it: every row is made by :mod:`~handoff_fsm.render.words` from the
diff's data (``completion = Success``, ``ack prefill_submitted: Submitted``), never
from raw names. This module only turns the diff into the union of both charts (B's
states and transitions, with A's removed ones where they were) and the marks of each
part: added parts green,
removed parts red and dashed, changed parts amber with what they were (``~ was …``),
gained and lost entry rows marked ``+`` and ``-``, the rest grey; the legend
(:mod:`~handoff_fsm.render.legend`) says so. Colours come from
:mod:`~handoff_fsm.render.style` (``DIFF_LINE``, ``DIFF_FILL``). Output is a pure
function of the diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from handoff_fsm.render.dot import DiffMarks, diff_dot
from handoff_fsm.render.words import (
    Row,
    check_text,
    entry_rows,
    rejection_rows,
    transition_rows,
)
from handoff_fsm.structure.chartdiff import (
    EDGE_FIELDS,
    STATE_FIELDS,
    ChartDiff,
    EdgeDelta,
    StateDelta,
    Status,
    field_value,
    value_text,
)
from handoff_fsm.structure.describe import (
    ChartModel,
    Edge,
    EdgeKind,
    StateKind,
    StateNode,
    effect_text,
)

SUBTITLE: Final = (
    "B's chart, with what A had and B lost; a changed part says what it was in A (~ was)."
)
_ENTRY_FIELDS: Final = frozenset({"entry_actions", "entry_fields"})
"""State fields drawn as rows of their own (``+`` gained, ``-`` lost), not as ``was``."""


def _merged(after: Sequence[str], before: Sequence[str]) -> list[str]:
    """``after``'s ids in order, with those only in ``before`` placed after the id they
    followed there (or first)."""
    out = list(after)
    for position, item in enumerate(before):
        if item in out:
            continue
        previous = next((b for b in reversed(before[:position]) if b in out), None)
        out.insert(out.index(previous) + 1 if previous is not None else 0, item)
    return out


def _kind(value: Any, default: StateKind) -> StateKind:
    try:
        return StateKind(value)
    except ValueError:
        return default


def _edge_kind(value: Any) -> EdgeKind:
    try:
        return EdgeKind(value)
    except ValueError:
        return EdgeKind.EVENT


def _guard_text(edge: Mapping[str, Any]) -> str | None:
    guard = edge.get("guard")
    if guard is None:
        return None
    return str(guard.get("text") or guard.get("expression"))


def _rows(edge: Mapping[str, Any]) -> tuple[Row, ...]:
    """A transition's rows (a rejection's: its state's rows), in the chart's words."""
    events = tuple(str(event) for event in edge.get("events") or ())
    kinds = edge.get("event_kinds")
    if kinds is not None and len(kinds) != len(events):
        kinds = None
    if edge.get("kind") == EdgeKind.REJECTION.value:
        return tuple(rejection_rows(events, kinds, str(edge.get("rejection"))))
    return tuple(
        transition_rows(
            events=events,
            kinds=kinds,
            guard=_guard_text(edge),
            validators=(str(name) for name in edge.get("validators") or ()),
            effects=(str(name) for name in edge.get("effects") or ()),
        )
    )


def _words(name: str, value: Any) -> str:
    """A field's value in the chart's words."""
    if name == "guard":
        return "none" if value is None else f"[{value}]"
    if name == "validators":
        return ", ".join(check_text(str(v)) for v in value or ()) or "none"
    if name == "effects":
        return ", ".join(f"/ {effect_text(str(v))}" for v in value or ()) or "none"
    return value_text(value)


def edge_was(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    """What a changed transition was, one line per field that moved, in its label's words."""
    out = []
    for name, words in EDGE_FIELDS:
        if field_value(before, name) == field_value(after, name):
            continue
        old = _guard_text(before) if name == "guard" else field_value(before, name)
        out.append(f"~ was {words}: {_words(name, old)}")
    return tuple(out)


def _state_was(delta: StateDelta) -> tuple[str, ...]:
    if delta.status is not Status.CHANGED or delta.before is None or delta.after is None:
        return ()
    return tuple(
        f"~ was {words}: {value_text(field_value(delta.before, name))}"
        for name, words in STATE_FIELDS
        if name not in _ENTRY_FIELDS
        and field_value(delta.before, name) != field_value(delta.after, name)
    )


def _entry_rows(state: Mapping[str, Any] | None) -> list[Row]:
    if state is None:
        return []
    return entry_rows(
        (str(a) for a in state.get("entry_actions") or ()),
        (str(f) for f in state.get("entry_fields") or ()),
    )


def _entries(delta: StateDelta) -> tuple[tuple[Row, Status], ...]:
    """Entry rows: kept ones unchanged, gained ones added, lost ones removed."""
    before, after = _entry_rows(delta.before), _entry_rows(delta.after)
    if delta.status in (Status.ADDED, Status.REMOVED):
        return tuple((row, Status.SAME) for row in after or before)
    kept = [(row, Status.SAME if row in before else Status.ADDED) for row in after]
    return (*kept, *((row, Status.REMOVED) for row in before if row not in after))


def _children(deltas: Iterable[StateDelta]) -> dict[str | None, list[str]]:
    """Each state's children in the union (``None``: the top level)."""
    after: dict[str | None, list[str]] = {}
    before: dict[str | None, list[str]] = {}
    for delta in deltas:
        for side, into in ((delta.after, after), (delta.before, before)):
            if side is not None:
                into.setdefault(side.get("parent"), []).append(delta.id)
    return {
        parent: _merged(after.get(parent, []), before.get(parent, []))
        for parent in {*after, *before}
    }


def union(diff: ChartDiff, title: str = "") -> tuple[ChartModel, DiffMarks]:
    """Both charts as one (structure only: its words are the marks' rows) and what the
    picture marks on each part."""
    children = _children(diff.states)
    states: list[StateNode] = []
    for delta in diff.states:
        data = delta.data
        kids = tuple(children.get(delta.id, ()))
        states.append(
            StateNode(
                id=delta.id,
                label=str(data.get("label", delta.id)),
                kind=_kind(data.get("kind"), StateKind.COMPOUND if kids else StateKind.ATOMIC),
                parent=data.get("parent"),
                children=kids,
                initial=bool(data.get("initial")),
                final=bool(data.get("final")),
                region=data.get("region"),
                entry_actions=(),
                entry_fields=(),
            )
        )
    known = {state.id for state in states}
    edges: list[Edge] = []
    statuses: dict[int, Status] = {}
    rows: dict[int, tuple[Row, ...]] = {}
    was: dict[int | str, tuple[str, ...]] = {}
    for change in diff.edges:
        edge = _edge(change, len(edges), known)
        if edge is None:
            continue
        edges.append(edge)
        statuses[edge.index] = change.status
        rows[edge.index] = _rows(change.data)
        if (
            change.status is Status.CHANGED
            and change.before is not None
            and change.after is not None
        ):
            was[edge.index] = edge_was(change.before, change.after)
    for state_delta in diff.states:
        lines = _state_was(state_delta)
        if lines:
            was[state_delta.id] = lines
    tops = tuple(children.get(None, ()))
    initial = next((s.id for s in states if s.parent is None and s.initial), tops[0])
    model = ChartModel(
        name="chart_diff",
        states=tuple(states),
        edges=tuple(edges),
        top_level=tops,
        initial=initial,
    )
    marks = DiffMarks(
        title=title,
        subtitle=SUBTITLE,
        states={delta.id: delta.status for delta in diff.states},
        edges=statuses,
        rows=rows,
        was=was,
        entries={delta.id: _entries(delta) for delta in diff.states},
    )
    return model, marks


def _edge(delta: EdgeDelta, index: int, known: set[str]) -> Edge | None:
    data = delta.data
    source, target = str(data.get("source")), str(data.get("target"))
    if source not in known or target not in known:
        return None
    return Edge(
        index=index,
        source=source,
        target=target,
        kind=_edge_kind(data.get("kind")),
        events=(),
        event_kinds=(),
        guard=None,
        validators=(),
        rejection=None,
        effects=(),
        completion=None,
        actions=(),
        region=data.get("region"),
    )


def chart_diff_dot(diff: ChartDiff, title: str) -> str:
    """The union of both charts as DOT, coloured by status, with a legend (deterministic)."""
    return diff_dot(*union(diff, title))

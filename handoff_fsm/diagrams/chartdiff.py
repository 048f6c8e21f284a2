"""The structural diff of two charts, and its picture: one statechart in three colours.

Rule kept here: both charts arrive as plain data, the JSON form of
:func:`~handoff_fsm.diagrams.describe_chart`'s :class:`~.model.ChartModel`
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

The picture draws the union of both charts as one statechart (B's layout, A's
removed parts where they were): added parts green, removed parts red and
dashed, changed parts amber with what they were, the rest grey, and a legend
above.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from handoff_fsm.diagrams import revisions

revision_chart = revisions.revision_chart
"""`handoff-fsm diff` describes each side's chart with ``chartdiff.revision_chart`` (in the
package of any git revision), so the name stays here; the rule is :mod:`.revisions`'."""

Chart = Mapping[str, Any]
"""A chart as plain data (``dataclasses.asdict`` of a ``ChartModel``, enums as values)."""


class Status(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    SAME = "unchanged"


_STATE_FIELDS: Final = (
    ("parent", "parent"),
    ("kind", "kind"),
    ("initial", "initial"),
    ("final", "final"),
    ("entry_actions", "entry"),
    ("entry_fields", "entry fields"),
    ("label", "name"),
)
_EDGE_FIELDS: Final = (
    ("events", "events"),
    ("target", "target"),
    ("guard", "guard"),
    ("validators", "checks"),
    ("rejection", "rejection"),
    ("effects", "effects"),
)


def _value(data: Mapping[str, Any], name: str) -> Any:
    value = data.get(name)
    if name == "guard":
        return None if value is None else value.get("expression")
    return tuple(value) if isinstance(value, list) else value


def _text(value: Any) -> str:
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
    for name, words in _STATE_FIELDS:
        old, new = _value(before, name), _value(after, name)
        if old != new:
            out.append(f"{words}: {_text(old)} → {_text(new)}")
    return tuple(out)


def _edge_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for name, words in _EDGE_FIELDS:
        old, new = _value(before, name), _value(after, name)
        if old != new:
            out.append(f"{words}: {_text(old)} → {_text(new)}")
    return tuple(out)


def _identity(edge: Mapping[str, Any]) -> tuple[Any, ...]:
    return (edge.get("source"), *(_value(edge, name) for name, _ in _EDGE_FIELDS))


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
            events = set(_value(edge, "events") or ())
            bucket = pool.get(key(edge), [])
            match = next(
                (old for old in bucket if events & set(_value(old, "events") or ()) or not events),
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
        return tuple(_value(edge, name) for name in fields)

    return key


# ---------------------------------------------------------------------- the picture

FONT: Final = "DejaVu Sans,Verdana,sans-serif"
COLOURS: Final = {
    Status.ADDED: "#1a7f37",
    Status.REMOVED: "#cf222e",
    Status.CHANGED: "#b35900",
    Status.SAME: "#8c959f",
}
"""Line and text colour of each status (GitHub's green, red, an amber dark enough to read)."""
_FILLS: Final = {
    Status.ADDED: "#dafbe1",
    Status.REMOVED: "#ffebe9",
    Status.CHANGED: "#fff1d6",
    Status.SAME: "#ffffff",
}
_INK: Final = "#1f2328"
_MUTED: Final = "#57606a"
_WIDTH: Final = 28


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=_WIDTH, break_long_words=False) or [""]


class _Picture:
    def __init__(self, diff: ChartDiff, title: str) -> None:
        self.diff = diff
        self.title = title
        self.states = {delta.id: delta for delta in diff.states}
        self.children: dict[str | None, list[str]] = {}
        for delta in diff.states:
            self.children.setdefault(delta.data.get("parent"), []).append(delta.id)
        self.out: list[str] = []

    def render(self) -> str:
        self.out += [
            "digraph chart_diff {",
            "  graph [rankdir=LR, compound=true, newrank=true, splines=spline, "
            f'nodesep=0.35, ranksep=0.5, pad=0.3, fontname="{FONT}", fontsize=15, '
            f"labelloc=t, labeljust=l, label={self._legend()}];",
            f'  node [fontname="{FONT}", fontsize=12, color="{_INK}", fontcolor="{_INK}"];',
            f'  edge [fontname="{FONT}", fontsize=10, arrowsize=0.7];',
        ]
        tops = self.children.get(None, [])
        initial = next((s for s in tops if self.states[s].data.get("initial")), None)
        if initial is not None:
            self.out.append('  "__start__" [shape=point, width=0.15, label=""];')
            self._arrow("__start__", initial, [f'color="{_MUTED}"'])
        for state_id in tops:
            self._state(state_id, 1)
        for delta in self.diff.edges:
            if not delta.is_rejection:
                self._edge(delta)
        for state_id in tops:
            if self.states[state_id].data.get("final"):
                end = f"__end_{state_id}__"
                self.out.append(
                    f'  {_quote(end)} [shape=doublecircle, style=filled, fillcolor="{_INK}", '
                    'width=0.09, label=""];'
                )
                self._arrow(state_id, end, [f'color="{_MUTED}"'])
        self.out.append("}")
        return "\n".join(self.out) + "\n"

    def _legend(self) -> str:
        cells = "".join(
            f'<td bgcolor="{_FILLS[s]}" border="1" color="{COLOURS[s]}">'
            f'<font color="{COLOURS[s]}"><b>{s.value}</b></font></td><td> </td>'
            for s in (Status.ADDED, Status.REMOVED, Status.CHANGED, Status.SAME)
        )
        return (
            '<<table border="0" cellspacing="0" cellpadding="3">'
            f'<tr><td align="left" colspan="8"><b>{_html(self.title)}</b></td></tr>'
            f'<tr><td align="left" colspan="8"><font point-size="11" color="{_MUTED}">'
            "B's chart, with what A had and B lost; changed parts say what they were."
            f"</font></td></tr><tr>{cells}</tr></table>>"
        )

    # -- states ----------------------------------------------------------------

    def _is_cluster(self, state_id: str) -> bool:
        return bool(self.children.get(state_id)) or self.states[state_id].data.get("kind") in (
            "parallel",
            "region",
            "compound",
        )

    def _anchor_in(self, state_id: str) -> str:
        while self._is_cluster(state_id) and self.children.get(state_id):
            kids = self.children[state_id]
            state_id = next((k for k in kids if self.states[k].data.get("initial")), kids[0])
        return state_id

    def _anchor_out(self, state_id: str) -> str:
        """Where a transition leaving a cluster starts: a final leaf next to what follows.

        The first phase (on top) is left from its last region, later phases (below)
        from their first one: both sit next to the state they complete into.
        """
        first_phase = self.states[state_id].data.get("initial") and (
            self.states[state_id].data.get("parent") is None
        )
        while self._is_cluster(state_id) and self.children.get(state_id):
            kids = self.children[state_id]
            if self.states[state_id].data.get("kind") == "parallel":
                state_id = kids[-1] if first_phase else kids[0]
                continue
            finals = [k for k in kids if self.states[k].data.get("final")]
            state_id = finals[0] if finals else kids[-1]
        return state_id

    def _state(self, state_id: str, depth: int) -> None:
        delta = self.states[state_id]
        colour = COLOURS[delta.status]
        pad = "  " * depth
        if not self._is_cluster(state_id) or not self.children.get(state_id):
            self.out.append(f"{pad}{_quote(state_id)} [{self._node(delta)}];")
            return
        data = delta.data
        parallel = data.get("kind") == "parallel"
        style = "rounded,filled" + (",dashed" if delta.status is Status.REMOVED else "")
        fill = _FILLS[delta.status] if delta.status is not Status.SAME else "#f6f8fa"
        if not parallel:
            style += ",dashed" if "dashed" not in style else ""
            fill = _FILLS[delta.status] if delta.status is not Status.SAME else "#ffffff"
        tag = "  <i>parallel</i>" if parallel else ""
        marks = self._status_mark(delta)
        label = f"<<b>{_html(str(data.get('label', state_id)))}</b>{tag}{marks}>"
        pen = 1.0 if delta.status is Status.SAME else 2.2
        self.out.append(f"{pad}subgraph {_quote('cluster_' + state_id)} {{")
        self.out.append(
            f'{pad}  graph [label={label}, style="{style}", fillcolor="{fill}", '
            f'color="{colour}", penwidth={pen}, fontsize={14 if parallel else 12}, margin=10];'
        )
        kids = self.children[state_id]
        if not parallel:
            first = next((k for k in kids if self.states[k].data.get("initial")), None)
            if first is not None:
                marker = f"__initial_{state_id}__"
                self.out.append(f'{pad}  {_quote(marker)} [shape=point, width=0.11, label=""];')
                self._arrow(marker, first, [f'color="{COLOURS[self.states[first].status]}"'])
        for kid in kids:
            self._state(kid, depth + 1)
        self.out.append(f"{pad}}}")

    def _status_mark(self, delta: StateDelta) -> str:
        if delta.status is Status.SAME:
            return ""
        return f'  <font color="{COLOURS[delta.status]}" point-size="10">({delta.status})</font>'

    def _node(self, delta: StateDelta) -> str:
        data = delta.data
        rows = [
            f"<tr><td><b>{_html(str(data.get('label', delta.id)))}</b>"
            f"{self._status_mark(delta)}</td></tr>"
        ]
        lines = self._entry_lines(delta)
        for edge in self.diff.edges:
            if edge.is_rejection and edge.data.get("source") == delta.id:
                events = " | ".join(edge.data.get("events") or ())
                text = f"{events} / ✗ {edge.data.get('rejection')}"
                lines.append(self._coloured(edge.status, text))
        for change in delta.changes:
            if not change.startswith(("entry:", "entry fields:")):
                lines.append(self._coloured(Status.CHANGED, f"was {change}"))
        if lines:
            rows.append("<hr/>")
            rows += [
                f'<tr><td align="left"><font point-size="10">{line}</font></td></tr>'
                for line in lines
            ]
        label = (
            '<<table border="0" cellborder="0" cellspacing="0" cellpadding="2">'
            + "".join(rows)
            + "</table>>"
        )
        status = delta.status
        style = "rounded,filled" + (",dashed" if status is Status.REMOVED else "")
        attrs = [
            "shape=box",
            f'style="{style}"',
            "margin=0.06",
            f"label={label}",
            f'fillcolor="{_FILLS[status]}"',
            f'color="{COLOURS[status] if status is not Status.SAME else _INK}"',
            f"penwidth={1.0 if status is Status.SAME else 2.2}",
        ]
        if data.get("final"):
            attrs.append("peripheries=2")
        return ", ".join(attrs)

    def _entry_lines(self, delta: StateDelta) -> list[str]:
        """Entry rows: kept ones plain, gained ones green, lost ones red."""
        before, after = _entries(delta.before), _entries(delta.after)
        lines = [
            self._coloured(Status.SAME if item in before else Status.ADDED, item) for item in after
        ]
        lines += [self._coloured(Status.REMOVED, item) for item in before if item not in after]
        return lines

    @staticmethod
    def _coloured(status: Status, text: str) -> str:
        """A row in its status colour, marked plus, minus or tilde (unchanged: plain ink)."""
        colour = _INK if status is Status.SAME else COLOURS[status]
        mark = {Status.ADDED: "+ ", Status.REMOVED: "\N{MINUS SIGN} ", Status.CHANGED: "~ "}.get(
            status, ""
        )
        return f'<font color="{colour}">{_html(mark + text)}</font>'

    # -- transitions -----------------------------------------------------------

    def _edge(self, delta: EdgeDelta) -> None:
        data = delta.data
        source, target = str(data["source"]), str(data["target"])
        if source not in self.states or target not in self.states:
            return
        colour = COLOURS[delta.status]
        lines = [_html(line) for line in _label_lines(data)]
        if delta.status is Status.CHANGED and delta.before is not None:
            lines += [
                f'<font color="{colour}" point-size="9">{_html(line)}</font>'
                for was in _was(delta.before, delta.after or {})
                for line in textwrap.wrap(was, width=_WIDTH + 6)
            ]
        if delta.status is not Status.SAME:
            lines.insert(0, f'<font color="{colour}"><b>{delta.status}</b></font>')
        attrs = [
            f'color="{colour}"',
            f'fontcolor="{colour if delta.status is not Status.SAME else _INK}"',
        ]
        attrs.append(f"penwidth={1.0 if delta.status is Status.SAME else 2.2}")
        styles = []
        if data.get("kind") == "eventless" or delta.status is Status.REMOVED:
            styles.append("dashed")
        if data.get("kind") == "done":
            styles.append("bold")
        if styles:
            attrs.append(f'style="{",".join(styles)}"')
        label = "<" + "<br/>".join(lines) + ">" if lines else "<>"
        source_data = self.states[source].data
        if (
            source_data.get("parent") is None
            and self._is_cluster(source)
            and self._is_cluster(target)
            and self.children.get(source)
        ):
            self._stacked(delta, source, target, attrs, label)
            return
        if lines:
            attrs.append(f"label={label}")
        if self._is_cluster(source):
            attrs.append(f"ltail={_quote('cluster_' + source)}")
        if self._is_cluster(target):
            attrs.append(f"lhead={_quote('cluster_' + target)}")
        if (
            source_data.get("parent") is None
            and not source_data.get("initial")
            and self._is_cluster(source)
        ):
            # Leaving a later phase (stacked below the first) must not pull it rightwards:
            # the first phase and the states after it decide where those sit.
            attrs.append("constraint=false")
        tail = self._anchor_out(source)
        head = self._anchor_in(target)
        if tail == head and self._is_cluster(source):
            return  # a cluster's self-loop has nowhere to go in Graphviz
        self.out.append(f"  {_quote(tail)} -> {_quote(head)} [{', '.join(attrs)}];")

    def _stacked(
        self, delta: EdgeDelta, source: str, target: str, attrs: list[str], label: str
    ) -> None:
        """Between two top-level clusters: down the left-hand side, label as its own node.

        Phases stack vertically (the first above the next); a label node between
        them can never sit on a cluster border.
        """
        joint = f"__via_{id(delta)}__"
        self.out.append(
            f"  {_quote(joint)} [shape=plaintext, fontsize=10, margin=0.02, label={label}];"
        )
        last = self.children[source][-1]
        tail = f"__initial_{last}__" if self.children.get(last) else self._anchor_in(last)
        into = [*attrs, "arrowhead=none", f"ltail={_quote('cluster_' + source)}"]
        out_of = [*attrs, "constraint=false"]
        if self._is_cluster(target):
            out_of.append(f"lhead={_quote('cluster_' + target)}")
        self.out.append(f"  {_quote(tail)} -> {_quote(joint)} [{', '.join(into)}];")
        self.out.append(
            f"  {_quote(joint)} -> {_quote(self._anchor_in(target))} [{', '.join(out_of)}];"
        )

    def _arrow(self, tail: str, head: str, attrs: Iterable[str]) -> None:
        extra = list(attrs)
        if head in self.states and self._is_cluster(head):
            extra.append(f"lhead={_quote('cluster_' + head)}")
            head = self._anchor_in(head)
        if tail in self.states and self._is_cluster(tail):
            extra.append(f"ltail={_quote('cluster_' + tail)}")
            tail = self._anchor_out(tail)
        self.out.append(f"  {_quote(tail)} -> {_quote(head)} [{', '.join(extra)}];")


def _was(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What a changed transition was, in the words its label uses."""
    out = []
    for name, words in _EDGE_FIELDS:
        if _value(before, name) == _value(after, name):
            continue
        if name == "guard":
            guard = before.get("guard")
            old = "none" if guard is None else f"[{guard.get('text') or guard.get('expression')}]"
        else:
            old = _text(_value(before, name))
        out.append(f"was {words}: {old}")
    return out


def _entries(state: Mapping[str, Any] | None) -> list[str]:
    if state is None:
        return []
    actions = [f"entry / {name}" for name in state.get("entry_actions") or ()]
    fields = [f"entry / {str(name).replace('_', ' ')}" for name in state.get("entry_fields") or ()]
    return actions + fields


def _label_lines(edge: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    events = " | ".join(edge.get("events") or ())
    if events:
        lines += _wrap(events)
    guard = edge.get("guard")
    if guard is not None:
        lines += _wrap(f"[{guard.get('text') or guard.get('expression')}]")
    lines += [
        f"check {str(name).removeprefix('validate_').replace('_', ' ')}"
        for name in edge.get("validators") or ()
    ]
    lines += [f"/ {str(name).replace('_', ' ')}" for name in edge.get("effects") or ()]
    return lines


def chart_diff_dot(diff: ChartDiff, title: str) -> str:
    """The union of both charts as DOT, coloured by status, with a legend (deterministic)."""
    return _Picture(diff, title).render()

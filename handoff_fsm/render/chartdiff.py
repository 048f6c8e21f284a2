"""The picture of a structural chart diff: both charts as one statechart, coloured by status.

Rule kept here: the picture draws what :func:`~handoff_fsm.structure.chart_diff`
found and nothing else: the union of both charts (B's layout, A's removed parts
where they were), added parts green, removed parts red and dashed, changed parts
amber with what they were, the rest grey, and a legend above. Colours and the font
come from :mod:`~handoff_fsm.render.style`; label text is escaped by
:mod:`~handoff_fsm.render.labels`. Output is a pure function of the diff.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any, Final

from handoff_fsm.render.labels import text as _html
from handoff_fsm.render.style import DIFF_FILL, DIFF_LINE, FONT, INK, MUTED, UNCHANGED_CLUSTER_FILL
from handoff_fsm.structure.chartdiff import (
    EDGE_FIELDS,
    ChartDiff,
    EdgeDelta,
    StateDelta,
    Status,
    field_value,
    value_text,
)

COLOURS: Final = {status: DIFF_LINE[status.value] for status in Status}
"""Line and text colour of each status."""
_FILLS: Final = {status: DIFF_FILL[status.value] for status in Status}
_INK: Final = INK
_MUTED: Final = MUTED
_WIDTH: Final = 28


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
        fill = _FILLS[delta.status] if delta.status is not Status.SAME else UNCHANGED_CLUSTER_FILL
        if not parallel:
            style += ",dashed" if "dashed" not in style else ""
            fill = (
                _FILLS[delta.status]
                if delta.status is not Status.SAME
                else DIFF_FILL[Status.SAME.value]
            )
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
    for name, words in EDGE_FIELDS:
        if field_value(before, name) == field_value(after, name):
            continue
        if name == "guard":
            guard = before.get("guard")
            old = "none" if guard is None else f"[{guard.get('text') or guard.get('expression')}]"
        else:
            old = value_text(field_value(before, name))
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

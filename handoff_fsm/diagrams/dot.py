"""The statechart as Graphviz DOT: parallel states and regions as clusters.

Rule kept here: this module only decides how the :class:`~.model.ChartModel`
looks (layout, fonts, colours); it never adds or drops a state or a
transition. The same function draws the plain chart and a trace overlay
(:class:`Highlight`), so the two can never disagree about the chart. Output is
a pure function of its inputs: stable order, no timestamps.

Layout: ``rankdir=LR``, so each region reads left to right; the regions of a
parallel state stack vertically inside its cluster; ``cleaning_up`` sits below
``active`` (the edge between them does not constrain ranks) and ``complete``
to the right of both. Eventless transitions are dashed, ``done.state`` ones
bold; a rejected event is a red row of its state ("✗ error code"), not a loop.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from handoff_fsm.diagrams.model import (
    ChartModel,
    Edge,
    EdgeKind,
    StateKind,
    StateNode,
    effect_text,
    field_text,
)

FONT = "DejaVu Sans,Verdana,sans-serif"
"""Graphviz lays out with the first family (Debian's fonts-dejavu, on every machine of this
kind, so the layout is the same everywhere); SVG viewers get the whole list as CSS."""

_INK = "#1f2933"
_MUTED = "#52606d"
_REJECT = "#b3261e"
_CLUSTER_FILL = {"active": "#eef5fc", "cleaning_up": "#fdf3e7"}
_REGION_FILL = "#ffffff"
_VISITED_FILL = "#dff3e4"
_TAKEN = "#1565c0"
_FINAL_MARK = "#0b7a3e"
_LABEL_WIDTH = 26


@dataclass(frozen=True, slots=True)
class Highlight:
    """What a trace overlay marks on the chart (see :mod:`handoff_fsm.diagrams.overlay`)."""

    visited: frozenset[str] = frozenset()
    """State ids that were active at some point (atomic states and their clusters)."""
    taken: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    """Edge index -> the step numbers at which the transition was taken."""
    final: frozenset[str] = frozenset()
    """The active atomic states after the last step (the final configuration)."""
    rejected: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    """Rejection edge index -> step numbers at which the chart rejected the event there."""
    title: str = ""
    notes: tuple[str, ...] = ()
    """Lines listed beside the chart (the trace's errors)."""


def statechart_dot(model: ChartModel, highlight: Highlight | None = None) -> str:
    """The chart as DOT source (deterministic; pass ``highlight`` for a trace overlay)."""
    return _Writer(model, highlight).render()


# ---------------------------------------------------------------------- helpers


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _wrap(text: str, width: int = _LABEL_WIDTH) -> list[str]:
    return textwrap.wrap(text, width=width, break_long_words=False) or [""]


def _steps(numbers: Iterable[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)


def _guard_lines(text: str) -> list[str]:
    """``[a and b]`` broken after each ``and`` so a long guard stays narrow."""
    parts = text.split(" and ")
    lines = [f"{part} and" for part in parts[:-1]] + [parts[-1]]
    lines[0] = "[" + lines[0]
    lines[-1] += "]"
    return lines


def edge_label_lines(edge: Edge) -> list[str]:
    """The lines of a transition's label: event, [guard], checks, / effects."""
    lines: list[str] = []
    if edge.events:
        lines += _wrap(edge.event_text.replace(" | ", " |\u00a0"), _LABEL_WIDTH)
    if edge.guard is not None:
        lines += _guard_lines(edge.guard.text)
    lines += [
        f"check {name.replace('_', ' ').removeprefix('validate ')}" for name in edge.validators
    ]
    lines += [f"/ {effect_text(name)}" for name in edge.effects]
    return lines


# ---------------------------------------------------------------------- writer


class _Writer:
    def __init__(self, model: ChartModel, highlight: Highlight | None) -> None:
        self.model = model
        self.hl = highlight
        self.out: list[str] = []

    # -- structure -----------------------------------------------------------

    def render(self) -> str:
        model = self.model
        title = self.hl.title if self.hl is not None and self.hl.title else model.name
        self.out += [
            f"digraph {model.name} {{",
            "  graph [rankdir=LR, compound=true, newrank=true, splines=spline, "
            f'nodesep=0.40, ranksep=0.45, pad=0.25, fontname="{FONT}", fontsize=16, '
            f"labelloc=t, labeljust=l, label=<<b>{_html(title)}</b>>];",
            f'  node [fontname="{FONT}", fontsize=12, color="{_INK}", fontcolor="{_INK}"];',
            f'  edge [fontname="{FONT}", fontsize=10, color="{_MUTED}", fontcolor="{_INK}", '
            "arrowsize=0.7];",
        ]
        initial = model.state(model.initial)
        self.out.append('  "__start__" [shape=point, width=0.16, label=""];')
        self.out.append(
            f"  {_quote('__start__')} -> {_quote(self._anchor_in(initial))}"
            + (f" [lhead={_quote(self._cluster(initial.id))}];" if initial.is_cluster else ";")
        )
        for state_id in model.top_level:
            self._state(model.state(state_id), depth=1)
        for edge in model.edges:
            self._edge(edge)
        finals = [model.state(s) for s in model.top_level if model.state(s).final]
        for final in finals:
            end = f"__end_{final.id}__"
            self.out.append(
                f'  {_quote(end)} [shape=doublecircle, style=filled, fillcolor="{_INK}", '
                'width=0.09, label=""];'
            )
            self.out.append(f"  {_quote(final.id)} -> {_quote(end)};")
        if self.hl is not None and self.hl.notes:
            self._notes(self.hl.notes, after=[f"__end_{final.id}__" for final in finals])
        self.out.append("}")
        return "\n".join(self.out) + "\n"

    def _cluster(self, state_id: str) -> str:
        return f"cluster_{state_id}"

    def _anchor_in(self, state: StateNode) -> str:
        """An atomic state inside ``state`` to attach cluster edges to (its initial path)."""
        while state.is_cluster:
            children = self.model.children(state.id)
            state = next((c for c in children if c.initial), children[0])
        return state.id

    def _state(self, state: StateNode, depth: int) -> None:
        pad = "  " * depth
        if not state.is_cluster:
            self.out.append(f"{pad}{_quote(state.id)} [{self._node_attrs(state)}];")
            return
        visited = self.hl is not None and state.id in self.hl.visited
        if state.kind is StateKind.PARALLEL:
            style = "rounded,filled,bold"
            fill = _CLUSTER_FILL.get(state.id, "#f4f6f8")
            label = f"<<b>{_html(state.label)}</b>  <i>parallel</i>>"
            fontsize = 14
        else:
            style = "rounded,filled,dashed"
            fill = _REGION_FILL
            label = f"<<b>{_html(state.label)}</b>>"
            fontsize = 12
        pen = f', penwidth=2, pencolor="{_TAKEN}"' if visited else ""
        self.out.append(f"{pad}subgraph {_quote(self._cluster(state.id))} {{")
        self.out.append(
            f'{pad}  graph [label={label}, style="{style}", fillcolor="{fill}", '
            f'color="{_MUTED}", fontsize={fontsize}, margin=10{pen}];'
        )
        children = self.model.children(state.id)
        if state.kind is not StateKind.PARALLEL:
            initial = next((c for c in children if c.initial), None)
            if initial is not None:
                marker = f"__initial_{state.id}__"
                self.out.append(f'{pad}  {_quote(marker)} [shape=point, width=0.12, label=""];')
                self.out.append(f"{pad}  {_quote(marker)} -> {_quote(self._anchor_in(initial))};")
        for child in children:
            self._state(child, depth + 1)
        self.out.append(f"{pad}}}")

    def _node_attrs(self, state: StateNode) -> str:
        hl = self.hl
        rows = [f"<tr><td><b>{_html(state.label)}</b></td></tr>"]
        compartment: list[str] = []
        for action in state.entry_actions:
            compartment.append(f'<font color="{_INK}">entry / {_html(action)}</font>')
        for name in state.entry_fields:
            compartment.append(f'<font color="{_MUTED}">entry / {_html(field_text(name))}</font>')
        for edge in self.model.edges:
            if edge.kind is EdgeKind.REJECTION and edge.source == state.id:
                steps = hl.rejected.get(edge.index, ()) if hl is not None else ()
                text = f"{edge.event_text} / ✗ {edge.rejection}"
                text = f"<b>{_html(text)}  {_steps(steps)}</b>" if steps else _html(text)
                compartment.append(f'<font color="{_REJECT}">{text}</font>')
        if compartment:
            rows.append("<hr/>")
            rows += [
                f'<tr><td align="left"><font point-size="10">{line}</font></td></tr>'
                for line in compartment
            ]
        label = (
            '<<table border="0" cellborder="0" cellspacing="0" cellpadding="2">'
            + "".join(rows)
            + "</table>>"
        )
        attrs = [
            "shape=box",
            'style="rounded,filled"',
            "margin=0.06",
            f"label={label}",
        ]
        fill = "#ffffff"
        pen = 1.2
        color = _INK
        if hl is not None and state.id in hl.visited:
            fill = _VISITED_FILL
        if hl is not None and state.id in hl.final:
            pen = 3.0
            color = _FINAL_MARK
        if state.final:
            attrs.append("peripheries=2")
        attrs += [f'fillcolor="{fill}"', f"penwidth={pen}", f'color="{color}"']
        return ", ".join(attrs)

    # -- transitions ---------------------------------------------------------

    def _edge(self, edge: Edge) -> None:
        if edge.kind is EdgeKind.REJECTION:
            return  # drawn as a row of its state
        model = self.model
        source = model.state(edge.source)
        target = model.state(edge.target)
        attrs: list[str] = []
        lines = [_html(line) for line in edge_label_lines(edge)]
        taken = self.hl.taken.get(edge.index, ()) if self.hl is not None else ()
        if taken:
            lines.insert(0, f"<b>{_steps(taken)}</b>")
            attrs += [f'color="{_TAKEN}"', f'fontcolor="{_TAKEN}"', "penwidth=2.4"]
        if edge.kind is EdgeKind.EVENTLESS:
            attrs.append('style="dashed"')
        elif edge.kind is EdgeKind.DONE:
            attrs.append('style="bold"')
        label = "<" + "<br/>".join(lines) + ">" if lines else None
        if source.parent is None and source.is_cluster and target.is_cluster:
            self._stacked_edge(edge, source, target, attrs, label)
            return
        if label is not None:
            attrs.append(f"label={label}")
        if source.is_cluster:
            attrs.append(f"ltail={_quote(self._cluster(source.id))}")
        if target.is_cluster:
            attrs.append(f"lhead={_quote(self._cluster(target.id))}")
        if source.parent is None and source.id != self.model.initial:
            # Leaving a later phase (cleaning_up -> complete) must not pull that phase
            # rightwards: only the first phase decides where ``complete`` sits.
            attrs.append("constraint=false")
        tail = self._anchor_out(source)
        head = self._anchor_in(target)
        self.out.append(f"  {_quote(tail)} -> {_quote(head)} [{', '.join(attrs)}];")

    def _stacked_edge(
        self,
        edge: Edge,
        source: StateNode,
        target: StateNode,
        attrs: list[str],
        label: str | None,
    ) -> None:
        """A transition between two top-level clusters, drawn down the left-hand side.

        The phases stack vertically (``active`` above ``cleaning_up``); the label is a
        node of its own between them, so it can never sit on a cluster border.
        """
        joint = f"__via_{edge.index}__"
        self.out.append(
            f"  {_quote(joint)} [shape=plaintext, fontsize=10, margin=0.02, label={label or '<>'}];"
        )
        last_region = self.model.children(source.id)[-1]
        tail = f"__initial_{last_region.id}__"
        head = self._anchor_in(target)
        into = [*attrs, "arrowhead=none", f"ltail={_quote(self._cluster(source.id))}"]
        out_of = [*attrs, "constraint=false", f"lhead={_quote(self._cluster(target.id))}"]
        self.out.append(f"  {_quote(tail)} -> {_quote(joint)} [{', '.join(into)}];")
        self.out.append(f"  {_quote(joint)} -> {_quote(head)} [{', '.join(out_of)}];")

    def _anchor_out(self, state: StateNode) -> str:
        """Where a transition leaving ``state`` starts: for clusters, a final leaf.

        The first phase (``active``, on top) is left from its last region, later phases
        (``cleaning_up``, below) from their first one: both sit next to ``complete``.
        """
        if not state.is_cluster:
            return state.id
        region = state
        if state.kind is StateKind.PARALLEL:
            regions = self.model.children(state.id)
            region = regions[-1] if state.id == self.model.initial else regions[0]
        leaves = self.model.children(region.id) if region.is_cluster else (region,)
        finals = [leaf for leaf in leaves if leaf.final]
        return (finals[0] if finals else leaves[-1]).id

    def _notes(self, notes: tuple[str, ...], after: list[str]) -> None:
        """The trace's errors in a box to the right of the chart (after its last rank)."""
        wrapped = [
            "<br/>&nbsp;&nbsp;&nbsp;&nbsp;".join(
                _html(part) for part in textwrap.wrap(note, width=90, break_long_words=False)
            )
            for note in notes
        ]
        rows = "".join(
            f'<tr><td align="left" balign="left"><font color="{_REJECT}">{line}</font></td></tr>'
            for line in wrapped
        )
        label = (
            '<<table border="1" color="#b3261e" cellborder="0" cellspacing="0" cellpadding="4">'
            f'<tr><td align="left"><b>Errors in the trace</b></td></tr>{rows}</table>>'
        )
        self.out.append(f'  "__notes__" [shape=plaintext, fontsize=11, label={label}];')
        for node in after:
            self.out.append(f'  {_quote(node)} -> "__notes__" [style=invis];')

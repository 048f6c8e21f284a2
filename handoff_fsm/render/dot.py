"""The statechart as Graphviz DOT: parallel states and regions as clusters.

Rule kept here: this module only decides how the :class:`~handoff_fsm.structure.ChartModel`
looks (layout, fonts, colours); it never adds or drops a state or a
transition. The same function draws the plain chart and a trace overlay
(:class:`Highlight`), so the two can never disagree about the chart. Output is
a pure function of its inputs: stable order, no timestamps.

The DOT is built with the ``graphviz`` package (``graphviz.Digraph``, a
subgraph per cluster), which quotes identifiers and attribute values; label
text is escaped in :mod:`~handoff_fsm.render.labels`.

Layout: top to bottom (``rankdir=TB``), so the picture stays narrow enough to
read at a web page's width: each region is a column read downwards, the
regions of a parallel state stand side by side in document order, later
phases (``cleaning_up``) sit below earlier ones, and a top-level atomic state
(``complete``) and the legend sit beside the last phase. Eventless transitions
are dashed, ``done.state`` ones bold; a rejected event is a red row of its
state ("✗ error code"), not a loop. The legend inside the picture
(:mod:`~handoff_fsm.render.legend`) says all of this.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import graphviz

from handoff_fsm.render.labels import html, plain, text
from handoff_fsm.render.legend import statechart_legend
from handoff_fsm.render.style import (
    FINAL_MARK,
    FONT,
    INK,
    MUTED,
    OTHER_PARALLEL_FILL,
    PAPER,
    PARALLEL_FILL,
    REGION_FILL,
    REJECT,
    TAKEN,
    VISITED_FILL,
)
from handoff_fsm.structure.describe import (
    ChartModel,
    Edge,
    EdgeKind,
    StateKind,
    StateNode,
    effect_text,
    field_text,
)

_INK = INK
_MUTED = MUTED
_REJECT = REJECT
_CLUSTER_FILL = PARALLEL_FILL
_REGION_FILL = REGION_FILL
_VISITED_FILL = VISITED_FILL
_TAKEN = TAKEN
_FINAL_MARK = FINAL_MARK
_LABEL_WIDTH = 22
_TITLE_WIDTH = 80
"""Characters per title line: an overlay's long title wraps instead of widening the picture."""


@dataclass(frozen=True, slots=True)
class Highlight:
    """What a trace overlay marks on the chart (see :mod:`handoff_fsm.render.overlay`)."""

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
    times: Mapping[int, str] = field(default_factory=dict)
    """Step number -> when it happened, as shown (``t=12.5 ms``), for a trace with times."""


def statechart_dot(model: ChartModel, highlight: Highlight | None = None) -> str:
    """The chart as DOT source (deterministic; pass ``highlight`` for a trace overlay)."""
    source: str = statechart_graph(model, highlight).source
    return source


def statechart_graph(model: ChartModel, highlight: Highlight | None = None) -> Any:
    """The chart as a ``graphviz.Digraph`` (its ``.source`` is :func:`statechart_dot`)."""
    return _Writer(model, highlight).graph()


# ---------------------------------------------------------------------- helpers


def _wrap(value: str, width: int = _LABEL_WIDTH) -> list[str]:
    return textwrap.wrap(value, width=width, break_long_words=False) or [""]


_TIMED_STEPS_SHOWN = 4
"""Timed steps a transition's label lists, one per line (the rest are counted)."""


def _step(number: int, times: Mapping[int, str]) -> str:
    time = times.get(number)
    return f"#{number} {time}" if time is not None else f"#{number}"


def _steps(numbers: Iterable[int], times: Mapping[int, str]) -> str:
    return ", ".join(_step(n, times) for n in numbers)


def _taken_lines(numbers: tuple[int, ...], times: Mapping[int, str]) -> list[str]:
    """The steps that took a transition: ``#2, #5``, or one timed step per line."""
    if not any(n in times for n in numbers):
        return [_steps(numbers, times)]
    lines = [_step(n, times) for n in numbers[:_TIMED_STEPS_SHOWN]]
    if len(numbers) > _TIMED_STEPS_SHOWN:
        lines.append(f"and {len(numbers) - _TIMED_STEPS_SHOWN} more")
    return lines


def _guard_lines(guard: str) -> list[str]:
    """``[a and b]`` broken after each ``and``, and long parts wrapped, so a guard stays narrow."""
    parts = guard.split(" and ")
    lines = [
        line
        for index, part in enumerate(parts)
        for line in _wrap(part + (" and" if index < len(parts) - 1 else ""))
    ]
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


def _cluster(state_id: str) -> str:
    return f"cluster_{state_id}"


def _order_node(state_id: str) -> str:
    """The invisible node atop a parallel state that orders its regions."""
    return f"__order_{state_id}__"


# ---------------------------------------------------------------------- writer


class _Writer:
    def __init__(self, model: ChartModel, highlight: Highlight | None) -> None:
        self.model = model
        self.hl = highlight

    # -- structure -----------------------------------------------------------

    def graph(self) -> Any:
        """The whole picture: the title atop, the chart, the legend along the bottom.

        The legend is the root graph's label (bottom left), so it never pushes a state
        aside; the title is the label of a borderless cluster holding the chart.
        """
        model = self.model
        title = self.hl.title if self.hl is not None and self.hl.title else model.title
        g = graphviz.Digraph(
            model.name,
            graph_attr={
                "rankdir": "TB",
                "compound": "true",
                "newrank": "true",
                "splines": "spline",
                "nodesep": "0.30",
                "ranksep": "0.40",
                "pad": "0.25",
                "fontname": FONT,
                "labelloc": "b",
                "labeljust": "l",
                "label": statechart_legend(overlay=self.hl is not None),
            },
            node_attr={"fontname": FONT, "fontsize": "12", "color": _INK, "fontcolor": _INK},
            edge_attr={
                "fontname": FONT,
                "fontsize": "10",
                "color": _MUTED,
                "fontcolor": _INK,
                "arrowsize": "0.7",
            },
        )
        lines = textwrap.wrap(title, width=_TITLE_WIDTH, break_long_words=False) or [""]
        chart_attrs = {
            "label": html("<br/>".join(f"<b>{text(line)}</b>" for line in lines)),
            "labelloc": "t",
            "labeljust": "l",
            "fontsize": "16",
            "peripheries": "0",
            "margin": "4",
        }
        with g.subgraph(name="cluster___chart__", graph_attr=chart_attrs) as chart:
            self._chart(chart)
        return g

    def _chart(self, g: Any) -> None:
        model = self.model
        initial = model.state(model.initial)
        g.node("__start__", label="", shape="point", width="0.16")
        g.edge(
            "__start__",
            self._top(initial),
            **({"lhead": _cluster(initial.id)} if initial.is_cluster else {}),
        )
        for state_id in model.top_level:
            self._state(g, model.state(state_id))
        for edge in model.edges:
            self._edge(g, edge)
        finals = [model.state(s) for s in model.top_level if model.state(s).final]
        for final in finals:
            end = f"__end_{final.id}__"
            g.node(
                end, label="", shape="doublecircle", style="filled", fillcolor=_INK, width="0.09"
            )
            g.edge(final.id, end)
        self._arrange(g)
        if self.hl is not None and self.hl.notes:
            self._notes(g, self.hl.notes, after=[f"__end_{final.id}__" for final in finals])

    # -- arrangement (invisible constraints only: nothing here is drawn) -------

    def _phases(self) -> list[StateNode]:
        """The top-level states drawn as clusters, in document order."""
        return [self.model.state(s) for s in self.model.top_level if self.model.state(s).is_cluster]

    def _regions(self, phase: StateNode) -> list[StateNode]:
        children = self.model.children(phase.id)
        return (
            [c for c in children if c.is_cluster] if phase.kind is StateKind.PARALLEL else [phase]
        )

    def _bottom(self, region: StateNode) -> str:
        """The leaf drawn lowest in a region column: its first final state, else its last."""
        leaves = [c for c in self.model.children(region.id) if not c.is_cluster]
        finals = [leaf for leaf in leaves if leaf.final]
        return (finals[0] if finals else leaves[-1]).id

    def _top(self, state: StateNode) -> str:
        """The node at the top of a cluster: its region-ordering node, or its first state."""
        return _order_node(state.id) if state.kind is StateKind.PARALLEL else self._anchor_in(state)

    def _arrange(self, g: Any) -> None:
        """Regions side by side, phases stacked, ``complete`` and the legend beside the last.

        Every constraint is an invisible edge or a ``rank=same`` group, so the
        picture shows only the chart; they only tell Graphviz where things go.
        """
        phases = self._phases()
        for upper, lower in itertools.pairwise(phases):
            # The lower phase starts below every region of the upper one: at the label of
            # the transition between them when there is one, else at its top.
            joints = [
                f"__via_{edge.index}__"
                for edge in self.model.edges
                if (edge.source, edge.target) == (upper.id, lower.id)
            ]
            target = joints[0] if joints else self._top(lower)
            for region in self._regions(upper):
                g.edge(self._bottom(region), target, style="invis")
        if not phases:
            return
        last = phases[-1]
        bottoms = [self._bottom(region) for region in self._regions(last)]
        # Final top-level states sit on the last phase's bottom rank, to its right; other
        # top-level states (a976b2bf's decoding) stack above them through their edges.
        finals = [
            s
            for s in self.model.top_level
            if not self.model.state(s).is_cluster and self.model.state(s).final
        ]
        self._row(g, [*bottoms, *finals])

    @staticmethod
    def _row(g: Any, nodes: list[str]) -> None:
        """``nodes`` on one rank, left to right in this order."""
        with g.subgraph() as row:
            row.attr(rank="same")
            for node in nodes:
                row.node(node)
        for left, right in itertools.pairwise(nodes):
            g.edge(left, right, style="invis")

    def _anchor_in(self, state: StateNode) -> str:
        """An atomic state inside ``state`` to attach cluster edges to (its initial path)."""
        while state.is_cluster:
            children = self.model.children(state.id)
            state = next((c for c in children if c.initial), children[0])
        return state.id

    def _state(self, g: Any, state: StateNode) -> None:
        if not state.is_cluster:
            g.node(state.id, **self._node_attrs(state))
            return
        visited = self.hl is not None and state.id in self.hl.visited
        if state.kind is StateKind.PARALLEL:
            style = "rounded,filled,bold"
            fill = _CLUSTER_FILL.get(state.id, OTHER_PARALLEL_FILL)
            label = html(f"<b>{text(state.label)}</b>  <i>parallel</i>")
            fontsize = "14"
        else:
            style = "rounded,filled,dashed"
            fill = _REGION_FILL
            label = html(f"<b>{text(state.label)}</b>")
            fontsize = "12"
        attrs = {
            "label": label,
            "style": style,
            "fillcolor": fill,
            "color": _MUTED,
            "fontsize": fontsize,
            "margin": "10",
            "peripheries": "1",
        }
        if visited:
            attrs |= {"penwidth": "2", "pencolor": _TAKEN}
        with g.subgraph(name=_cluster(state.id), graph_attr=attrs) as cluster:
            children = self.model.children(state.id)
            if state.kind is StateKind.PARALLEL:
                # Graphviz keeps the out-edges of an ``ordering=out`` node left to right as
                # written: the regions stand side by side in document order.
                order = _order_node(state.id)
                cluster.node(
                    order, shape="point", width="0", height="0", style="invis", ordering="out"
                )
                for region in children:
                    if region.is_cluster:
                        cluster.edge(order, f"__initial_{region.id}__", style="invis")
            else:
                initial = next((c for c in children if c.initial), None)
                if initial is not None:
                    marker = f"__initial_{state.id}__"
                    cluster.node(marker, label="", shape="point", width="0.12")
                    cluster.edge(marker, self._anchor_in(initial))
            for child in children:
                self._state(cluster, child)

    def _node_attrs(self, state: StateNode) -> dict[str, str]:
        hl = self.hl
        rows = [f"<tr><td><b>{text(state.label)}</b></td></tr>"]
        compartment: list[str] = []
        for action in state.entry_actions:
            compartment.append(f'<font color="{_INK}">entry / {text(action)}</font>')
        for name in state.entry_fields:
            compartment.append(f'<font color="{_MUTED}">entry / {text(field_text(name))}</font>')
        for edge in self.model.edges:
            if edge.kind is EdgeKind.REJECTION and edge.source == state.id:
                steps = hl.rejected.get(edge.index, ()) if hl is not None else ()
                row = f"{text(edge.event_text)} /<br/>&nbsp;&nbsp;✗ {text(str(edge.rejection))}"
                if hl is not None and steps:
                    row = f"<b>{row}  {text(_steps(steps, hl.times))}</b>"
                compartment.append(f'<font color="{_REJECT}">{row}</font>')
        if compartment:
            rows.append("<hr/>")
            rows += [
                f'<tr><td align="left" balign="left"><font point-size="10">{line}</font></td></tr>'
                for line in compartment
            ]
        attrs = {
            "label": html(
                '<table border="0" cellborder="0" cellspacing="0" cellpadding="2">'
                + "".join(rows)
                + "</table>"
            ),
            "shape": "box",
            "style": "rounded,filled",
            "margin": "0.10,0.05",
            "fillcolor": PAPER,
            "penwidth": "1.2",
            "color": _INK,
        }
        if hl is not None and state.id in hl.visited:
            attrs["fillcolor"] = _VISITED_FILL
        if hl is not None and state.id in hl.final:
            attrs |= {"penwidth": "3.0", "color": _FINAL_MARK}
        if state.final:
            attrs["peripheries"] = "2"
        return attrs

    # -- transitions ---------------------------------------------------------

    def _edge(self, g: Any, edge: Edge) -> None:
        if edge.kind is EdgeKind.REJECTION:
            return  # drawn as a row of its state
        model = self.model
        source = model.state(edge.source)
        target = model.state(edge.target)
        attrs: dict[str, str] = {}
        lines = [text(line) for line in edge_label_lines(edge)]
        taken = self.hl.taken.get(edge.index, ()) if self.hl is not None else ()
        if taken:
            assert self.hl is not None
            lines[:0] = [f"<b>{text(line)}</b>" for line in _taken_lines(taken, self.hl.times)]
            attrs |= {"color": _TAKEN, "fontcolor": _TAKEN, "penwidth": "2.4"}
        if edge.kind is EdgeKind.EVENTLESS:
            attrs["style"] = "dashed"
        elif edge.kind is EdgeKind.DONE:
            attrs["style"] = "bold"
        label = html("<br/>".join(lines)) if lines else None
        if source.parent is None and source.is_cluster and target.is_cluster:
            self._stacked_edge(g, edge, attrs=attrs, label=label)
            return
        if label is not None:
            attrs["label"] = label
        if source.is_cluster:
            attrs["ltail"] = _cluster(source.id)
        if target.is_cluster:
            attrs["lhead"] = _cluster(target.id)
        if source.parent is None and source.is_cluster:
            # Leaving a phase for a top-level state (``complete``): where that state sits
            # is decided by :meth:`_arrange`, beside the last phase.
            attrs["constraint"] = "false"
        g.edge(self._anchor_out(source), self._anchor_in(target), **attrs)

    def _stacked_edge(
        self,
        g: Any,
        edge: Edge,
        *,
        attrs: dict[str, str],
        label: str | None,
    ) -> None:
        """A transition between two top-level clusters, drawn from one down to the next.

        The phases stack vertically (``active`` above ``cleaning_up``); the label is a
        node of its own between them, so it can never sit on a cluster border.
        """
        source = self.model.state(edge.source)
        target = self.model.state(edge.target)
        joint = f"__via_{edge.index}__"
        g.node(joint, label=label or plain(""), shape="plaintext", fontsize="10", margin="0.02")
        tail = self._bottom(self._regions(source)[0])
        g.edge(tail, joint, **attrs, arrowhead="none", ltail=_cluster(source.id))
        g.edge(joint, self._top(target), **attrs, lhead=_cluster(target.id))

    def _anchor_out(self, state: StateNode) -> str:
        """Where a transition leaving a cluster starts: the bottom of its last region.

        The last region's column is the one beside ``complete`` (see :meth:`_arrange`).
        """
        return state.id if not state.is_cluster else self._bottom(self._regions(state)[-1])

    def _notes(self, g: Any, notes: tuple[str, ...], after: list[str]) -> None:
        """The trace's errors in a box to the right of the chart (after its last rank)."""
        wrapped = [
            "<br/>&nbsp;&nbsp;&nbsp;&nbsp;".join(
                text(part) for part in textwrap.wrap(note, width=90, break_long_words=False)
            )
            for note in notes
        ]
        rows = "".join(
            f'<tr><td align="left" balign="left"><font color="{_REJECT}">{line}</font></td></tr>'
            for line in wrapped
        )
        g.node(
            "__notes__",
            label=html(
                f'<table border="1" color="{_REJECT}" cellborder="0" cellspacing="0" '
                f'cellpadding="4"><tr><td align="left"><b>Errors in the trace</b></td></tr>'
                f"{rows}</table>"
            ),
            shape="plaintext",
            fontsize="11",
        )
        for node in after:
            g.edge(node, "__notes__", style="invis")

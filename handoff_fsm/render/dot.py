"""The statechart as Graphviz DOT: parallel states and regions as clusters.

Rule kept here: this module only decides how the :class:`~handoff_fsm.structure.ChartModel`
looks (layout, fonts, colours); it never adds or drops a state or a
transition. The same writer draws the plain chart, a trace overlay
(:class:`Highlight`) and a structural diff (:class:`DiffMarks`, on the union of both
charts), so they can never disagree about the chart or its layout. Output is a pure
function of its inputs: stable order, no timestamps.

The DOT is built with the ``graphviz`` package (``graphviz.Digraph``, a
subgraph per cluster), which quotes identifiers and attribute values; label
text is escaped in :mod:`~handoff_fsm.render.labels` and worded in
:mod:`~handoff_fsm.render.words`.

Layout: top to bottom (``rankdir=TB``), so the picture stays narrow enough to
read at a web page's width: each region is a column read downwards, the
regions of a parallel state stand side by side in document order, later
phases (``cleaning_up``) sit below earlier ones, and a top-level atomic state
(``complete``) sits beside the last phase. Side by side, a whole configuration (a
state in each region) is in view at once, which the pages stepping through a trace
need (:mod:`~handoff_fsm.render.livechart`). A structural diff is read down a
document's column instead (``DIFF.md``), so it is drawn *stacked*: the regions of a
parallel state one under the other in document order, ``complete`` below the last
phase, the legend in one column, and the picture is as wide as one region, however
many a parallel state has. A labelled transition is drawn
through a node of its own that holds the label (``__via_<index>__``), unless it
crosses from one region into another (Graphviz places that label): Graphviz keeps
nodes apart and inside their cluster, so those labels never overlap and none sits on
a region's border. Eventless transitions are dashed,
``done.state`` ones bold; a rejected event is a red row of its state ("✗ error
code"), not a loop. The writer records every kind of mark it draws, and the legend
inside the picture (:mod:`~handoff_fsm.render.legend`) explains exactly those.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import graphviz

from handoff_fsm.render.labels import html, plain, text
from handoff_fsm.render.legend import Key, Mark, statechart_legend
from handoff_fsm.render.placement import Placement, cluster_name, initial_node, order_node, via
from handoff_fsm.render.style import (
    DIFF_FILL,
    DIFF_LINE,
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
    UNCHANGED_CLUSTER_FILL,
    VISITED_FILL,
)
from handoff_fsm.render.words import (
    Row,
    RowKind,
    edge_rejection_rows,
    edge_rows,
    row_lines,
    state_entry_rows,
)
from handoff_fsm.structure.chartdiff import Status
from handoff_fsm.structure.describe import ChartModel, Edge, EdgeKind, StateKind, StateNode

_INK = INK
_MUTED = MUTED
_REJECT = REJECT
_CLUSTER_FILL = PARALLEL_FILL
_REGION_FILL = REGION_FILL
_VISITED_FILL = VISITED_FILL
_TAKEN = TAKEN
_FINAL_MARK = FINAL_MARK
_TITLE_WIDTH = 80
"""Characters per title line: an overlay's long title wraps instead of widening the picture."""
_ROW_COLOURS: Final = {RowKind.ENTRY_FIELD: MUTED, RowKind.REJECTION: REJECT}
"""Rows of a state drawn in a colour of their own (the others in ink)."""
_LINES: Final = {
    EdgeKind.EVENT: Mark.EVENT_LINE,
    EdgeKind.EVENTLESS: Mark.EVENTLESS_LINE,
    EdgeKind.DONE: Mark.DONE_LINE,
}
_STATUS_MARKS: Final = {
    Status.ADDED: Mark.ADDED,
    Status.REMOVED: Mark.REMOVED,
    Status.CHANGED: Mark.CHANGED,
    Status.SAME: Mark.UNCHANGED,
}
_SIGNS: Final = {Status.ADDED: "+ ", Status.REMOVED: "\N{MINUS SIGN} ", Status.CHANGED: "~ "}
_CHANGED_PEN: Final = "2.2"


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
    parts: Mapping[tuple[int, int], str] = field(default_factory=dict)
    """``(step number, edge index)`` -> the letter of that transition among the several one
    step took, in the order they fired (``a``, ``b``): ``#8a``, ``#8b``."""


@dataclass(frozen=True, slots=True)
class DiffMarks:
    """What a structural diff marks on the union of both charts (:mod:`~.chartdiff`).

    The union model carries the structure; the words are the diff's own rows (a side's
    chart may come from another version of the package, as plain data).
    """

    title: str
    subtitle: str
    states: Mapping[str, Status]
    """State id -> its status."""
    edges: Mapping[int, Status]
    """Edge index (in the union) -> its status."""
    rows: Mapping[int, tuple[Row, ...]]
    """Edge index -> its label rows (a rejection: its state's rows)."""
    was: Mapping[int | str, tuple[str, ...]] = field(default_factory=dict)
    """Edge index or state id -> what a changed part was (``was guard: none``)."""
    entries: Mapping[str, tuple[tuple[Row, Status], ...]] = field(default_factory=dict)
    """State id -> its entry rows, each with its status (kept, gained or lost)."""


def statechart_dot(
    model: ChartModel, highlight: Highlight | None = None, *, ids: bool = False
) -> str:
    """The chart as DOT source (deterministic; pass ``highlight`` for a trace overlay).

    With ``ids``, each transition's drawing carries the id ``transition-<index>`` (its
    :attr:`~handoff_fsm.structure.describe.Edge.index`; a transition drawn in two pieces
    carries it on both), which Graphviz writes into the SVG, so a page can mark the
    transitions a step takes (:mod:`~handoff_fsm.render.inspector`). Off by default: the
    committed figures' DOT, hence their stamps, stay as they are.
    """
    source: str = statechart_graph(model, highlight, ids=ids).source
    return source


def statechart_graph(
    model: ChartModel, highlight: Highlight | None = None, *, ids: bool = False
) -> Any:
    """The chart as a ``graphviz.Digraph`` (its ``.source`` is :func:`statechart_dot`)."""
    return _Writer(model, highlight, ids=ids).graph()


def diff_dot(union: ChartModel, marks: DiffMarks) -> str:
    """The union of two charts as DOT, each part drawn in its diff status's colours,
    stacked (see the module's layout)."""
    source: str = _Writer(union, None, ids=False, diff=marks, stacked=True).graph().source
    return source


def drawn_marks(
    model: ChartModel, highlight: Highlight | None = None, diff: DiffMarks | None = None
) -> frozenset[Key]:
    """Every kind of mark the picture of ``model`` draws: what its legend explains."""
    writer = _Writer(model, highlight, ids=False, diff=diff, stacked=diff is not None)
    writer.graph()
    return frozenset(writer.used)


TRANSITION_ID_PREFIX = "transition-"
"""How :func:`statechart_dot` with ``ids`` names a transition's drawing: this, then its index."""


# ---------------------------------------------------------------------- helpers


_TIMED_STEPS_SHOWN = 4
"""Timed steps a transition's label lists, one per line (the rest are counted)."""


def edge_label_lines(edge: Edge) -> list[str]:
    """The lines of a transition's label: what raises it, [guard], checks, / effects."""
    return [line for _, line in row_lines(edge_rows(edge))]


def _coloured(markup: str, colour: str, size: int | None = None) -> str:
    sized = f' point-size="{size}"' if size is not None else ""
    return f'<font color="{colour}"{sized}>{markup}</font>'


# ---------------------------------------------------------------------- writer


class _Writer:
    def __init__(
        self,
        model: ChartModel,
        highlight: Highlight | None,
        *,
        ids: bool,
        diff: DiffMarks | None = None,
        stacked: bool = False,
    ) -> None:
        self.model = model
        self.hl = highlight
        self.ids = ids
        self.diff = diff
        self.place = Placement(model, stacked=stacked)  # see the module's layout
        self.used: set[Key] = set()

    # -- structure -----------------------------------------------------------

    def graph(self) -> Any:
        """The whole picture: the title atop, the chart, the legend along the bottom.

        The legend is the root graph's label (bottom left), so it never pushes a state
        aside; the title is the label of a borderless cluster holding the chart. The
        legend is made last, from the marks the chart drew.
        """
        model = self.model
        title = self.hl.title if self.hl is not None and self.hl.title else model.title
        if self.diff is not None:
            title = self.diff.title
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
        heading = "<br/>".join(f"<b>{text(line)}</b>" for line in lines)
        if self.diff is not None and self.diff.subtitle:
            heading += "<br/>" + _coloured(text(self.diff.subtitle), _MUTED, 11)
        chart_attrs = {
            "label": html(heading),
            "labelloc": "t",
            "labeljust": "l",
            "fontsize": "16",
            "peripheries": "0",
            "margin": "4",
        }
        with g.subgraph(name="cluster___chart__", graph_attr=chart_attrs) as chart:
            self._chart(chart)
        g.attr(label=statechart_legend(self.used, one_column=self.place.stacked))
        return g

    def _chart(self, g: Any) -> None:
        model = self.model
        if self.diff is not None:  # a diff's key: every status, also those it has none of
            self.used |= set(_STATUS_MARKS.values())
        initial = model.state(model.initial)
        g.node("__start__", label="", shape="point", width="0.16")
        self.used.add(Mark.START)
        g.edge(
            "__start__",
            self.place.top(initial),
            **({"lhead": cluster_name(initial.id)} if initial.is_cluster else {}),
        )
        for state_id in model.top_level:
            self._state(g, model.state(state_id))
        self._joints(g, None)
        for edge in model.edges:
            self._edge(g, edge)
        finals = [model.state(s) for s in model.top_level if model.state(s).final]
        for final in finals:
            end = f"__end_{final.id}__"
            g.node(
                end, label="", shape="doublecircle", style="filled", fillcolor=_INK, width="0.09"
            )
            g.edge(final.id, end)
        self.place.arrange(g)
        if self.hl is not None and self.hl.notes:
            self._notes(g, self.hl.notes, after=[f"__end_{final.id}__" for final in finals])

    # -- states --------------------------------------------------------------

    def _state_status(self, state_id: str) -> Status | None:
        return self.diff.states.get(state_id) if self.diff is not None else None

    def _tag(self, status: Status | None) -> str:
        """``  (added)`` after a state's name in a diff (nothing when unchanged)."""
        if status is None or status is Status.SAME:
            return ""
        return "  " + _coloured(f"({status.value})", DIFF_LINE[status.value], 10)

    def _state(self, g: Any, state: StateNode) -> None:
        if not state.is_cluster:
            g.node(state.id, **self._node_attrs(state))
            return
        visited = self.hl is not None and state.id in self.hl.visited
        status = self._state_status(state.id)
        if state.kind is StateKind.PARALLEL:
            style = "rounded,filled,bold"
            fill = _CLUSTER_FILL.get(state.id, OTHER_PARALLEL_FILL)
            label = html(f"<b>{text(state.label)}</b>  <i>parallel</i>{self._tag(status)}")
            fontsize = "14"
            self.used.add(Mark.PARALLEL)
        else:
            style = "rounded,filled,dashed"
            fill = _REGION_FILL
            label = html(f"<b>{text(state.label)}</b>{self._tag(status)}")
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
        if status is not None:
            self.used.add(_STATUS_MARKS[status])
            if status is Status.SAME:
                attrs["fillcolor"] = (
                    UNCHANGED_CLUSTER_FILL if state.kind is StateKind.PARALLEL else PAPER
                )
            else:
                attrs |= {
                    "fillcolor": DIFF_FILL[status.value],
                    "color": DIFF_LINE[status.value],
                    "penwidth": _CHANGED_PEN,
                }
                if status is Status.REMOVED and "dashed" not in style:
                    attrs["style"] = style + ",dashed"
        with g.subgraph(name=cluster_name(state.id), graph_attr=attrs) as cluster:
            children = self.model.children(state.id)
            if state.kind is StateKind.PARALLEL and self.place.stacked:
                # Transitions into the state end here; its first region hangs below it
                # (:meth:`.Placement.arrange`).
                order = order_node(state.id)
                cluster.node(order, shape="point", width="0", height="0", style="invis")
            elif state.kind is StateKind.PARALLEL:
                # Graphviz keeps the out-edges of an ``ordering=out`` node left to right as
                # written: the regions stand side by side in document order.
                order = order_node(state.id)
                cluster.node(
                    order, shape="point", width="0", height="0", style="invis", ordering="out"
                )
                for region in children:
                    if region.is_cluster:
                        cluster.edge(order, initial_node(region.id), style="invis")
            else:
                initial = next((c for c in children if c.initial), None)
                if initial is not None:
                    marker = initial_node(state.id)
                    cluster.node(marker, label="", shape="point", width="0.12")
                    cluster.edge(marker, self.place.anchor_in(initial))
            for child in children:
                self._state(cluster, child)
            self._joints(cluster, state.id)

    def _compartment(self, state: StateNode) -> list[str]:
        """A state's rows under its name: entry rows, then the inputs it rejects."""
        hl, diff = self.hl, self.diff
        out: list[str] = []
        if diff is not None:
            entries = diff.entries.get(state.id, ())
        else:
            entries = tuple((row, Status.SAME) for row in state_entry_rows(state))
        for row, status in entries:
            self.used.add(row.kind)
            colour = _ROW_COLOURS.get(row.kind, _INK)
            words = text(row.text)
            if diff is not None and status is not Status.SAME:
                colour = DIFF_LINE[status.value]
                words = text(_SIGNS[status]) + words
                self.used.add(Mark.WAS)
            out.append(_coloured(words, colour))
        for edge in self.model.edges:
            if edge.kind is not EdgeKind.REJECTION or edge.source != state.id:
                continue
            rows = list(self._rows(edge))
            lines = [text(line) for _, line in row_lines(rows)]
            self.used |= {row.kind for row in rows}
            colour = _REJECT
            steps = hl.rejected.get(edge.index, ()) if hl is not None else ()
            edge_status = diff.edges.get(edge.index) if diff is not None else None
            if edge_status is not None and edge_status is not Status.SAME:
                colour = DIFF_LINE[edge_status.value]
                lines[0] = text(_SIGNS[edge_status]) + lines[0]
                self.used.add(Mark.WAS)
            markup = "<br/>".join(lines)
            if hl is not None and steps:
                markup = f"<b>{markup}  {text(self._steps(edge, steps))}</b>"
                self.used.add(Mark.REJECTED_AT)
            out.append(_coloured(markup, colour))
        if diff is not None:
            for was in diff.was.get(state.id, ()):
                out.append(_coloured(text(was), DIFF_LINE[Status.CHANGED.value], 9))
                self.used.add(Mark.WAS)
        return out

    def _node_attrs(self, state: StateNode) -> dict[str, str]:
        hl = self.hl
        status = self._state_status(state.id)
        rows = [f"<tr><td><b>{text(state.label)}</b>{self._tag(status)}</td></tr>"]
        compartment = self._compartment(state)
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
        self.used.add(Mark.STATE)
        if hl is not None and state.id in hl.visited:
            attrs["fillcolor"] = _VISITED_FILL
            self.used.add(Mark.VISITED)
        if hl is not None and state.id in hl.final:
            attrs |= {"penwidth": "3.0", "color": _FINAL_MARK}
            self.used.add(Mark.LAST)
        if status is not None:
            self.used.add(_STATUS_MARKS[status])
            attrs["fillcolor"] = DIFF_FILL[status.value]
            if status is not Status.SAME:
                attrs |= {"color": DIFF_LINE[status.value], "penwidth": _CHANGED_PEN}
            if status is Status.REMOVED:
                attrs["style"] = "rounded,filled,dashed"
        if state.final:
            attrs["peripheries"] = "2"
        return attrs

    # -- transitions ---------------------------------------------------------

    def _rows(self, edge: Edge) -> tuple[Row, ...]:
        """A transition's words: the diff's own, or the description's."""
        if self.diff is not None:
            return self.diff.rows.get(edge.index, ())
        if edge.kind is EdgeKind.REJECTION:
            return tuple(edge_rejection_rows(edge))
        return tuple(edge_rows(edge))

    def _steps(self, edge: Edge, numbers: tuple[int, ...]) -> str:
        """``#2, #5a`` for the steps that took ``edge``, each with its time if it has one."""
        return ", ".join(self._step(edge, number) for number in numbers)

    def _step(self, edge: Edge, number: int) -> str:
        assert self.hl is not None
        part = self.hl.parts.get((number, edge.index), "")
        if part:
            self.used.add(Mark.STEP_PARTS)
        time = self.hl.times.get(number)
        tag = f"#{number}{part}"
        return f"{tag} {time}" if time is not None else tag

    def _taken_lines(self, edge: Edge, numbers: tuple[int, ...]) -> list[str]:
        """The steps that took a transition: ``#2, #5``, or one timed step per line."""
        assert self.hl is not None
        if not any(n in self.hl.times for n in numbers):
            return [self._steps(edge, numbers)]
        lines = [self._step(edge, n) for n in numbers[:_TIMED_STEPS_SHOWN]]
        if len(numbers) > _TIMED_STEPS_SHOWN:
            lines.append(f"and {len(numbers) - _TIMED_STEPS_SHOWN} more")
        return lines

    def _look(self, edge: Edge) -> tuple[str | None, dict[str, str]]:
        """A transition's label and line attributes (colour, style, width, id)."""
        attrs: dict[str, str] = {}
        rows = self._rows(edge)
        self.used |= {row.kind for row in rows}
        self.used.add(_LINES[edge.kind])
        lines = [text(line) for _, line in row_lines(rows)]
        taken = self.hl.taken.get(edge.index, ()) if self.hl is not None else ()
        if taken:
            self.used.add(Mark.TAKEN)
            lines[:0] = [f"<b>{text(line)}</b>" for line in self._taken_lines(edge, taken)]
            attrs |= {"color": _TAKEN, "fontcolor": _TAKEN, "penwidth": "2.4"}
        status = self.diff.edges.get(edge.index) if self.diff is not None else None
        dashed = edge.kind is EdgeKind.EVENTLESS
        if status is not None:
            self.used.add(_STATUS_MARKS[status])
            colour = DIFF_LINE[status.value]
            attrs["color"] = colour
            if status is not Status.SAME:
                assert self.diff is not None
                was = [
                    _coloured(text(line), colour, 9)
                    for words in self.diff.was.get(edge.index, ())
                    for line in textwrap.wrap(words, width=28, break_long_words=False)
                ]
                if was:
                    self.used.add(Mark.WAS)
                lines = [f"<b>{text(status.value)}</b>", *lines, *was]
                attrs |= {"fontcolor": colour, "penwidth": _CHANGED_PEN}
                dashed = dashed or status is Status.REMOVED
        if dashed:
            attrs["style"] = "dashed"
        elif edge.kind is EdgeKind.DONE:
            attrs["style"] = "bold"
        if self.ids:
            attrs["id"] = f"{TRANSITION_ID_PREFIX}{edge.index}"
        return (html("<br/>".join(lines)) if lines else None), attrs

    def _jointed(self, edge: Edge) -> bool:
        """Drawn through a node holding its label (see the module's rule); transitions
        between two phases have theirs too (:meth:`_stacked_edge`)."""
        if edge.kind is EdgeKind.REJECTION or edge.source == edge.target:
            return False
        source, target = self.model.state(edge.source), self.model.state(edge.target)
        if target.is_cluster or source.parent != target.parent:
            return False
        if source.is_cluster and source.parent is not None:
            return False
        return bool(self._rows(edge)) or (self.hl is not None and edge.index in self.hl.taken)

    def _joints(self, g: Any, parent: str | None) -> None:
        """The label nodes of the transitions between ``parent``'s atomic states, inside it."""
        for edge in self.model.edges:
            if self._jointed(edge) and self.model.state(edge.source).parent == parent:
                label, attrs = self._look(edge)
                colour = attrs.get("fontcolor", _INK)
                g.node(
                    via(edge),
                    label=label or plain(""),
                    shape="plaintext",
                    fontsize="10",
                    fontcolor=colour,
                    margin="0.02",
                )

    def _edge(self, g: Any, edge: Edge) -> None:
        if edge.kind is EdgeKind.REJECTION:
            return  # drawn as a row of its state
        model = self.model
        source = model.state(edge.source)
        target = model.state(edge.target)
        label, attrs = self._look(edge)
        if self._jointed(edge):
            line = {k: v for k, v in attrs.items() if k != "fontcolor"}
            into = dict(line, arrowhead="none")
            if source.is_cluster:
                into["ltail"] = cluster_name(source.id)
                if source == self.place.phases()[-1] and not self.place.stacked:
                    into["constraint"] = "false"  # ``complete`` sits beside it, not below
            g.edge(self.place.anchor_out(source), via(edge), **into)
            g.edge(via(edge), target.id, **line)
            return
        if source.parent is None and source.is_cluster and target.is_cluster:
            self._stacked_edge(g, edge, attrs=attrs, label=label)
            return
        if label is not None:
            attrs["label"] = label
        if source.is_cluster:
            attrs["ltail"] = cluster_name(source.id)
        if target.is_cluster:
            attrs["lhead"] = cluster_name(target.id)
        if source.parent is None and source.is_cluster:
            # Leaving a phase for a top-level state (``complete``): where that state sits
            # is decided by :meth:`.Placement.arrange`, beside the last phase (stacked: below it).
            attrs["constraint"] = "false"
        g.edge(self.place.anchor_out(source), self.place.anchor_in(target), **attrs)

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
        joint = via(edge)
        g.node(joint, label=label or plain(""), shape="plaintext", fontsize="10", margin="0.02")
        tail = self.place.descent(source)
        g.edge(tail, joint, **attrs, arrowhead="none", ltail=cluster_name(source.id))
        g.edge(joint, self.place.top(target), **attrs, lhead=cluster_name(target.id))

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

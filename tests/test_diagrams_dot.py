"""The DOT statechart draws every state and transition of the model, and renders."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import graphviz
import pytest
from graphviz.quoting import quote

from handoff_fsm.render import Highlight, dot_digest, read_stamp, render, statechart_dot
from handoff_fsm.render.dot import edge_label_lines, statechart_graph
from handoff_fsm.render.words import edge_rejection_rows, row_lines
from handoff_fsm.structure import EdgeKind, describe_chart
from handoff_fsm.structure.describe import ChartModel

SVG = "{http://www.w3.org/2000/svg}"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _unhtml(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _q(name: str) -> str:
    """A DOT identifier as the graphviz package writes it."""
    quoted: str = quote(name)
    return quoted


def _statements(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines()]


def _node_line(dot: str, node: str) -> str:
    return next(line for line in _statements(dot) if line.startswith(f"{_q(node)} ["))


def test_the_dot_is_the_graphviz_packages_digraph() -> None:
    model = describe_chart()
    graph = statechart_graph(model)
    assert isinstance(graph, graphviz.Digraph)
    assert graph.source == statechart_dot(model)
    assert statechart_dot(model).startswith("digraph HandoffChart {")


def test_parallel_states_and_regions_are_clusters() -> None:
    model = describe_chart()
    dot = statechart_dot(model)
    statements = _statements(dot)
    for state in model.states:
        if state.is_cluster:
            assert f"subgraph {_q(f'cluster_{state.id}')} {{" in statements, state.id
        else:
            assert _node_line(dot, state.id), state.id
    # A region cluster sits inside its parallel state's cluster.
    active = statements.index("subgraph cluster_active {")
    cleaning = statements.index("subgraph cluster_cleaning_up {")
    assert active < statements.index("subgraph cluster_transfer {") < cleaning


def test_every_transition_is_labelled_with_its_event_and_guard() -> None:
    model = describe_chart()
    dot = statechart_dot(model)
    for edge in model.edges:
        if edge.kind is EdgeKind.REJECTION:
            rows = [line for _, line in row_lines(edge_rejection_rows(edge))]
            assert "<br/>".join(_html(line) for line in rows) in dot, rows
            assert f"✗ {edge.rejection}" in rows[-1] and edge.event_text in rows[0]
            continue
        lines = edge_label_lines(edge)
        assert f"label=<{'<br/>'.join(_html(line) for line in lines)}>" in dot, edge
        words = " ".join(lines)
        for event in edge.events:
            assert event in words
        if edge.guard is not None:
            assert f"[{edge.guard.text}]" in words


def test_states_show_the_actions_they_issue_and_finals_have_a_double_border() -> None:
    model = describe_chart()
    dot = statechart_dot(model)
    for state in model.states:
        for action in state.entry_actions:
            assert f"entry / {action}" in dot
    assert "peripheries=2" in _node_line(dot, "released")
    assert "peripheries" not in _node_line(dot, "held")


def test_initial_markers_mark_each_region_start_and_the_chart_start() -> None:
    model = describe_chart()
    dot = statechart_dot(model)
    statements = _statements(dot)
    for region in model.regions:
        initial = next(c for c in model.children(region.id) if c.initial)
        assert f"{_q(f'__initial_{region.id}__')} -> {_q(initial.id)}" in statements
    assert "__start__ -> __order_active__ [lhead=cluster_active]" in statements
    assert "complete -> __end_complete__" in statements


@pytest.mark.requires("dot")
def test_the_svg_contains_every_state_and_is_deterministic() -> None:
    model = describe_chart()
    dot = statechart_dot(model)
    svg = render(dot, "svg")
    assert svg == render(dot, "svg")
    assert read_stamp("svg", svg) == dot_digest(dot)
    root = ET.fromstring(svg)
    titles = {t.text for t in root.iter(f"{SVG}title")}
    for state in model.states:
        expected = f"cluster_{state.id}" if state.is_cluster else state.id
        assert expected in titles
    texts = {_unhtml(t.text or "") for t in root.iter(f"{SVG}text")}
    assert "entry / SubmitPrefill" in texts
    assert "[source held and" in texts


@pytest.mark.requires("dot")
def test_the_png_stays_readable_at_a_web_pages_width() -> None:
    dot = statechart_dot(describe_chart())
    png = render(dot, "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_stamp("png", png) == dot_digest(dot)
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    # GitHub shows an image at most ~900 px wide: 10 pt labels (13.3 px at 96 dpi) stay at
    # 9 px or more when the picture is at most 1330 px wide. Tall is fine: pages scroll.
    assert 800 < width <= 1330
    assert height < 2.2 * width


def _positions(dot: str) -> tuple[float, dict[str, tuple[float, float]]]:
    """Graphviz's own layout (``-Tplain``): the drawing's width and each node's centre."""
    plain = graphviz.Source(dot).pipe(format="plain", quiet=True).decode()
    width = 0.0
    nodes: dict[str, tuple[float, float]] = {}
    for line in plain.splitlines():
        fields = line.split()
        if fields[0] == "graph":
            width = float(fields[2])
        elif fields[0] == "node":
            nodes[fields[1].strip('"')] = (float(fields[2]), float(fields[3]))
    return width, nodes


def _within(model: ChartModel, node: str, ancestor: str) -> bool:
    """``node`` is a state of the chart inside ``ancestor``."""
    parent: str | None = node
    ids = {state.id for state in model.states}
    while parent in ids:
        if parent == ancestor:
            return True
        parent = model.state(parent).parent
    return False


@pytest.mark.requires("dot")
def test_regions_stand_side_by_side_in_order_and_phases_stack_downwards() -> None:
    model = describe_chart()
    width, at = _positions(statechart_dot(model))
    for phase in ("active", "cleaning_up"):
        starts = [at[f"__initial_{region.id}__"] for region in model.children(phase)]
        assert [x for x, _ in starts] == sorted(x for x, _ in starts), phase  # left to right
        assert len({y for _, y in starts}) == 1, phase  # on one rank
    active = [y for node, (_, y) in at.items() if _within(model, node, "active")]
    cleanup = [y for node, (_, y) in at.items() if _within(model, node, "cleaning_up")]
    for phase, placed in (("active", active), ("cleaning_up", cleanup)):
        atoms = [s for s in model.states if not s.is_cluster and _within(model, s.id, phase)]
        assert len(placed) == len(atoms) > 0
    assert min(active) > max(cleanup)  # y grows upwards: cleaning up lies below active
    region_right = max(at[f"__initial_{r.id}__"][0] for r in model.children("cleaning_up"))
    assert at["complete"][0] > region_right  # complete sits beside the last phase
    assert at["complete"][1] < min(active)
    assert width <= 1330 / 96


@pytest.mark.requires("dot")
def test_a_highlight_marks_visited_states_taken_edges_and_the_final_configuration() -> None:
    model = describe_chart()
    start = next(e for e in model.edges if e.events == ("start",) and e.source == "source_idle")
    rejection = next(e for e in model.edges if e.kind is EdgeKind.REJECTION)
    highlight = Highlight(
        visited=frozenset({"active", "source", "source_idle", "submitting"}),
        taken={start.index: (1, 4)},
        final=frozenset({"submitting"}),
        rejected={rejection.index: (2,)},
        title="overlay",
        notes=("step 2: source_held_before_submit",),
    )
    plain = statechart_dot(model)
    dot = statechart_dot(model, highlight)
    assert dot != plain
    assert "<b>#1, #4</b>" in dot
    assert f"✗ {rejection.rejection}  #2" in dot
    submitting = _node_line(dot, "submitting")
    assert "penwidth=3.0" in submitting
    assert "Errors in the trace" in dot
    assert "step 2: source_held_before_submit" in dot
    assert "label=<<b>overlay</b>>" in dot
    render(dot, "svg")  # the overlay is valid DOT

"""Pictures without flaws: the properties a reviewer checks by looking, checked by the code.

Each test states one flaw a picture must not have: an overlay on another revision's
chart, labels that overlap, a step number on two transitions, a state a transition
entered left unfilled; a Mermaid chart or a chart diff too wide for a page; a diff in
words the chart does not use; a fact held back drawn as a rejection; a delay shown to
seventeen digits; a rejection cut short; a legend drawn twice, or one that leaves a
row style unexplained. Where a property is about the layout, the layout is read back
from Graphviz itself (``-Tjson``: where each text goes) and each text measured with
the font the pictures use (DejaVu Sans, as matplotlib ships it).
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, Final

import graphviz
import pytest
from matplotlib.font_manager import FontProperties, findfont
from matplotlib.ft2font import FT2Font

from handoff_fsm.io.follow import FollowedRun, follow
from handoff_fsm.io.lifecycle import MessageKind, delay_text, trace_lifecycle
from handoff_fsm.model import Backend, Revision, StartTransfer, SubmitPrefill
from handoff_fsm.render.chartdiff import chart_diff_dot, union
from handoff_fsm.render.dot import drawn_marks, edge_label_lines, statechart_dot
from handoff_fsm.render.labels import text
from handoff_fsm.render.legend import explained, meaning
from handoff_fsm.render.mermaid import statechart_mermaid
from handoff_fsm.render.overlay import overlay_dot, overlay_highlight
from handoff_fsm.render.sequence import sequence_dot, sequence_markdown, sequence_mermaid
from handoff_fsm.render.style import DIFF_FILL, DIFF_LINE, HELD_BACK, REJECT, VISITED_FILL
from handoff_fsm.render.words import RowKind, edge_rejection_rows, edge_rows, row_lines
from handoff_fsm.review.diffreview import diff_review_files, report_chart_diff, revision_reports
from handoff_fsm.review.files import decode_cancel_side_by_side
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.decode_cancel import decode_cancel_runs
from handoff_fsm.simulate.driver import Simulation
from handoff_fsm.simulate.faults import AckFault, FaultPlan, ScriptedAck
from handoff_fsm.simulate.scenarios import scenario_runs
from handoff_fsm.simulate.trace import TraceWriter
from handoff_fsm.structure import EdgeKind, EventKind, describe_chart, revision_chart
from handoff_fsm.structure.chartdiff import Status
from handoff_fsm.structure.describe import ChartModel, StateKind, effect_text, input_events
from handoff_fsm.structure.transitions import (
    fired_in_order,
    revision_specific_transitions,
    step_transitions,
)
from tests.test_diagrams_mermaid import check_sequence_diagram

ROOT = Path(__file__).resolve().parents[1]
DIAGRAMS = ROOT / "diagrams"
FIGURES_RUN = ROOT / "docs" / "figures" / "run.jsonl"


# ---------------------------------------------------------------------- traces


def _lines(path: Path, coordinator: str | None = None) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if coordinator is None:
        return lines
    return [line for line in lines if json.loads(line)["coordinator"] == coordinator]


def _runs() -> Iterator[FollowedRun]:
    """Committed traces of both revisions, and timed runs of the simulator."""
    for path in sorted(DIAGRAMS.glob("lifecycle_*.jsonl")):
        yield follow(_lines(path))
    for revision in Revision:
        yield follow(_lines(DIAGRAMS / revision.value / "lifecycle_decode_cancel.jsonl"))
    for key in ("h0", "h7", "h12"):
        yield follow(_lines(FIGURES_RUN, key))


def _a976b2bf_run() -> FollowedRun:
    run = follow(_lines(DIAGRAMS / "a976b2bf" / "lifecycle_decode_cancel.jsonl"))
    assert run.revision is Revision.A976B2BF
    return run


@cache
def _held_back_trace() -> tuple[str, ...]:
    """A simulated handoff whose SubmitPrefill acknowledgement comes late: the session
    policy holds the SourceHeld that arrives first back, and applies it afterwards."""
    plan = FaultPlan(script=(ScriptedAck(0, SubmitPrefill, AckFault.LATE),), late_by_ms=60.0)
    out = io.StringIO()
    config = SimulationConfig(backend=Backend.VLLM, handoffs=1, seed=1, faults=plan)
    simulation = Simulation(config, recorder=TraceWriter(out, clock=lambda: simulation.now))
    result = simulation.run()
    assert result.held_back == 1
    return tuple(out.getvalue().splitlines())


# ---------------------------------------------------------------------- layout, read back


@cache
def _font(bold: bool) -> FT2Font:
    weight = "bold" if bold else "normal"
    return FT2Font(findfont(FontProperties(family="DejaVu Sans", weight=weight)))


def _width(words: str, size: float, bold: bool) -> float:
    """``words`` in DejaVu Sans of ``size`` points: its width in points."""
    font = _font(bold)
    font.set_size(size, 72)
    font.set_text(words)
    width: float = font.get_width_height()[0] / 64
    return width


Box = tuple[float, float, float, float]


def _texts(dot: str, engine: str = "dot", **options: Any) -> list[tuple[str, Box, str]]:
    """Every text Graphviz places, as (the object it belongs to, its box, its words).

    The position is Graphviz's (``-Tjson``); the width the larger of Graphviz's estimate
    and the font's own, as a browser or cairo draws it.
    """
    layout = json.loads(graphviz.Source(dot, engine=engine).pipe(format="json", **options))
    found: list[tuple[str, Box, str]] = []

    def collect(owner: str, item: dict[str, Any]) -> None:
        size, bold = 14.0, False
        for key in ("_ldraw_", "_hldraw_", "_tldraw_"):
            for op in item.get(key, ()):
                if op["op"] == "F":
                    size = op["size"]
                elif op["op"] == "t":
                    bold = bool(op["fontchar"] & 1)
                elif op["op"] == "T":
                    x, y = op["pt"]
                    width = max(op["width"], _width(op["text"], size, bold))
                    left = {"c": x - width / 2, "r": x - width}.get(op["align"], x)
                    box = (left, y - 0.25 * size, left + width, y + 0.75 * size)
                    found.append((owner, box, op["text"]))

    collect("graph", layout)
    for item in layout.get("objects", []):
        collect(f"object {item['_gvid']}", item)
    for item in layout.get("edges", []):
        collect(f"edge {item['_gvid']}", item)
    return found


def overlapping(dot: str, engine: str = "dot", **options: Any) -> list[tuple[str, str]]:
    """Pairs of texts of different labels that touch or overlap (less than 2 points apart)."""
    gap = 1.0
    return [
        (first, second)
        for (a, box_a, first), (b, box_b, second) in itertools.combinations(
            _texts(dot, engine, **options), 2
        )
        if a != b
        and box_a[0] - gap < box_b[2] + gap
        and box_b[0] - gap < box_a[2] + gap
        and box_a[1] - gap < box_b[3] + gap
        and box_b[1] - gap < box_a[3] + gap
    ]


def _svg_size(svg: bytes) -> tuple[float, float]:
    match = re.search(rb'<svg width="([0-9.]+)pt" height="([0-9.]+)pt"', svg)
    assert match is not None
    return float(match[1]), float(match[2])


# ---------------------------------------------------------------------- 8. the overlay


def test_an_a976b2bf_overlay_draws_that_revisions_chart_without_seed_only_edges() -> None:
    run = _a976b2bf_run()
    dot = overlay_dot(run)
    family = {edge.index: edge for edge in describe_chart().edges}
    seed_only = revision_specific_transitions()[Revision.SEED]
    mine = revision_specific_transitions()[Revision.A976B2BF]
    assert seed_only and mine
    for index in seed_only:
        label = "<br/>".join(text(line) for line in edge_label_lines(family[index]))
        assert label not in dot, family[index]
    chart = {edge.index: edge for edge in revision_chart(Revision.A976B2BF).edges}
    assert set(chart) >= mine
    for index in mine - {i for s in run.steps for i in s.transitions}:  # not taken: plain label
        label = "<br/>".join(text(line) for line in edge_label_lines(chart[index]))
        assert label in dot, chart[index]


@pytest.mark.parametrize("run", list(_runs()), ids=lambda run: run.coordinator)
def test_every_state_a_fired_transition_enters_is_filled_as_visited(run: FollowedRun) -> None:
    model = revision_chart(run.revision)
    highlight = overlay_highlight(run, model)
    fired = step_transitions(run.revision)
    edges = {edge.index: edge for edge in model.edges}
    dot = overlay_dot(run)
    for step in run.steps:
        if step.event is None or not step.transitions:
            continue
        for index in fired[(step.before.index, step.event)]:  # the framework's own record
            target = edges[index].target
            assert target in highlight.visited, (step.number, edges[index])
            if not model.state(target).is_cluster:
                node = next(n for n in dot.splitlines() if n.strip().startswith(f"{target} ["))
                assert f'fillcolor="{VISITED_FILL}"' in node, target


@pytest.mark.parametrize("run", list(_runs()), ids=lambda run: run.coordinator)
def test_each_step_number_stands_on_one_transition_in_firing_order(run: FollowedRun) -> None:
    dot = overlay_dot(run)
    chart = dot[: dot.rindex("How to read it")]  # the legend's samples are no steps
    tags = [
        tag
        for bold in re.findall(r"<b>([^<]*)</b>", chart)
        if "✗" not in bold  # a rejecting row's steps took no transition
        for tag in re.findall(r"#\d+[a-z]?\b", bold)
    ]
    taken = [step for step in run.steps if step.transitions]
    assert len(tags) == len(set(tags)), sorted(t for t in tags if tags.count(t) > 1)
    if " more</b>" not in dot:  # a transition taken more than four times lists four
        assert len(tags) == sum(len(step.transitions) for step in taken)
    order = fired_in_order(run.revision)
    for step in taken:
        assert step.event is not None
        assert step.transitions == order[(step.before.index, step.event)]
        if len(step.transitions) > 1:
            letters = [chr(ord("a") + i) for i in range(len(step.transitions))]
            assert {f"#{step.number}{letter}" for letter in letters} <= set(tags)
        else:
            assert f"#{step.number}" in tags


@pytest.mark.requires("dot")
@pytest.mark.parametrize("key", ["h0", "h12", "h7"])
def test_no_two_labels_of_an_overlay_overlap(key: str) -> None:
    run = follow(_lines(FIGURES_RUN, key))
    assert any(step.at_ms is not None for step in run.steps)  # timed: the widest labels
    assert overlapping(overlay_dot(run)) == []


@pytest.mark.requires("dot")
@pytest.mark.parametrize("revision", [None, *Revision], ids=str)
def test_no_two_labels_of_a_chart_overlap(revision: Revision | None) -> None:
    model = describe_chart() if revision is None else revision_chart(revision)
    assert overlapping(statechart_dot(model)) == []


# ---------------------------------------------------------------------- 9. width and words


def _parallel_bodies(source: str) -> dict[str, list[str]]:
    """Each parallel state's id -> its body's own lines (not those inside its boxes), stripped."""
    bodies: dict[str, list[str]] = {}
    opened: list[str | None] = []  # the enclosing blocks: a parallel state's id, or None
    for line in (raw.strip() for raw in source.splitlines()):
        if opened and opened[-1] is not None and line != "}":
            bodies[opened[-1]].append(line)
        if match := re.fullmatch(r'state ".* \(parallel\)" as (\w+) \{', line):
            opened.append(match[1])
            bodies[match[1]] = []
        elif line.endswith("{"):
            opened.append(None)
        elif line == "}":
            opened.pop()
    assert not opened
    return bodies


def test_the_mermaid_statechart_reads_top_to_bottom() -> None:
    # Down the page (``direction TB``), a parallel state's regions one under the other:
    # its body alone is laid ``direction LR``, where Mermaid stacks the region boxes it
    # holds, in order; a ``--`` separator would put the regions side by side.
    for model in (describe_chart(), *(revision_chart(r) for r in Revision)):
        source = statechart_mermaid(model)
        assert "\n    direction TB\n" in source
        bodies = _parallel_bodies(source)
        parallel = [s for s in model.states if s.kind is StateKind.PARALLEL]
        assert sorted(bodies) == sorted(s.id for s in parallel) != []
        assert [line.strip() for line in source.splitlines()].count("direction LR") == len(parallel)
        for state in parallel:
            body = bodies[state.id]
            regions = [c.id for c in model.children(state.id)]
            assert body[0] == "direction LR"
            assert [line.rpartition(" as ")[2] for line in body[1:]] == [
                f"{region} {{" for region in regions
            ]  # nothing but each region's box, in document order (no ``--`` between them)


def _chart_diff() -> tuple[str, Any]:
    report = revision_reports()[0]
    structure = report_chart_diff(report)
    assert structure is not None and not structure.same
    return chart_diff_dot(structure, "diff"), structure


@pytest.mark.requires("dot")
@pytest.mark.slow  # the chart diff explores both revisions
def test_the_chart_diff_reads_down_a_page_s_column_its_regions_stacked() -> None:
    dot, _ = _chart_diff()
    assert "rankdir=TB" in dot
    layout = json.loads(graphviz.Source(dot).pipe(format="json"))
    boxes = {
        item["name"]: [float(v) for v in item["bb"].split(",")]
        for item in layout["objects"]
        if "bb" in item
    }
    active, cleaning = boxes["cluster_active"], boxes["cluster_cleaning_up"]
    assert cleaning[3] < active[1]  # cleaning_up below active (y grows upwards)
    for phase, names in (
        ("active", ("source", "destination", "transfer")),
        ("cleaning_up", ("source_cleanup", "destination_cleanup")),
    ):
        regions = [boxes[f"cluster_{r}"] for r in names]
        for upper, lower in itertools.pairwise(regions):  # one under the other, in order
            assert lower[3] < upper[1], phase
    svg = graphviz.Source(dot).pipe(format="svg")
    width, height = _svg_size(svg)
    assert width <= 900 * 0.75  # 900 px (a page's column) at its natural size
    assert 2 * width < height  # it reads down a page's column
    assert overlapping(dot) == []


@pytest.mark.slow  # the chart diff explores both revisions
def test_the_chart_diff_uses_the_charts_own_words() -> None:
    dot, structure = _chart_diff()
    for delta in structure.edges:
        for effect in delta.data.get("effects") or ():
            assert text(f"/ {effect_text(effect)}") in dot, effect
            if effect_text(effect) != effect.replace("_", " "):
                assert effect.replace("_", " ") not in dot, effect
    b = revision_chart(revision_reports()[0].b)
    for edge in b.edges:  # B's chart drawn in the diff with B's own labels, word for word
        rejection = edge.kind is EdgeKind.REJECTION
        rows = edge_rejection_rows(edge) if rejection else edge_rows(edge)
        label = "<br/>".join(text(line) for _, line in row_lines(rows))
        assert label in dot, edge


@pytest.mark.slow  # the chart diff explores both revisions
def test_each_change_of_the_chart_diff_is_drawn_in_its_status_colours() -> None:
    dot, structure = _chart_diff()
    model, marks = union(structure)
    statuses = {delta.status for delta in structure.states} | {d.status for d in structure.edges}
    assert {Status.ADDED, Status.CHANGED} <= statuses
    lines = dot.splitlines()
    for state in model.states:
        status = marks.states[state.id]
        if state.is_cluster or status is Status.SAME:
            continue
        node = next(line for line in lines if line.strip().startswith(f"{state.id} ["))
        assert f'color="{DIFF_LINE[status.value]}"' in node
        assert f'fillcolor="{DIFF_FILL[status.value]}"' in node
    for edge in model.edges:
        status = marks.edges[edge.index]
        if edge.kind is EdgeKind.REJECTION or status is Status.SAME:
            continue
        drawn = [line for line in lines if f"__via_{edge.index}__ ->" in line]
        assert drawn and all(f'color="{DIFF_LINE[status.value]}"' in line for line in drawn)
        assert all("dashed" in line for line in drawn) is (
            status is Status.REMOVED or edge.kind is EdgeKind.EVENTLESS
        )
    legend = dot[dot.rindex("How to read it") :]
    for status in Status:  # every status explained, in its colours, whatever this diff has
        assert f'color="{DIFF_LINE[status.value]}"' in legend
        assert f'bgcolor="{DIFF_FILL[status.value]}"' in legend


@pytest.mark.requires("dot")
def test_every_per_difference_diagram_also_comes_as_svg() -> None:
    report = revision_reports()[0]
    files = diff_review_files(report, command="test")
    diagrams = sorted(name for name in files if re.fullmatch(r"difference_\d+\.mmd", name))
    assert len(diagrams) == len(report.differences) > 0
    markdown = files["DIFF.md"].decode("utf-8")
    for name in diagrams:
        picture = name.removesuffix(".mmd") + ".svg"
        svg = files[picture]
        assert svg.startswith(b"<?xml") and b'<metadata id="dot-sha256">' in svg
        assert f"]({picture})" in markdown
        width, _ = _svg_size(svg)
        assert width <= 900 * 0.75  # 900 px at its natural size
        mermaid = files[name].decode("utf-8")
        shown = svg.decode("utf-8")
        for number in range(1, mermaid.count("    I->>A: ") + 1):
            assert f">{number}. " in shown  # every step of the sequence diagram


# ---------------------------------------------------------------------- 10. lifecycles


def test_a_fact_the_session_held_back_is_drawn_held_back_and_applied_later() -> None:
    trace = _held_back_trace()
    lifecycle = trace_lifecycle(trace)
    kinds = [message.kind for message in lifecycle.messages]
    assert MessageKind.REJECTED not in kinds
    held = kinds.index(MessageKind.HELD)
    assert lifecycle.messages[held - 1].kind is MessageKind.FACT
    applied = [m for m in lifecycle.messages if m.text.endswith("(held back, applied now)")]
    assert len(applied) == 1 and applied[0].text.startswith("SourceHeld(")
    assert "none rejected, 1 held back" in lifecycle.messages[-1].text
    dot = sequence_dot(lifecycle)
    reply = [line for line in dot.splitlines() if f"m{held + 1}_a -> m{held + 1}_b" in line]
    assert reply and f'color="{HELD_BACK}"' in reply[0] and REJECT not in reply[0]
    assert "a fact held back (too early), applied later" in dot  # and its legend row
    mermaid = sequence_mermaid(lifecycle)
    assert "Coordinator--)Source: held back" in mermaid
    assert "Coordinator-xSource" not in mermaid
    check_sequence_diagram(mermaid)


def test_a_premature_fact_never_delivered_again_stays_a_rejection() -> None:
    run = next(r for r in scenario_runs() if r.scenario.name == "destination_first_failure")
    kinds = [message.kind for message in run.lifecycle.messages]
    assert MessageKind.REJECTED in kinds and MessageKind.HELD not in kinds


def _unescaped(words: str) -> str:
    """Mermaid text (:func:`~handoff_fsm.render.mermaid.mermaid_text`) as it is drawn."""
    for entity, char in (("#59;", ";"), ("#quot;", '"'), ("#lt;", "<"), ("#gt;", ">")):
        words = words.replace(entity, char)
    return words.replace("#37;", "%").replace("#35;", "#")


def _delays() -> list[tuple[Any, float]]:
    found = []
    for run in scenario_runs():
        for issued in run.lifecycle.issued:
            if isinstance(issued.action, StartTransfer):
                found.append((run.lifecycle, issued.action.delay_ms))
    assert found
    return found


def test_delays_are_rounded_in_the_picture_and_exact_in_the_step_table() -> None:
    for lifecycle, delay in _delays():
        assert round(delay, 4) != delay  # a delay a picture must round
        shown = f"(delay {delay_text(delay)} ms)"
        assert float(delay_text(delay)) == round(delay, 4)
        for picture in (sequence_mermaid(lifecycle), sequence_dot(lifecycle)):
            assert shown in picture
            assert repr(delay) not in picture
        table = sequence_markdown(lifecycle).split("## Steps", 1)[1]
        assert f"delay\\_ms={delay!r}" in table


def test_no_rejection_text_is_cut() -> None:
    for run in scenario_runs():
        followed = follow(run.trace)
        errors = [step.error for step in followed.steps if step.error is not None]
        rejections = [m.text for m in run.lifecycle.messages if m.kind is MessageKind.REJECTED]
        assert rejections == [f"✗ {code.value}: {message}" for code, message in errors]
        for words in rejections:
            mermaid = sequence_mermaid(run.lifecycle)
            shown = " ".join(
                _unescaped(part)
                for line in mermaid.splitlines()
                if "-x" in line
                for part in line.split(": ", 1)[1].split("<br>")
            )
            assert words in shown


@pytest.mark.requires("dot")
def test_no_two_texts_of_a_lifecycle_overlap() -> None:
    for run in scenario_runs():
        assert overlapping(sequence_dot(run.lifecycle), "neato", neato_no_op=2) == []
    lifecycle = trace_lifecycle(_held_back_trace())
    assert overlapping(sequence_dot(lifecycle), "neato", neato_no_op=2) == []


@pytest.mark.requires("dot")
def test_the_decode_cancel_figure_marks_where_the_runs_part_and_draws_one_legend() -> None:
    runs = decode_cancel_runs()
    figure = decode_cancel_side_by_side(runs).decode("utf-8")
    assert figure.count(">the runs part here ▼</text>") == len(runs) == 2
    assert figure.count(">start(), a fact or an issued action</text>") == 1
    assert len({run.parting_line for run in runs}) == 1
    for run in runs:  # each run parts at its Canceled fact, the first input that differs
        parting = run.followed.steps[run.cancel]
        assert parting.line == run.parting_line
        before = [step.input for step in run.followed.steps[: run.cancel]]
        assert before == [step.input for step in runs[0].followed.steps[: run.cancel]]
    answers = {run.followed.steps[run.cancel].reply for run in runs}
    assert len(answers) == len(runs)  # the replies to it differ


# ---------------------------------------------------------------------- 11. the legend


PICTURES: Final = ("family", *(revision.value for revision in Revision), "overlay", "diff")
"""The pictures whose legend is checked, by name: each is built by its own test, not while
the tests are collected (the diff's explores both revisions: a slow test, tests/quick.py)."""


def _picture(name: str) -> tuple[ChartModel, Any, Any]:
    """The model, highlight and diff marks of the picture ``name`` (:data:`PICTURES`)."""
    if name == "family":
        return describe_chart(), None, None
    if name == "overlay":
        run = follow(_lines(FIGURES_RUN, "h7"))
        model = revision_chart(run.revision)
        return model, overlay_highlight(run, model), None
    if name == "diff":
        union_model, marks = union(_chart_diff()[1])
        return union_model, None, marks
    return revision_chart(Revision(name)), None, None


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if n == "diff" else []) for n in PICTURES]
)
def test_the_legend_explains_every_style_the_picture_draws(name: str) -> None:
    model, highlight, marks = _picture(name)
    used = drawn_marks(model, highlight, marks)
    assert used <= explained()
    if marks is None:
        dot = statechart_dot(model, highlight)
        rows = {row.kind for edge in model.edges for row in edge_rows(edge)}
    else:
        dot = chart_diff_dot(_chart_diff()[1], "diff")
        rows = {row.kind for rows in marks.rows.values() for row in rows}
    legend = " ".join(re.sub(r"<[^>]*>", " ", dot[dot.rindex("How to read it") :]).split())
    assert rows <= used  # every kind of label row the chart's transitions have is drawn
    assert RowKind.CHECK in rows  # the validator rows (``check transfer timing``) among them
    for key in used:  # each explained in so many words (wrapped over lines or not)
        assert text(meaning(key)) in legend, (name, key)


def test_labels_tell_facts_from_acknowledgements() -> None:
    model = describe_chart()
    outcomes = {event.event: event.outcomes for event in input_events()}
    dot, mermaid = statechart_dot(model), statechart_mermaid(model)
    for edge in model.edges:
        if edge.kind is EdgeKind.REJECTION:
            continue
        lines = edge_label_lines(edge)
        first = {EventKind.FACT: "fact", EventKind.ACKNOWLEDGEMENT: "ack"}.get(
            edge.event_kinds[0] if edge.event_kinds else EventKind.DONE
        )
        if first is not None:
            assert re.match(rf"^{first}s?\u00a0", lines[0]), lines
        for event, kind in zip(edge.events, edge.event_kinds, strict=True):
            if kind is EventKind.ACKNOWLEDGEMENT:
                assert all(outcome in " ".join(lines) for outcome in outcomes[event]), lines
    submitted = next(e for e in model.edges if e.events == ("prefill_submitted",))
    assert edge_label_lines(submitted)[:2] == ["ack\u00a0prefill_submitted:", "Submitted"]
    assert "ack\u00a0prefill_submitted:<br>Submitted" in mermaid
    legend = " ".join(re.sub(r"<[^>]*>", " ", dot[dot.rindex("How to read it") :]).split())
    assert "ack prefill_submitted: Submitted" in legend  # the legend's sample row
    assert "an acknowledgement: the outcome of the action the state issued" in legend
    assert "a fact: an owner (or the caller) reports what happened" in legend

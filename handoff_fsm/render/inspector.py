"""The inspector: one self-contained HTML page that steps through a trace on the chart.

Rule kept here: the page shows what replay did and decides nothing. Everything it
shows per step (the active states, the transitions taken, the reply, the outstanding
actions, the completion, the time) is a field of the
:class:`~handoff_fsm.io.follow.FollowedTrace` it is handed, which
:func:`~handoff_fsm.io.follow.follow_all` made by replaying the trace through the
replayer behind ``handoff-fsm replay``; it goes into the page as JSON, and the script
(``inspector.js``) only displays it. The pictures are the project's own: each
revision's chart as :mod:`~handoff_fsm.render.livechart` annotates it, each
coordinator's lifecycle as :mod:`~handoff_fsm.render.sequence` draws it (all of them in
one run of Graphviz), with each message tagged ``data-step`` so a click on it steps
there. The page is one file with nothing to fetch (:mod:`~handoff_fsm.render.htmlpage`:
the SVG, the style sheets, ``page.css`` and ``inspector.css``, coloured only by the
palette's CSS variables, and the scripts, ``stepper.js`` and ``inspector.js``, are
inline, and its Content-Security-Policy forbids every request).

The contract other tools rely on: every state of the shown chart is an element with
``data-state="<state id>"``, the active atomic ones carry the class ``active``; the
page defines ``window.handoffInspector`` with ``steps`` (the shown coordinator's lines
after its ``new``), ``step(n)`` (show the state after its first ``n`` of them;
``step(0)``: as created) and ``activeStates()`` (the atomic states active at the shown
step, as :attr:`~handoff_fsm.coordinator.HandoffCoordinator.state` lists them).
A caller that knows more about the trace than the trace says (a system counterexample:
the property it breaks and the assumptions the world made) hands it in as a
:class:`PageNote`, which the header shows folded under its summary.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from handoff_fsm.io.follow import FollowedRun, FollowedStep, FollowedTrace
from handoff_fsm.io.lifecycle import (
    INPUTS,
    Lifecycle,
    Message,
    MessageKind,
    action_text,
    lifecycle_of,
    ms_text,
)
from handoff_fsm.model import IssuedHandoffAction, Revision
from handoff_fsm.render.graphviz import render_svgs
from handoff_fsm.render.htmlpage import STEP_CONTROLS, one_file_page, swatch
from handoff_fsm.render.livechart import (
    add_class,
    chart_svg,
    drop_ids,
    parse_svg,
    svg_text,
)
from handoff_fsm.render.sequence import COMPACT, Geometry, sequence_dot
from handoff_fsm.structure.describe import ChartModel, Edge
from handoff_fsm.structure.revisions import revision_chart

MAX_COORDINATORS: Final = 200
"""Coordinators one page holds (each brings its lifecycle drawing); the rest are counted."""
LIFECYCLE_GEOMETRY: Final[Geometry] = COMPACT
"""The lifecycles are drawn narrow: they stand beside the chart."""
DATA_ID: Final = "handoff-inspector-data"
LIFECYCLE_CLASS: Final = "handoff-lifecycle"

_G: Final = "{http://www.w3.org/2000/svg}g"
_TITLE: Final = "{http://www.w3.org/2000/svg}title"
_POLYGON: Final = "{http://www.w3.org/2000/svg}polygon"
_ROW: Final = re.compile(r"m(\d+)(?:_[a-z]+)?(?:->m\d+_b)?")
"""A lifecycle drawing's element of message row ``N``: ``mN``, ``mN_t``, ``mN_a->mN_b``."""


class PageNote(NamedTuple):
    """What the page says about its trace beyond the trace itself: a summary in the
    header, and the lines it unfolds (for a system counterexample, the assumptions)."""

    summary: str
    lines: tuple[str, ...]


# ---------------------------------------------------------------------- the lifecycle


def step_of_rows(lifecycle: Lifecycle) -> list[int]:
    """For each message of ``lifecycle`` (row 1 first), the step it belongs to.

    An input starts its step, and its reply, actions and state note follow it; an
    acknowledgement the trace never delivers is drawn before the input that ended its
    phase, so it belongs to that input's step; the closing note (and what is drawn
    just before it) to the last step.
    """
    steps: list[int] = []
    pending: list[int] = []
    number = 0
    for row, message in enumerate(lifecycle.messages):
        steps.append(number)
        if message.kind in INPUTS:
            number += 1
            for waiting in (*pending, row):
                steps[waiting] = number
            pending = []
        elif message.kind is MessageKind.MISSING:
            pending.append(row)
    return steps


def annotate_lifecycle(data: bytes, rows: Sequence[int]) -> ET.Element:
    """Graphviz's SVG of a lifecycle, each message's elements tagged ``data-step``.

    ``rows`` is :func:`step_of_rows` of the drawn lifecycle; its message in row ``r``
    is drawn as the nodes and edge Graphviz titles ``m<r>...``
    (:func:`~handoff_fsm.render.sequence.sequence_dot`).
    """
    root = parse_svg(data)
    for group in root.iter(_G):
        if group.get("class") not in ("node", "edge"):
            continue
        title = group.find(_TITLE)
        match = _ROW.fullmatch(title.text or "") if title is not None else None
        if match is None:
            continue
        row = int(match[1])
        if 1 <= row <= len(rows):
            group.set("data-step", str(rows[row - 1]))
            add_class(group, "message")
            for shape in group:  # a caption's white ground takes the current step's colour
                if shape.tag == _POLYGON and shape.get("fill") == "white":
                    add_class(shape, "ground")
    drop_ids(root)
    add_class(root, LIFECYCLE_CLASS)
    return root


# ---------------------------------------------------------------------- per-step data


def transition_words(edge: Edge) -> str:
    """A transition in one line: ``submitted → held on source_held [guard]``."""
    what = f" on {edge.event_text}" if edge.events else " (eventless)"
    guard = f" [{edge.guard.text}]" if edge.guard is not None else ""
    return f"{edge.source} → {edge.target}{what}{guard}"


def _chart_data(model: ChartModel) -> dict[str, Any]:
    return {
        "revision": model.revision.value if model.revision is not None else None,
        "parents": {state.id: state.parent for state in model.states},
        "transitions": {str(edge.index): transition_words(edge) for edge in model.edges},
    }


def _actions(actions: tuple[IssuedHandoffAction, ...], step: FollowedStep | None) -> list[str]:
    return [action_text(issued, step.completion if step else None) for issued in actions]


def _step_data(step: FollowedStep, message: Message, rejecting: dict[int, str]) -> dict[str, Any]:
    return {
        "line": step.line,
        "text": step.text,
        "atMs": step.at_ms,
        "time": message.time.text if message.time is not None else None,
        "sender": message.sender.value,
        "input": message.text,
        "event": step.event,
        "state": list(step.after.leaves),
        "changed": step.changed,
        "taken": list(step.transitions),
        "rejecting": rejecting.get(step.rejected_by) if step.rejected_by is not None else None,
        "actions": _actions(step.actions, step),
        "error": (
            {"code": step.error[0].value, "message": step.error[1]}
            if step.error is not None
            else None
        ),
        "reply": step.reply,
        "outstanding": _actions(step.outstanding, None),
        "completion": step.completion.value if step.completion is not None else None,
        "late": step.late,
    }


def _inputs(lifecycle: Lifecycle) -> list[Message]:
    return [message for message in lifecycle.messages if message.kind in INPUTS]


def coordinator_data(
    run: FollowedRun, lifecycle: Lifecycle, chart: int, model: ChartModel
) -> dict[str, Any]:
    """What the page shows of one followed coordinator, step by step (JSON-ready)."""
    inputs = _inputs(lifecycle)
    if len(inputs) != len(run.steps):  # one input message per step, by lifecycle_of
        raise AssertionError(f"{len(inputs)} inputs drawn for {len(run.steps)} steps")
    rejecting = {edge.index: edge.source for edge in model.edges}
    initial = run.steps[0].before.leaves if run.steps else run.final_state
    return {
        "key": run.coordinator,
        "order": run.order.value,
        "revision": run.revision.value,
        "handoffId": str(run.handoff_id),
        "chart": chart,
        "subtitle": lifecycle.subtitle,
        "newLine": run.new_line,
        "newText": run.new_text,
        "newTime": f"t={ms_text(run.new_at_ms)} ms" if run.new_at_ms is not None else None,
        "initial": list(initial),
        "inputs": run.inputs,
        "omitted": run.omitted,
        "steps": [
            _step_data(step, message, rejecting)
            for step, message in zip(run.steps, inputs, strict=True)
        ],
    }


# ---------------------------------------------------------------------- the page


def inspector_html(
    trace: FollowedTrace, *, name: str, shown: str | None = None, note: PageNote | None = None
) -> str:
    """The page for ``trace`` (see the module's rule), opening on coordinator ``shown``.

    ``name`` (the trace's file name, say) titles it; ``shown`` defaults to the first
    coordinator; ``note`` is said in the header. At most :data:`MAX_COORDINATORS` are
    held, ``shown`` always among them.
    Raises ``KeyError`` when ``shown`` is not one of the trace's followed coordinators.
    """
    runs = list(trace.runs)
    keys = [run.coordinator for run in runs]
    if shown is not None and shown not in keys:
        raise KeyError(shown)
    kept = runs[:MAX_COORDINATORS]
    if shown is not None and shown not in keys[:MAX_COORDINATORS]:
        kept = [*kept[:-1], runs[keys.index(shown)]]
    left_out = trace.not_followed + len(runs) - len(kept)
    revisions = list(dict.fromkeys(run.revision for run in kept))
    models = [revision_chart(revision) for revision in revisions]
    lifecycles = [lifecycle_of(run) for run in kept]
    drawings = render_svgs(
        [sequence_dot(lifecycle, LIFECYCLE_GEOMETRY) for lifecycle in lifecycles],
        engine="neato",
        neato_no_op=2,
    )
    chart_of = {revision: index for index, revision in enumerate(revisions)}
    data = {
        "trace": name,
        "shown": next(i for i, run in enumerate(kept) if run.coordinator == shown)
        if shown is not None
        else 0,
        "charts": [_chart_data(model) for model in models],
        "coordinators": [
            coordinator_data(run, lifecycle, chart_of[run.revision], models[chart_of[run.revision]])
            for run, lifecycle in zip(kept, lifecycles, strict=True)
        ],
    }
    templates = "\n".join(
        f'<template data-lifecycle="{index}">'
        f"{svg_text(annotate_lifecycle(drawing, step_of_rows(lifecycle)))}</template>"
        for index, (drawing, lifecycle) in enumerate(zip(drawings, lifecycles, strict=True))
    )
    return _page(name, revisions, data, templates, _problems(trace, left_out), note=note)


def _problems(trace: FollowedTrace, left_out: int) -> list[str]:
    """What the page says it does not show: lines naming no coordinator, coordinators left out."""
    notes: list[str] = []
    runs = trace.runs
    if runs and runs[0].unattributed_count:
        first = runs[0].unattributed[0]
        notes.append(
            f"{runs[0].unattributed_count} lines name no coordinator; the first, line "
            f"{first[0]}: {first[1].value}: {first[2]}"
        )
    if left_out:
        notes.append(f"{left_out} more coordinators of the trace are not on this page")
    omitted = [run for run in runs if run.omitted]
    if omitted:
        notes.append(
            f"{len(omitted)} coordinators have more lines than a page steps through "
            f"({', '.join(run.coordinator for run in omitted[:3])}…): "
            "their later lines are left out"
        )
    return notes


def _page(
    name: str,
    revisions: list[Revision],
    data: dict[str, Any],
    templates: str,
    problems: list[str],
    *,
    note: PageNote | None,
) -> str:
    charts = "\n".join(
        f'<div class="chart" data-chart="{index}">{chart_svg(revision)}</div>'
        for index, revision in enumerate(revisions)
    )
    notes = "".join(f'<span class="problem">{html.escape(note)}</span>' for note in problems)
    about = (
        ""
        if note is None
        else f'<details id="about"><summary>{html.escape(note.summary)}</summary><ul>'
        + "".join(f"<li>{html.escape(line)}</li>" for line in note.lines)
        + "</ul></details>\n"
    )
    picker = '<select id="coordinator" aria-label="coordinator"></select>'
    header = f"""<h1>{html.escape(name)}</h1>
{about}<label id="picker">coordinator {picker}</label>
<span id="summary"></span>
{STEP_CONTROLS}"""
    main = f"""<section id="chart-pane" aria-label="the statechart">
{charts}
</section>
<aside id="side">
<section id="details" aria-live="polite"></section>
<section id="lifecycle-pane" aria-label="the lifecycle: click a message to step there"></section>
</aside>"""
    footer = "\n".join(
        [
            swatch("active", "active state"),
            swatch("taken", "transition just taken"),
            swatch("rejecting", "state that rejected the input"),
            swatch("current", "the step in the lifecycle (click one to go there)"),
            "<span>← → step, Home / End: first / last; the address keeps #step=N</span>",
            notes,
        ]
    )
    return one_file_page(
        title=name,
        generator="handoff-fsm inspect",
        style="inspector.css",
        script="inspector.js",
        header=header,
        main=main,
        footer=footer,
        data_id=DATA_ID,
        data=data,
        extra=templates,
    )

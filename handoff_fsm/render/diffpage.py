"""The diff page: one self-contained HTML page that steps through each behaviour difference
on both sides' charts at once.

Rule kept here: the page shows what it is handed and decides nothing. Each side comes
with its own chart (a :class:`~handoff_fsm.structure.describe.ChartModel`, the side's
own description, so a chart the change edited is drawn as it is on that side) and each
difference with its steps: the trace line, its words, and per side the reply, whether it
differs from the other side's, and the active states after it, all computed by the
caller (:func:`handoff_fsm.review.diffpage.diff_page`) from the diff's report; the
script (``diffpage.js``) only displays them. The charts are the one chart drawing
(:func:`~handoff_fsm.render.livechart.model_svg`), marked only by classes; the parts
of a side's chart the other side's chart lacks or has otherwise carry ``changed``. The
page is one file with nothing to fetch (:mod:`~handoff_fsm.render.htmlpage`).

The contract tests (and other tools) rely on: every state of each side's chart is an
element with ``data-state="<state id>"`` inside ``#chart-a`` or ``#chart-b``, the active
atomic ones carry the class ``active``; the page defines ``window.handoffDiff`` with
``differences`` (how many), ``show(i)`` (difference ``i``, from 0, at its first
differing step), ``steps`` (the shown difference's inputs after its ``new`` line),
``step(n)`` (both sides after its first ``n`` inputs; ``step(0)``: as created),
``activeStates("a" | "b")`` (that side's atomic states at the shown step, as its
coordinator's ``state`` lists them) and ``firstDifference`` (the first step whose
replies differ). ``#difference=I&step=N`` in the address opens difference ``I`` (from 1,
as the page and ``DIFF.md`` number them) at step ``N``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from handoff_fsm.render.htmlpage import STEP_CONTROLS, one_file_page, swatch
from handoff_fsm.render.livechart import (
    STATE,
    TRANSITION,
    add_class,
    model_svg,
    parse_svg,
    svg_text,
)
from handoff_fsm.structure.describe import ChartModel

DATA_ID: Final = "handoff-diff-data"
CHANGED: Final = "changed"
"""The class of a chart part the other side's chart lacks or has otherwise."""
SIDES: Final = ("a", "b")

_G: Final = "{http://www.w3.org/2000/svg}g"


@dataclass(frozen=True, slots=True)
class SideChart:
    """One side as the page shows it."""

    name: str
    """The side as the command line spelled it (``seed``, ``git:HEAD~1``)."""
    chart: ChartModel | None
    """The side's own chart, or ``None`` when it describes none (then :attr:`note` says why)."""
    note: str | None = None
    changed_states: frozenset[str] = frozenset()
    """States of this chart the other side's chart lacks or has otherwise."""
    changed_transitions: frozenset[int] = frozenset()
    """Transition indexes of this chart the other side's chart lacks or has otherwise."""


@dataclass(frozen=True, slots=True)
class SideStep:
    """One side's answer to one line."""

    words: str
    """The reply in words (``issues StartTransfer #2 (delay Infinity ms)``)."""
    reply: str
    """The reply as ``handoff-fsm replay`` prints it."""
    error: str | None
    """The error code, when the side refused the line."""
    completion: str | None
    complete: bool
    state: tuple[str, ...] | None
    """The active atomic states after the line (``None``: the side does not say)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One line of a difference's trace, and both sides' answers to it."""

    line: str
    words: str
    a: SideStep
    b: SideStep
    differs: bool
    """Whether the two replies differ (as the diff compares them)."""


@dataclass(frozen=True, slots=True)
class PageDifference:
    """One difference: its name, its summary, and its trace as steps (the ``new`` line first)."""

    kind: str
    summary: str
    order: str
    steps: tuple[Step, ...]

    @property
    def first(self) -> int:
        """The first step whose replies differ (the last one when none does)."""
        return next((n for n, step in enumerate(self.steps) if step.differs), len(self.steps) - 1)


@dataclass(frozen=True, slots=True)
class DiffPage:
    """Everything the page shows."""

    a: SideChart
    b: SideChart
    differences: tuple[PageDifference, ...]
    verdict: str
    """The diff's verdict in a sentence (equivalent, or how many differences)."""
    notes: tuple[str, ...] = ()
    """What the page says it does not show, or what stopped the diff early."""
    chart_changes: tuple[str, ...] = ()
    """The charts' structural changes, one line each (empty: the charts are the same)."""


# ---------------------------------------------------------------------- data


def _side_step(step: SideStep) -> dict[str, Any]:
    return {
        "words": step.words,
        "reply": step.reply,
        "error": step.error,
        "completion": step.completion,
        "complete": step.complete,
        "state": list(step.state) if step.state is not None else None,
    }


def _difference_data(difference: PageDifference) -> dict[str, Any]:
    return {
        "kind": difference.kind,
        "summary": difference.summary,
        "order": difference.order,
        "first": difference.first,
        "steps": [
            {
                "line": step.line,
                "words": step.words,
                "differs": step.differs,
                "a": _side_step(step.a),
                "b": _side_step(step.b),
            }
            for step in difference.steps
        ],
    }


def _side_data(side: SideChart) -> dict[str, Any]:
    model = side.chart
    return {
        "name": side.name,
        "drawn": model is not None,
        "parents": {s.id: s.parent for s in model.states} if model is not None else {},
        "note": side.note,
    }


def page_data(page: DiffPage) -> dict[str, Any]:
    """What the page's script displays (JSON-ready)."""
    return {
        "a": _side_data(page.a),
        "b": _side_data(page.b),
        "differences": [_difference_data(d) for d in page.differences],
    }


# ---------------------------------------------------------------------- the page


def side_svg(side: SideChart) -> str:
    """The side's chart, its parts the other chart lacks or has otherwise marked ``changed``."""
    if side.chart is None:
        return ""
    root = parse_svg(model_svg(side.chart))
    for group in root.iter(_G):
        state, transition = group.get(STATE), group.get(TRANSITION)
        if (state is not None and state in side.changed_states) or (
            transition is not None and int(transition) in side.changed_transitions
        ):
            add_class(group, CHANGED)
    return svg_text(root)


def _side_html(key: str, side: SideChart) -> str:
    label = key.upper()
    chart = (
        f'<div class="chart">{side_svg(side)}</div>'
        if side.chart is not None
        else f'<p class="problem">No chart drawn for {html.escape(side.name)}: '
        f"{html.escape(side.note or 'it describes none')}</p>"
    )
    return f"""<section class="side" id="side-{key}" aria-label="side {label}">
<h2><span class="tag">{label}</span> {html.escape(side.name)}</h2>
<div class="answer" id="answer-{key}" aria-live="polite"></div>
<div class="chart-pane" id="chart-{key}">{chart}</div>
</section>"""


def _changes_html(changes: Sequence[str]) -> str:
    if not changes:
        return '<p class="same-charts">The two charts are the same.</p>'
    items = "".join(f"<li>{html.escape(change)}</li>" for change in changes)
    count = len(changes)
    return (
        f'<details id="chart-changes"><summary>The charts differ: {count} '
        f"change{'s' if count != 1 else ''} (dashed on each chart)</summary>"
        f"<ul>{items}</ul></details>"
    )


def diff_page_html(page: DiffPage, *, title: str) -> str:
    """The page (see the module's rule), titled ``title`` (the command that made it, say)."""
    header = f"""<h1>{html.escape(title)}</h1>
<label id="picker">difference <select id="difference" aria-label="difference"></select></label>
{STEP_CONTROLS}"""
    notes = "".join(f'<p class="problem">{html.escape(note)}</p>' for note in page.notes)
    main = f"""<section id="about" aria-live="polite">
<p id="verdict">{html.escape(page.verdict)}</p>
<h2 id="kind"></h2>
<p id="summary"></p>
{notes}
</section>
<nav id="steps-pane" aria-label="the trace: click a step to go there">
<h2>The same inputs to both</h2>
<ol id="steps"></ol>
{_changes_html(page.chart_changes)}
</nav>
{_side_html("a", page.a)}
{_side_html("b", page.b)}"""
    footer = "\n".join(
        [
            swatch("active", "active state"),
            swatch("differs", "the replies differ at this step"),
            swatch("current", "the step shown (click a step to go there)"),
            swatch("changed", "part of this side's chart the other side lacks or has otherwise"),
            "<span>← → step, Home / End: first / last; the address keeps "
            "#difference=I&amp;step=N</span>",
        ]
    )
    return one_file_page(
        title=title,
        generator="handoff-fsm diff --html",
        style="diffpage.css",
        script="diffpage.js",
        header=header,
        main=main,
        footer=footer,
        data_id=DATA_ID,
        data=page_data(page),
    )

"""The diff page of a change: what ``handoff-fsm diff A B --html PAGE`` writes.

Rule kept here: everything the page shows comes from one
:class:`~handoff_fsm.verify.diff.DiffReport`, and no side is run again. Each side's chart
is the description that side gave of itself (``DiffReport.charts``, read back by
:func:`~handoff_fsm.structure.plain.chart_from_plain`), so a side from another git
revision shows its own states and transitions; its active states after each line are the
ones its own replay reported (:attr:`~handoff_fsm.verify.diff.Difference.states_a`);
its replies are the ones the diff confirmed, and two replies differ exactly when the
diff says they do (compared as the driver's :func:`~handoff_fsm.verify.diff.driver.canonical`
reduces them). The words are the diff review's (:mod:`handoff_fsm.review.diffreview`);
the page itself is :mod:`handoff_fsm.render.diffpage`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from handoff_fsm.render.diffpage import (
    DiffPage,
    PageDifference,
    SideChart,
    SideStep,
    Step,
    diff_page_html,
)
from handoff_fsm.review.diffreview import report_chart_diff, step_words
from handoff_fsm.structure.chartdiff import ChartDiff, Status
from handoff_fsm.structure.describe import ChartModel
from handoff_fsm.structure.plain import chart_from_plain
from handoff_fsm.verify.diff.behaviour import Difference, DiffReport, reply_words
from handoff_fsm.verify.diff.driver import canonical


def _compared(reply: Mapping[str, Any]) -> str:
    """What the diff compares of a reply: no key, no error message, keys in order."""
    return json.dumps(json.loads(canonical(json.dumps(reply))), sort_keys=True)


def _side_step(reply: Mapping[str, Any], state: tuple[str, ...] | None) -> SideStep:
    error = reply.get("error")
    return SideStep(
        words=reply_words(dict(reply)),
        reply=json.dumps(reply, ensure_ascii=False),
        error=str(error.get("code")) if isinstance(error, Mapping) else None,
        completion=reply.get("completion"),
        complete=bool(reply.get("complete")),
        state=state,
    )


def _states(states: Sequence[tuple[str, ...] | None], count: int) -> list[tuple[str, ...] | None]:
    """One entry per line (a report that carries no states: ``None`` for each)."""
    return list(states) if len(states) == count else [None] * count


def page_difference(difference: Difference) -> PageDifference:
    """A difference as the page steps through it: its ``new`` line, then every input."""
    count = len(difference.trace)
    states_a = _states(difference.states_a, count)
    states_b = _states(difference.states_b, count)
    steps = tuple(
        Step(
            line=line,
            words=step_words(line),
            a=_side_step(reply_a, state_a),
            b=_side_step(reply_b, state_b),
            differs=_compared(reply_a) != _compared(reply_b),
        )
        for line, reply_a, reply_b, state_a, state_b in zip(
            difference.trace,
            difference.replies_a,
            difference.replies_b,
            states_a,
            states_b,
            strict=True,
        )
    )
    return PageDifference(
        kind=difference.kind,
        summary=difference.summary,
        order=difference.order.value,
        steps=steps,
    )


def _read(plain: Mapping[str, Any] | None, note: str | None) -> tuple[ChartModel | None, str]:
    """A side's chart as it described itself, or why there is none to draw."""
    if plain is None:
        return None, note or "the diff was run without asking the sides for their charts"
    try:
        return chart_from_plain(plain), ""
    except ValueError as error:
        return None, f"its chart cannot be read here: {error}"


def _changed(structure: ChartDiff, own: Status, key: str) -> tuple[frozenset[str], frozenset[int]]:
    """The states and transition indexes of one side's chart (``key``: ``before`` for A,
    ``after`` for B) that only it has (``own``) or that the other has otherwise."""
    shown = (own, Status.CHANGED)
    states = frozenset(d.id for d in structure.states if d.status in shown)
    edges = frozenset(
        int(side["index"])
        for d in structure.edges
        if d.status in shown and (side := getattr(d, key)) is not None
    )
    return states, edges


def _sides(report: DiffReport) -> tuple[SideChart, SideChart, ChartDiff | None]:
    """Each side with its own chart, the parts of it the other chart lacks or changes, and
    the charts' structural diff (when both charts could be read)."""
    (model_a, why_a), (model_b, why_b) = (
        _read(plain, note) for plain, note in zip(report.charts, report.chart_notes, strict=True)
    )
    structure = report_chart_diff(report) if model_a and model_b else None
    if structure is None:
        return SideChart(report.a, model_a, why_a), SideChart(report.b, model_b, why_b), None
    return (
        SideChart(report.a, model_a, None, *_changed(structure, Status.REMOVED, "before")),
        SideChart(report.b, model_b, None, *_changed(structure, Status.ADDED, "after")),
        structure,
    )


def chart_changes(structure: ChartDiff | None) -> tuple[str, ...]:
    """The charts' structural changes, one line each, in the diff review's words."""
    if structure is None:
        return ()
    lines = [
        f"{d.status} state {d.id}" + (f" ({'; '.join(d.changes)})" if d.changes else "")
        for d in structure.states
        if d.status is not Status.SAME
    ]
    lines += [
        f"{d.status} transition {d}" + (f" ({'; '.join(d.changes)})" if d.changes else "")
        for d in structure.edges
        if d.status is not Status.SAME
    ]
    return tuple(lines)


def _verdict(report: DiffReport) -> str:
    count = len(report.differences)
    found = (
        "equivalent: no input sequence tells them apart"
        if report.equivalent
        else "1 difference, shown by its shortest trace"
        if count == 1
        else f"{count} differences, each shown by its shortest trace"
    )
    return (
        f"A = {report.a}, B = {report.b}: {found} ({report.explored} pairs of states "
        "explored). Step through a difference: both sides get the same inputs; the first "
        "step where their replies differ is marked."
    )


def diff_page(report: DiffReport, *, title: str | None = None) -> str:
    """The page of ``report`` (see the module's rule); ``title`` defaults to ``A → B``.

    Charts are drawn when the report carries them (``diff(..., charts=True)``); a side
    without one is shown by its words and states alone, saying why.
    """
    side_a, side_b, structure = _sides(report)
    notes = () if report.stopped is None else (f"Not every pair was explored: {report.stopped}",)
    page = DiffPage(
        a=side_a,
        b=side_b,
        differences=tuple(page_difference(d) for d in report.differences),
        verdict=_verdict(report),
        notes=notes,
        chart_changes=chart_changes(structure),
    )
    return diff_page_html(page, title=title or f"{report.a} → {report.b}")

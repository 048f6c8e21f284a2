"""The statechart's legend, drawn inside the picture: what each line, box, row and colour means.

Rule kept here: the legend explains exactly what its picture draws. The chart's
writer (:mod:`~handoff_fsm.render.dot`) records the key of every kind of mark it
draws (a line style, a box, a kind of label row from
:mod:`~handoff_fsm.render.words`, an overlay's or a diff's mark) and hands that
set here; each key has one row, so a style can never be drawn unexplained and the
legend never explains what the picture does not show. The rows are an
HTML-like Graphviz label built from the same palette
(:mod:`~handoff_fsm.render.style`) and the same line styles as the chart: line
samples are table-cell borders (solid, dashed, bold) with an arrowhead glyph, a
state sample is a table drawn like a state node, a row sample is that row's text
in its colour. So a standalone SVG or PNG can be read without the review around it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from handoff_fsm.render.labels import html, text
from handoff_fsm.render.style import (
    DIFF_FILL,
    DIFF_LINE,
    FINAL_MARK,
    INK,
    MUTED,
    PAPER,
    PARALLEL_FILL,
    REJECT,
    TAKEN,
    VISITED_FILL,
)
from handoff_fsm.render.words import RowKind

_SIZE = 10


class Mark(StrEnum):
    """A kind of mark that is not a label row: lines, boxes, an overlay's and a diff's marks."""

    EVENT_LINE = "event line"
    EVENTLESS_LINE = "eventless line"
    DONE_LINE = "done line"
    START = "start"
    PARALLEL = "parallel"
    STATE = "state"
    TAKEN = "taken"
    """Overlay: a transition the trace took, with its step numbers."""
    STEP_PARTS = "step parts"
    """Overlay: one input that took several transitions (``#8a``, ``#8b``)."""
    VISITED = "visited"
    LAST = "last"
    """Overlay: the states the trace left the coordinator in."""
    REJECTED_AT = "rejected at"
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    WAS = "was"
    """Diff: what a changed part was in A."""


Key = Mark | RowKind
"""What the writer records for each kind of thing it draws."""


def _font(words: str, color: str = INK, *, bold: bool = False) -> str:
    body = f"<b>{text(words)}</b>" if bold else text(words)
    return f'<font color="{color}" point-size="{_SIZE}">{body}</font>'


def _line(style: str, color: str = MUTED, width: int = 1) -> str:
    """A horizontal line sample ending in an arrowhead: a cell's bottom border and a glyph.

    The bordered cell sits in a table of its own, so a row of two lines' height centres it
    instead of stretching it (which would drop the line to the row's bottom).
    """
    sample = (
        f'<td width="34" height="8" fixedsize="true" sides="B" border="{width}" '
        f'color="{color}" style="{style}"></td>'
    )
    return (
        '<td valign="middle" fixedsize="true" width="36" height="12">'
        '<table border="0" cellborder="0" cellspacing="0" cellpadding="0">'
        f"<tr>{sample}</tr></table></td>"
        f'<td align="left">{_font("▸", color)}</td>'
    )


def _mark(markup: str) -> str:
    return f'<td colspan="2" align="left">{markup}</td>'


def _box(
    inner: str, *, color: str = INK, fill: str = PAPER, border: int = 1, dashed: bool = False
) -> str:
    style = "rounded,dashed" if dashed else "rounded"
    return (
        f'<table border="{border}" color="{color}" bgcolor="{fill}" style="{style}" '
        f'cellborder="0" cellspacing="0" cellpadding="2"><tr><td>{inner}</td></tr></table>'
    )


def _status(status: str, *, dashed: bool = False) -> str:
    return _mark(
        _box(
            _font(status, DIFF_LINE[status], bold=True),
            color=DIFF_LINE[status],
            fill=DIFF_FILL[status],
            border=2,
            dashed=dashed,
        )
    )


@dataclass(frozen=True, slots=True)
class _Row:
    sample: Callable[[], str]
    meaning: str
    column: int
    """Its group (:data:`_HEADINGS`): 0 lines and boxes, 1 label rows, 2 an overlay's
    marks, 3 a diff's."""


_ROWS: Final[dict[Key, _Row]] = {
    Mark.EVENT_LINE: _Row(lambda: _line("solid"), "taken on an input: its first row says which", 0),
    Mark.EVENTLESS_LINE: _Row(
        lambda: _line("dashed"), "taken as soon as its [guard] holds (no input)", 0
    ),
    Mark.DONE_LINE: _Row(
        lambda: _line("solid", INK, 3),
        "done.state.x: raised by the chart once every region of x is final",
        0,
    ),
    Mark.START: _Row(lambda: _mark(_font("●", INK)), "where the chart, or a region, starts", 0),
    Mark.PARALLEL: _Row(
        lambda: _mark(_box(_font("parallel", bold=True), fill=PARALLEL_FILL["active"], border=2)),
        "a parallel state: its regions (dashed boxes) run at once",
        0,
    ),
    Mark.STATE: _Row(
        lambda: _mark(_box(_font("state", bold=True))),
        "a state; a double border: final in its region",
        0,
    ),
    RowKind.START: _Row(lambda: _mark(_font("start()")), "the caller starts the handoff", 1),
    RowKind.FACT: _Row(
        lambda: _mark(_font("fact source_held")),
        "a fact: an owner (or the caller) reports what happened",
        1,
    ),
    RowKind.ACKNOWLEDGEMENT: _Row(
        lambda: _mark(_font("ack prefill_submitted: Submitted")),
        "an acknowledgement: the outcome of the action the state issued",
        1,
    ),
    RowKind.DONE: _Row(
        lambda: _mark(_font("done.state.active")), "the chart's own event (bold line)", 1
    ),
    RowKind.GUARD: _Row(lambda: _mark(_font("[guard]")), "taken only while the guard holds", 1),
    RowKind.CHECK: _Row(
        lambda: _mark(_font("check transfer timing")),
        "the input is validated first: an invalid one is rejected, nothing changes",
        1,
    ),
    RowKind.EFFECT: _Row(
        lambda: _mark(_font("/ completion = Success")), "what taking the transition records", 1
    ),
    RowKind.ENTRY_ACTION: _Row(
        lambda: _mark(_font("entry / Action")), "the action issued on entering the state", 1
    ),
    RowKind.ENTRY_FIELD: _Row(
        lambda: _mark(_font("entry / x engaged", MUTED)), "what entering the state records", 1
    ),
    RowKind.REJECTION: _Row(
        lambda: _mark(_font("fact x / ✗ code", REJECT)),
        "the input is rejected there with that error code; nothing changes",
        1,
    ),
    Mark.TAKEN: _Row(
        lambda: _line("solid", TAKEN, 3), "#n: taken at the trace's step n (t=: its time)", 2
    ),
    Mark.STEP_PARTS: _Row(
        lambda: _mark(_font("#8a, #8b", TAKEN, bold=True)),
        "one input took several transitions, in this order",
        2,
    ),
    Mark.VISITED: _Row(
        lambda: _mark(_box(_font("state"), fill=VISITED_FILL)),
        "entered by the trace (also when only passed through)",
        2,
    ),
    Mark.LAST: _Row(
        lambda: _mark(_box(_font("state"), color=FINAL_MARK, border=3)),
        "where the trace left the coordinator",
        2,
    ),
    Mark.REJECTED_AT: _Row(
        lambda: _mark(_font("✗ code #n", REJECT, bold=True)), "rejected at the trace's step n", 2
    ),
    Mark.ADDED: _Row(lambda: _status("added"), "in B only", 3),
    Mark.REMOVED: _Row(lambda: _status("removed", dashed=True), "in A only (dashed)", 3),
    Mark.CHANGED: _Row(lambda: _status("changed"), "in both, changed (~ was: what it was)", 3),
    Mark.UNCHANGED: _Row(lambda: _status("unchanged"), "the same in both", 3),
    Mark.WAS: _Row(
        lambda: _mark(_font("~ was guard: none", DIFF_LINE["changed"])),
        "what a changed part was in A; + and \N{MINUS SIGN} mark rows B gained or lost",
        3,
    ),
}
_HEADINGS: Final = ("Lines and boxes", "Rows", "This trace", "This diff")


def meaning(key: Key) -> str:
    """What the legend says ``key`` means."""
    return _ROWS[key].meaning


def explained() -> frozenset[Key]:
    """Every key the legend has a row for."""
    return frozenset(_ROWS)


_MEANING_WIDTH: Final = 40
"""Characters per line of a row's meaning: the legend wraps rather than widening the picture."""


def _row(key: Key) -> str:
    row = _ROWS[key]
    lines = textwrap.wrap(row.meaning, width=_MEANING_WIDTH, break_long_words=False)
    meaning = "<br/>".join(_font(line, MUTED) for line in lines)
    return f'<tr>{row.sample()}<td align="left" balign="left">{meaning}</td></tr>'


def _column(heading: str, rows: list[str]) -> str:
    title = f'<tr><td colspan="3" align="left">{_font(heading, MUTED, bold=True)}</td></tr>'
    return (
        '<table border="0" cellborder="0" cellspacing="2" cellpadding="1">'
        + title
        + "".join(rows)
        + "</table>"
    )


def statechart_legend(used: Collection[Key], *, one_column: bool = False) -> str:
    """The legend of a picture that drew ``used``, as an HTML-like label, in columns.

    Two columns under a chart whose regions stand side by side; with ``one_column``, its
    groups one under the other, under a chart whose regions are stacked
    (:func:`~handoff_fsm.render.dot.diff_dot`), so it is no wider than that chart.
    Raises ``KeyError`` for a key with no row, so a new kind of mark cannot be drawn
    unexplained.
    """
    missing = [key for key in used if key not in _ROWS]
    if missing:
        raise KeyError(f"the legend explains no {missing}")
    groups: list[list[str]] = [[] for _ in _HEADINGS]
    for key, row in _ROWS.items():  # the legend's own order, whatever order they were drawn
        if key in used:
            groups[row.column].append(_row(key))
    title = _font("How to read it", bold=True)
    table = f'<table border="1" color="{MUTED}" cellborder="0" cellspacing="4" cellpadding="2">'
    if one_column:  # the label rows second, the trace's or the diff's marks last
        cells = "".join(
            f"<tr><td>{_column(_HEADINGS[group], groups[group])}</td></tr>"
            for group in range(len(_HEADINGS))
            if groups[group]
        )
        return html(f'{table}<tr><td align="left">{title}</td></tr>{cells}</table>')
    # Two columns, so the legend is never wider than the chart: the label rows on the
    # right, everything else on the left, the trace's or the diff's marks last.
    left = "".join(
        f"<tr><td>{_column(_HEADINGS[group], groups[group])}</td></tr>"
        for group in (0, 2, 3)
        if groups[group]
    )
    columns = [
        f'<table border="0" cellborder="0" cellspacing="0" cellpadding="0">{left}</table>'
        if left
        else "",
        _column(_HEADINGS[1], groups[1]) if groups[1] else "",
    ]
    cells = "".join(f'<td valign="top">{column}</td>' for column in columns if column)
    shown = sum(1 for column in columns if column)
    heading = f'<tr><td colspan="{shown}" align="left">{title}</td></tr>'
    return html(f"{table}{heading}<tr>{cells}</tr></table>")

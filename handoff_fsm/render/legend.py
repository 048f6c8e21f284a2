"""The statechart's legend, drawn inside the picture: what each line, box and colour means.

Rule kept here: the legend is an HTML-like Graphviz label built from the same
palette (:mod:`~handoff_fsm.render.style`) and the same line styles as the
chart it explains, so a standalone SVG or PNG can be read without the review
around it. Line samples are table-cell borders (solid, dashed, bold) with an
arrowhead glyph; the state sample is a table drawn like a state node. The
overlay's extra marks (taken transitions, visited states, the final
configuration, rejections with their step numbers) are listed only on an
overlay.
"""

from __future__ import annotations

from handoff_fsm.render.labels import html, text
from handoff_fsm.render.style import (
    FINAL_MARK,
    INK,
    MUTED,
    PAPER,
    PARALLEL_FILL,
    REJECT,
    TAKEN,
    VISITED_FILL,
)

_SIZE = 10


def _font(words: str, color: str = INK, *, bold: bool = False) -> str:
    body = f"<b>{text(words)}</b>" if bold else text(words)
    return f'<font color="{color}" point-size="{_SIZE}">{body}</font>'


def _line(style: str, color: str = MUTED, width: int = 1) -> str:
    """A horizontal line sample ending in an arrowhead: a cell's bottom border and a glyph."""
    return (
        f'<td width="34" height="8" sides="B" border="{width}" color="{color}" '
        f'style="{style}"></td><td align="left">{_font("▸", color)}</td>'
    )


def _mark(markup: str) -> str:
    return f'<td colspan="2" align="center">{markup}</td>'


def _row(sample: str, meaning: str) -> str:
    return f'<tr>{sample}<td align="left" balign="left">{_font(meaning, MUTED)}</td></tr>'


def _box(inner: str, *, color: str = INK, fill: str = PAPER, border: int = 1) -> str:
    return (
        f'<table border="{border}" color="{color}" bgcolor="{fill}" style="rounded" '
        f'cellborder="0" cellspacing="0" cellpadding="2"><tr><td>{inner}</td></tr></table>'
    )


def _column(rows: list[str]) -> str:
    return (
        '<table border="0" cellborder="0" cellspacing="2" cellpadding="1">'
        + "".join(rows)
        + "</table>"
    )


def statechart_legend(*, overlay: bool = False) -> str:
    """The legend as an HTML-like label, in columns (``overlay`` adds the trace's marks)."""
    lines = [
        _row(_line("solid"), "event [guard] / effect: taken on that input if the guard holds"),
        _row(_line("dashed"), "[guard]: taken as soon as the guard holds (no input)"),
        _row(_line("solid", INK, 3), "done.state: every region of the state is final"),
        _row(_mark(_font("●", INK)), "where the chart, or a region, starts"),
        _row(
            _mark(_box(_font("parallel", bold=True), fill=PARALLEL_FILL["active"], border=2)),
            "a parallel state: its regions (dashed boxes) run at once",
        ),
    ]
    states = [
        _row(
            _mark(_box(_font("state", bold=True))), "a state; a double border: final in its region"
        ),
        _row(_mark(_font("entry / Action")), "the action issued on entering the state"),
        _row(_mark(_font("entry / x engaged", MUTED)), "what entering the state records"),
        _row(
            _mark(_font("event / ✗ code", REJECT)),
            "the event is rejected there with that error code; nothing changes",
        ),
    ]
    columns = [lines, states]
    if overlay:
        columns.append(
            [
                _row(_line("solid", TAKEN, 3), "#n: taken at the trace's step n"),
                _row(_mark(_box(_font("state"), fill=VISITED_FILL)), "visited by the trace"),
                _row(
                    _mark(_box(_font("state"), color=FINAL_MARK, border=3)),
                    "where the trace left the coordinator",
                ),
                _row(
                    _mark(_font("✗ code #n", REJECT, bold=True)), "rejected at the trace's step n"
                ),
            ]
        )
    cells = "".join(f'<td valign="top">{_column(column)}</td>' for column in columns)
    title = _font("How to read it", bold=True)
    heading = f'<tr><td colspan="{len(columns)}" align="left">{title}</td></tr>'
    return html(
        f'<table border="1" color="{MUTED}" cellborder="0" cellspacing="4" cellpadding="2">'
        f"{heading}<tr>{cells}</tr></table>"
    )

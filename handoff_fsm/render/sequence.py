"""Lifecycle sequence diagrams: Mermaid ``sequenceDiagram`` and a Graphviz drawing of the same.

Rule kept here: both views show exactly the messages of one
:class:`~handoff_fsm.io.lifecycle.Lifecycle`, in order, with the same
words. Graphviz has no sequence diagrams, so :func:`sequence_dot` places
everything itself (a time column when the trace has times, one column per
participant, one row per message, a legend under the lifelines) and is drawn
with ``neato -n2`` (:func:`render_sequence`), which keeps the given positions:
the layout is arithmetic (:mod:`~handoff_fsm.render.pinned`), hence identical on
every run. A message's words are never cut: a long one (a rejection's message)
wraps over as many lines as it needs, and its row grows to hold them (Mermaid:
``<br>`` between the same lines). A fact held back and applied later is drawn in
the held-back style, not as a rejection. A :class:`Geometry` only sets how much
room it takes (:data:`COMPACT` for two drawings side by side at a web page's
width); the words and marks are the same. Two drawings shown together may mark
where their runs part (``parting``) and leave the legend to one drawing of its own
(:func:`sequence_legend_dot`). The DOT is built with ``graphviz.Digraph``; label
text is escaped in :mod:`~handoff_fsm.render.labels`, Mermaid text in
:func:`~handoff_fsm.render.mermaid.mermaid_text`. The Markdown page adds the table
of steps with their exact values (:attr:`~handoff_fsm.io.lifecycle.Lifecycle.steps`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Final

import graphviz

from handoff_fsm.io.lifecycle import (
    PARTICIPANTS,
    Lifecycle,
    Message,
    MessageKind,
    StepTime,
)
from handoff_fsm.model import HandoffCompletion
from handoff_fsm.render.graphviz import render
from handoff_fsm.render.labels import html, plain, text
from handoff_fsm.render.mermaid import mermaid_text
from handoff_fsm.render.pinned import CHAR, LINE, arrow, caption, lifeline, lines, note, pos
from handoff_fsm.render.stamp import Format
from handoff_fsm.render.style import (
    COMPLETION_COLOURS,
    FONT,
    HELD_BACK,
    INK,
    MUTED,
    PARTING,
    REJECT,
)

_COLUMN = 185.0
_ROW = 30.0
_LEFT = 75.0
_TIME_LEFT = 10.0
"""Left edge of the time column (drawn left of the Caller's lifeline when the trace has times)."""
_TIME_AIR = 12.0
"""Between the time column and the Caller's head box."""
_DIGIT = 5.8
"""Width of one character of the time column (9 pt digits), to size its cells."""
_TIME_HEADS: Final = ("t (ms)", "+ (ms)")
_HEAD = 34.0
_INK = INK
_MUTED = MUTED
_RED = REJECT
_END_FILL: Final = {
    completion: COMPLETION_COLOURS[None if completion is None else completion.value]
    for completion in (*HandoffCompletion, None)
}
"""Fill and border of the closing note, by completion (``None``: not complete)."""
_ARROWS: Final = {
    MessageKind.CALL: "->>",
    MessageKind.FACT: "->>",
    MessageKind.ACTION: "->>",
    MessageKind.OUTCOME: "-->>",
    MessageKind.REJECTED: "-x",
    MessageKind.HELD: "--)",
    MessageKind.MISSING: "--x",
}
_DASHED: Final = frozenset({MessageKind.OUTCOME, MessageKind.MISSING, MessageKind.HELD})
_COLOURS: Final = {
    MessageKind.REJECTED: REJECT,
    MessageKind.MISSING: REJECT,
    MessageKind.HELD: HELD_BACK,
}
"""Messages drawn in a colour of their own (the others in ink)."""
_HEADS: Final = {MessageKind.MISSING: "none", MessageKind.HELD: "empty"}
_MERMAID_LINE: Final = 64
"""Characters per line of a long Mermaid message (broken with ``<br>``)."""
_CAPTION_AIR = 10.0
"""Points kept free on each side of a wrapped caption."""


@dataclass(frozen=True, slots=True)
class Geometry:
    """How much room a drawing takes; the words and marks are the same in every geometry."""

    column: float = _COLUMN
    """Points between two lifelines."""
    lifeline_width: float = 1.4
    """Width of a lifeline's head and foot boxes, in inches."""
    subtitle_chars: int = 120
    """Characters of the subtitle per line."""
    legend_columns: int = 2


REGULAR: Final = Geometry()
COMPACT: Final = Geometry(column=100.0, lifeline_width=1.1, subtitle_chars=72, legend_columns=1)
"""Narrow enough that two drawings side by side still read at a web page's width."""


def message_text(message: Message) -> str:
    """The words a message shows, its time first when the trace has one."""
    if message.time is None:
        return message.text
    return f"{message.time.text}: {message.text}"


# ---------------------------------------------------------------------- mermaid


def _mermaid_words(words: str) -> str:
    """A message for Mermaid: a long one broken into lines (``<br>``), each escaped."""
    parts = textwrap.wrap(words, width=_MERMAID_LINE, break_long_words=False) or [""]
    return "<br>".join(mermaid_text(part) for part in parts)


def sequence_mermaid(lifecycle: Lifecycle) -> str:
    """The lifecycle as Mermaid ``sequenceDiagram`` source."""
    first, last = PARTICIPANTS[0].value, PARTICIPANTS[-1].value
    out = [
        "sequenceDiagram",
        f"    title {mermaid_text(lifecycle.title)}",
        "    %% Generated by `handoff-fsm lifecycle` from a trace; do not edit. "
        "#35; is '#' (an action id).",
    ]
    out += [f"    participant {participant.value}" for participant in PARTICIPANTS]
    for message in lifecycle.messages:
        words = _mermaid_words(message_text(message))
        if message.kind is MessageKind.STATE:
            out.append(f"    Note over {message.sender.value}: {words}")
        elif message.kind is MessageKind.END:
            out.append(f"    Note over {first},{last}: {words}")
        else:
            link = _ARROWS[message.kind]
            out.append(f"    {message.sender.value}{link}{message.receiver.value}: {words}")
    return "\n".join(out) + "\n"


def sequence_markdown(lifecycle: Lifecycle) -> str:
    """A Markdown page: the title as a heading, the subtitle, the diagram as a Mermaid block,
    and the table of its steps with their exact values."""
    body = sequence_mermaid(lifecycle).rstrip("\n").split("\n")
    out = [
        f"# {_markdown_text(lifecycle.title)}",
        "",
        _markdown_text(lifecycle.subtitle),
        "",
        "```mermaid",
        *body,
        "```",
        "",
    ]
    if lifecycle.steps:
        out += [
            "## Steps",
            "",
            "Each input with its exact values (the diagram rounds delays).",
            "",
            "| # | line | at_ms | input | reply | state after |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        out += [
            f"| {row.number} | {row.line} | "
            f"{'' if row.at_ms is None else repr(row.at_ms)} | {_markdown_text(row.input)} | "
            f"{_markdown_text(row.reply)} | {_markdown_text(row.state)} |"
            for row in lifecycle.steps
        ]
        out.append("")
    return "\n".join(out)


def _markdown_text(value: str) -> str:
    """Plain text that Markdown shows as written (markup characters escaped)."""
    return "".join(f"\\{c}" if c in "\\`*_[]<>#|!{}" else c for c in " ".join(value.split()))


# ---------------------------------------------------------------------- graphviz


def _room(message: Message, geometry: Geometry) -> float:
    """Points a message's caption may take: its arrow's span, at least three columns."""
    span = abs(PARTICIPANTS.index(message.receiver) - PARTICIPANTS.index(message.sender))
    return max(span, 3) * geometry.column - 2 * _CAPTION_AIR


def _caption_lines(message: Message, geometry: Geometry) -> list[str]:
    if message.kind in (MessageKind.STATE, MessageKind.END):
        return [message.text]
    return lines(message.text, _room(message, geometry))


class _Layout:
    """Where things go, in points (y grows upwards, as in Graphviz)."""

    def __init__(
        self, lifecycle: Lifecycle, geometry: Geometry, *, parting: int | None = None
    ) -> None:
        self.geometry = geometry
        times = [_time_cells(m.time) for m in lifecycle.messages if m.time is not None]
        self.time_widths = (
            _cell_width([_TIME_HEADS[0], *(at for at, _ in times)]),
            _cell_width([_TIME_HEADS[1], *(since for _, since in times)]),
        )
        """Widths of the time column's two cells, each fitting its longest text."""
        time_width = sum(self.time_widths)
        self.time_x = _TIME_LEFT + time_width / 2
        """Centre of the time column."""
        gap = geometry.lifeline_width * 72 / 2 + _TIME_AIR  # half the Caller's box, and air
        self.left = _TIME_LEFT + time_width + gap if times else _LEFT
        self.captions = [_caption_lines(m, geometry) for m in lifecycle.messages]
        """Each message's caption, line by line (row ``r`` is ``captions[r - 1]``)."""
        heights = [_ROW + (len(words) - 1) * LINE for words in self.captions]
        if parting is not None:  # room for the rule above that row
            heights[parting - 1] += _PARTING_ROOM
        self.top = sum(heights) + 2 * _ROW + _HEAD
        below = self.top - _HEAD / 2
        self.ys = [below]
        for height in heights:
            self.ys.append(self.ys[-1] - height)
        self.legend_y = -_ROW * 1.4

    def x(self, participant: Any) -> float:
        return self.left + PARTICIPANTS.index(participant) * self.geometry.column

    def y(self, row: int) -> float:
        return self.ys[row]

    @property
    def right(self) -> float:
        return self.x(PARTICIPANTS[-1])


def _time_cells(time: StepTime) -> tuple[str, str]:
    """The time column's cells for an input: always three decimals, so that right-aligned
    numbers line up at the point (the Mermaid text drops trailing zeros)."""
    since = f"+{time.since_ms:.3f}" if time.since_ms is not None else ""
    return f"{time.at_ms:.3f}", since


def _cell_width(texts: list[str]) -> float:
    return max(len(words) for words in texts) * _DIGIT + 8.0


def _cross(g: Any, name: str, x: float, y: float) -> None:
    g.node(name, label=plain("✕"), shape="plaintext", fontcolor=_RED, fontsize="12", pos=pos(x, y))


def _lifelines(g: Any, layout: _Layout) -> None:
    for participant in PARTICIPANTS:
        name = participant.value
        lifeline(
            g, name, name, layout.x(participant), layout.top, width=layout.geometry.lifeline_width
        )


def _message(
    g: Any, layout: _Layout, row: int, message: Message, completion: HandoffCompletion | None
) -> None:
    name = f"m{row}"
    y = layout.y(row)
    if message.kind is MessageKind.STATE:
        note(g, name, message.text, layout.x(message.sender), y)
        return
    if message.kind is MessageKind.END:
        fill, border = _END_FILL[completion]
        width = (layout.right - layout.x(PARTICIPANTS[0])) / 72 + 1.2
        g.node(
            name,
            label=plain(message.text),
            shape="box",
            style="rounded,filled,bold",
            fillcolor=fill,
            color=border,
            fontsize="10",
            width=f"{width:.2f}",
            height="0.28",
            fixedsize="true",
            pos=pos((layout.x(PARTICIPANTS[0]) + layout.right) / 2, y),
        )
        return
    x1, x2 = layout.x(message.sender), layout.x(message.receiver)
    missing = message.kind is MessageKind.MISSING
    end = x1 + (x2 - x1) * 0.72 if missing else x2
    color = _COLOURS.get(message.kind, _INK)
    arrow(
        g,
        name,
        x1,
        end,
        y,
        color=color,
        dashed=message.kind in _DASHED,
        head=_HEADS.get(message.kind, "normal"),
    )
    words = layout.captions[row - 1]
    half = min(_room(message, layout.geometry), max(len(w) for w in words) * CHAR) / 2
    low, high = layout.x(PARTICIPANTS[0]) - 30 + half, layout.right + 30 - half
    middle = min(max((x1 + end) / 2, low), high) if low <= high else (x1 + end) / 2
    lift = 15 if missing else 12  # clear of the cross at the arrow's end
    caption(g, f"{name}_t", words, middle, y + lift, fontcolor=color)
    if missing:  # after the caption, so the caption's white ground never covers it
        _cross(g, f"{name}_x", end, y)
    if message.time is not None:
        _time_row(g, f"{name}_time", layout, _time_cells(message.time), y)


def _time_row(
    g: Any, name: str, layout: _Layout, cells: tuple[str, str], y: float, *, head: bool = False
) -> None:
    """One row of the time column: the input's time and the time since the previous one,
    each right-aligned in its cell so the digits line up down the column."""
    row = "".join(
        f'<td align="right" width="{width:.0f}">{text(words)}</td>'
        for words, width in zip(cells, layout.time_widths, strict=True)
    )
    g.node(
        name,
        label=html(f'<table border="0" cellpadding="0" cellspacing="0"><tr>{row}</tr></table>'),
        shape="plaintext",
        fontsize="10" if head else "9",
        fontcolor=_MUTED,
        margin="0",
        pos=pos(layout.time_x, y),
    )


_PARTING_ROOM: Final = 22.0
"""Points added above the row where two runs part, for the rule that marks it."""


def _parting_row(lifecycle: Lifecycle, line: int) -> int:
    """The row of the input from trace line ``line``."""
    for row, message in enumerate(lifecycle.messages, start=1):
        if message.line == line:
            return row
    raise ValueError(f"no input of {lifecycle.coordinator} comes from line {line}")


def _parting(g: Any, layout: _Layout, row: int) -> None:
    """A rule above the message in ``row``: from here on, the runs part."""
    words = layout.captions[row - 1]
    y = layout.y(row) + 6 + len(words) * LINE + _PARTING_ROOM / 2
    right = layout.right + 40
    arrow(
        g,
        "parting",
        layout.x(PARTICIPANTS[0]) - 40,
        right,
        y,
        color=PARTING,
        dashed=True,
        head="none",
    )
    g.node(
        "parting_t",
        label=plain("the runs part here ▼"),
        shape="plaintext",
        fontsize="9",
        fontcolor=PARTING,
        margin="0",
        pos=pos(right - 50, y + 7),
    )


_LEGEND: Final = (
    (MessageKind.CALL, "start(), a fact or an issued action"),
    (MessageKind.OUTCOME, "an acknowledgement: #id outcome"),
    (MessageKind.REJECTED, "a rejected input: ✗ code: message"),
    (MessageKind.HELD, "a fact held back (too early), applied later"),
    (MessageKind.MISSING, "never acknowledged in the trace"),
    (MessageKind.STATE, "the chart's state after the input"),
)
_LEGEND_TEXT_WIDTH = 200.0


_TIME_LEGEND: Final = "t: when the input arrived (at_ms); +: since the coordinator's previous line"
_TIME_LEGEND_WIDTH = 320.0


def _legend(g: Any, geometry: Geometry, x0: float, y0: float, *, timed: bool, held: bool) -> None:
    """What each kind of mark means, ``legend_columns`` to a row, from ``(x0, y0)`` down.

    The held-back row is shown when the drawing has such a fact; the time row when it
    has times.
    """
    shown = [(kind, words) for kind, words in _LEGEND if held or kind is not MessageKind.HELD]
    for index, (kind, words) in enumerate(shown):
        name = f"legend_{kind.value}"
        x, y = _legend_place(geometry, x0, y0, index)
        if kind is MessageKind.STATE:
            note(g, name, "state", x + 17, y)
        else:
            color = _COLOURS.get(kind, _INK)
            head = _HEADS.get(kind, "normal")
            arrow(g, name, x, x + 34, y, color=color, dashed=kind in _DASHED, head=head)
            if kind is MessageKind.MISSING:
                _cross(g, f"{name}_x", x + 34, y)
        _legend_words(g, f"{name}_t", words, x, y)
    if timed:  # beside the state note, with room for its longer words
        x, y = _legend_place(geometry, x0, y0, len(shown))
        g.node(
            "legend_time",
            label=plain("t  +"),
            shape="plaintext",
            fontsize="9",
            fontcolor=_MUTED,
            margin="0",
            pos=pos(x + 17, y),
        )
        _legend_words(g, "legend_time_t", _TIME_LEGEND, x, y, width=_TIME_LEGEND_WIDTH)


def _legend_place(geometry: Geometry, x0: float, y0: float, index: int) -> tuple[float, float]:
    """Where the legend's ``index``-th mark starts: ``legend_columns`` to a row."""
    columns = geometry.legend_columns
    x = x0 - 40 + (index % columns) * 2 * geometry.column
    return x, y0 - (index // columns) * 18


def _legend_words(
    g: Any, name: str, words: str, x: float, y: float, *, width: float = _LEGEND_TEXT_WIDTH
) -> None:
    cell = f'<td align="left" width="{width:.0f}">{text(words)}</td>'
    g.node(
        name,
        label=html(f'<table border="0" cellpadding="0" cellspacing="0"><tr>{cell}</tr></table>'),
        shape="plaintext",
        fontsize="9",
        fontcolor=_MUTED,
        margin="0",
        pos=pos(x + 46 + width / 2, y),
    )


def _graph(name: str, label: str) -> Any:
    return graphviz.Digraph(
        name,
        graph_attr={
            "splines": "line",
            "outputorder": "edgesfirst",
            "pad": "0.3",
            "fontname": FONT,
            "fontsize": "15",
            "labelloc": "t",
            "labeljust": "l",
            "label": label,
        },
        node_attr={"fontname": FONT, "fontsize": "11", "fixedsize": "false"},
        edge_attr={"fontname": FONT, "fontsize": "10", "arrowsize": "0.7", "color": _INK},
    )


def has_held(lifecycle: Lifecycle) -> bool:
    """Whether the lifecycle draws a fact held back (its legend then explains the mark)."""
    return any(message.kind is MessageKind.HELD for message in lifecycle.messages)


def sequence_dot(
    lifecycle: Lifecycle,
    geometry: Geometry = REGULAR,
    *,
    legend: bool = True,
    parting: int | None = None,
) -> str:
    """The lifecycle as DOT with fixed positions (draw it with :func:`render_sequence`).

    ``legend=False`` leaves the legend out (a figure of several drawings draws it once,
    :func:`sequence_legend_dot`); ``parting`` is the trace line of the input from which
    this run and another one drawn beside it part, marked by a rule.
    """
    parts_at = _parting_row(lifecycle, parting) if parting is not None else None
    layout = _Layout(lifecycle, geometry, parting=parts_at)
    wrapped = textwrap.wrap(lifecycle.subtitle, width=geometry.subtitle_chars)
    subtitle = '<br align="left"/>'.join(text(line) for line in wrapped) + '<br align="left"/>'
    g = _graph(
        "lifecycle",
        html(
            f'<b>{text(lifecycle.title)}</b><br align="left"/>'
            f'<font point-size="11">{subtitle}</font>'
        ),
    )
    _lifelines(g, layout)
    if lifecycle.timed:
        _time_row(g, "time_head", layout, _TIME_HEADS, layout.top, head=True)
    for row, message in enumerate(lifecycle.messages, start=1):
        _message(g, layout, row, message, lifecycle.completion)
    if parts_at is not None:
        _parting(g, layout, parts_at)
    if legend:
        x0 = layout.x(PARTICIPANTS[0])
        _legend(g, geometry, x0, layout.legend_y, timed=lifecycle.timed, held=has_held(lifecycle))
    source: str = g.source
    return source


def sequence_legend_dot(geometry: Geometry = REGULAR, *, timed: bool, held: bool) -> str:
    """The legend of :func:`sequence_dot` as a drawing of its own (``neato -n2``)."""
    g = _graph("lifecycle_legend", plain(""))
    _legend(g, geometry, 40.0, 0.0, timed=timed, held=held)
    source: str = g.source
    return source


def render_sequence_legend(
    fmt: Format = "svg", geometry: Geometry = REGULAR, *, timed: bool, held: bool
) -> bytes:
    """Draw :func:`sequence_legend_dot` as :func:`render_sequence` draws a lifecycle."""
    source = sequence_legend_dot(geometry, timed=timed, held=held)
    return render(source, fmt, engine="neato", neato_no_op=2)


def render_sequence(
    lifecycle: Lifecycle,
    fmt: Format = "svg",
    geometry: Geometry = REGULAR,
    *,
    legend: bool = True,
    parting: int | None = None,
) -> bytes:
    """Draw :func:`sequence_dot` with ``neato -n2`` (the positions it gives, unchanged)."""
    source = sequence_dot(lifecycle, geometry, legend=legend, parting=parting)
    return render(source, fmt, engine="neato", neato_no_op=2)


# ---------------------------------------------------------------------- files

LIFECYCLE_SUFFIXES: Final = (".mmd", ".md", ".svg", ".png")
"""What ``handoff-fsm lifecycle -o`` writes: Mermaid, Markdown with a Mermaid block, figures."""


def lifecycle_bytes(lifecycle: Lifecycle, suffix: str) -> bytes:
    """The lifecycle as the file ``-o OUT`` names by its suffix (see :data:`LIFECYCLE_SUFFIXES`)."""
    suffix = suffix.lower()
    if suffix == ".mmd":
        return sequence_mermaid(lifecycle).encode("utf-8")
    if suffix == ".md":
        return sequence_markdown(lifecycle).encode("utf-8")
    if suffix in (".svg", ".png"):
        fmt: Format = "svg" if suffix == ".svg" else "png"
        return render_sequence(lifecycle, fmt)
    raise ValueError(
        f"a lifecycle is written as {', '.join(LIFECYCLE_SUFFIXES)}; not {suffix or 'no suffix'!r}"
    )

"""One behaviour difference drawn as lanes: A's replies, the inputs, B's replies.

Rule kept here: the drawing shows the same steps, in the same words, as the
difference's Mermaid sequence diagram and its table in ``DIFF.md``
(:mod:`handoff_fsm.review.diffreview` hands them in, worded): one lane per side and
one for the inputs, each input sent to both sides, each side's reply coming back,
a refused input crossed in red, and the step where the replies differ framed. It
is laid out by arithmetic (:mod:`~handoff_fsm.render.pinned`) and drawn by ``neato
-n2``, like a lifecycle, so the same difference always gives the same picture;
long words wrap, never cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import graphviz

from handoff_fsm.render.graphviz import render
from handoff_fsm.render.labels import html, plain, text
from handoff_fsm.render.pinned import LINE, arrow, caption, lifeline, lines, pos
from handoff_fsm.render.pinned import note as draw_note
from handoff_fsm.render.stamp import Format
from handoff_fsm.render.style import (
    FONT,
    INK,
    REJECT,
)

_COLUMN: Final = 230.0
"""Points between two lanes."""
_LEFT: Final = 90.0
_ROW: Final = 30.0
_HEAD: Final = 34.0
_AIR: Final = 10.0
_FRAME_PAD: Final = 8.0
"""Points between the framed step's last reply and the frame."""
_FRAME_GAP: Final = 18.0
"""Points added above the framed step, for the frame's top edge."""


@dataclass(frozen=True, slots=True)
class LaneStep:
    """One input of a difference's trace, and what each side answered."""

    input: str
    reply_a: str
    reply_b: str
    refused_a: bool
    """A answered with an error (drawn crossed, in red)."""
    refused_b: bool


def _heights(steps: Sequence[LaneStep]) -> list[tuple[list[str], list[str], list[str]]]:
    return [
        (
            lines(f"{number}. {step.input}", 2 * _COLUMN - 2 * _AIR),
            lines(step.reply_a, _COLUMN - 2 * _AIR),
            lines(step.reply_b, _COLUMN - 2 * _AIR),
        )
        for number, step in enumerate(steps, start=1)
    ]


def difference_dot(title: str, a: str, b: str, note: str, steps: Sequence[LaneStep]) -> str:
    """The difference as DOT with fixed positions (draw it with :func:`render_difference`);
    the last of ``steps`` is the one whose replies differ."""
    rows = _heights(steps)
    x_a, x_i, x_b = _LEFT, _LEFT + _COLUMN, _LEFT + 2 * _COLUMN
    heights = [
        2 * _ROW + (len(said) - 1 + max(len(ra), len(rb)) - 1) * LINE for said, ra, rb in rows
    ]
    top = sum(heights) + 3 * _ROW + _HEAD + _FRAME_GAP
    g = graphviz.Digraph(
        "difference",
        graph_attr={
            "splines": "line",
            "outputorder": "edgesfirst",
            "pad": "0.3",
            "fontname": FONT,
            "fontsize": "15",
            "labelloc": "t",
            "labeljust": "l",
            "label": html(f"<b>{text(title)}</b>"),
        },
        node_attr={"fontname": FONT, "fontsize": "11", "fixedsize": "false"},
        edge_attr={"arrowsize": "0.7", "color": INK},
    )
    for name, words, x in (("A", f"A: {a}", x_a), ("I", "Inputs", x_i), ("B", f"B: {b}", x_b)):
        lifeline(g, name, words, x, top, width=1.9)
    y = top - _HEAD / 2 - _ROW
    draw_note(g, "note", note, x_i, y)
    for number, ((said, reply_a, reply_b), step) in enumerate(zip(rows, steps, strict=True), 1):
        last = number == len(steps)
        if last:  # room for the frame between the step before and this one
            y -= _FRAME_GAP
        start = y
        y -= _ROW + (len(said) - 1) * LINE
        for side, x in (("a", x_a), ("b", x_b)):
            arrow(g, f"s{number}{side}", x_i, x, y, color=INK, dashed=False, head="normal")
        caption(g, f"s{number}_t", said, x_i, y + 12, fontcolor=INK)
        y -= _ROW + (max(len(reply_a), len(reply_b)) - 1) * LINE
        for side, x, replied, refused in (
            ("a", x_a, reply_a, step.refused_a),
            ("b", x_b, reply_b, step.refused_b),
        ):
            colour = REJECT if refused else INK
            arrow(g, f"r{number}{side}", x, x_i, y, color=colour, dashed=True, head="normal")
            caption(g, f"r{number}{side}_t", replied, (x + x_i) / 2, y + 12, fontcolor=colour)
        if last:
            _frame(g, x_a, x_b, start + _FRAME_GAP / 3, y - _FRAME_PAD)
    source: str = g.source
    return source


def _frame(g: Any, left: float, right: float, high: float, low: float) -> None:
    """A dashed red frame around the step whose replies differ, and its words."""
    width, height = right - left + 2 * 60.0, high - low
    g.node(
        "differ",
        label=plain(""),
        shape="box",
        style="rounded,dashed",
        color=REJECT,
        penwidth="1.5",
        width=f"{width / 72:.2f}",
        height=f"{height / 72:.2f}",
        fixedsize="true",
        pos=pos((left + right) / 2, (high + low) / 2),
    )
    g.node(
        "differ_t",
        label=plain("the replies differ here"),
        shape="plaintext",
        fontsize="9",
        fontcolor=REJECT,
        margin="0",
        pos=pos(right + 60.0 - 62.0, high - 7.0),
    )


def render_difference(
    title: str, a: str, b: str, note: str, steps: Sequence[LaneStep], *, fmt: Format = "svg"
) -> bytes:
    """Draw :func:`difference_dot` with ``neato -n2`` (the positions it gives, unchanged)."""
    return render(difference_dot(title, a, b, note, steps), fmt, engine="neato", neato_no_op=2)

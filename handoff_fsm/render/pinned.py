"""Drawings laid out by arithmetic: every node pinned where it goes, drawn by ``neato -n2``.

Rule kept here: the few marks such a drawing is made of (a pinned position, a
horizontal arrow between two points, a caption on a white ground, a caption's text
wrapped to the room it has, a note, a lifeline with its head and foot) are written
once, here, for the lifecycles
(:mod:`~handoff_fsm.render.sequence`) and the per-difference lanes
(:mod:`~handoff_fsm.render.difference`). Positions are points, y growing upwards
as in Graphviz; label text is escaped by :mod:`~handoff_fsm.render.labels`.
"""

from __future__ import annotations

import textwrap
from typing import Any, Final

from handoff_fsm.render.labels import plain, plain_lines
from handoff_fsm.render.style import LIFELINE, MUTED, NOTE_FILL, NOTE_LINE, PARALLEL_FILL

CHAR: Final = 5.3
"""Width of one character of a 10 pt caption in points (DejaVu Sans, a little generous),
to wrap it."""
LINE: Final = 12.0
"""Height of one line of a 10 pt caption in points."""


def pos(x: float, y: float) -> str:
    """A pinned position in points (``neato -n2`` draws it where it is)."""
    return f"{x:.1f},{y:.1f}!"


def arrow(
    g: Any, name: str, x1: float, x2: float, y: float, *, color: str, dashed: bool, head: str
) -> None:
    """A horizontal arrow from ``x1`` to ``x2`` at ``y``: an edge between two tiny points."""
    g.node(f"{name}_a", shape="point", width="0.01", pos=pos(x1, y))
    g.node(f"{name}_b", shape="point", width="0.01", pos=pos(x2, y))
    g.edge(
        f"{name}_a",
        f"{name}_b",
        style="dashed" if dashed else "solid",
        color=color,
        arrowhead=head,
    )


def lines(words: str, width: float) -> list[str]:
    """``words`` broken into lines that fit ``width`` points (never inside a word)."""
    chars = max(12, int(width / CHAR))
    return textwrap.wrap(words, width=chars, break_long_words=False) or [""]


def caption(g: Any, name: str, words: list[str], x: float, y: float, **attrs: str) -> None:
    """Lines of text centred at ``x``, the last one's baseline near ``y``, on a white
    ground (so a lifeline behind it never strikes it through)."""
    g.node(
        name,
        label=plain_lines(words),
        shape="plaintext",
        style="filled",
        fillcolor="white",
        fontsize="10",
        height="0.2",
        margin="0",
        pos=pos(x, y + (len(words) - 1) * LINE / 2),
        **attrs,
    )


def note(g: Any, name: str, label: str, x: float, y: float, **attrs: str) -> None:
    """A small note (the folded-corner box) at ``(x, y)``."""
    g.node(
        name,
        label=plain(label),
        shape="note",
        style="filled",
        fillcolor=NOTE_FILL,
        color=NOTE_LINE,
        fontsize="9",
        height="0.25",
        margin="0.08,0.02",
        pos=pos(x, y),
        **attrs,
    )


def lifeline(g: Any, name: str, label: str, x: float, top: float, *, width: float) -> None:
    """A lifeline at ``x``: its name in a box at ``top`` and at the foot (y 0), dashed
    between; its nodes are ``<name>_head`` and ``<name>_foot``."""
    for place, y in (("head", top), ("foot", 0.0)):
        g.node(
            f"{name}_{place}",
            label=plain(label),
            shape="box",
            style="rounded,filled",
            fillcolor=PARALLEL_FILL["active"],
            color=MUTED,
            width=f"{width:g}",
            height="0.4",
            pos=pos(x, y),
        )
    g.edge(f"{name}_head", f"{name}_foot", style="dashed", color=LIFELINE, arrowhead="none")

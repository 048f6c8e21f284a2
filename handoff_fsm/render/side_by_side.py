"""Drawings placed next to each other in one SVG, each under its own heading.

Rule kept here: a panel is a finished SVG drawing made elsewhere (by Graphviz,
stamped with the DOT it was drawn from); it is embedded as it is, as a nested
``<svg>`` element, so the side-by-side figure shows exactly the drawings it is
made of. Only what a document of several drawings needs is changed: each
panel's ids get a prefix (the ids of one document must be unique) and its own
stamp is dropped. What the panels share is drawn once: a footer drawing (their
legend, say) goes under all of them. The figure's stamp
(:mod:`~handoff_fsm.render.stamp`) is the hash of its title, its headings and
its panels' and footer's stamps, so the drift check finds the figure stale when a
heading changes or a drawing's DOT does, and current when only the Graphviz that
drew them differs.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from handoff_fsm.render.stamp import SVG_START, dot_digest, read_stamp, stamp
from handoff_fsm.render.style import FONT, INK, MUTED

_SVG_END: Final = b"</svg>"
_STAMP_ELEMENT: Final = re.compile(rb'\s*<metadata id="dot-sha256">[0-9a-f]{64}</metadata>')
_SIZE: Final = re.compile(rb'\b(width|height)="([0-9.]+)pt"')
_VIEW_BOX: Final = re.compile(rb'\bviewBox="([^"]*)"')
_IDS: Final = re.compile(rb'(\bid="|url\(#|href="#)')

_GAP: Final = 24.0
"""Points between two panels."""
_MARGIN: Final = 12.0
_TITLE_SIZE: Final = 18.0
_HEADING_SIZE: Final = 16.0
_LINE_SIZE: Final = 12.0
_LEADING: Final = 1.45
_CHAR_WIDTH: Final = 0.6
"""A character's width as a fraction of the font size (generous for DejaVu Sans), to wrap a
panel's lines within the panel."""


_MIN_CHARS: Final = 24
"""A line under a heading is never wrapped narrower than this (a tiny drawing's lines then
reach beyond it)."""


def _chars(width: float) -> int:
    """How many characters of a line under a heading fit in ``width`` points."""
    return int(width / (_LINE_SIZE * _CHAR_WIDTH))


@dataclass(frozen=True, slots=True)
class Panel:
    """One drawing of a side-by-side figure and what is written above it."""

    heading: str
    lines: tuple[str, ...]
    """Lines under the heading (plain text)."""
    svg: bytes
    """The drawing: a stamped SVG document."""


@dataclass(frozen=True, slots=True)
class _Drawing:
    width: float
    height: float
    view_box: str
    body: bytes


def _drawing(svg: bytes) -> _Drawing:
    start = SVG_START.search(svg)
    end = svg.rfind(_SVG_END)
    if start is None or end < start.end():
        raise ValueError("not an SVG document: no <svg> element")
    sizes = {m.group(1): float(m.group(2)) for m in _SIZE.finditer(start.group(0))}
    view_box = _VIEW_BOX.search(start.group(0))
    if set(sizes) != {b"width", b"height"} or view_box is None:
        raise ValueError("an SVG panel needs width and height in points and a viewBox")
    body = _STAMP_ELEMENT.sub(b"", svg[start.end() : end], count=1)
    return _Drawing(sizes[b"width"], sizes[b"height"], view_box.group(1).decode(), body)


def _prefixed(body: bytes, prefix: str) -> bytes:
    """Every id the panel defines or refers to, with ``prefix`` in front."""
    return _IDS.sub(lambda match: match.group(1) + prefix.encode("ascii"), body)


def _text(x: float, y: float, words: str, size: float, color: str, *, bold: bool) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-family={quoteattr(FONT)} font-size="{size:.0f}"'
        f'{weight} fill="{color}">{escape(words)}</text>'
    )


def figure_digest(title: str, panels: tuple[Panel, ...], footer: bytes | None = None) -> str:
    """The figure's stamp: its words and the stamps (DOT hashes) of its drawings."""
    parts = [title]
    for panel in panels:
        digest = read_stamp("svg", panel.svg)
        if digest is None:
            raise ValueError(f"panel {panel.heading!r} is not a stamped drawing")
        parts += [panel.heading, *panel.lines, digest]
    if footer is not None:
        digest = read_stamp("svg", footer)
        if digest is None:
            raise ValueError("the footer is not a stamped drawing")
        parts += ["footer", digest]
    return dot_digest("\n".join(["side by side", *parts]))


def side_by_side_svg(
    title: str, panels: tuple[Panel, ...], *, footer: bytes | None = None
) -> bytes:
    """``panels`` left to right under ``title``, each under its heading, and ``footer`` (a
    drawing they share, such as their legend) once under them all, as one stamped SVG."""
    if not panels:
        raise ValueError("a side-by-side figure needs at least one panel")
    drawings = [_drawing(panel.svg) for panel in panels]
    below = _drawing(footer) if footer is not None else None
    wrapped = [
        [
            part
            for line in panel.lines
            for part in textwrap.wrap(line, max(_MIN_CHARS, _chars(drawing.width)))
        ]
        for panel, drawing in zip(panels, drawings, strict=True)
    ]
    lines = max(len(panel_lines) for panel_lines in wrapped)
    title_height = _TITLE_SIZE * _LEADING + _MARGIN
    head_height = _HEADING_SIZE * _LEADING + lines * _LINE_SIZE * _LEADING + _MARGIN / 2
    width = max(
        2 * _MARGIN + sum(d.width for d in drawings) + _GAP * (len(drawings) - 1),
        2 * _MARGIN + len(title) * _TITLE_SIZE * _CHAR_WIDTH,
    )
    height = _MARGIN + title_height + head_height + max(d.height for d in drawings) + _MARGIN
    if below is not None:
        width = max(width, 2 * _MARGIN + below.width)
        height += below.height
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg width="{width:.0f}pt" height="{height:.0f}pt" viewBox="0 0 {width:.1f} '
        f'{height:.1f}" xmlns="http://www.w3.org/2000/svg" '
        'xmlns:xlink="http://www.w3.org/1999/xlink">',
        f"<title>{escape(title)}</title>",
        '<rect x="0" y="0" width="100%" height="100%" fill="white"/>',
        _text(_MARGIN, _MARGIN + _TITLE_SIZE, title, _TITLE_SIZE, INK, bold=True),
    ]
    x = _MARGIN
    top = _MARGIN + title_height
    for number, (panel, drawing, panel_lines) in enumerate(
        zip(panels, drawings, wrapped, strict=True), start=1
    ):
        y = top + _HEADING_SIZE
        out.append(_text(x, y, panel.heading, _HEADING_SIZE, INK, bold=True))
        for line in panel_lines:
            y += _LINE_SIZE * _LEADING
            out.append(_text(x, y, line, _LINE_SIZE, MUTED, bold=False))
        out.append(
            f'<svg x="{x:.1f}" y="{top + head_height:.1f}" width="{drawing.width:.1f}" '
            f'height="{drawing.height:.1f}" viewBox="{drawing.view_box}">'
        )
        out.append(_prefixed(drawing.body, f"p{number}_").decode("utf-8").strip("\n"))
        out.append("</svg>")
        x += drawing.width + _GAP
    if below is not None:
        y = top + head_height + max(d.height for d in drawings)
        out.append(
            f'<svg x="{_MARGIN:.1f}" y="{y:.1f}" width="{below.width:.1f}" '
            f'height="{below.height:.1f}" viewBox="{below.view_box}">'
        )
        out.append(_prefixed(below.body, "f_").decode("utf-8").strip("\n"))
        out.append("</svg>")
    out.append("</svg>")
    data = ("\n".join(out) + "\n").encode("utf-8")
    return stamp("svg", data, figure_digest(title, panels, footer))

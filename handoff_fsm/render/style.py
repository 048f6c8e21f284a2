"""The look every Graphviz picture shares: one font list and one palette.

Rule kept here: a colour or font is named once, here, and a picture and its
legend take it from here, so a legend can never describe a colour its
picture does not use.
"""

from __future__ import annotations

from typing import Final

FONT: Final = "DejaVu Sans,Verdana,sans-serif"
"""Graphviz lays out with the first family (Debian's fonts-dejavu, on every machine of this
kind, so the layout is the same everywhere); SVG viewers get the whole list as CSS."""

PAPER: Final = "#ffffff"
"""The background of a box that has no colour of its own."""
INK: Final = "#1f2933"
MUTED: Final = "#52606d"
REJECT: Final = "#b3261e"
"""Rejected inputs and error codes."""
PARALLEL_FILL: Final = {"active": "#eef5fc", "cleaning_up": "#fdf3e7"}
OTHER_PARALLEL_FILL: Final = "#f4f6f8"
REGION_FILL: Final = PAPER
VISITED_FILL: Final = "#dff3e4"
"""Overlay: states the trace visited."""
TAKEN: Final = "#1565c0"
"""Overlay: transitions the trace took."""
FINAL_MARK: Final = "#0b7a3e"
"""Overlay: where the trace ended."""
NOTE_FILL: Final = "#fff8e1"
NOTE_LINE: Final = "#c9a227"
"""Sequence diagrams: notes (the chart state after a step), fill and border."""
LIFELINE: Final = "#9aa5b1"
"""Sequence diagrams: the participants' lifelines."""
COMPLETION_COLOURS: Final = {
    "Success": ("#e6f4ea", FINAL_MARK),
    "Canceled": ("#fdf3e7", "#b76e00"),
    None: ("#fde8e8", REJECT),
}
"""Sequence diagrams: (fill, line) of the closing box, by completion (``None``: none yet)."""
DIFF_LINE: Final = {
    "added": "#1a7f37",
    "removed": REJECT,
    "changed": "#b35900",
    "unchanged": "#8c959f",
}
"""Chart diff: line and text colour of each status (green, red, an amber dark enough to
read, grey)."""
DIFF_FILL: Final = {
    "added": "#dafbe1",
    "removed": "#ffebe9",
    "changed": "#fff1d6",
    "unchanged": PAPER,
}
UNCHANGED_CLUSTER_FILL: Final = "#f6f8fa"
"""Chart diff: the fill of a compound state nothing changed in."""

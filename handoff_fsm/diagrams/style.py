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

INK: Final = "#1f2933"
MUTED: Final = "#52606d"
REJECT: Final = "#b3261e"
"""Rejected inputs and error codes."""
PARALLEL_FILL: Final = {"active": "#eef5fc", "cleaning_up": "#fdf3e7"}
OTHER_PARALLEL_FILL: Final = "#f4f6f8"
REGION_FILL: Final = "#ffffff"
VISITED_FILL: Final = "#dff3e4"
"""Overlay: states the trace visited."""
TAKEN: Final = "#1565c0"
"""Overlay: transitions the trace took."""
FINAL_MARK: Final = "#0b7a3e"
"""Overlay: where the trace ended."""

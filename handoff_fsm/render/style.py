"""The look every Graphviz picture shares: one font list and one palette.

Rule kept here: a colour or font is named once, here, and a picture and its
legend take it from here, so a legend can never describe a colour its
picture does not use. Pages and SVG styled with CSS (the inspector, the notebook
drawing) take the same values as CSS custom properties (:data:`CSS_VARIABLES`).
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
HELD_BACK: Final = "#8a5a00"
"""Sequence diagrams: a fact held back until its acknowledgement came (an amber dark
enough to read; not the red of a rejection)."""
PARTING: Final = "#6f42c1"
"""Side by side: the rule where two runs of the same inputs part."""
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

ACTIVE_FILL: Final = VISITED_FILL
"""Inspector and notebook drawing: the fill of an active state."""
ACTIVE_LINE: Final = FINAL_MARK
"""Inspector and notebook drawing: the border of an active state (the overlay marks where a
trace ended the same way)."""
CURRENT_STEP: Final = "#e3eefc"
"""Inspector: the band behind the current step's messages in its lifecycle."""
REJECT_FILL: Final = "#fde8e8"
"""Inspector: the ground of a rejected input's error."""

CSS_VARIABLES: Final = {
    "--hf-font": FONT,
    "--hf-paper": PAPER,
    "--hf-ink": INK,
    "--hf-muted": MUTED,
    "--hf-rule": LIFELINE,
    "--hf-panel": OTHER_PARALLEL_FILL,
    "--hf-reject": REJECT,
    "--hf-reject-fill": REJECT_FILL,
    "--hf-taken": TAKEN,
    "--hf-active-fill": ACTIVE_FILL,
    "--hf-active-line": ACTIVE_LINE,
    "--hf-current-step": CURRENT_STEP,
    "--hf-parting": PARTING,
    "--hf-note-fill": NOTE_FILL,
    "--hf-note-line": NOTE_LINE,
    "--hf-success-fill": COMPLETION_COLOURS["Success"][0],
    "--hf-success-line": COMPLETION_COLOURS["Success"][1],
    "--hf-canceled-fill": COMPLETION_COLOURS["Canceled"][0],
    "--hf-canceled-line": COMPLETION_COLOURS["Canceled"][1],
    "--hf-incomplete-fill": COMPLETION_COLOURS[None][0],
    "--hf-incomplete-line": COMPLETION_COLOURS[None][1],
}
"""This palette as CSS custom properties: the styles of HTML pages and SVG that mark
things on these pictures (:mod:`~handoff_fsm.render.livechart`,
:mod:`~handoff_fsm.render.inspector`) say ``var(--hf-taken)``, never a colour of their own."""


def css_variables(selector: str) -> str:
    """The rule that defines :data:`CSS_VARIABLES` for ``selector`` (``:root``, say)."""
    body = "".join(f"{name}:{value};" for name, value in CSS_VARIABLES.items())
    return f"{selector}{{{body}}}"

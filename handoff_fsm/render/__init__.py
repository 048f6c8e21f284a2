"""Pictures, and the chart as documents other tools run, made from the descriptions handed in.

Public API only (no logic here): the statechart in DOT and Mermaid, and exported as
SCXML, python-statemachine's JSON and YAML, or an XState config (:mod:`.export`: data
another framework runs, not a picture, but a view of the same description), lifecycles as
sequence diagrams, panels side by side, a trace's path over the chart, the chart as SVG
with a configuration marked on it, the inspector page, the diff page (both sides'
charts stepped together), and the Graphviz call with the stamp every figure carries.
Nothing here reads a trace, runs a coordinator or writes a file (what is made is
returned as text or bytes): callers hand in a :class:`~handoff_fsm.structure.ChartModel`,
a :class:`~handoff_fsm.io.lifecycle.Lifecycle`, a followed run or trace, or a path.
(:mod:`handoff_fsm.render.notebook`, the drawing coordinators show in Jupyter, is not
imported here: :mod:`handoff_fsm.display` imports it when a notebook first asks for a
picture.)
"""

from handoff_fsm.render.diffpage import DiffPage, diff_page_html
from handoff_fsm.render.dot import Highlight, statechart_dot
from handoff_fsm.render.export import ExportFormat, export_chart
from handoff_fsm.render.graphviz import GraphvizError, GraphvizMissingError, render
from handoff_fsm.render.inspector import PageNote, inspector_html
from handoff_fsm.render.livechart import chart_svg, marked_chart_svg, model_svg
from handoff_fsm.render.mermaid import statechart_mermaid
from handoff_fsm.render.overlay import overlay_bytes, overlay_dot
from handoff_fsm.render.sequence import (
    COMPACT,
    Geometry,
    render_sequence,
    sequence_dot,
    sequence_markdown,
    sequence_mermaid,
)
from handoff_fsm.render.side_by_side import Panel, side_by_side_svg
from handoff_fsm.render.stamp import dot_digest, read_stamp

__all__ = [
    "COMPACT",
    "DiffPage",
    "ExportFormat",
    "Geometry",
    "GraphvizError",
    "GraphvizMissingError",
    "Highlight",
    "PageNote",
    "Panel",
    "chart_svg",
    "diff_page_html",
    "dot_digest",
    "export_chart",
    "inspector_html",
    "marked_chart_svg",
    "model_svg",
    "overlay_bytes",
    "overlay_dot",
    "read_stamp",
    "render",
    "render_sequence",
    "sequence_dot",
    "sequence_markdown",
    "sequence_mermaid",
    "side_by_side_svg",
    "statechart_dot",
    "statechart_mermaid",
]

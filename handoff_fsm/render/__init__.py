"""Pictures only, drawn from the descriptions they are handed.

Public API only (no logic here): the statechart in DOT and Mermaid, lifecycles as
sequence diagrams, panels side by side, a trace's path over the chart, and the
Graphviz call with the stamp every figure carries. Nothing here reads a trace,
runs a coordinator or writes a document: callers hand in a
:class:`~handoff_fsm.structure.ChartModel`, a
:class:`~handoff_fsm.io.lifecycle.Lifecycle` or a path.
"""

from handoff_fsm.render.dot import Highlight, statechart_dot
from handoff_fsm.render.graphviz import GraphvizError, GraphvizMissingError, render
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
    "Geometry",
    "GraphvizError",
    "GraphvizMissingError",
    "Highlight",
    "Panel",
    "dot_digest",
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

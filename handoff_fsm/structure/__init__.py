"""The chart as data, read once: every picture, document, check and command reads it here.

Public API only (no logic here): the family's description (:func:`describe_chart`
-> :class:`ChartModel`), each revision's decided chart (:func:`revision_chart`), the
named conditions its guards read, as a document's data model (:func:`chart_conditions`),
the declared transitions and which of them each compiled step fires
(:mod:`.transitions`), the structural diff of two charts (:func:`chart_diff`), and a
chart described in another process read back (:func:`chart_from_plain`).
"""

from handoff_fsm.structure.chartdiff import ChartDiff, chart_diff
from handoff_fsm.structure.conditions import Condition, chart_conditions
from handoff_fsm.structure.describe import (
    ChartModel,
    Edge,
    EdgeKind,
    EventKind,
    Guard,
    InputEvent,
    StateKind,
    StateNode,
    describe_chart,
)
from handoff_fsm.structure.plain import chart_from_plain
from handoff_fsm.structure.revisions import revision_chart

__all__ = [
    "ChartDiff",
    "ChartModel",
    "Condition",
    "Edge",
    "EdgeKind",
    "EventKind",
    "Guard",
    "InputEvent",
    "StateKind",
    "StateNode",
    "chart_conditions",
    "chart_diff",
    "chart_from_plain",
    "describe_chart",
    "revision_chart",
]

"""Diagrams and design review, rendered from the chart definition and real coordinator runs.

Public API only (no logic here): one description of the chart
(:func:`describe_chart` -> :class:`ChartModel`) and of each revision's chart
(:func:`revision_chart`), their renderers (DOT, Mermaid, Markdown tables), the
scripted lifecycles and their sequence diagrams, the simulated decode-phase
cancel under each revision, side by side, the trace overlay, the design
review, the files ``handoff-fsm diagrams`` writes, the stamps their figures
carry and the drift check. See README, "Diagrams".
"""

from handoff_fsm.diagrams.codes import ErrorCondition, error_conditions
from handoff_fsm.diagrams.decode_cancel import DecodeCancelRun, decode_cancel_runs
from handoff_fsm.diagrams.dot import Highlight, statechart_dot
from handoff_fsm.diagrams.files import (
    DIAGRAMS_DIR,
    REVIEW_NAME,
    Drift,
    diagram_files,
    drift,
    review_files,
    write_diagrams,
    write_review,
)
from handoff_fsm.diagrams.follow import CoordinatorSummary, FollowedRun, follow, list_coordinators
from handoff_fsm.diagrams.improvements import IMPROVEMENTS_MARKDOWN, KEPT_QUIRKS_MARKDOWN
from handoff_fsm.diagrams.lifecycle import Lifecycle, lifecycle_of, trace_lifecycle
from handoff_fsm.diagrams.mermaid import statechart_mermaid
from handoff_fsm.diagrams.model import (
    ChartModel,
    Edge,
    EdgeKind,
    Guard,
    StateKind,
    StateNode,
    describe_chart,
)
from handoff_fsm.diagrams.overlay import (
    TraceOverlayError,
    TracePath,
    TraceStep,
    overlay_dot,
    trace_path,
    write_overlay,
)
from handoff_fsm.diagrams.render import GraphvizError, GraphvizMissingError, render
from handoff_fsm.diagrams.review import chart_space, review_markdown
from handoff_fsm.diagrams.revisions import revision_chart
from handoff_fsm.diagrams.scenarios import (
    SCENARIOS,
    Scenario,
    ScenarioRun,
    run_scenario,
    scenario_runs,
    scenario_trace,
)
from handoff_fsm.diagrams.sequence import (
    COMPACT,
    Geometry,
    render_sequence,
    sequence_dot,
    sequence_markdown,
    sequence_mermaid,
)
from handoff_fsm.diagrams.side_by_side import Panel, side_by_side_svg
from handoff_fsm.diagrams.stamp import dot_digest, read_stamp
from handoff_fsm.diagrams.tables import inputs_markdown, transition_tables_markdown

__all__ = [
    "COMPACT",
    "DIAGRAMS_DIR",
    "IMPROVEMENTS_MARKDOWN",
    "KEPT_QUIRKS_MARKDOWN",
    "REVIEW_NAME",
    "SCENARIOS",
    "ChartModel",
    "CoordinatorSummary",
    "DecodeCancelRun",
    "Drift",
    "Edge",
    "EdgeKind",
    "ErrorCondition",
    "FollowedRun",
    "Geometry",
    "GraphvizError",
    "GraphvizMissingError",
    "Guard",
    "Highlight",
    "Lifecycle",
    "Panel",
    "Scenario",
    "ScenarioRun",
    "StateKind",
    "StateNode",
    "TraceOverlayError",
    "TracePath",
    "TraceStep",
    "chart_space",
    "decode_cancel_runs",
    "describe_chart",
    "diagram_files",
    "dot_digest",
    "drift",
    "error_conditions",
    "follow",
    "inputs_markdown",
    "lifecycle_of",
    "list_coordinators",
    "overlay_dot",
    "read_stamp",
    "render",
    "render_sequence",
    "review_files",
    "review_markdown",
    "revision_chart",
    "run_scenario",
    "scenario_runs",
    "scenario_trace",
    "sequence_dot",
    "sequence_markdown",
    "sequence_mermaid",
    "side_by_side_svg",
    "statechart_dot",
    "statechart_mermaid",
    "trace_lifecycle",
    "trace_path",
    "transition_tables_markdown",
    "write_diagrams",
    "write_overlay",
    "write_review",
]

"""Documents: the design review, the diff review, their tables, and the committed files.

Public API only (no logic here): ``REVIEW.md`` (:func:`review_markdown`), the
transition and input tables, the error conditions, the files ``handoff-fsm
diagrams`` writes and the drift check that keeps them current. Documents embed
pictures from :mod:`handoff_fsm.render` and read the chart from
:mod:`handoff_fsm.structure`.
"""

from handoff_fsm.review.codes import ErrorCondition, error_conditions
from handoff_fsm.review.design import chart_space, review_markdown
from handoff_fsm.review.diffpage import diff_page
from handoff_fsm.review.files import (
    DIAGRAMS_DIR,
    REVIEW_NAME,
    Drift,
    diagram_files,
    drift,
    review_files,
    write_diagrams,
    write_review,
)
from handoff_fsm.review.improvements import IMPROVEMENTS_MARKDOWN, KEPT_QUIRKS_MARKDOWN
from handoff_fsm.review.tables import inputs_markdown, transition_tables_markdown

__all__ = [
    "DIAGRAMS_DIR",
    "IMPROVEMENTS_MARKDOWN",
    "KEPT_QUIRKS_MARKDOWN",
    "REVIEW_NAME",
    "Drift",
    "ErrorCondition",
    "chart_space",
    "diagram_files",
    "diff_page",
    "drift",
    "error_conditions",
    "inputs_markdown",
    "review_files",
    "review_markdown",
    "transition_tables_markdown",
    "write_diagrams",
    "write_review",
]

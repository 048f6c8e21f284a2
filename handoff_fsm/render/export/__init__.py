"""The chart as documents other tools run: SCXML, python-statemachine's JSON and YAML, XState.

Public API only (no logic here). Rule kept: every document is written from the chart as
data, the one description every picture is drawn from
(:func:`~handoff_fsm.structure.describe.describe_chart`, a revision's
:func:`~handoff_fsm.structure.revisions.revision_chart`, and its named conditions),
through one document model (:mod:`.document`); each format's module only spells it. What
a format cannot run is named in the document, never dropped. The documents are text,
deterministic (same chart, same bytes), and nothing here writes a file: ``handoff-fsm
export`` and ``handoff-fsm diagrams`` do.
"""

from handoff_fsm.render.export.document import ExportChart, export_model
from handoff_fsm.render.export.formats import (
    FAMILY,
    SUFFIXES,
    ExportFormat,
    export_chart,
    export_document,
)

__all__ = [
    "FAMILY",
    "SUFFIXES",
    "ExportChart",
    "ExportFormat",
    "export_chart",
    "export_document",
    "export_model",
]

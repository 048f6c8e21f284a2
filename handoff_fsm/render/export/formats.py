"""Exporting one revision's chart, or the family, in a format: the one entry point.

Rule kept here: a format is a member of :class:`ExportFormat`, and its document is its
writer's text of the one document model (:func:`~.document.export_model`) of the chart
as data: :func:`~handoff_fsm.structure.revisions.revision_chart` for a revision,
:func:`~handoff_fsm.structure.describe.describe_chart` for the family.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Final

from handoff_fsm.chart import HandoffChart
from handoff_fsm.model import Revision, checked_revision
from handoff_fsm.render.export.document import ExportChart, export_model
from handoff_fsm.render.export.native import chart_json, chart_yaml
from handoff_fsm.render.export.scxml import chart_scxml
from handoff_fsm.render.export.xstate import chart_xstate
from handoff_fsm.structure.describe import ChartModel, describe_chart
from handoff_fsm.structure.revisions import revision_chart


class ExportFormat(StrEnum):
    """The formats ``handoff-fsm export --format`` writes."""

    SCXML = "scxml"
    """W3C SCXML, with python-statemachine's Python expressions."""
    JSON = "json"
    """python-statemachine's native statechart format, as JSON."""
    YAML = "yaml"
    """The same, as YAML."""
    XSTATE = "xstate"
    """An XState v5 machine config, as JSON."""


FAMILY: Final = "family"
"""``--revision family``: every revision in one document, the revision a parameter."""

SUFFIXES: Final[dict[ExportFormat, str]] = {
    ExportFormat.SCXML: "scxml",
    ExportFormat.JSON: "json",
    ExportFormat.YAML: "yaml",
    ExportFormat.XSTATE: "xstate.json",
}
"""The file suffix of each format (``statemachine.io.load`` reads the format off it)."""

_WRITERS: Final[dict[ExportFormat, Callable[[ExportChart], str]]] = {
    ExportFormat.SCXML: chart_scxml,
    ExportFormat.JSON: chart_json,
    ExportFormat.YAML: chart_yaml,
    ExportFormat.XSTATE: chart_xstate,
}


def export_document(
    model: ChartModel, fmt: ExportFormat | str, chart: type[HandoffChart] = HandoffChart
) -> str:
    """``model`` (the family's description of ``chart`` or a revision's) as a document of
    format ``fmt``."""
    return _WRITERS[ExportFormat(fmt)](export_model(model, chart))


def export_chart(fmt: ExportFormat | str, revision: Revision | str | None = Revision.SEED) -> str:
    """The chart as ``revision`` runs it (``None`` or ``"family"``: every revision, the
    revision a parameter of the document's data model), as a document of format ``fmt``.

    An unknown format is a ``ValueError``; an unknown revision the ``invalid_revision``
    error of :func:`~handoff_fsm.model.checked_revision`.
    """
    chosen = ExportFormat(fmt)
    if revision is None or revision == FAMILY:
        return export_document(describe_chart(), chosen)
    return export_document(revision_chart(checked_revision(revision)), chosen)

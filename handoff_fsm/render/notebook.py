"""The picture a coordinator or a chart shows in Jupyter: the inspector's chart, marked.

Rule kept here: a notebook shows the drawing ``handoff-fsm inspect`` shows, never a
second one: :data:`DRAWING` draws with :func:`notebook_svg`, which is
:func:`~handoff_fsm.render.livechart.marked_chart_svg`, the revision's own chart (drawn
by the project's DOT renderer and Graphviz) with the active atomic states and the
compound states holding them marked, styled by the SVG's own style sheet so it stands
alone in a notebook cell. Where Graphviz's ``dot`` is missing there is no picture, and
the text Jupyter shows instead says so (:meth:`NotebookDrawing.unavailable`).

Why nothing needs importing this. Jupyter asks an object for ``_repr_svg_``;
:class:`~handoff_fsm.coordinator.HandoffCoordinator` and (``engine="statechart"``) its
live :class:`~handoff_fsm.chart.HandoffChart` have one, but they are the core, and the
core never imports a layer above it, not even inside a function (docs/architecture.md
§2). So their ``_repr_svg_`` asks :mod:`handoff_fsm.display` for a drawing, and the
package's top level names this module's :data:`DRAWING` there as text
(:func:`~handoff_fsm.display.install_drawing_from`); :mod:`handoff_fsm.display` imports
this module when a picture is first asked for. ``import handoff_fsm`` alone therefore
gives every coordinator its picture, and stays as light as before: no Graphviz run and
nothing of the drawing layers loaded until a notebook shows a coordinator.

Importing this module (or ``%load_ext handoff_fsm.render.notebook``, the way before the
picture came without asking) installs the same drawing, so it is harmless;
:func:`uninstall` turns the pictures off and :func:`install` back on. IPython's formatter
registry (``display_formatter.formatters["image/svg+xml"].for_type``) was the other way;
it would need IPython here and would leave ``coordinator.chart._repr_svg_()``, called
directly, to the framework's own drawing, which needs pydot. The chart's
``_repr_svg_`` replaces that one, so every front end that asks for SVG gets this
drawing.
"""

from __future__ import annotations

from typing import Final

from handoff_fsm.display import Drawing, install_drawing
from handoff_fsm.model import Revision
from handoff_fsm.render.graphviz import INSTALL_HINT, installed
from handoff_fsm.render.livechart import marked_chart_svg

DOT_MISSING: Final = f"Graphviz's dot is not installed; {INSTALL_HINT}"
"""The line the text of a coordinator shows where ``dot`` is missing."""


def notebook_svg(revision: Revision, active: tuple[str, ...]) -> str:
    """``revision``'s chart with the atomic states ``active`` marked (SVG text)."""
    return marked_chart_svg(revision, active)


class NotebookDrawing:
    """The :class:`~handoff_fsm.display.Drawing` coordinators and charts use."""

    def svg(self, revision: Revision, active: tuple[str, ...]) -> str:
        return notebook_svg(revision, active)

    def unavailable(self) -> str | None:
        """:data:`DOT_MISSING` where Graphviz's ``dot`` is not found (looked up on every
        call, without running it: installing Graphviz mid-session brings the pictures
        back)."""
        return None if installed("dot") else DOT_MISSING


DRAWING: Final[Drawing] = NotebookDrawing()
"""The drawing the package's top level names (``handoff_fsm.render.notebook:DRAWING``)."""


def install() -> None:
    """Make coordinators and charts draw themselves with :data:`DRAWING` (what they do
    from ``import handoff_fsm`` on; importing this module does it too)."""
    install_drawing(DRAWING)


def uninstall() -> None:
    """No picture from here on: coordinators and charts show their text ``repr``."""
    install_drawing(None)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext handoff_fsm.render.notebook``: the same as :func:`install`."""
    install()


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext handoff_fsm.render.notebook``: the same as :func:`uninstall`."""
    uninstall()


install()

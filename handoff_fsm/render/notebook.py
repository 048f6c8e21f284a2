"""Coordinators and charts that draw themselves in Jupyter: importing this installs the drawing.

Rule kept here: a notebook shows the drawing ``handoff-fsm inspect`` shows, never a
second one: :func:`notebook_svg` is :func:`~handoff_fsm.render.livechart.marked_chart_svg`,
the revision's own chart (drawn by the project's DOT renderer and Graphviz) with the
active atomic states and the compound states holding them marked, styled by the SVG's
own style sheet so it stands alone in a notebook cell.

Why an opt-in import installs it. Jupyter asks an object for ``_repr_svg_``;
:class:`~handoff_fsm.coordinator.HandoffCoordinator` and (``engine="statechart"``) its
live :class:`~handoff_fsm.chart.HandoffChart` have one, but they are the core, and the
core never imports a layer above it, not even inside a function (docs/architecture.md
§2). So their ``_repr_svg_`` asks :mod:`handoff_fsm.display` for an installed drawing,
and this module, in the drawing layer, installs it when imported::

    import handoff_fsm.render.notebook  # or: %load_ext handoff_fsm.render.notebook

Until then they show their text ``repr``, and ``import handoff_fsm`` stays as light as
it is (no Graphviz run, nothing of the drawing layers loaded). IPython's formatter
registry (``display_formatter.formatters["image/svg+xml"].for_type``) was the other
way; it would need IPython here and would leave ``coordinator.chart._repr_svg_()``,
called directly, to the framework's own drawing, which needs pydot. The chart's
``_repr_svg_`` replaces that one, so every front end that asks for SVG gets this
drawing.
"""

from __future__ import annotations

from handoff_fsm.display import install_drawing
from handoff_fsm.model import Revision
from handoff_fsm.render.livechart import marked_chart_svg


def notebook_svg(revision: Revision, active: tuple[str, ...]) -> str:
    """``revision``'s chart with the atomic states ``active`` marked (SVG text)."""
    return marked_chart_svg(revision, active)


def install() -> None:
    """Make coordinators and charts draw themselves (:func:`notebook_svg`); importing this
    module does it."""
    install_drawing(notebook_svg)


def uninstall() -> None:
    """Back to no picture: coordinators and charts show their text ``repr``."""
    install_drawing(None)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext handoff_fsm.render.notebook``: the same as importing this module."""
    install()


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext handoff_fsm.render.notebook``."""
    uninstall()


install()

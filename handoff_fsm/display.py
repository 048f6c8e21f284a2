"""How a chart or a coordinator shows itself in a notebook: a drawing installed from above.

Rule kept here: the core draws nothing and imports no layer that draws
(docs/architecture.md §2: imports only point down, inside functions too). So
:class:`~handoff_fsm.chart.HandoffChart` and
:class:`~handoff_fsm.coordinator.HandoffCoordinator` answer Jupyter's
``_repr_svg_`` through :func:`draw`, which calls the drawing an upper layer
installed with :func:`install_drawing`, and answers ``None`` (Jupyter's "no picture":
it shows the text ``repr``) while none is installed. The project's drawing is
installed by importing :mod:`handoff_fsm.render.notebook` (or ``%load_ext
handoff_fsm.render.notebook``): the revision's own chart with the active states
marked, the very drawing ``handoff-fsm inspect`` shows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from handoff_fsm.model import Revision

Drawing = Callable[[Revision, tuple[str, ...]], str]
"""A revision and its active atomic states in, the chart as SVG text out."""

_INSTALLED: Final[dict[str, Drawing]] = {}


def install_drawing(drawing: Drawing | None) -> None:
    """Make ``drawing`` what charts and coordinators show in a notebook (``None``: nothing)."""
    if drawing is None:
        _INSTALLED.pop("svg", None)
    else:
        _INSTALLED["svg"] = drawing


def installed_drawing() -> Drawing | None:
    """The drawing :func:`install_drawing` installed, if any."""
    return _INSTALLED.get("svg")


def draw(revision: Revision, active: tuple[str, ...]) -> str | None:
    """``revision``'s chart with the atomic states ``active`` marked, as SVG text, by the
    installed drawing; ``None`` while none is installed."""
    drawing = _INSTALLED.get("svg")
    return drawing(revision, active) if drawing is not None else None

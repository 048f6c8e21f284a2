"""How a chart or a coordinator shows itself in a notebook: a drawing handed in from above.

Rule kept here: the core draws nothing and imports no layer that draws
(docs/architecture.md §2: imports only point down, inside functions too). So
:class:`~handoff_fsm.chart.HandoffChart` and
:class:`~handoff_fsm.coordinator.HandoffCoordinator` answer Jupyter through this
module: ``_repr_svg_`` is :func:`draw`, and ``_repr_pretty_`` (the text Jupyter shows
where there is no picture) is :func:`pretty`. Both use the :class:`Drawing` an upper
layer handed in, either installed as an object (:func:`install_drawing`) or named by
where it lives (:func:`install_drawing_from`, a ``"module:attribute"`` text). A named
drawing is imported only when a picture or a chart's text is first asked for: the
package's top level (``handoff_fsm/__init__.py``) names
:data:`handoff_fsm.render.notebook.DRAWING` that way, so ``import handoff_fsm`` alone
gives every coordinator its picture while loading nothing of the drawing layers (a name
is no import), and importing the package costs what it did before.

Why the text says when there is no picture: Jupyter computes a result's text before its
picture, and shows the text when the picture is ``None``; a drawing that cannot draw on
this machine (Graphviz's ``dot`` missing) says why through :meth:`Drawing.unavailable`,
and :func:`pretty` adds that line to the text, so the user sees the reason instead of a
silent missing picture.
"""

from __future__ import annotations

import importlib
from typing import Final, Protocol

from handoff_fsm.model import Revision


class Drawing(Protocol):
    """What draws a revision's chart with active states marked, for a notebook."""

    def svg(self, revision: Revision, active: tuple[str, ...]) -> str:
        """``revision``'s chart with the atomic states ``active`` marked, as SVG text."""
        ...

    def unavailable(self) -> str | None:
        """Why no picture can be drawn on this machine (one line), or ``None`` if one can."""
        ...


class Pretty(Protocol):
    """The part of IPython's pretty printer ``_repr_pretty_`` uses (IPython is no
    dependency of the core)."""

    def text(self, obj: str) -> None: ...


_DRAWING: Final = "drawing"
_LOADER: Final = "loader"
_HELD: Final[dict[str, Drawing | str]] = {}
"""The installed drawing (``"drawing"``), or where to import it from (``"loader"``)."""


def install_drawing(drawing: Drawing | None) -> None:
    """Make ``drawing`` what charts and coordinators show in a notebook (``None``: nothing);
    a drawing named with :func:`install_drawing_from` and not yet imported is forgotten."""
    _HELD.clear()
    if drawing is not None:
        _HELD[_DRAWING] = drawing


def install_drawing_from(location: str) -> None:
    """Make the drawing at ``location`` (``"package.module:ATTRIBUTE"``) what charts and
    coordinators show, imported when a picture is first asked for (not now).

    Raises ``ValueError`` for a location that is not ``module:attribute``, and changes
    nothing then.
    """
    module, colon, attribute = location.partition(":")
    if not (colon and module and attribute.isidentifier()):
        raise ValueError(f"a drawing's location is 'module:attribute', got {location!r}")
    _HELD.clear()
    _HELD[_LOADER] = location


def installed_drawing() -> Drawing | None:
    """The drawing in use, imported first if it was only named; ``None`` if there is none."""
    held = _HELD.get(_DRAWING)
    if held is not None and not isinstance(held, str):
        return held
    location = _HELD.get(_LOADER)
    if not isinstance(location, str):
        return None
    module, _, attribute = location.partition(":")
    drawing: Drawing = getattr(importlib.import_module(module), attribute)
    if _HELD.get(_LOADER) == location:  # importing it did not install another one
        install_drawing(drawing)
    return installed_drawing()


def pending_drawing() -> str | None:
    """Where the drawing in use will be imported from, while it is only named."""
    location = _HELD.get(_LOADER)
    return location if isinstance(location, str) else None


def draw(revision: Revision, active: tuple[str, ...]) -> str | None:
    """``revision``'s chart with the atomic states ``active`` marked, as SVG text, by the
    drawing in use; ``None`` (Jupyter's "no picture") while there is none or it cannot
    draw on this machine."""
    drawing = installed_drawing()
    if drawing is None or drawing.unavailable() is not None:
        return None
    return drawing.svg(revision, active)


def no_picture() -> str | None:
    """Why :func:`draw` gives no picture on this machine (one line), or ``None``: there
    is a picture, or no drawing is in use at all (nothing to explain)."""
    drawing = installed_drawing()
    return None if drawing is None else drawing.unavailable()


def pretty(text: str, printer: Pretty) -> None:
    """``_repr_pretty_``: ``text`` (the object's ``repr``), and on the next line why there
    is no picture, when there is none on this machine."""
    reason = no_picture()
    printer.text(text if reason is None else f"{text}\nno picture: {reason}")

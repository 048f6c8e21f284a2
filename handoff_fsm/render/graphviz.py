"""Drawing DOT with Graphviz: DOT source in, stamped SVG or PNG bytes out, or one clear error.

Rule kept here: the only place that runs Graphviz, through the ``graphviz``
package (``graphviz.pipe``), and the one place that translates
its failures: a missing ``dot`` binary (``graphviz.ExecutableNotFound``)
becomes :class:`GraphvizMissingError`, whose one-line message says how to
install Graphviz on Debian/Ubuntu, macOS and conda; ``dot`` rejecting its
input (``graphviz.CalledProcessError``) becomes :class:`GraphvizError` with
``dot``'s own message. Every figure leaves here stamped with the hash of its
DOT (:mod:`~handoff_fsm.render.stamp`), also when many are drawn in one run
(:func:`render_svgs`). The same input gives the same bytes. Whether ``dot`` is
there to run is asked here too (:func:`installed`), so a caller that must not fail
(a notebook's text) can tell without drawing.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from typing import Final, Literal

import graphviz

from handoff_fsm.render.stamp import Format, dot_digest, stamp

Engine = Literal["dot", "neato"]

INSTALL_HINT: Final = (
    "install Graphviz: `apt-get install graphviz` (Debian/Ubuntu), "
    "`brew install graphviz` (macOS) or `conda install -c conda-forge graphviz` (conda)"
)

_MESSAGE_LIMIT: Final = 400
"""How much of Graphviz's own error text a :class:`GraphvizError` quotes (one line)."""


class GraphvizError(RuntimeError):
    """Graphviz could not draw a figure (its message says why)."""


class GraphvizMissingError(GraphvizError):
    """Graphviz's ``dot`` binary, which the ``graphviz`` package runs, is not on PATH."""

    def __init__(self, binary: str = "dot") -> None:
        super().__init__(f"Graphviz's `{binary}` program was not found on PATH; {INSTALL_HINT}")
        self.binary = binary


def installed(engine: Engine = "dot") -> bool:
    """Whether Graphviz's ``engine`` program is where :func:`render` runs it (on ``PATH``),
    asked without starting a process (what a notebook's text asks on every display)."""
    return shutil.which(engine) is not None


def render(
    source: str, fmt: Format, *, engine: Engine = "dot", neato_no_op: int | None = None
) -> bytes:
    """Lay out and draw DOT ``source`` as ``fmt``, stamped with the source's SHA-256.

    ``engine`` picks the layout (``dot -K``); ``neato_no_op=2`` is ``neato -n2``:
    keep the positions the DOT gives (in points) and only draw the edges.
    """
    return stamp(fmt, _pipe(source, fmt, engine, neato_no_op), dot_digest(source))


def _pipe(source: str, fmt: Format, engine: Engine, neato_no_op: int | None) -> bytes:
    """Graphviz's drawing of ``source``, unstamped; its failures as this module's errors."""
    try:
        # The whole input goes in at once (``subprocess.run``): Graphviz writes the
        # first of several graphs while later ones are still to be read, and a pipe fed
        # line by line would wait on Graphviz while Graphviz waits on it.
        drawn = graphviz.pipe(
            engine, fmt, source.encode("utf-8"), neato_no_op=neato_no_op, quiet=True
        )
    except graphviz.ExecutableNotFound:
        raise GraphvizMissingError("dot") from None
    except graphviz.CalledProcessError as error:
        stderr = error.stderr.decode("utf-8", "replace") if error.stderr else ""
        message = " ".join(stderr.split()) or f"exit status {error.returncode}"
        if len(message) > _MESSAGE_LIMIT:
            message = message[:_MESSAGE_LIMIT] + "…"
        raise GraphvizError(f"Graphviz {engine} -T{fmt} failed: {message}") from None
    if not isinstance(drawn, bytes):
        raise TypeError(f"graphviz returned {type(drawn).__name__}, expected bytes")
    return drawn


_XML_DECLARATION: Final = b"<?xml "
"""How each SVG document Graphviz writes begins (one per graph of its input)."""


def render_svgs(
    sources: Sequence[str], *, engine: Engine = "dot", neato_no_op: int | None = None
) -> list[bytes]:
    """Each DOT source as SVG, drawn as :func:`render` draws it, in one run of Graphviz.

    Graphviz draws every graph of its input in turn, so many small figures (a page's
    lifecycles, one per handoff) cost one process instead of one each. Each SVG is
    stamped with its own source's digest; only the id Graphviz gives each drawing's
    outermost group tells them apart from :func:`render`'s (``page0,1_graph0`` for the
    second, ``graph0`` alone).
    """
    if not sources:
        return []
    drawn = _pipe("\n".join(sources), "svg", engine, neato_no_op)
    parts = [_XML_DECLARATION + part for part in drawn.split(_XML_DECLARATION)[1:]]
    if len(parts) != len(sources):
        raise GraphvizError(
            f"Graphviz {engine} -Tsvg drew {len(parts)} figures for {len(sources)} graphs"
        )
    return [
        stamp("svg", part, dot_digest(source)) for part, source in zip(parts, sources, strict=True)
    ]

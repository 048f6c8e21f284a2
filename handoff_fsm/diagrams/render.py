"""Running Graphviz: DOT source in, SVG or PNG bytes out, or a clear word on what is missing.

Rule kept here: the only place that starts a Graphviz process. The binaries
come from Debian's ``graphviz`` package (not from PyPI); when they are absent
the caller gets :class:`GraphvizMissingError` naming the package to install,
never a bare ``FileNotFoundError``. The same input gives the same bytes.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Literal

Format = Literal["svg", "png"]
Layout = Literal["dot", "neato"]

INSTALL_HINT = "install Debian's graphviz package: apt-get install graphviz (or `make graphviz`)"


class GraphvizMissingError(RuntimeError):
    """The ``dot``/``neato`` binary is not on PATH."""

    def __init__(self, binary: str) -> None:
        super().__init__(f"Graphviz's `{binary}` was not found on PATH; {INSTALL_HINT}")
        self.binary = binary


def require(binary: Layout = "dot") -> str:
    """The path of a Graphviz binary, or :class:`GraphvizMissingError`."""
    path = shutil.which(binary)
    if path is None:
        raise GraphvizMissingError(binary)
    return path


def render(
    source: str, fmt: Format, *, layout: Layout = "dot", args: tuple[str, ...] = ()
) -> bytes:
    """Lay out and draw DOT ``source``; raises ``RuntimeError`` with Graphviz's message."""
    binary = require(layout)
    result = subprocess.run(
        [binary, f"-T{fmt}", *args],
        input=source.encode("utf-8"),
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"{layout} -T{fmt} failed ({result.returncode}): {message}")
    return result.stdout

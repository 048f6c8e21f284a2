"""Text into Graphviz labels: every label the diagrams draw is made here, from escaped text.

Rule kept here: no other module escapes text for DOT. Identifiers and
attribute values are quoted by the ``graphviz`` package (``graphviz.quote``),
which passes a value written ``<...>`` through as an HTML-like label. So a
label is either :func:`html` (markup around text that went through
:func:`text`) or :func:`plain` (text only, quoted by the package, never read
as markup). Graphviz decodes ``&amp;``-style entities in both kinds, and
:func:`text` also makes any string safe for Graphviz's XML parser: a state
name, a trace's file name or an error message quoting a hostile trace line
can never break the DOT or make ``dot`` fail.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import graphviz

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\"}
"""Markup, and the backslash: Graphviz expands ``\\N``, ``\\G``, ... in both kinds of label
(even after decoding ``&#92;``), and reads ``\\\\`` as one backslash in both."""
_NOT_XML = frozenset({"\ufffe", "\uffff"})
"""Characters XML 1.0 forbids besides controls and surrogates."""


def _visible(char: str) -> str:
    """A character Graphviz's XML parser rejects, spelled as a Python escape instead."""
    code = ord(char)
    return f"\\\\x{code:02x}" if code < 0x100 else f"\\\\u{code:04x}"


def text(value: str) -> str:
    """``value`` as label text: markup and backslashes escaped, controls made visible.

    Tabs and line breaks become spaces (a label breaks lines with ``<br/>``, never
    with the source's whitespace); other control characters, lone surrogates and
    U+FFFE/U+FFFF are written as ``\\xNN``/``\\uNNNN`` so the label shows them.
    """
    out: list[str] = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char in "\t\n\r":
            out.append(" ")
        elif char in _NOT_XML or unicodedata.category(char) in ("Cc", "Cs"):
            out.append(_visible(char))
        else:
            out.append(char)
    return "".join(out)


def html(markup: str) -> str:
    """An HTML-like label (``<...>``) around ``markup`` that :func:`text` escaped.

    Graphviz rejects an empty HTML label (``<>``), so no markup is the empty string.
    """
    return f"<{markup}>" if markup else plain("")


def plain(value: str) -> str:
    """A label showing ``value`` as it is: a quoted DOT string, never read as HTML.

    Graphviz centres these as it does any node label (an HTML label's text is
    anchored at its start), which keeps the lifeline names centred in any viewer.
    """
    escaped: str = graphviz.nohtml(text(value))
    return escaped


def plain_lines(values: Sequence[str]) -> str:
    """:func:`plain` of several lines, each centred (joined by DOT's ``\\n``)."""
    escaped: str = graphviz.nohtml("\\n".join(text(value) for value in values))
    return escaped

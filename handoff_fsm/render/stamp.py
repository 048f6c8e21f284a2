"""Each SVG/PNG names the DOT it was drawn from: the drift check compares that name, not pixels.

Rule kept here: a figure is current when it was drawn from the DOT the code
generates now. The pixels (and SVG coordinates) also depend on the Graphviz
version, its plugins and the fonts of the machine, none of which is ours to
pin; the DOT is. So every figure :func:`~handoff_fsm.render.graphviz.render`
draws carries the SHA-256 of its DOT source, and :func:`comparable` reduces a
figure to that stamp before files are compared. Text outputs (DOT, Mermaid,
Markdown) are compared byte for byte. For the statechart, the stamp equals
``sha256sum diagrams/statechart.dot``, which anyone can check.

Where the stamp lives: in an SVG, a ``<metadata id="dot-sha256">`` element
right after the ``<svg>`` start tag (label text is escaped, so no label can
spell it); in a PNG, a ``tEXt`` chunk with keyword ``dot-sha256`` right after
``IHDR``.
"""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from typing import Final, Literal

Format = Literal["svg", "png"]

KEY: Final = "dot-sha256"
"""The stamp's name: the SVG ``<metadata>`` id and the PNG ``tEXt`` keyword."""
DATA_KEY: Final = "data-sha256"
"""The name of a plot's stamp: the digest of the data it draws, not of DOT text."""

SVG_START: Final = re.compile(rb"<svg\b[^>]*>")
"""An SVG document's start tag (what a stamp or a panel goes after)."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_DIGEST = re.compile(r"[0-9a-f]{64}")


def dot_digest(source: str) -> str:
    """The SHA-256 (hex) of the DOT text a figure is drawn from, as UTF-8."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def figure_format(name: str) -> Format | None:
    """``svg``/``png`` for a figure's file name, ``None`` for anything else."""
    suffix = name.rpartition(".")[2].lower()
    if suffix == "svg":
        return "svg"
    if suffix == "png":
        return "png"
    return None


def stamp(fmt: Format, data: bytes, digest: str, key: str = KEY) -> bytes:
    """``data`` (an SVG or PNG) with ``digest`` written into it under ``key``."""
    if _DIGEST.fullmatch(digest) is None:
        raise ValueError(f"not a SHA-256 hex digest: {digest!r}")
    if fmt == "svg":
        start = SVG_START.search(data)
        if start is None:
            raise ValueError("not an SVG document: no <svg> start tag")
        element = f'\n<metadata id="{key}">{digest}</metadata>'.encode("ascii")
        return data[: start.end()] + element + data[start.end() :]
    chunks = _png_chunks(data)
    if chunks is None or not chunks or chunks[0][0] != b"IHDR":
        raise ValueError("not a PNG image: no IHDR chunk after the signature")
    header_end = len(_PNG_SIGNATURE) + 12 + len(chunks[0][1])
    text = _png_chunk(b"tEXt", key.encode("latin-1") + b"\0" + digest.encode("ascii"))
    return data[:header_end] + text + data[header_end:]


def read_stamp(fmt: Format, data: bytes, key: str = KEY) -> str | None:
    """The digest a figure was stamped with under ``key``, or ``None`` (unstamped or not a
    figure)."""
    if fmt == "svg":
        found = re.search(
            rb'<metadata id="' + re.escape(key.encode("ascii")) + rb'">([0-9a-f]{64})</metadata>',
            data,
        )
        return found.group(1).decode("ascii") if found is not None else None
    for kind, body in _png_chunks(data) or ():
        keyword, _, value = body.partition(b"\0")
        if kind == b"tEXt" and keyword == key.encode("latin-1"):
            text = value.decode("latin-1")
            return text if _DIGEST.fullmatch(text) else None
    return None


def comparable(name: str, data: bytes) -> bytes:
    """What the drift check compares for file ``name``: a figure's stamp, else every byte.

    An unstamped figure is compared by its bytes, so it never equals a stamped one.
    """
    fmt = figure_format(name)
    digest = read_stamp(fmt, data) if fmt is not None else None
    return data if digest is None else f"{KEY}:{digest}".encode("ascii")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """The ``(type, data)`` chunks of a PNG up to ``IEND``; ``None`` when it is malformed."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    chunks: list[tuple[bytes, bytes]] = []
    at = len(_PNG_SIGNATURE)
    while at + 12 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        end = at + 12 + length
        if end > len(data):
            return None
        chunks.append((kind, data[at + 8 : at + 8 + length]))
        if kind == b"IEND":
            return chunks
        at = end
    return None

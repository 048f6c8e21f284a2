"""Figure stamps: the SHA-256 of the DOT rides inside the SVG/PNG and survives a reader's check."""

from __future__ import annotations

import hashlib
import struct
import xml.etree.ElementTree as ET
import zlib

import graphviz
import pytest

from handoff_fsm.render.stamp import (
    KEY,
    Format,
    comparable,
    dot_digest,
    figure_format,
    read_stamp,
    stamp,
)

SOURCE = "digraph g { a -> b }"
DIGEST = dot_digest(SOURCE)
OTHER = dot_digest("digraph g { a -> c }")


def _drawn(fmt: str, source: str = SOURCE) -> bytes:
    data: bytes = graphviz.Source(source).pipe(format=fmt, quiet=True)
    return data


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """Every chunk, checking each CRC as a PNG decoder does."""
    chunks = []
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        chunks.append((kind, body))
        at += 12 + length
    return chunks


def test_the_digest_is_sha256_of_the_utf8_dot() -> None:
    assert dot_digest("é") == hashlib.sha256(b"\xc3\xa9").hexdigest()
    assert hashlib.sha256(SOURCE.encode("ascii")).hexdigest() == DIGEST


@pytest.mark.slow
def test_an_svg_stamp_is_a_metadata_element_and_the_svg_stays_valid() -> None:
    svg = stamp("svg", _drawn("svg"), DIGEST)
    root = ET.fromstring(svg)
    metadata = root.find("{http://www.w3.org/2000/svg}metadata")
    assert metadata is not None
    assert (metadata.get("id"), metadata.text) == (KEY, DIGEST)
    assert root[0] is metadata  # first thing inside <svg>
    assert read_stamp("svg", svg) == DIGEST


@pytest.mark.slow
def test_a_png_stamp_is_a_text_chunk_after_ihdr_and_every_crc_holds() -> None:
    raw = _drawn("png")
    png = stamp("png", raw, DIGEST)
    chunks = _png_chunks(png)
    assert chunks[0][0] == b"IHDR"
    assert chunks[1] == (b"tEXt", f"{KEY}\0{DIGEST}".encode("latin-1"))
    assert [c for c in chunks if c[0] != b"tEXt"] == _png_chunks(raw)  # the image is untouched
    assert read_stamp("png", png) == DIGEST


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_unstamped_and_foreign_bytes_have_no_stamp(fmt: Format) -> None:
    assert read_stamp(fmt, _drawn(fmt)) is None
    assert read_stamp(fmt, b"") is None
    assert read_stamp(fmt, b"\x89PNG\r\n\x1a\n\x00\x00\xff\xffIHDR") is None


@pytest.mark.slow
def test_a_label_cannot_forge_a_stamp() -> None:
    """Label text reaches the SVG escaped, so it never reads as the stamp element."""
    forged = f'<metadata id="{KEY}">{OTHER}</metadata>'
    graph = graphviz.Digraph("g")
    graph.node("n", label=graphviz.nohtml(forged))
    svg = stamp("svg", _drawn("svg", graph.source), DIGEST)
    assert read_stamp("svg", svg) == DIGEST


@pytest.mark.slow
def test_stamp_refuses_what_it_cannot_stamp() -> None:
    with pytest.raises(ValueError, match="SHA-256"):
        stamp("svg", _drawn("svg"), "abc")
    with pytest.raises(ValueError, match="no <svg>"):
        stamp("svg", b"<html/>", DIGEST)
    with pytest.raises(ValueError, match="IHDR"):
        stamp("png", b"GIF89a", DIGEST)


@pytest.mark.slow
def test_comparable_reduces_figures_to_their_stamp_and_keeps_text_whole() -> None:
    assert figure_format("a.SVG") == "svg"
    assert figure_format("a.png") == "png"
    assert figure_format("a.dot") is None
    first = stamp("svg", _drawn("svg"), DIGEST)
    redrawn = stamp("svg", _drawn("svg").replace(b"graphviz version", b"graphviz  version"), DIGEST)
    assert first != redrawn
    assert comparable("x.svg", first) == comparable("x.svg", redrawn)
    assert comparable("x.svg", first) != comparable("x.svg", stamp("svg", _drawn("svg"), OTHER))
    unstamped = _drawn("svg")
    assert comparable("x.svg", unstamped) == unstamped
    assert comparable("x.dot", b"digraph") == b"digraph"

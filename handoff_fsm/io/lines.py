"""Reading trace lines from a byte stream with a bound on what one line may cost.

Rule kept here: no line, however long, holds more than ``max_line_bytes + 1``
bytes in memory. A longer line is read up to the limit, the rest is skipped in
fixed-size chunks up to its newline, and it is handed on as an
:class:`OverlongLine` (its first bytes and its full length) for replay to answer
``line_too_long``; the next line is read normally.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import BinaryIO

DEFAULT_MAX_LINE_BYTES = 1 << 20
"""1 MiB: thousands of times a real trace line, small enough to parse without a thought."""
LARGEST_MAX_LINE_BYTES = sys.maxsize - 1
"""The largest bound a stream can be read with (one more byte, the newline, must fit a
read's size)."""

_SKIP_CHUNK = 1 << 16


class OverlongLine(bytes):
    """The first ``max_line_bytes + 1`` bytes of a longer line; ``size`` is its full length."""

    size: int

    def __new__(cls, head: bytes, size: int) -> OverlongLine:
        line = super().__new__(cls, head)
        line.size = size
        return line


def line_size(line: str | bytes) -> int:
    """Bytes of ``line`` in UTF-8, not counting one trailing newline."""
    if isinstance(line, OverlongLine):
        return line.size
    if isinstance(line, str):
        return len(line.encode("utf-8", "surrogatepass")) - line.endswith("\n")
    return len(line) - line.endswith(b"\n")


def bounded_lines(
    stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[bytes]:
    """The lines of ``stream`` (newline kept), each longer one as an :class:`OverlongLine`."""
    if not 1 <= max_line_bytes <= LARGEST_MAX_LINE_BYTES:
        raise ValueError(
            f"max_line_bytes must be from 1 to {LARGEST_MAX_LINE_BYTES}, not {max_line_bytes}"
        )
    readline = stream.readline
    limit = max_line_bytes + 1  # room for the newline of a line of exactly max_line_bytes
    while line := readline(limit):
        if len(line) < limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while chunk := readline(_SKIP_CHUNK):
            if chunk.endswith(b"\n"):
                size += len(chunk) - 1
                break
            size += len(chunk)
        yield OverlongLine(line, size)

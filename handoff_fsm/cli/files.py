"""Opening the files a command names, so that every failure names its file.

Rule kept here: commands open their inputs and outputs only through these
helpers. ``-`` means the standard stream. Python's ``OSError`` names the file
when ``open`` fails, but not when a later read or write does (a full disk, a
stream that is a directory); these helpers add the name, and
:func:`handoff_fsm.cli.main` turns the error into one line on stderr.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, TextIO

from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES, bounded_lines

STDIN = "-"


class OverwriteError(FileExistsError):
    """An output path names an input of the same command: writing would erase it first."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(errno.EEXIST, message, path)


@contextmanager
def named_errors(name: str) -> Iterator[None]:
    """Give ``name`` to any ``OSError`` raised inside that names no file yet."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            error.filename = name
        raise


@contextmanager
def input_bytes(path: str) -> Iterator[BinaryIO]:
    """``path`` opened for reading bytes (``-``: standard input)."""
    if path == STDIN:
        yield sys.stdin.buffer
        return
    with open(path, "rb") as source:
        yield source


def trace_name(path: str) -> str:
    """How messages name the trace ``path`` (``<stdin>`` for ``-``)."""
    return "<stdin>" if path == STDIN else path


@contextmanager
def trace_lines(
    path: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[Iterator[bytes]]:
    """The lines of the trace ``path`` (``-``: standard input), for every command that reads one.

    Lines are bytes, read with a bound on their length
    (:func:`~handoff_fsm.io.lines.bounded_lines`), and never decoded here: a line
    that is not UTF-8 is the replayer's ``invalid_input``, answered like any other
    bad line, never an exception. Errors while opening *or* reading (a directory,
    an I/O error halfway) name the trace.
    """
    with input_bytes(path) as source:  # open() names the file it fails to open
        yield _named(bounded_lines(source, max_line_bytes), trace_name(path))


def _named(lines: Iterator[bytes], name: str) -> Iterator[bytes]:
    """``lines``, with read errors naming the trace (not, say, the output being written)."""
    with named_errors(name):
        yield from lines


@contextmanager
def output_text(path: str) -> Iterator[TextIO]:
    """``path`` opened for writing UTF-8 text (``-``: standard output, flushed at the end).

    Errors while writing (a full disk) name ``path``.
    """
    if path == STDIN:
        with named_errors("<stdout>"):
            yield sys.stdout
            sys.stdout.flush()
        return
    with named_errors(path), open(path, "w", encoding="utf-8") as out:
        yield out


def same_file(source: str, output: str) -> bool:
    """Whether a command's input ``source`` and its ``output`` are one existing file, so
    writing the output would erase the input first.

    ``-`` is the standard stream on each side (standard input for the source, standard
    output for the output), compared by what it is open on: ``replay - -o F < F`` and
    ``replay F > F`` are caught like ``replay F -o F``.
    """
    try:
        read = os.fstat(sys.stdin.fileno()) if source == STDIN else os.stat(source)
        written = os.fstat(sys.stdout.fileno()) if output == STDIN else os.stat(output)
    except (OSError, ValueError, AttributeError):  # a stream that is no file, or closed
        return False
    return os.path.samestat(read, written) and stat.S_ISREG(read.st_mode)

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
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, TextIO

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


def same_file(a: str, b: str) -> bool:
    """Whether two paths (not ``-``) name one existing file: writing one would erase the other."""
    if STDIN in (a, b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False

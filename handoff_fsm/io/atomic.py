"""Writing a file so that it holds either its old bytes or all of its new ones, never a part.

Rule kept here: every file the package writes is written through this module.
The new content goes into a temporary file in the target's own folder (so the
rename never crosses a file system), is flushed to disk, and is renamed onto the
target with :func:`os.replace`, which is atomic. Any failure on the way (a full
disk, ``ulimit -f``, an exception or Ctrl-C while a stream is produced) removes
the temporary file and leaves the target exactly as it was, so a previously good
output is never cut short. A streamed output (:func:`replacing_text`) streams
into the temporary file and is renamed at the end, so its size costs no memory.

An existing file keeps its permission bits; a symbolic link keeps pointing at the
file, which is the one replaced (as ``open(..., "w")`` would write through it).
What cannot be replaced is written in place: a device, a FIFO (``/dev/null``,
``/dev/full``, a named pipe), and any path under ``/dev`` (but ``/dev/shm``) or
``/proc``: ``/dev/stdout`` leads to the command's own open stream, which a
rename would bypass. Errors name the file the caller asked for, never the temporary one.

A folder of outputs (:func:`write_files`) is each file written this way; a file
that already holds exactly its new bytes is left alone (its time stamp too, so
``make`` sees nothing changed), and the files the writer *owns* (a predicate on
names) that this run did not write are removed: what a previous run left there
goes, a file of anyone else's stays.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, BinaryIO, Final, TextIO, cast

StrPath = str | os.PathLike[str]

_IN_PLACE_ROOTS: Final = ("/dev/", "/proc/")
"""Paths under these lead to devices and open streams: written in place, never replaced."""
_ORDINARY_UNDER_DEV: Final = ("/dev/shm/",)
"""Except these: ordinary files (a memory file system), replaced like any other."""
_ATTEMPTS: Final = 8
"""Temporary names tried before giving up (each is random: a clash is already unlikely)."""
_NAME_KEPT: Final = 200
"""How much of the target's name the temporary name repeats (a name is at most 255 bytes)."""


def _in_place(name: str) -> bool:
    """Whether ``name`` must be written where it is (it exists and cannot be replaced)."""
    where = os.path.abspath(name)
    if where.startswith(_IN_PLACE_ROOTS) and not where.startswith(_ORDINARY_UNDER_DEV):
        return True
    try:
        status = os.stat(name)
    except FileNotFoundError:  # a new file (or a missing folder: said when it is created)
        return False
    if stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    return not stat.S_ISREG(status.st_mode)


def _temporary(target: str) -> tuple[int, str]:
    """A new, empty, hidden file beside ``target``, open for writing: ``(fd, path)``."""
    folder, base = os.path.split(target)
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None  # created as open() creates a file: 0o666 less the umask
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(_ATTEMPTS):
        temp = os.path.join(folder, f".{base[:_NAME_KEPT]}.{os.urandom(4).hex()}.tmp")
        try:
            fd = os.open(temp, flags, 0o666)
        except FileExistsError:
            if attempt + 1 == _ATTEMPTS:
                raise
            continue
        except OSError as error:  # no folder, no right: said of the file asked for
            error.filename = None
            raise
        if mode is not None:
            try:
                os.chmod(temp, mode)
            except BaseException:
                os.close(fd)
                os.unlink(temp)
                raise
        return fd, temp
    raise AssertionError("unreachable")  # pragma: no cover


def _discard(stream: IO[Any], temp: str) -> None:
    """Close ``stream`` without minding what it still holds, and remove ``temp``."""
    with suppress(OSError, ValueError):
        stream.close()
    with suppress(FileNotFoundError):
        os.unlink(temp)


@contextmanager
def _replacing(path: StrPath, binary: bool) -> Iterator[IO[Any]]:
    name = os.fspath(path)
    temp: str | None = None
    try:
        if _in_place(name):
            with open(name, "wb") if binary else open(name, "w", encoding="utf-8") as out:
                yield out
            return
        target = os.path.realpath(name)  # a link stays a link to the replaced file
        fd, temp = _temporary(target)
        try:
            out = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        except BaseException:
            os.close(fd)
            os.unlink(temp)
            raise
        try:
            yield out
            out.flush()
            os.fsync(out.fileno())
            out.close()
            os.replace(temp, target)
        except BaseException:
            _discard(out, temp)
            raise
    except OSError as error:
        if error.filename is None or error.filename == temp:
            error.filename = name
        if error.filename2 == temp:
            error.filename2 = None
        raise


@contextmanager
def replacing_text(path: StrPath) -> Iterator[TextIO]:
    """``path`` opened for writing UTF-8 text, which replaces it whole when the block ends.

    If the block raises, ``path`` is left as it was.
    """
    with _replacing(path, binary=False) as out:
        yield cast(TextIO, out)


@contextmanager
def replacing_bytes(path: StrPath) -> Iterator[BinaryIO]:
    """``path`` opened for writing bytes, which replace it whole when the block ends."""
    with _replacing(path, binary=True) as out:
        yield cast(BinaryIO, out)


def holds(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a regular file holding exactly ``data`` (so need not be rewritten).

    Only a regular file of the right size is read: a device such as ``/dev/zero``
    would never end.
    """
    return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data


def write_bytes(path: StrPath, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step (left alone if it holds ``data`` already).

    ``path``'s folder must exist: a missing one is the ``FileNotFoundError`` that
    names ``path``.
    """
    if holds(Path(path), data):
        return
    with replacing_bytes(path) as out:
        out.write(data)


def write_files(
    folder: StrPath,
    files: Mapping[str, bytes],
    *,
    owns: Callable[[str], object] | None = None,
) -> list[Path]:
    """Write ``files`` (``/``-separated names relative to ``folder`` -> bytes) into ``folder``.

    ``folder`` and the subfolders the names need are created; an existing
    ``folder`` that is not a directory is ``NotADirectoryError``. Each file is
    written by :func:`write_bytes`. With ``owns``, the files directly in
    ``folder`` whose names ``owns`` accepts and which are not among ``files``
    (what an earlier run of the same writer left) are removed afterwards; no
    other file is touched. Returns the paths of ``files``, in order.
    """
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", os.fspath(folder))
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data)
        written.append(path)
    if owns is not None:
        for entry in sorted(root.iterdir()):
            if entry.name not in files and owns(entry.name) and not entry.is_dir():
                entry.unlink()
    return written

"""Opening the files a command names, and the one rule for the paths of its outputs.

Rule kept here: commands open their inputs and write their outputs only through
these helpers. ``-`` means the standard stream. Python's ``OSError`` names the
file when ``open`` fails, but not when a later read or write does (a full disk,
a stream that is a directory); these helpers add the name, and
:func:`handoff_fsm.cli.main` turns the error into one line on stderr.

Every output a command names is declared as an :class:`Output` and checked by
:func:`check_outputs` before any work is done, so a mistake costs nothing and
leaves every file as it was:

- ``-`` is standard output for an output that is a stream (``replay -o``) and a
  usage error (:class:`UsageError`, exit 2) for any other (a file whose format is
  its suffix, a file that shares standard output with the summary, a folder);
- a file's folder must exist (a missing one is one line naming the file; only a
  folder output of the same command, created with it, may be missing), and a file
  cannot be a directory;
- a folder output is created when written, but an existing file there is "not a
  directory";
- two outputs of one command that are the same file, or an output that is one of
  the command's inputs (``replay T -o T``, ``replay - -o T < T``), are refused:
  writing one would erase the other.

Files are then written atomically (:mod:`handoff_fsm.io.atomic`): a failed write
leaves the previous file whole.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import BinaryIO, Final, TextIO

from handoff_fsm.io.atomic import replacing_text, write_bytes
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES, bounded_lines

STDIN: Final = "-"
"""``-``: standard input as a trace, standard output as an output that is a stream."""
STDOUT_NAME: Final = "<stdout>"
"""How messages name standard output."""
STDERR_NAME: Final = "<stderr>"
"""How messages name standard error."""


class UsageError(Exception):
    """A command line that names an output wrongly; :func:`handoff_fsm.cli.main` says it in
    one line as the command's usage error (exit status 2)."""


class OverwriteError(FileExistsError):
    """Two names of one command are one file: writing one output would erase the other file."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(errno.EEXIST, message, path)


class Kind(Enum):
    """What an output is, which decides what its path may be."""

    STREAM = "stream"
    """A file, or ``-`` for standard output (``replay -o``)."""
    FILE = "file"
    """A file only: ``-`` is a usage error."""
    FOLDER = "folder"
    """A folder, created if missing, whose files the command names (``owns``)."""


@dataclass(frozen=True, slots=True)
class Output:
    """One output a command line names."""

    option: str
    """How the command line names it, for messages: ``-o``, ``--trace``, ``OUTDIR``."""
    path: str
    kind: Kind
    owns: Callable[[str], object] | None = None
    """For a folder: which paths in it (``/``-separated, relative) the command writes."""
    why: str = "it is written to a file"
    """Why ``-`` (standard output) cannot be this output: the end of the usage error."""


def check_outputs(outputs: Sequence[Output], inputs: Sequence[str] = ()) -> None:
    """Refuse, before any work, the outputs no write could honour (the module's rule).

    ``inputs`` are the files the command reads (``-``: standard input). Raises
    :class:`UsageError` for a misplaced ``-`` or an empty path, an ``OSError`` naming
    the file for a path that cannot be written (a missing folder, a directory, a
    file where a folder is meant) and :class:`OverwriteError` for two names of one
    file.
    """
    folders = [Path(o.path) for o in outputs if o.kind is Kind.FOLDER and o.path != STDIN]
    for output in outputs:
        _check_one(output, folders)
    for index, output in enumerate(outputs):
        for other in outputs[index + 1 :]:
            shared = _shared(output, other)
            if shared is not None:
                raise OverwriteError(
                    f"{output.option} and {other.option} would both write this file", shared
                )
        for source in inputs:
            if _overwrites(source, output):
                raise OverwriteError(
                    f"{output.option} would overwrite the trace it reads", output.path
                )


def _check_one(output: Output, folders: list[Path]) -> None:
    path = output.path
    if path == "":
        raise UsageError(f"{output.option}: an empty path names no file")
    if path == STDIN:
        if output.kind is Kind.STREAM:
            return
        what = "a folder" if output.kind is Kind.FOLDER else "a file"
        raise UsageError(f"{output.option} -: {output.why}: name {what}, not - (standard output)")
    target = Path(path)
    if output.kind is Kind.FOLDER:
        if target.exists() and not target.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        _existing_ancestor_is_a_folder(target)
        return
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    parent = target.parent
    if parent.is_dir():
        return
    _existing_ancestor_is_a_folder(parent)
    if any(_same_path(parent, folder) for folder in folders):
        return  # a folder output of the same command: created before this file is written
    raise FileNotFoundError(
        errno.ENOENT, f"No such file or directory (the folder {parent} does not exist)", path
    )


def create_parent_folders(outputs: Sequence[Output]) -> None:
    """Create the folder outputs that are the (missing) folders of file outputs.

    Called just before such a file is opened: ``simulate --trace DIR/run.jsonl
    --plots DIR`` into a new ``DIR``. Every other folder output is created when it is
    written.
    """
    folders = [Path(o.path) for o in outputs if o.kind is Kind.FOLDER and o.path != STDIN]
    for output in outputs:
        if output.kind is Kind.FOLDER or output.path == STDIN:
            continue
        parent = Path(output.path).parent
        if not parent.is_dir() and any(_same_path(parent, folder) for folder in folders):
            with named_errors(str(parent)):
                parent.mkdir(parents=True, exist_ok=True)


def _existing_ancestor_is_a_folder(path: Path) -> None:
    """A missing folder can be created only under a folder: say which file is in the way."""
    for ancestor in (path, *path.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(ancestor))
            return


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same_path(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file or folder (an existing one, or the same path)."""
    try:
        return os.path.samestat(os.stat(a), os.stat(b))
    except OSError:
        return _real(a) == _real(b)


def _owned(folder: Output, path: str) -> bool:
    """Whether the folder output ``folder`` writes the file ``path``."""
    if folder.owns is None:
        return False
    real, root = _real(Path(path)), _real(Path(folder.path))
    if not real.is_relative_to(root) or real == root:
        return False
    return bool(folder.owns(real.relative_to(root).as_posix()))


def _shared(a: Output, b: Output) -> str | None:
    """The file both outputs would write, if any."""
    if STDIN in (a.path, b.path):
        return None  # at most one output is standard output
    if a.kind is Kind.FOLDER and b.kind is Kind.FOLDER:
        return a.path if _same_path(Path(a.path), Path(b.path)) else None
    if a.kind is Kind.FOLDER or b.kind is Kind.FOLDER:
        folder, file = (a, b) if a.kind is Kind.FOLDER else (b, a)
        return file.path if _owned(folder, file.path) else None
    return b.path if _same_path(Path(a.path), Path(b.path)) else None


def _overwrites(source: str, output: Output) -> bool:
    if output.kind is Kind.FOLDER:
        return STDIN not in (source, output.path) and _owned(output, source)
    return same_file(source, output.path)


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
    """``path`` opened for streaming UTF-8 text (``-``: standard output, flushed at the end).

    A file is written atomically (:func:`~handoff_fsm.io.atomic.replacing_text`): it
    replaces ``path`` when the block ends, and if the block raises ``path`` is left as
    it was. Errors while writing (a full disk) name ``path`` (``<stdout>``).
    """
    if path == STDIN:
        with named_errors(STDOUT_NAME):
            yield sys.stdout
            sys.stdout.flush()
        return
    with named_errors(path), replacing_text(path) as out:
        yield out


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to the file output ``path`` atomically (``-`` was refused before)."""
    with named_errors(path):
        write_bytes(path, data)


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

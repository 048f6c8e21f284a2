"""Verdicts kept on disk, under a key that names everything they depend on.

Rule kept here: a kept result is read only under the key it was computed under, and
the key hashes all that decides it: every file of the package that computed it (its
own sources, wherever they live: the running package, a ``git:`` side's export, a
work tree), the interpreter's and the dependencies' versions, and the question asked
(a kind and its parameters, as JSON). An exhaustive exploration is deterministic, so
the same key gives the same JSON, and a package edited by one byte is judged afresh.
Keeping results only saves time: a folder that cannot be made or written, a lock
that cannot be taken, a package file that cannot be read, or a kept file that cannot
be read as a result, makes the caller compute it (and nothing is said); the answer is
the same either way.

Where: ``$HANDOFF_FSM_CACHE`` (a folder, or ``off`` to keep nothing), else
``$XDG_CACHE_HOME/handoff-fsm``, else ``~/.cache/handoff-fsm``. Each result is one
JSON file written atomically (:mod:`handoff_fsm.io.atomic`); two processes asking
the same question at once take turns (a lock file beside it), so the second reads
what the first computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import handoff_fsm
from handoff_fsm.io.atomic import write_bytes

ENVIRONMENT: Final = "HANDOFF_FSM_CACHE"
"""The variable that names the folder (``off``: keep nothing)."""
OFF: Final = "off"
PACKAGE_ROOT: Final = Path(handoff_fsm.__file__).resolve().parent.parent
"""Where the running package lives (its ``handoff_fsm`` folder is under it)."""
_DEPENDENCIES: Final = ("pydantic", "pydantic-core", "python-statemachine")
_FORMAT: Final = 1
"""Bumped when what a kept file holds changes shape."""


def folder() -> Path | None:
    """The folder results are kept in (``None``: keep nothing)."""
    named = os.environ.get(ENVIRONMENT)
    if named is not None:
        return None if named.strip().lower() in (OFF, "") else Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "handoff-fsm"


def package_digest(root: Path) -> str:
    """SHA-256 over every file of ``root``'s ``handoff_fsm`` package (names and bytes;
    bytecode aside), read now: a file edited a moment ago counts."""
    package = root / "handoff_fsm"
    digest = hashlib.sha256()
    for path in sorted(p for p in package.rglob("*") if p.is_file() and _kept(p, package)):
        data = path.read_bytes()
        name = path.relative_to(package).as_posix().encode()
        digest.update(b"%d:%s%d:" % (len(name), name, len(data)))
        digest.update(data)
    return digest.hexdigest()


def is_running_package(root: Path) -> bool:
    """Whether ``root``'s ``handoff_fsm`` package holds exactly the running package's files
    (by :func:`package_digest`, read now). Every answer such a package gives is the running
    package's (both run on this interpreter and these dependencies), which is why a result
    kept for one is read for the other; a side that is such a package is judged and driven
    in this process instead of a process of its own. A file that cannot be read: no."""
    try:
        return package_digest(root) == package_digest(PACKAGE_ROOT)
    except OSError:
        return False


def _kept(path: Path, package: Path) -> bool:
    parts = path.relative_to(package).parts
    return "__pycache__" not in parts and path.suffix not in (".pyc", ".pyo")


def key(kind: str, parameters: Mapping[str, Any], root: Path = PACKAGE_ROOT) -> str:
    """The key of the question ``kind`` with ``parameters``, asked of ``root``'s package."""
    what = {
        "format": _FORMAT,
        "kind": kind,
        "parameters": parameters,
        "package": package_digest(root),
        "python": sys.version,
        "dependencies": {name: _version(name) for name in _DEPENDENCIES},
    }
    text = json.dumps(what, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def kept(
    kind: str,
    parameters: Mapping[str, Any],
    compute: Callable[[], dict[str, Any]],
    root: Path = PACKAGE_ROOT,
) -> dict[str, Any]:
    """The answer to ``kind``/``parameters`` of ``root``'s package: read from the folder
    when it holds one under this key, else ``compute()`` (a JSON object), kept there."""
    where = folder()
    if where is None:
        return compute()
    try:
        name = key(kind, parameters, root)
    except OSError:  # a package file that cannot be read: no key, nothing kept
        return compute()
    path = where / f"{name}.json"
    with suppress(OSError):
        where.mkdir(parents=True, exist_ok=True)
    with _turn(where, name):
        found = _read(path, name)
        if found is not None:
            return found
        answer = compute()
        with suppress(OSError):
            record = {"key": name, "kind": kind, "answer": answer}
            write_bytes(path, json.dumps(record, separators=(",", ":")).encode())
        return answer


def _read(path: Path, name: str) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != name:
        return None
    answer = record.get("answer")
    return answer if isinstance(answer, dict) else None


@contextmanager
def _turn(where: Path, name: str) -> Iterator[None]:
    """Hold the lock of ``name`` (where locks exist and the folder can be written)."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only: elsewhere nobody waits, both compute
    except ImportError:
        yield
        return
    try:
        lock = os.open(where / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        with suppress(OSError):  # no lock to be had (ENOLCK): both compute, alike
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)

"""The two sides of a behavioural diff: what a side name means and how it is loaded.

Rule kept here: a side is always driven through trace replay by
:mod:`handoff_fsm.verify.diff.driver`, so the running package and a package
committed long ago answer in exactly the same terms. A side is one of

- ``REVISION[@ENGINE]``: the running package, protocol revision ``REVISION``
  (``seed``, ``a976b2bf``, ...), on the ``compiled`` (default) or ``statechart``
  engine, driven in-process;
- ``git:REV[:REVISION][@ENGINE]``: the project as committed at git revision
  ``REV`` of the repository containing the working directory, exported with
  ``git archive`` into a temporary directory and driven in a subprocess that imports
  the package from there and from nowhere else (:func:`isolated_path`; the running
  package, even an editable install of the working copy, never leaks into a side);
  without ``REVISION``, whatever that commit's replay does by default;
- ``worktree[:REVISION][@ENGINE]``: the same, for the files of that repository's
  working tree as they are on disk (uncommitted edits included).

Nothing is left behind: temporary directories and processes end with the diff.
"""

from __future__ import annotations

import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, Protocol

from handoff_fsm.coordinator import ENGINES, Engine
from handoff_fsm.errors import handoff_error, quoted
from handoff_fsm.model import Revision
from handoff_fsm.verify.cache import is_running_package
from handoff_fsm.verify.diff.driver import SideDriver
from handoff_fsm.verify.diff.errors import DiffErrorCode

_ENGINE_NAMES: Final[dict[str, Engine]] = {name: name for name in ENGINES}
GIT_PREFIX: Final = "git:"
WORKTREE: Final = "worktree"
_REVISION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def known_revisions() -> tuple[str, ...]:
    """The protocol revisions the running package offers (``seed`` first)."""
    return tuple(revision.value for revision in Revision)


@dataclass(frozen=True, slots=True)
class SideSpec:
    """A parsed side name (see the module docstring for the grammar)."""

    text: str
    """As given: it names the side in every report."""
    source: str | None
    """``None`` for the running package, a git revision, or :data:`WORKTREE`."""
    revision: str | None
    """The protocol revision to ask for (``None``: the side's default)."""
    engine: Engine | None
    """``None``: the side's default engine."""

    @property
    def in_process(self) -> bool:
        return self.source is None


def _unknown(message: str) -> Exception:
    return handoff_error(DiffErrorCode.UNKNOWN_DIFF_SIDE, message)


def parse_side(text: str) -> SideSpec:
    """Read a side name; raises ``DiffError`` (``unknown_diff_side``) naming what is wrong."""
    side = quoted(text)
    rest, engine = text, None
    head, at, tail = text.rpartition("@")
    if at and tail in _ENGINE_NAMES:
        rest, engine = head, _ENGINE_NAMES[tail]
    elif at and not text.startswith(GIT_PREFIX):  # a git revision may hold "@" (HEAD@{1})
        raise _unknown(f"side {side}: unknown engine {quoted(tail)} (expected one of {ENGINES})")
    if rest.startswith(GIT_PREFIX) or rest == WORKTREE or rest.startswith(WORKTREE + ":"):
        if rest.startswith(GIT_PREFIX):
            source, _, revision = rest[len(GIT_PREFIX) :].partition(":")
            if not source:
                raise _unknown(f"side {side}: git:REV needs a revision, e.g. git:HEAD~1")
        else:
            source, _, revision = rest.partition(":")
        if revision and not _REVISION_NAME.match(revision):
            raise _unknown(f"side {side}: {quoted(revision)} is not a protocol revision name")
        return SideSpec(text, source, revision or None, engine)
    if rest not in known_revisions():
        raise _unknown(
            f"side {side}: unknown protocol revision {quoted(rest)} "
            f"(this package has {', '.join(known_revisions())}; or git:REV, worktree)"
        )
    return SideSpec(text, None, rest, engine)


# ---------------------------------------------------------------------- driving a side


class Side(Protocol):
    """A running side: requests go in (``submit``), responses come out in order (``result``)."""

    spec: SideSpec

    def submit(self, request: dict[str, Any]) -> None: ...
    def result(self) -> dict[str, Any]: ...
    def fresh(self) -> Side:
        """The same side, started anew (a new process for a subprocess side)."""
        ...

    def close(self) -> None: ...


def ask(side: Side, request: dict[str, Any]) -> dict[str, Any]:
    side.submit(request)
    return side.result()


class InProcessSide:
    """The running package, driven by a :class:`SideDriver` in this process.

    ``factory(handoff_id, order, fallback)`` replaces the coordinators replay builds
    (any implementation can be a side: tests diff deliberately broken ones).
    """

    def __init__(self, spec: SideSpec, factory: Callable[..., Any] | None = None) -> None:
        self.spec = spec
        self.factory = factory
        self._driver = SideDriver(spec.engine, spec.revision, factory)
        self._pending: list[dict[str, Any]] = []

    def submit(self, request: dict[str, Any]) -> None:
        self._pending.append(self._driver.handle(request))

    def result(self) -> dict[str, Any]:
        return self._pending.pop(0)

    def fresh(self) -> InProcessSide:
        return InProcessSide(self.spec, self.factory)

    def close(self) -> None:
        self._pending.clear()


_DRIVER_SOURCE: Final = Path(inspect.getfile(SideDriver)).read_text(encoding="utf-8")
_DRIVER_NAME: Final = "<handoff-fsm diff side>"

_ISOLATED: Final = ("-I", "-S")
"""A side's interpreter reads no ``PYTHON*`` variable, no user site and no ``.pth`` file:
an editable install's ``.pth`` puts the working copy on the import path (or a finder for
it on ``sys.meta_path``), and a commit lacking a module would import it from there."""


def isolated_path(root: Path) -> list[str]:
    """A side's import path: ``root`` first, then this interpreter's path (the standard
    library, the installed dependencies) without any entry holding a ``handoff_fsm``
    package, so the package a side imports is ``root``'s, all of it."""
    kept = [entry for entry in sys.path if entry and not (Path(entry) / "handoff_fsm").exists()]
    return [str(root), *kept]


def isolated_command(root: Path, source: str, *args: str) -> list[str]:
    """The command that runs ``source`` (a module's text) with ``root``'s package alone.

    The source is compiled as a module of its own (the driver opens with a
    ``__future__`` import) once the import path is :func:`isolated_path`."""
    program = (
        f"import sys\nsys.path[:0] = {isolated_path(root)!r}\n"
        f"exec(compile({source!r}, {_DRIVER_NAME!r}, 'exec'))\n"
    )
    return [sys.executable, *_ISOLATED, "-c", program, *args]


def side_environment() -> dict[str, str]:
    """A side's environment: this one without any ``PYTHON*`` variable (which would point
    the side's interpreter elsewhere), writing no bytecode into the side's package."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


class SubprocessSide:
    """A package at ``root`` driven by the diff driver in a subprocess (JSON lines).

    A second process is started beside the first and waits, so that :meth:`fresh`
    (the replay from scratch of every reported trace) costs no start-up time.
    """

    def __init__(self, spec: SideSpec, root: Path, where: str, *, spare: bool = True) -> None:
        self.spec = spec
        self.root = root
        self.where = where
        """What the process runs, for messages (``commit 3f2a1b0c9d8e``)."""
        self._spare = SubprocessSide(spec, root, where, spare=False) if spare else None
        self._errors: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._process = subprocess.Popen(
            isolated_command(root, _DRIVER_SOURCE, json.dumps([spec.engine, spec.revision])),
            cwd=root,
            env=side_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            text=True,
            encoding="utf-8",
        )

    def submit(self, request: dict[str, Any]) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failure("it stopped reading requests") from None

    def result(self) -> dict[str, Any]:
        stdout = self._process.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise self._failure("it exited without answering")
        response: dict[str, Any] = json.loads(line)
        if "failure" in response:
            raise self._failure(f"it failed:\n{response['failure']}")
        return response

    def _failure(self, what: str) -> Exception:
        self._process.poll()
        self._errors.seek(0)
        errors = self._errors.read().decode("utf-8", "replace").strip()
        detail = f"\n{errors}" if errors else ""
        return handoff_error(
            DiffErrorCode.DIFF_SIDE_FAILED,
            f"side {self.spec.text} ({self.where}): {what}{detail}",
        )

    def fresh(self) -> SubprocessSide:
        """A process that has built no coordinator yet (the spare one, the first time)."""
        spare, self._spare = self._spare, None
        return spare if spare is not None else SubprocessSide(self.spec, self.root, self.where)

    def close(self) -> None:
        """End the process: its input closes; one that does not exit at once is terminated."""
        if self._spare is not None:
            self._spare.close()
            self._spare = None
        process = self._process
        if process.stdin is not None:
            with suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        self._errors.close()


# ---------------------------------------------------------------------- git


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None:
        raise _unknown("git is not installed, so git: and worktree sides cannot be loaded")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)


def repository_root(cwd: Path) -> Path:
    """The top of the git working tree containing ``cwd``."""
    result = _git(cwd, "rev-parse", "--show-toplevel")
    if result.returncode != 0:
        raise _unknown(f"{cwd} is not inside a git repository (needed for git: and worktree sides)")
    return Path(result.stdout.decode().strip())


def resolve_commit(cwd: Path, rev: str) -> str:
    """The full commit id ``rev`` names in the repository containing ``cwd``."""
    if rev.startswith("-"):
        raise _unknown(f"git revision {quoted(rev)} may not start with '-'")
    result = _git(cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if result.returncode != 0:
        raise _unknown(f"git cannot resolve {quoted(rev)} to a commit in {repository_root(cwd)}")
    return result.stdout.decode().strip()


def package_root(tree: Path) -> Path:
    """The directory to put on ``PYTHONPATH`` for ``tree``'s ``handoff_fsm`` package."""
    for candidate in (tree, tree / "src"):
        if (candidate / "handoff_fsm" / "__init__.py").is_file():
            return candidate
    raise _unknown(f"{tree} holds no handoff_fsm package (looked in ./ and ./src)")


def export_commit(cwd: Path, commit: str, into: Path) -> Path:
    """Write the files of ``commit`` into the directory ``into`` (``git archive``)."""
    result = _git(cwd, "archive", "--format=tar", commit)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise _unknown(f"git archive {commit} failed: {message}")
    with tarfile.open(fileobj=io.BytesIO(result.stdout), mode="r:") as archive:
        archive.extractall(into, filter="data")
    return into


def side_package(
    spec: SideSpec, where: Path, stack: ExitStack, exported: dict[str, Path] | None = None
) -> tuple[Path, str]:
    """The package root of a ``git:`` or ``worktree`` side and what it is, in words
    (``commit 3f2a1b0c9d8e``); a commit is exported into a temporary directory that
    ``stack`` removes (once per commit in ``exported``)."""
    if spec.source == WORKTREE:
        tree = repository_root(where)
        return package_root(tree), f"working tree {tree}"
    assert spec.source is not None, "the running package has no other root"
    exported = {} if exported is None else exported
    commit = resolve_commit(where, spec.source)
    if commit not in exported:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hf-diff-")))
        exported[commit] = export_commit(where, commit, folder)
    return package_root(exported[commit]), f"commit {commit[:12]}"


@contextmanager
def opened_sides(texts: tuple[str, str], cwd: Path | None = None) -> Iterator[tuple[Side, Side]]:
    """Both sides, started (subprocesses start in parallel) and closed afterwards.

    The running package's sides stay in this process: moving them into subprocesses
    (one per core) was measured slower, even on an idle machine, as the JSON between
    the processes costs more than the second core gives. So does a ``git:`` or
    ``worktree`` side whose package is the running one, file for file
    (:func:`~handoff_fsm.verify.cache.is_running_package`): its process could only
    answer as this one does.
    """
    specs = tuple(parse_side(text) for text in texts)
    where = Path.cwd() if cwd is None else cwd
    with ExitStack() as stack:
        exported: dict[str, Path] = {}
        sides: list[Side] = []
        for spec in specs:
            side: Side
            if spec.source is None:
                side = InProcessSide(spec)
            else:
                root, what = side_package(spec, where, stack, exported)
                same = is_running_package(root)
                side = InProcessSide(spec) if same else SubprocessSide(spec, root, what)
            stack.callback(side.close)
            sides.append(side)
        for side in sides:  # both processes import at once; wait for both to be ready
            side.submit({"op": "hello"})
        for side in sides:
            side.result()
        yield sides[0], sides[1]

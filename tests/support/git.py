"""Git repositories for the tests of ``git:`` and ``worktree`` sides: one way to run git
(a fixed author, so a machine without a git identity commits too), one way to make a
repository of the package as it is now, and one way to export a commit's files."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = ("-c", "user.name=test", "-c", "user.email=test@example.com")


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` (it must succeed); its standard output."""
    return _git(repo, *args).decode()


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", *IDENTITY, *args], cwd=repo, capture_output=True, check=True
    ).stdout


def export(repo: Path, commit: str, into: Path) -> Path:
    """The files of ``commit`` (``git archive``) in ``into``, a new folder."""
    archive = _git(repo, "archive", commit)
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def package_repository(path: Path, branch: str = "main", message: str = "as it is") -> Path:
    """``path`` made a repository whose one commit is the package as it is now (its
    sources and pyproject.toml, no bytecode)."""
    if shutil.which("git") is None:
        pytest.fail("git is needed for git: and worktree sides")
    shutil.copytree(
        ROOT / "handoff_fsm", path / "handoff_fsm", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", path / "pyproject.toml")
    git(path, "init", "--quiet", f"--initial-branch={branch}")
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", message)
    return path

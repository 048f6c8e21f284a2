"""Where a design review came from: the package version, the chart's hash, the git commit.

Rule kept here: what a committed file says about itself must stay true in the
commit that contains it, and a file cannot name the commit that contains it
(the commit's hash depends on the file). So the review committed under
``diagrams/`` is stamped with what the code alone determines: the package
version and the SHA-256 of the statechart's DOT (the same digest the committed
SVG and PNG carry, and ``sha256sum diagrams/statechart.dot`` prints). The drift
test fails whenever the file differs from what the code of its commit
generates, so the commit containing it is its provenance. The git commit of
the working tree (``dirty`` when the package's sources have uncommitted
changes) is read only on request: ``handoff-fsm review`` prints it, and writes
it into a review meant to travel outside the repository (``--git``); where
the package is not in a git checkout (an installed wheel) there is no commit,
:func:`git_state` is ``None``, and ``review --git`` says so instead of writing
a review without one.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import handoff_fsm
from handoff_fsm.render.dot import statechart_dot
from handoff_fsm.render.stamp import dot_digest
from handoff_fsm.structure.describe import ChartModel

PACKAGE_DIR: Final = Path(handoff_fsm.__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class GitState:
    """The commit checked out where the package's sources live, and whether they changed."""

    commit: str
    dirty: bool

    def __str__(self) -> str:
        return f"{self.commit}{' (dirty)' if self.dirty else ''}"


@dataclass(frozen=True, slots=True)
class Provenance:
    version: str
    """``handoff_fsm.__version__``."""
    chart_sha256: str
    """SHA-256 of the statechart's DOT (``sha256sum diagrams/statechart.dot``)."""
    git: GitState | None = None
    """Only when asked for, and only where the sources are a git working tree."""

    def line(self) -> str:
        """One line for a terminal: ``handoff-fsm 0.1.0, chart sha256 75a5d5a01db2…``."""
        text = f"handoff-fsm {self.version}, chart sha256 {self.chart_sha256[:12]}"
        return text + (f", git {self.git}" if self.git is not None else "")

    def markdown(self) -> list[str]:
        """The review's provenance paragraph."""
        if self.git is not None:
            commit = (
                f"Generated from git commit `{self.git.commit}`"
                + (
                    ", with uncommitted changes to the package's sources (dirty)"
                    if self.git.dirty
                    else ""
                )
                + "."
            )
        else:
            commit = (
                "No git commit is written here: a committed file cannot name the commit "
                "that contains it. A test regenerates this file and fails when it differs "
                "from what the code generates, so the commit that contains it is where it came "
                "from; `handoff-fsm review` prints the working tree's commit, and "
                "`handoff-fsm review --git` writes it into a copy meant to travel."
            )
        return [
            f"Provenance: `handoff-fsm` {self.version}; statechart DOT SHA-256 "
            f"`{self.chart_sha256}` (the digest the statechart SVG and PNG carry; "
            f"`sha256sum statechart.dot` beside this file prints it). {commit}",
        ]


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", "-C", str(PACKAGE_DIR), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def git_state() -> GitState | None:
    """The working tree's commit, dirty if the package's sources differ from it; else ``None``.

    ``None`` when git is missing or the package is not inside a git working tree (an
    installed wheel). Only the package's own sources decide ``dirty``: regenerating
    ``diagrams/`` does not make a review dirty.
    """
    top = _git("rev-parse", "--show-toplevel")
    commit = _git("rev-parse", "HEAD")
    if top is None or commit is None or not PACKAGE_DIR.is_relative_to(Path(top).resolve()):
        return None
    status = _git("status", "--porcelain", "--untracked-files=all", "--", str(PACKAGE_DIR))
    if status is None:
        return None
    return GitState(commit=commit, dirty=bool(status))


def provenance(model: ChartModel, *, git: bool = False) -> Provenance:
    """The review's stamp: always the version and chart hash; the git state when ``git``."""
    return Provenance(
        version=handoff_fsm.__version__,
        chart_sha256=dot_digest(statechart_dot(model)),
        git=git_state() if git else None,
    )

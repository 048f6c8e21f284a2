"""The external tools some tests need (cargo, node, dot, chromium), and what happens
without them.

Rule kept here: a test that runs a tool outside Python says so with
``@pytest.mark.requires("cargo")`` (or ``"node"``, ``"dot"``, ``"chromium"``), and this module
alone decides whether the tool is usable. Without it, plain ``pytest`` skips
the test with the reason and how to install the tool, so the rest of the suite
still runs on a partial machine. With ``HANDOFF_FSM_REQUIRE_ALL=1`` (set by
``make test``, hence by ``.ci/run``) every skip, these and any other, is
reported as a failure instead: the full suite cannot pass with part of it unrun.

The hooks that apply this live in ``tests/conftest.py``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
MERMAID_CHECK: Final = ROOT / "tools" / "mermaid-check"

REQUIRE_ALL_ENV: Final = "HANDOFF_FSM_REQUIRE_ALL"
"""Set to ``1`` to turn every skipped test into a failure (``make test`` does)."""

MARKER: Final = "requires"

MIN_CARGO: Final = (1, 85)
"""The oracle crate is edition 2024, which cargo supports from 1.85."""
MIN_NODE: Final = (18, 0)
"""tools/mermaid-check runs Mermaid 11 under jsdom, which needs node 18."""
NODE_PACKAGES: Final = ("mermaid", "jsdom", "xstate")
"""The npm packages of tools/mermaid-check/package.json the node tests load: Mermaid's parser
(and jsdom under it) for the Mermaid files, xstate for the exported XState config."""


@dataclass(frozen=True)
class Requirement:
    """A tool, how to tell whether it is usable, and how to get it."""

    name: str
    what: str
    install: str
    problem: Callable[[], str | None]
    """Why the tool is not usable here, or ``None`` when it is."""


def _version(command: list[str], pattern: str) -> tuple[int, int] | None:
    """The (major, minor) a ``--version`` command prints, or ``None`` if it cannot tell."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(pattern, result.stdout)
    return (int(match[1]), int(match[2])) if result.returncode == 0 and match else None


def _cargo_problem() -> str | None:
    cargo = shutil.which("cargo")
    if cargo is None:
        return "cargo is not on PATH"
    version = _version([cargo, "--version"], r"cargo (\d+)\.(\d+)")
    if version is None:
        return "`cargo --version` did not answer"
    if version < MIN_CARGO:
        return f"cargo {version[0]}.{version[1]} is older than 1.85 (edition 2024)"
    return None


def _node_problem() -> str | None:
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH"
    version = _version([node, "--version"], r"v(\d+)\.(\d+)")
    if version is None:
        return "`node --version` did not answer"
    if version < MIN_NODE:
        return f"node {version[0]}.{version[1]} is older than 18"
    for package in NODE_PACKAGES:
        if not (MERMAID_CHECK / "node_modules" / package / "package.json").is_file():
            return f"mermaid-check's npm package {package!r} is not installed"
    return None


def _dot_problem() -> str | None:
    return None if shutil.which("dot") else "dot is not on PATH"


def chromium_path() -> str | None:
    """The Chromium the browser tests drive: ``chromium`` on PATH (Debian's package)."""
    return shutil.which("chromium")


def _chromium_problem() -> str | None:
    if chromium_path() is None:
        return "chromium is not on PATH"
    if importlib.util.find_spec("playwright") is None:
        return "Python's playwright package is not installed (it is in the dev extra)"
    return None


REQUIREMENTS: Final[dict[str, Requirement]] = {
    r.name: r
    for r in (
        Requirement(
            "cargo",
            "Rust's cargo >= 1.85 (edition 2024) to build the reference oracle",
            "install Rust with rustup (https://rustup.rs)",
            _cargo_problem,
        ),
        Requirement(
            "node",
            "node >= 18 with mermaid-check's npm packages to parse Mermaid files and run "
            "the XState export",
            "install node and npm (Debian: apt-get install nodejs npm), then run "
            "tools/mermaid-check/install.sh",
            _node_problem,
        ),
        Requirement(
            "dot",
            "Graphviz's dot to render diagrams",
            "run `make graphviz` (Debian: apt-get install graphviz; macOS: brew install "
            "graphviz; conda: conda install -c conda-forge graphviz)",
            _dot_problem,
        ),
        Requirement(
            "chromium",
            "Chromium, driven by Playwright, to open the inspector pages",
            "run `make chromium` (Debian: apt-get install chromium) and `pip install -e "
            "'.[dev]'` (never `playwright install`: the tests use that browser)",
            _chromium_problem,
        ),
    )
}

_checked: dict[tuple[str, str], str | None] = {}


def problem(name: str) -> str | None:
    """Why tool ``name`` is unusable here (``None``: usable); asked once per PATH."""
    key = (name, os.environ.get("PATH", ""))
    if key not in _checked:
        _checked[key] = REQUIREMENTS[name].problem()
    return _checked[key]


def require_all() -> bool:
    return os.environ.get(REQUIRE_ALL_ENV, "") not in ("", "0")


def marker_description() -> str:
    return (
        f"{MARKER}(tool): the test runs an external tool, one of {sorted(REQUIREMENTS)}; "
        f"skipped without it, a failure under {REQUIRE_ALL_ENV}=1"
    )


def check_names(item: pytest.Item) -> None:
    """Reject a ``requires`` marker naming no known tool (a typo would skip silently)."""
    for mark in item.iter_markers(MARKER):
        unknown = [name for name in mark.args if name not in REQUIREMENTS]
        if unknown or not mark.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} takes tool names from "
                f"{sorted(REQUIREMENTS)}, got {list(mark.args)}"
            )


def skip_unless_available(item: pytest.Item) -> None:
    """Mark ``item`` skipped, with a clear reason, when a tool it requires is unusable."""
    for mark in item.iter_markers(MARKER):
        for name in mark.args:
            why = problem(name)
            if why is not None:
                requirement = REQUIREMENTS[name]
                reason = f"requires {requirement.what}: {why}; {requirement.install}"
                item.add_marker(pytest.mark.skip(reason=reason))
                return


def as_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Under ``HANDOFF_FSM_REQUIRE_ALL=1``, turn a skip report into a failure, reason kept."""
    if not report.skipped or hasattr(report, "wasxfail") or not require_all():
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"not run, and {REQUIRE_ALL_ENV}=1 (make test, .ci/run) allows no skipped test: "
        f"{reason.removeprefix('Skipped: ')}"
    )

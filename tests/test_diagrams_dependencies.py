"""Runtime dependencies: each one declared is used, and the heavy ones load only where needed.

``pyproject.toml`` lists what ``pip install handoff-fsm`` brings; a dependency
nothing imports is weight for every user, so each must be imported by the
package. ``rich`` is only for the terminal (``simulate``'s table and progress
bar): the diagrams and the protocol never load it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "handoff_fsm"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.match(r"[A-Za-z0-9_.-]+", spec) for spec in project["dependencies"]]
    return [_canonical(match.group(0)) for match in names if match is not None]


def _imported_top_levels() -> set[str]:
    """Top-level modules the package's own code imports (absolute imports)."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return found


@pytest.mark.slow
def test_every_declared_runtime_dependency_is_imported_by_the_package() -> None:
    providers: dict[str, set[str]] = {}
    for module, distributions in packages_distributions().items():
        for distribution in distributions:
            providers.setdefault(_canonical(distribution), set()).add(module)
    imported = _imported_top_levels()
    declared = _declared()
    assert "graphviz" in declared
    unused = [name for name in declared if not providers.get(name, set()) & imported]
    assert unused == [], f"declared in pyproject.toml but never imported: {unused}"


def test_pydot_is_not_a_dependency() -> None:
    assert "pydot" not in _declared()
    assert "pydot" not in _imported_top_levels()


@pytest.mark.slow
@pytest.mark.parametrize(
    "module",
    ["handoff_fsm.render", "handoff_fsm.review", "handoff_fsm.cli.diagrams", "handoff_fsm.cli"],
)
def test_the_diagrams_do_not_load_rich(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}, sys; print('rich' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout == "False\n"


@pytest.mark.slow
def test_the_simulation_command_does_load_rich() -> None:
    """The check above can fail: the terminal output of ``simulate`` does import rich."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, contextlib, io\n"
            "from handoff_fsm.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main(['simulate', '--handoffs', '1'])\n"
            "print('rich' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert result.stdout == "True\n"

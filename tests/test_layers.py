"""Imports only point down (docs/architecture.md §2), counted in the source, not at run time.

The layers in order: the core (the package's own modules and ``engines/``),
``structure``, ``io``, ``verify``, ``simulate``, ``render``, ``review``, ``cli``. Every
``import`` and ``from ... import`` of the package is read, inside functions and under
``TYPE_CHECKING`` too, and none may name a layer above the importing module's own.
The one way up is a name in text: the package's top level names the notebook drawing
for :mod:`handoff_fsm.display`, which alone imports by name (``importlib``) in the core.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGE: Final = ROOT / "handoff_fsm"
LAYERS: Final = ("core", "structure", "io", "verify", "simulate", "render", "review", "cli")
ENTRY_POINT: Final = "handoff_fsm.__main__"
"""``python -m handoff_fsm``: the command line's entry, above every layer."""
NAMED_IMPORTS: Final = {
    "handoff_fsm.display": "the notebook drawing, named by the package's top level",
    "handoff_fsm.verify.diff.driver": "another git revision's package, by its own names",
}
"""The modules that import by name (``importlib.import_module``), and what they import."""


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str | None:
    """The layer of a module of the package (``None``: not the package's)."""
    parts = module.split(".")
    if parts[0] != "handoff_fsm":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


@cache
def _sources() -> dict[str, ast.Module]:
    return {_module(path): ast.parse(path.read_text("utf-8")) for path in PACKAGE.rglob("*.py")}


def _imported(tree: ast.Module) -> list[tuple[int, str]]:
    """Every module ``tree`` imports (line, absolute name), wherever the import stands."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"line {node.lineno}: a relative import"
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def upward_imports(sources: dict[str, ast.Module]) -> list[str]:
    """``module:line imports name (layer over layer)`` for each import that points up."""
    found = []
    for module, tree in sorted(sources.items()):
        own = _layer(module)
        if own is None or module == ENTRY_POINT:
            continue
        for line, name in _imported(tree):
            target = _layer(name)
            if target is not None and LAYERS.index(target) > LAYERS.index(own):
                found.append(f"{module}:{line} imports {name} ({target} over {own})")
    return found


def _named_importers(sources: dict[str, ast.Module]) -> set[str]:
    return {
        module
        for module, tree in sources.items()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "import_module")
        or (isinstance(node, ast.Name) and node.id == "__import__")
    }


def test_imports_only_point_down() -> None:
    sources = _sources()
    assert len(sources) > 100  # the whole package was read
    assert upward_imports(sources) == []


def test_only_the_known_modules_import_by_name() -> None:
    assert _named_importers(_sources()) == set(NAMED_IMPORTS)


def test_the_core_names_the_drawing_only_at_its_top_level() -> None:
    """``handoff_fsm/__init__.py`` hands the drawing's location to display.py as text; no
    other core module names a module of a layer above (docstrings aside)."""
    naming = []
    for module, tree in _sources().items():
        if _layer(module) != "core":
            continue
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        naming += [
            (module, node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and any(f"handoff_fsm.{layer}" in node.value for layer in LAYERS[1:])
        ]
    assert naming == [("handoff_fsm", "handoff_fsm.render.notebook:DRAWING")]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def f():\n    import handoff_fsm.render.notebook\n", "core"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from handoff_fsm.review import design\n",
            "core",
        ),
        ("from handoff_fsm.cli import main\n", "core"),
    ],
)
def test_an_upward_import_would_be_caught(source: str, found: str) -> None:
    """The check can fail: an import inside a function or under TYPE_CHECKING counts."""
    [message] = upward_imports({"handoff_fsm.coordinator": ast.parse(source)})
    assert message.startswith("handoff_fsm.coordinator:") and message.endswith(f"over {found})")

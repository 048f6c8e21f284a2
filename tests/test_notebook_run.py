"""examples/notebook.ipynb, run for real: a Jupyter kernel executes it as Jupyter would.

nbclient starts an ipykernel and runs every cell (tools/docs/notebook_figure.py, which
``make figures`` runs too). The notebook imports ``handoff_fsm`` and nothing of the
drawing, and its coordinator cell's output is the picture (``image/svg+xml``) with the
coordinator's own states lit; inside the kernel, nothing of the drawing is loaded until
that cell. The picture in docs/inspect.md is that output, as it came. Without Graphviz
on the kernel's PATH the same cell shows the text that says why.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import nbformat
import pytest

from handoff_fsm.model import Revision
from handoff_fsm.render.livechart import SVG_NS, marked_chart_svg

ROOT: Final = Path(__file__).resolve().parents[1]
NOTEBOOK: Final = ROOT / "examples" / "notebook.ipynb"
FIGURE: Final = ROOT / "docs" / "figures" / "notebook" / "coordinator.svg"
GUIDE: Final = ROOT / "docs" / "inspect.md"
DRAWING: Final = ("handoff_fsm.render", "graphviz", "statemachine.contrib", "pydot")
"""What draws: none of it may be imported by the notebook."""
SVG: Final = "image/svg+xml"
TEXT: Final = "text/plain"


def _figure_tool() -> ModuleType:
    """tools/docs/notebook_figure.py, the one runner of the notebook (not a package)."""
    spec = importlib.util.spec_from_file_location(
        "notebook_figure", ROOT / "tools" / "docs" / "notebook_figure.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL: Final = _figure_tool()


def _executed(**kernel: object) -> Any:
    return TOOL.executed(NOTEBOOK, **kernel)


def _result(cell: Any) -> dict[str, str]:
    """The data of a cell's one ``execute_result``: what Jupyter shows for its value."""
    (data,) = [o["data"] for o in cell.outputs if o["output_type"] == "execute_result"]
    return dict(data)


def _imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return found


def test_the_notebook_imports_the_package_and_nothing_that_draws() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=nbformat.NO_CONVERT)  # type: ignore[no-untyped-call]
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    imported = [name for source in code for name in _imports(source)]
    assert "handoff_fsm" in imported
    assert [name for name in imported if name.startswith(DRAWING)] == []
    assert not any(line.lstrip().startswith(("%", "!")) for s in code for line in s.splitlines())
    assert all(cell.outputs == [] for cell in nb.cells if cell.cell_type == "code")  # run, not kept


@pytest.fixture(scope="module")
def executed() -> Any:
    return _executed()


@pytest.mark.slow
@pytest.mark.requires("dot")
def test_the_coordinator_shows_its_picture_with_its_states_lit(executed: Any) -> None:
    state = ast.literal_eval(_result(TOOL.tagged(executed, "state"))[TEXT])
    assert state == ("held", "accepted", "transfer_idle")
    loaded = _result(TOOL.tagged(executed, "drawing-modules"))[TEXT]
    assert loaded == "[]"  # in the kernel, before the picture was asked for
    shown = _result(TOOL.tagged(executed, "picture"))
    assert set(shown) == {TEXT, SVG}
    assert shown[TEXT].startswith("HandoffCoordinator(00000000-0000-0000-0000-000000000001, ")
    svg = shown[SVG]
    lit = {
        element.attrib["data-state"]
        for element in ET.fromstring(svg).iter(f"{{{SVG_NS}}}g")
        if "active" in element.get("class", "").split()
    }
    assert lit == set(state)
    assert svg == marked_chart_svg(Revision.SEED, state)  # the inspector's drawing
    assert TOOL.picture(executed) == svg


@pytest.mark.slow
@pytest.mark.requires("dot")
def test_the_docs_show_the_picture_the_notebook_shows(executed: Any) -> None:
    assert FIGURE.read_text(encoding="utf-8") == TOOL.picture(executed), (
        "docs/figures/notebook/coordinator.svg is out of date: run `make notebook-figure`"
    )
    link = FIGURE.relative_to(GUIDE.parent).as_posix()
    assert f"]({link})" in GUIDE.read_text(encoding="utf-8")


@pytest.mark.slow
def test_without_dot_the_cell_shows_the_text_that_says_why(tmp_path: Path) -> None:
    nb = _executed(env={**os.environ, "PATH": str(tmp_path)})
    shown = _result(TOOL.tagged(nb, "picture"))
    assert set(shown) == {TEXT}
    first, note = shown[TEXT].splitlines()
    assert first.startswith("HandoffCoordinator(")
    assert note.startswith("no picture: Graphviz's dot is not installed; install Graphviz: ")

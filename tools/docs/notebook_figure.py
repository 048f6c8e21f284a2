"""``make notebook-figure``: the picture examples/notebook.ipynb shows, for the docs.

Rule kept here: the figure is what Jupyter shows, never drawn beside it: the notebook is
executed as Jupyter executes it (nbclient, a real ipykernel, from the repository root),
and the ``image/svg+xml`` output of its cell tagged ``picture`` (the coordinator itself)
is written as it came. ``tests/test_notebook_run.py`` runs the notebook the same way and
holds the committed figure to its output.

Usage: ``python tools/docs/notebook_figure.py OUT.svg``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
TAG = "picture"
SVG = "image/svg+xml"


def executed(notebook: Path = NOTEBOOK, **kernel: object) -> nbformat.NotebookNode:
    """``notebook`` run top to bottom in a fresh kernel (``kernel``: how to start it, e.g.
    ``env=...``), its outputs filled in; the file is not changed."""
    nb = nbformat.read(notebook, as_version=nbformat.NO_CONVERT)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute(**kernel)
    return nb


def tagged(nb: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    """The one cell of ``nb`` tagged ``tag``."""
    (cell,) = [cell for cell in nb.cells if tag in cell.metadata.get("tags", [])]
    return cell


def picture(nb: nbformat.NotebookNode) -> str:
    """The SVG the executed notebook's ``picture`` cell shows."""
    (svg,) = [
        output["data"][SVG]
        for output in tagged(nb, TAG).outputs
        if output["output_type"] == "execute_result" and SVG in output["data"]
    ]
    return str(svg)


def main() -> None:
    (out,) = sys.argv[1:]
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(picture(executed()), encoding="utf-8")


if __name__ == "__main__":
    main()

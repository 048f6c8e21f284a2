"""Graphviz runs, or says exactly what to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_fsm.diagrams import GraphvizMissingError, render
from handoff_fsm.diagrams.render import require


@pytest.mark.requires("dot")
def test_render_gives_svg_and_png() -> None:
    assert b"<svg" in render("digraph { a -> b }", "svg")
    assert render("digraph { a -> b }", "png").startswith(b"\x89PNG")


@pytest.mark.requires("dot")
def test_a_dot_syntax_error_is_reported() -> None:
    with pytest.raises(RuntimeError, match="syntax error"):
        render("digraph { a -> }", "svg")


def test_missing_graphviz_names_the_debian_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizMissingError, match="apt-get install graphviz"):
        require("dot")

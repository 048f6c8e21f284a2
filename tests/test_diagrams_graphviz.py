"""Graphviz (through the ``graphviz`` package) draws stamped figures, or says how to install it."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import graphviz
import pytest
from graphviz.quoting import quote

from handoff_fsm.render import GraphvizError, GraphvizMissingError, dot_digest, read_stamp, render
from handoff_fsm.render.labels import html, plain, text
from tests.support.cli import run_cli

INSTALL_COMMANDS = (
    "apt-get install graphviz",
    "brew install graphviz",
    "conda install -c conda-forge graphviz",
)


@pytest.mark.requires("dot")
def test_render_gives_stamped_svg_and_png() -> None:
    source = "digraph { a -> b }"
    svg = render(source, "svg")
    png = render(source, "png")
    assert b"<svg" in svg
    assert png.startswith(b"\x89PNG")
    assert read_stamp("svg", svg) == read_stamp("png", png) == dot_digest(source)


@pytest.mark.requires("dot")
def test_a_dot_syntax_error_is_one_line_with_graphvizs_message() -> None:
    with pytest.raises(GraphvizError, match="syntax error") as caught:
        render("digraph { a -> }", "svg")
    assert "\n" not in str(caught.value)
    assert not isinstance(caught.value, GraphvizMissingError)


@pytest.mark.slow
def test_missing_dot_names_how_to_install_graphviz_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizMissingError) as caught:
        render("digraph { a -> b }", "svg")
    message = str(caught.value)
    assert "\n" not in message
    assert "`dot`" in message
    for command in INSTALL_COMMANDS:
        assert command in message
    assert caught.value.__cause__ is None  # no chained graphviz traceback


def _cli(args: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    """``handoff-fsm ARGS`` in a fresh interpreter whose PATH holds no Graphviz."""
    return run_cli(
        *args,
        env={"PATH": str(path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", ["diagrams", "diagram"])
def test_the_cli_without_dot_prints_one_line_and_exits_2(tmp_path: Path, command: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"coordinator": "c", "op": "new", '
        '"handoff_id": "aaaaaaaa-0000-4000-8000-00000000000a", "order": "SourceFirst"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = {
        "diagrams": ["diagrams", str(out)],
        "diagram": ["diagram", str(trace), "-o", str(tmp_path / "x.svg")],
    }[command]
    result = _cli(args, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"handoff-fsm {command}: Graphviz's `dot` program was not found")
    for install in INSTALL_COMMANDS:
        assert install in lines[0]
    if command == "diagram":
        assert result.stdout == ""
        assert not (tmp_path / "x.svg").exists()
    else:  # what needs no Graphviz is written, and the figures left out are named
        assert "; not drawn: " in lines[0] and "statechart.svg" in lines[0]
        assert (out / "statechart.dot").is_file() and not (out / "statechart.svg").exists()


@pytest.mark.slow
def test_a_dot_overlay_needs_no_graphviz(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"coordinator": "c", "op": "new", '
        '"handoff_id": "aaaaaaaa-0000-4000-8000-00000000000a", "order": "SourceFirst"}\n',
        encoding="utf-8",
    )
    result = _cli(["diagram", str(trace), "-o", str(tmp_path / "x.dot")], tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "x.dot").read_text(encoding="utf-8").startswith("digraph HandoffChart {")


HOSTILE = 'a<b>&c "q" \\"r\\\\" \\N \\G \\l \\ \t\n\x00\x01\x1b[31m\ud800\ufffe </font></td> &amp;'
SHOWN = 'a<b>&c "q" \\"r\\\\" \\N \\G \\l \\   \\x00\\x01\\x1b[31m\\ud800\\ufffe </font></td> &amp;'
"""What a label shows for HOSTILE: every character as written, controls spelled out."""


@pytest.mark.requires("dot")
@pytest.mark.parametrize("kind", ["html", "plain"])
def test_any_text_is_drawn_exactly_as_written(kind: str) -> None:
    label = html(f"<i>{text(HOSTILE)}</i>") if kind == "html" else plain(HOSTILE)
    graph = graphviz.Digraph("g")
    graph.node("n", label=label, shape="box")
    svg = render(graph.source, "svg")  # valid DOT, and valid XML for Graphviz
    shown = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert [line.replace("\xa0", " ") for line in shown if line] == [SHOWN]


def test_a_plain_label_is_never_markup() -> None:
    assert quote(plain("<b>x</b>")) == '"&lt;b&gt;x&lt;/b&gt;"'
    assert quote(html(text("<b>"))) == "<&lt;b&gt;>"


@pytest.mark.requires("dot")
@pytest.mark.parametrize("value", ["ends in a backslash \\", "\\", "<>", ""])
def test_edge_cases_are_drawn_as_written(value: str) -> None:
    for label in (html(text(value)), plain(value)):
        graph = graphviz.Digraph("g")
        graph.node("n", label=label, shape="box")
        svg = render(graph.source, "svg")
        shown = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        assert [line for line in shown if line and line.strip()] == ([value] if value else [])

"""``handoff-fsm inspect``: what the page holds, how it is made, and what the command refuses.

The page's data is held against an independent replay (tests/inspect_pages.py): every
committed trace, every coordinator, every line. The browser half (stepping through the
pages in Chromium) is tests/test_inspect_browser.py.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from fnmatch import fnmatch
from importlib.resources import files
from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.io.follow import LINE_TEXT_LIMIT, follow, follow_all, line_text
from handoff_fsm.io.lifecycle import INPUTS, MessageKind, lifecycle_of
from handoff_fsm.io.lines import OverlongLine
from handoff_fsm.io.wire import issued_to_wire
from handoff_fsm.model import Revision
from handoff_fsm.render.graphviz import render, render_svgs
from handoff_fsm.render.inspector import PageNote, inspector_html, step_of_rows
from handoff_fsm.render.livechart import SVG_NS, chart_svg
from handoff_fsm.render.style import CSS_VARIABLES
from handoff_fsm.structure.revisions import revision_chart
from tests.inspect_pages import (
    COMMITTED_TRACES,
    HOSTILE_TRACES,
    ROOT,
    assert_self_contained,
    page_data,
    page_html,
    replayed,
    trace_lines,
)

SMALL = [path for path in (*COMMITTED_TRACES, *HOSTILE_TRACES) if path.stat().st_size < 100_000]
RUN = ROOT / "docs" / "figures" / "run.jsonl"
# The style sheets and scripts of the one-file pages: the inspector's, the shared ones, and
# the diff page's (tests/test_diff_page.py).
ASSETS = (
    "inspector.js",
    "inspector.css",
    "chart.css",
    "page.css",
    "stepper.js",
    "diffpage.js",
    "diffpage.css",
)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------------- following


@pytest.mark.parametrize("path", SMALL, ids=_name)
def test_follow_all_gives_each_coordinator_the_run_follow_gives(path: Path) -> None:
    lines = trace_lines(path)
    trace = follow_all(lines)
    assert trace.not_followed == 0
    assert [run.coordinator for run in trace.runs] == list(replayed(lines))
    for run in trace.runs:
        assert run == follow(lines, run.coordinator)


def test_follow_all_follows_the_first_ones_and_those_asked_for() -> None:
    lines = trace_lines(RUN)
    trace = follow_all(lines, max_coordinators=2, include=["h150"])
    assert [run.coordinator for run in trace.runs] == ["h0", "h1", "h150"]
    assert trace.not_followed == 197
    for run in trace.runs:
        assert run == follow(lines, run.coordinator)
    with pytest.raises(Exception, match="no coordinator 'h999'") as error:
        follow_all(lines, include=["h999"])
    assert getattr(error.value, "code", None) is not None
    assert error.value.code.value == "unknown_coordinator"  # type: ignore[attr-defined]


def test_a_step_keeps_the_line_and_the_reply_as_replay_wrote_them() -> None:
    lines = trace_lines(ROOT / "diagrams" / "lifecycle_source_first_success.jsonl")
    run = follow(lines)
    assert run.new_text == lines[run.new_line - 1].decode().rstrip("\n")
    for step in run.steps:
        assert step.text == lines[step.line - 1].decode().rstrip("\n")
        assert step.reply.startswith('{"coordinator": "source_first_success", ')
    head = b'{"op": "' + b"x" * (LINE_TEXT_LIMIT + 50)
    cut = line_text(OverlongLine(head, 5_000_000))
    assert cut.endswith("… (5,000,000 bytes)") and len(cut) < LINE_TEXT_LIMIT + 30
    assert line_text(b"\xff{}\n") == "\ufffd{}"


# ---------------------------------------------------------------------- the page's data


@pytest.fixture(scope="module")
def pages() -> dict[Path, str]:
    """The page of every small trace (the whole run.jsonl's is the browser test's)."""
    return {path: page_html(path) for path in SMALL}


@pytest.mark.requires("dot")
@pytest.mark.parametrize("path", SMALL, ids=_name)
def test_the_page_shows_what_replay_did_line_by_line(pages: dict[Path, str], path: Path) -> None:
    data = page_data(pages[path])
    expected = replayed(trace_lines(path))
    assert [c["key"] for c in data["coordinators"]] == list(expected)
    for shown in data["coordinators"]:
        want = expected[shown["key"]]
        assert shown["revision"] == want.revision.value
        assert data["charts"][shown["chart"]]["revision"] == want.revision.value
        assert len(shown["steps"]) == len(want.states) - 1
        assert tuple(shown["initial"]) == want.states[0]
        for index, step in enumerate(shown["steps"], start=1):
            reply = want.replies[index - 1]
            assert step["line"] == want.lines[index - 1]
            assert tuple(step["state"]) == want.states[index]
            assert step["completion"] == want.completions[index]
            awaited = [f"#{a.id} {type(a.action).__name__}" for a in want.outstanding[index]]
            assert len(step["outstanding"]) == len(awaited)
            for text, prefix in zip(step["outstanding"], awaited, strict=True):
                assert text == prefix or text.startswith(prefix + "("), (text, prefix)
            if "error" in reply:
                assert step["error"] == reply["error"]
                assert step["actions"] == []
            else:
                assert step["error"] is None
                ids = [action["id"] for action in reply["actions"]]
                assert [text.split()[0] for text in step["actions"]] == [f"#{i}" for i in ids]
            assert step["reply"] == _reply_text(reply, step["reply"])


def _reply_text(reply: dict[str, object], text: str) -> str:
    """The reply line, checked to say what ``reply`` says (it is that line, parsed)."""
    assert json.loads(text) == reply
    return text


@pytest.mark.requires("dot")
@pytest.mark.parametrize("revision", list(Revision))
def test_every_state_and_transition_of_the_chart_names_itself(revision: Revision) -> None:
    model = revision_chart(revision)
    root = ET.fromstring(chart_svg(revision))
    named: dict[str, int] = {}
    for element in root.iter(f"{{{SVG_NS}}}g"):
        state = element.get("data-state")
        if state is not None:
            named[state] = named.get(state, 0) + 1
    assert named == {state.id: 1 for state in model.states}
    drawn = {
        int(e.get("data-transition", "-1")) for e in root.iter() if "data-transition" in e.attrib
    }
    assert drawn == {edge.index for edge in model.edges if edge.kind.value != "rejection"}
    assert not any("id" in element.attrib for element in root.iter())  # no clash on one page


@pytest.mark.requires("dot")
def test_every_step_s_transitions_are_drawn_on_its_chart(pages: dict[Path, str]) -> None:
    for page in pages.values():
        data = page_data(page)
        for shown in data["coordinators"]:
            drawn = set(data["charts"][shown["chart"]]["transitions"])
            before = shown["initial"]
            for step in shown["steps"]:
                assert {str(index) for index in step["taken"]} <= drawn
                if step["state"] != before or step["actions"]:  # something was entered
                    assert step["taken"], (shown["key"], step["line"])
                if not step["changed"]:
                    assert step["taken"] == [], (shown["key"], step["line"])
                before = step["state"]


def test_each_lifecycle_message_belongs_to_its_step() -> None:
    run = follow(trace_lines(ROOT / "diagrams" / "lifecycle_lost_release_ack.jsonl"))
    lifecycle = lifecycle_of(run)
    rows = step_of_rows(lifecycle)
    assert len(rows) == len(lifecycle.messages)
    inputs = [rows[i] for i, m in enumerate(lifecycle.messages) if m.kind in INPUTS]
    assert inputs == list(range(1, len(run.steps) + 1))
    missing = [i for i, m in enumerate(lifecycle.messages) if m.kind is MessageKind.MISSING]
    assert missing, "this trace never acknowledges the release"
    for index in missing:  # drawn before the input that ended its phase: that input's step
        later = next(i for i in range(index, len(rows)) if lifecycle.messages[i].kind in INPUTS)
        assert rows[index] == rows[later]
    assert rows[-1] == len(run.steps)  # the closing note: the last step
    assert rows == sorted(rows)


# ---------------------------------------------------------------------- self-contained


@pytest.mark.requires("dot")
def test_a_note_is_said_in_the_header_escaped_and_only_where_given() -> None:
    trace = follow_all(trace_lines(SMALL[0]))
    note = PageNote("what <the world> assumed", ("answers = by-state & more", "losses = 0"))
    page = inspector_html(trace, name="t.jsonl", note=note)
    header = page[page.index("<header>") : page.index("</header>")]
    assert "<summary>what &lt;the world&gt; assumed</summary>" in header
    assert "<li>answers = by-state &amp; more</li><li>losses = 0</li>" in header
    assert 'id="about"' not in inspector_html(trace, name="t.jsonl")
    assert_self_contained(page)


@pytest.mark.requires("dot")
def test_the_page_loads_nothing_from_elsewhere(pages: dict[Path, str]) -> None:
    for page in pages.values():
        assert_self_contained(page)


def test_the_page_s_colours_are_the_palette_s() -> None:
    defined = set(CSS_VARIABLES)
    for name in ASSETS:
        text = files("handoff_fsm.render").joinpath(name).read_text(encoding="utf-8")
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL)
        assert not re.search(r"#[0-9a-fA-F]{3,8}\b|\b(?:rgba?|hsla?)\(", code), name
        named = r"(?<![\w-])(?:white|black|red|green|blue|gr[ae]y|yellow|orange|navy)(?![\w-])"
        assert not re.search(named, code), name
        used = set(re.findall(r"var\((--[\w-]+)\)", code))
        assert used <= defined, (name, used - defined)
    assert all(
        re.fullmatch(r"#[0-9a-f]{6}", v) for k, v in CSS_VARIABLES.items() if k != "--hf-font"
    )


def test_the_page_s_files_ship_in_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = project["tool"]["setuptools"]["package-data"]["handoff_fsm"]
    for name in ASSETS:
        assert files("handoff_fsm.render").joinpath(name).is_file()
        assert any(fnmatch(f"render/{name}", glob) for glob in globs), name


@pytest.mark.requires("dot")
def test_many_figures_in_one_graphviz_run_are_the_figures_one_by_one() -> None:
    sources = ["digraph a { x -> y }", 'digraph b { p -> q -> r [label="<?xml "] }']
    together = render_svgs(sources)
    assert len(together) == 2
    for drawn, source in zip(together, sources, strict=True):
        alone = render(source, "svg")
        assert re.sub(rb'id="[^"]*graph0"', b"", drawn) == re.sub(rb'id="[^"]*graph0"', b"", alone)
    assert render_svgs([]) == []


# ---------------------------------------------------------------------- the command


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


TWO = ROOT / "tests" / "oracle" / "examples" / "revisions.jsonl"


@pytest.mark.requires("dot")
def test_the_command_writes_one_page(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = list(replayed(trace_lines(TWO)))
    assert len(keys) >= 2
    assert main(["inspect", str(TWO), "--coordinator", keys[1], "-o", "page.html"]) == 0
    out = capsys.readouterr().out
    assert out == f"wrote page.html ({len(keys)} coordinators; showing {keys[1]} first)\n"
    data = page_data((work / "page.html").read_text(encoding="utf-8"))
    assert data["coordinators"][data["shown"]]["key"] == keys[1]
    revisions = {c["revision"] for c in data["coordinators"]}
    assert {chart["revision"] for chart in data["charts"]} == revisions == {"seed", "a976b2bf"}


@pytest.mark.requires("dot")
def test_the_command_reads_standard_input(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = ROOT / "docs" / "examples" / "trace.jsonl"
    stdin = io.TextIOWrapper(io.BytesIO(trace.read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["inspect", "-", "-o", "p.html"]) == 0
    data = page_data((work / "p.html").read_text(encoding="utf-8"))
    assert data["trace"] == "<stdin>"
    assert [c["key"] for c in data["coordinators"]] == list(replayed(trace_lines(trace)))


BAD = [
    pytest.param(["--coordinator", "nope"], "unknown_coordinator: the trace creates no", id="key"),
    pytest.param(["--revision", "A976B2BF"], "argument --revision: invalid choice", id="revision"),
    pytest.param(
        ["-o", "page.svg"], "-o page.svg: an inspector page is written as .html", id="suffix"
    ),
    pytest.param(["-o", "-"], "-o -: the page is a file", id="dash"),
    pytest.param(["-o", "nd/page.html"], "(the folder nd does not exist)", id="folder"),
]


@pytest.mark.parametrize(("extra", "says"), BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    output = ["-o", "page.html"] if "-o" not in extra else []
    args = ["inspect", str(ROOT / "docs" / "examples" / "trace.jsonl"), *extra, *output]
    if "--revision" in extra:  # argparse's own usage error: its usage, then one line
        with pytest.raises(SystemExit) as stop:
            main(args)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: handoff-fsm inspect ")
        assert err.splitlines()[-1].startswith("handoff-fsm inspect: error: " + says)
    else:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("handoff-fsm inspect: ") and err.count("\n") == 1, err
        assert says in err, err
    assert "Traceback" not in err
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    "content", [b"\xff\xfe not utf-8\n", b"", b'{"coordinator": "c", "op": "start"}\n']
)
def test_a_trace_that_creates_no_coordinator_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    (work / "t.jsonl").write_bytes(content)
    assert main(["inspect", "t.jsonl", "-o", "page.html"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("handoff-fsm inspect: t.jsonl: unknown_coordinator: ")
        and err.count("\n") == 1
    )
    assert not (work / "page.html").exists()


@pytest.mark.requires("dot")
def test_lines_naming_no_coordinator_are_said_on_stderr_and_on_the_page(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = trace_lines(ROOT / "docs" / "examples" / "trace.jsonl")
    (work / "t.jsonl").write_bytes(b"not json\n" + b"".join(trace))
    assert main(["inspect", "t.jsonl", "-o", "page.html"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("handoff-fsm inspect: line 1 names no coordinator: invalid_input: ")
    page = (work / "page.html").read_text(encoding="utf-8")
    assert "1 lines name no coordinator; the first, line 1: invalid_input" in page


@pytest.mark.slow
def test_the_issued_actions_are_shown_with_their_ids(pages: dict[Path, str]) -> None:
    path = ROOT / "diagrams" / "lifecycle_source_first_success.jsonl"
    data = page_data(pages[path])
    run = follow(trace_lines(path))
    for step, shown in zip(run.steps, data["coordinators"][0]["steps"], strict=True):
        assert [text.split()[0] for text in shown["actions"]] == [f"#{a.id}" for a in step.actions]
        for issued, text in zip(step.actions, shown["actions"], strict=True):
            assert next(iter(issued_to_wire(issued)["action"])) in text

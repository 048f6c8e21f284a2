"""Trace overlay: the path a coordinator took through a trace, drawn on the chart."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.io.errors import TraceError
from handoff_fsm.io.follow import follow
from handoff_fsm.render import overlay_bytes, overlay_dot
from handoff_fsm.render.dot import Highlight, statechart_dot
from handoff_fsm.render.overlay import overlay_highlight
from handoff_fsm.structure import describe_chart, revision_chart

A = "aaaaaaaa-0000-4000-8000-00000000000a"
B = "bbbbbbbb-0000-4000-8000-00000000000b"
SVG = "{http://www.w3.org/2000/svg}"
TIMING = {"mode": "full_prompt", "full_prompt_tokens": 16, "kv_bytes_per_token": 8}


def _line(key: str, op: str, **fields: Any) -> str:
    return json.dumps({"coordinator": key, "op": op, **fields})


def _trace() -> list[str]:
    return [
        _line("c1", "new", handoff_id=A, order="SourceFirst"),
        _line("c2", "new", handoff_id=B, order="DestinationFirst"),
        _line("c1", "fact", fact={"SourceHeld": {"handoff_id": A, "transfer_timing": TIMING}}),
        _line("c1", "start"),
        "{not json",
        _line("c2", "start"),
        _line("c1", "outcome", action_id=0, outcome="Submitted"),
        _line("c1", "fact", fact={"TransferCompleted": {"handoff_id": B}}),
        _line("c1", "outcome", action_id=0, outcome="Submitted"),
        _line("c1", "fact", fact={"TimedOut": {"handoff_id": A}}),
        _line("c1", "outcome", action_id=1, outcome="Noop"),
    ]


def _edge(source: str, target: str, event: str | None = None) -> int:
    return next(
        e.index
        for e in describe_chart().edges
        if (e.source, e.target) == (source, target) and (event is None or event in e.events)
    )


def _node_line(dot: str, node: str) -> str:
    """The statement declaring ``node`` (an identifier the graphviz package writes unquoted)."""
    return next(line for line in dot.splitlines() if line.strip().startswith(f"{node} ["))


def test_the_path_follows_the_first_coordinator_created() -> None:
    path = follow(_trace())
    assert path.coordinator == "c1"
    assert [s.line for s in path.steps] == [3, 4, 7, 8, 9, 10, 11]
    held, start, submitted, foreign, duplicate, timeout, cancel = path.steps
    assert held.error is not None and held.error[0] == "source_held_before_submit"
    assert held.rejected_by == _edge("source_idle", "source_idle")
    assert held.transitions == ()
    assert start.transitions == (_edge("source_idle", "submitting", "start"),)
    assert submitted.transitions == (_edge("submitting", "submitted"),)
    assert foreign.error is not None and foreign.error[0] == "foreign_handoff"
    assert foreign.rejected_by is None
    assert duplicate.transitions == ()  # an identical repeat changes nothing
    assert set(timeout.transitions) == {
        _edge("active", "cleaning_up"),
        _edge("source_pending", "canceling_source"),
        _edge("destination_pending", "destination_untouched"),
    }
    assert set(cancel.transitions) == {
        _edge("canceling_source", "source_canceled"),
        _edge("cleaning_up", "complete"),
    }
    assert path.final_state == ("complete",)
    assert path.completion is not None and path.completion.value == "Canceled"
    assert [line for line, _, _ in path.unattributed] == [5]


def test_another_coordinator_can_be_chosen() -> None:
    path = follow(_trace(), "c2")
    assert path.order.value == "DestinationFirst"
    assert [s.line for s in path.steps] == [6]
    assert path.final_state == ("source_idle", "reserving", "transfer_idle")
    with pytest.raises(TraceError, match="'nope'"):
        follow(_trace(), "nope")


def test_the_overlay_numbers_taken_edges_and_lists_the_errors() -> None:
    dot = overlay_dot(follow(_trace()), name="t.jsonl")
    assert "coordinator c1 (SourceFirst), 7 inputs, Canceled" in dot
    assert "<b>#2</b><br/>start" in dot
    assert "fact\u00a0source_held /<br/>\u00a0\u00a0✗ source_held_before_submit  #1</b>" in dot
    assert "step 1 (line 3, fact): source_held_before_submit" in dot
    assert "step 4 (line 8, fact): foreign_handoff" in dot
    assert "line 5: invalid_input" in dot
    complete = _node_line(dot, "complete")
    assert "penwidth=3.0" in complete
    untouched = _node_line(dot, "held")
    assert 'fillcolor="#ffffff"' in untouched  # never visited


@pytest.mark.slow
@pytest.mark.parametrize(
    "suffix",
    [
        pytest.param(".svg", marks=pytest.mark.requires("dot")),
        pytest.param(".png", marks=pytest.mark.requires("dot")),
        ".dot",
    ],
)
def test_the_overlay_is_written_in_each_format(tmp_path: Path, suffix: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(_trace()) + "\n", encoding="utf-8")
    out = tmp_path / f"out{suffix}"
    assert main(["diagram", "--trace", str(trace), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith({".svg": b"<?xml", ".png": b"\x89PNG", ".dot": b"digraph"}[suffix])


def test_an_unknown_overlay_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(_trace()), encoding="utf-8")
    assert main(["diagram", "--trace", str(trace), "-o", str(tmp_path / "out.gif")]) == 2
    assert "an overlay is written as .svg, .png or .dot" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"\.svg, \.png or \.dot"):
        overlay_bytes(overlay_dot(follow(_trace())), ".gif")
    assert not (tmp_path / "out.gif").exists()


@pytest.mark.requires("dot")
def test_the_diagram_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(_trace()), encoding="utf-8")
    out = tmp_path / "overlay.svg"
    assert main(["diagram", "--trace", str(trace), "--coordinator", "c2", "-o", str(out)]) == 0
    assert b"coordinator c2" in out.read_bytes()
    missing = ["diagram", "--trace", str(trace), "--coordinator", "zz", "-o", str(out)]
    assert main(missing) == 2
    assert "no coordinator 'zz'" in capsys.readouterr().err


@pytest.mark.slow
def test_an_overlay_draws_hostile_text_exactly_as_written(tmp_path: Path) -> None:
    """Markup, backslash escapes and control characters from a trace reach the picture as text."""
    trace = tmp_path / 'we<ird>&"\\N.jsonl'
    lines = [
        _line("c1", "new", handoff_id=A, order="SourceFirst"),
        _line("c1", "fact", fact={'\x01<b>"&\\N\\': {"handoff_id": A}}),
        _line("c1", "bogus</font>\x07\\l"),
    ]
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.svg"
    assert main(["diagram", "--trace", str(trace), "-o", str(out)]) == 0
    texts = [t.text or "" for t in ET.fromstring(out.read_bytes()).iter(f"{SVG}text")]
    assert any(t.startswith(f"HandoffChart: {trace.name} · coordinator c1") for t in texts)
    path = follow(lines)
    notes = texts[texts.index("Errors in the trace") + 1 :]
    shown = " ".join(line.strip() for line in notes)
    for step in path.steps:
        assert step.error is not None
        assert f"{step.error[0]}: {step.error[1]}" in shown
    assert "step 2 (line 3, bogus</font>\\x07\\l)" in shown  # the raw op, its control spelled out


def test_an_overlay_follows_the_revision_of_the_trace() -> None:
    """a976b2bf reopens a successful handoff: the path takes the chart's decoding states."""
    lines = [
        _line("c1", "new", handoff_id=A, order="SourceFirst", revision="a976b2bf"),
        _line("c1", "start"),
        _line("c1", "outcome", action_id=0, outcome="Submitted"),
        _line("c1", "fact", fact={"SourceHeld": {"handoff_id": A, "transfer_timing": TIMING}}),
        _line("c1", "outcome", action_id=1, outcome="Accepted"),
        _line(
            "c1",
            "fact",
            fact={"DestinationReserved": {"handoff_id": A, "transferable_prompt_tokens": 16}},
        ),
        _line("c1", "outcome", action_id=2, outcome="Scheduled"),
        _line("c1", "fact", fact={"TransferCompleted": {"handoff_id": A}}),
        _line("c1", "outcome", action_id=3, outcome="Applied"),
        _line("c1", "outcome", action_id=4, outcome="Applied"),
        _line("c1", "fact", fact={"Canceled": {"handoff_id": A}}),
        _line("c1", "outcome", action_id=6, outcome="Applied"),
    ]
    path = follow(lines)
    assert path.revision.value == "a976b2bf"
    assert [step.after.leaves for step in path.steps[-3:]] == [
        ("decoding",),
        ("canceling_decode",),
        ("complete",),
    ]
    assert path.steps[-2].transitions == (_edge("decoding", "canceling_decode"),)
    assert path.steps[-1].transitions == (_edge("canceling_decode", "complete"),)
    assert follow(lines[:1] + lines[1:], revision="seed").revision.value == "a976b2bf"


def _timed_trace() -> list[str]:
    """:func:`_trace` with a time on each of its JSON lines: line n at 1.5 n ms."""
    return [
        line if line == "{not json" else '{"at_ms": ' + repr(1.5 * number) + ", " + line[1:]
        for number, line in enumerate(_trace(), start=1)
    ]


def test_a_timed_trace_labels_each_step_with_its_time() -> None:
    path = follow(_timed_trace())
    assert [step.at_ms for step in path.steps] == [4.5, 6.0, 10.5, 12.0, 13.5, 15.0, 16.5]
    assert path.duration_ms == 16.5 - 1.5  # from `new` to the cleanup ack that completed it
    dot = overlay_dot(follow(_timed_trace()), name="t.jsonl")
    title = dot.split("label=<", 1)[1].split(">", 1)[1].replace("</b><br/><b>", " ")
    assert "7 inputs, Canceled in 15\u00a0ms" in title  # never broken before the unit
    assert "<b>#2 t=6 ms</b><br/>start" in dot  # a taken transition
    assert "✗ source_held_before_submit  #1 t=4.5 ms</b>" in dot  # a rejecting row
    assert "step 1 (line 3, fact, t=4.5 ms): source_held_before_submit" in dot  # the errors
    assert "step 4 (line 8, fact, t=12 ms): foreign_handoff" in dot
    highlight = overlay_highlight(path, revision_chart(path.revision))
    tags = {
        f"#{n}{highlight.parts.get((n, edge), '')}"
        for edge, steps in highlight.taken.items()
        for n in steps
    }
    assert tags and {tag for tag in tags if f"{tag} t=" not in dot} == set()


def test_without_times_the_overlay_shows_none() -> None:
    dot = overlay_dot(follow(_trace()), name="t.jsonl")
    assert " t=" not in dot and "Canceled in" not in dot
    assert follow(_trace()).duration_ms is None
    assert all(step.at_ms is None for step in follow(_trace()).steps)


def test_a_transition_taken_often_lists_its_first_timed_steps() -> None:
    model = describe_chart()
    edge = _edge("submitting", "submitted")
    steps = tuple(range(1, 8))
    dot = statechart_dot(
        model, Highlight(taken={edge: steps}, times={n: f"t={n * 10} ms" for n in steps})
    )
    label = "<br/>".join(f"<b>#{n} t={n * 10} ms</b>" for n in range(1, 5))
    assert f"{label}<br/><b>and 3 more</b>" in dot
    assert "#5 t=50 ms" not in dot
    untimed = statechart_dot(model, Highlight(taken={edge: steps}))
    assert "<b>#1, #2, #3, #4, #5, #6, #7</b>" in untimed

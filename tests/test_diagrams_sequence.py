"""Sequence diagrams: Mermaid and Graphviz show the same messages, laid out by arithmetic."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import pytest

from handoff_fsm.io.follow import follow
from handoff_fsm.io.lifecycle import (
    PARTICIPANTS,
    Lifecycle,
    MessageKind,
    StepTime,
    clip,
    lifecycle_of,
)
from handoff_fsm.render import (
    dot_digest,
    read_stamp,
    render_sequence,
    sequence_dot,
    sequence_markdown,
    sequence_mermaid,
)
from handoff_fsm.render.sequence import lifecycle_bytes
from handoff_fsm.simulate.scenarios import scenario_runs

SVG = "{http://www.w3.org/2000/svg}"
NOTES = (MessageKind.STATE, MessageKind.END)


def _lifecycle(name: str) -> Lifecycle:
    return next(r.lifecycle for r in scenario_runs() if r.scenario.name == name)


def test_mermaid_shows_each_message_in_order_with_its_arrow() -> None:
    lifecycle = _lifecycle("lost_release_ack")
    lines = [line.strip() for line in sequence_mermaid(lifecycle).splitlines()]
    body = [line for line in lines if "->>" in line or "-x" in line or line.startswith("Note")]
    assert len(body) == len(lifecycle.messages)
    assert body[0] == "Caller->>Coordinator: start()"
    assert body[1] == "Coordinator->>Source: #35;0 SubmitPrefill"
    assert "Source--xCoordinator: #35;4 ReleaseSource: never acknowledged" in body
    assert "Source-->>Coordinator: #35;5 Noop" in body
    assert body[-2] == "Note over Coordinator: complete"
    assert body[-1] == "Note over Caller,Transfer: Canceled after 11 inputs, none rejected"
    assert [line for line in lines if line.startswith("participant ")] == [
        f"participant {p.value}" for p in PARTICIPANTS
    ]
    assert lines[1] == "title Lost release acknowledgement"


def test_a_rejection_is_a_crossed_reply_to_the_sender() -> None:
    source = sequence_mermaid(_lifecycle("destination_first_failure"))
    assert "\n    Coordinator-xSource: ✗ source_held_before_submit: " in source


def test_the_graphviz_drawing_places_every_message_on_its_own_row() -> None:
    for run in scenario_runs():
        lifecycle = run.lifecycle
        dot = sequence_dot(lifecycle)
        rows = [float(y) for y in re.findall(r'^\tm\d+_a \[.*pos="[\d.]+,([\d.]+)!"', dot, re.M)]
        arrows = sum(1 for m in lifecycle.messages if m.kind not in NOTES)
        assert len(rows) == arrows
        assert rows == sorted(rows, reverse=True)  # top to bottom, in order
        for participant in PARTICIPANTS:
            assert f"\t{participant.value}_head -> {participant.value}_foot [" in dot


@pytest.mark.requires("dot")
def test_the_sequence_svg_has_every_label_a_legend_and_is_deterministic() -> None:
    lifecycle = _lifecycle("destination_first_failure")
    svg = render_sequence(lifecycle)
    assert svg == render_sequence(lifecycle)
    assert read_stamp("svg", svg) == dot_digest(sequence_dot(lifecycle))
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    for message in lifecycle.messages:  # whole, on one line or wrapped over several
        assert _shown(message.text, texts), message.text
    assert texts.count("Coordinator") == 2  # lifeline head and foot
    for words in ("an acknowledgement: #id outcome", "a rejected input: ✗ code: message"):
        assert words in texts
    assert lifecycle.title in texts


def _shown(words: str, texts: list[str]) -> bool:
    """``words`` are drawn whole: one text element, or consecutive ones that join to them."""
    return any(
        " ".join(texts[start:end]) == words
        for start in range(len(texts))
        for end in range(start + 1, min(start + 8, len(texts)) + 1)
    )


def _timed() -> Lifecycle:
    """A real run with times put on its lines (12.5 ms apart from the `new` at 10 ms)."""
    run = follow(next(r.trace for r in scenario_runs() if r.scenario.name == "lost_release_ack"))
    steps = tuple(dataclasses.replace(step, at_ms=10.0 + 2.5 * step.number) for step in run.steps)
    return lifecycle_of(dataclasses.replace(run, steps=steps, new_at_ms=10.0))


def test_timed_inputs_show_their_time_and_the_time_since_the_previous_input() -> None:
    lifecycle = _timed()
    assert lifecycle.timed
    first = lifecycle.messages[0]
    assert first.time == StepTime(12.5, 2.5)
    assert first.time.text == "t=12.5 ms (+2.5 ms)"
    source = sequence_mermaid(lifecycle)
    assert "Caller->>Coordinator: t=12.5 ms (+2.5 ms): start()" in source
    timed = [m for m in lifecycle.messages if m.time is not None]
    assert {m.kind for m in timed} == {MessageKind.CALL, MessageKind.FACT, MessageKind.OUTCOME}
    dot = sequence_dot(lifecycle)
    row = next(line for line in dot.splitlines() if line.strip().startswith("m1_time ["))
    # two right-aligned cells, three decimals each, so the column lines up at the point
    assert '<td align="right" width="' in row
    assert ">12.500</td>" in row and ">+2.500</td>" in row
    assert len(re.findall(r"\tm\d+_time \[", dot)) == len(timed)
    assert "t (ms)" in dot and "when the input arrived (at_ms)" in dot  # head and legend
    assert StepTime(3.0, None).text == "t=3 ms"
    assert StepTime(1234.56789, 0.0005).text == "t=1234.568 ms (+0.001 ms)"


def test_an_untimed_lifecycle_has_no_time_column() -> None:
    lifecycle = _lifecycle("source_first_success")
    assert not lifecycle.timed
    assert "_time [" not in sequence_dot(lifecycle)
    assert "at_ms" not in sequence_dot(lifecycle)  # no legend row for times either
    assert "t=" not in sequence_mermaid(lifecycle)


def test_markdown_is_a_heading_and_the_mermaid_block() -> None:
    lifecycle = dataclasses.replace(_lifecycle("source_first_success"), title="a *b* `c`")
    page = sequence_markdown(lifecycle)
    assert page.startswith("# a \\*b\\* \\`c\\`\n\n")
    block = page.split("```mermaid\n", 1)[1].split("\n```\n", 1)[0]
    assert block == sequence_mermaid(lifecycle).rstrip("\n")
    assert "    title a *b* `c`" in block


@pytest.mark.slow
@pytest.mark.parametrize(
    "suffix",
    [
        ".mmd",
        ".md",
        pytest.param(".svg", marks=pytest.mark.requires("dot")),
        pytest.param(".png", marks=pytest.mark.requires("dot")),
        pytest.param(".SVG", marks=pytest.mark.requires("dot")),
    ],
)
def test_each_output_suffix(suffix: str) -> None:
    data = lifecycle_bytes(_lifecycle("source_first_success"), suffix)
    start = {".mmd": b"sequenceDiagram\n", ".md": b"# ", ".svg": b"<?xml", ".png": b"\x89PNG"}
    assert data.startswith(start[suffix.lower()])


def test_an_unknown_suffix_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\.mmd, \.md, \.svg, \.png"):
        lifecycle_bytes(_lifecycle("source_first_success"), ".gif")


def test_clip_cuts_long_text_at_a_word_with_an_ellipsis() -> None:
    assert clip("short") == "short"
    assert clip("a\nb\tc") == "a b c"
    long = "word " * 40
    clipped = clip(long, 30)
    assert len(clipped) <= 30
    assert clipped.endswith("word…")
    assert clip("x" * 50, 10) == "x" * 9 + "…"

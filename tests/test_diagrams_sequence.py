"""Sequence diagrams: Mermaid and Graphviz show the same messages, laid out by arithmetic."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from handoff_fsm.diagrams import (
    dot_digest,
    lifecycles,
    read_stamp,
    render_sequence,
    sequence_dot,
    sequence_mermaid,
)
from handoff_fsm.diagrams.scenarios import PARTICIPANTS, MessageKind

SVG = "{http://www.w3.org/2000/svg}"


def test_mermaid_shows_each_message_in_order_with_its_arrow() -> None:
    run = next(r for r in lifecycles() if r.scenario.name == "lost_release_ack")
    lines = [line.strip() for line in sequence_mermaid(run).splitlines()]
    body = [line for line in lines if "->>" in line or "--x" in line or line.startswith("Note")]
    assert len(body) == len(run.messages)
    assert body[0] == "Caller->>Coordinator: start()"
    assert body[1] == "Coordinator->>Source: #35;0 SubmitPrefill"
    assert "Source--xCoordinator: #35;4 Applied (lost)" in body
    assert "Source-->>Coordinator: #35;5 Noop" in body
    assert body[-1] == "Note over Coordinator: complete"
    assert [line for line in lines if line.startswith("participant ")] == [
        f"participant {p.value}" for p in PARTICIPANTS
    ]


def test_the_graphviz_drawing_places_every_message_on_its_own_row() -> None:
    for run in lifecycles():
        dot = sequence_dot(run)
        rows = [float(y) for y in re.findall(r'^\tm\d+_a \[.*pos="[\d.]+,([\d.]+)!"', dot, re.M)]
        arrows = sum(1 for m in run.messages if m.kind is not MessageKind.STATE)
        assert len(rows) == arrows
        assert rows == sorted(rows, reverse=True)  # top to bottom, in order
        for participant in PARTICIPANTS:
            assert f"\t{participant.value}_head -> {participant.value}_foot [" in dot


def test_the_sequence_svg_has_every_label_and_is_deterministic() -> None:
    run = next(r for r in lifecycles() if r.scenario.name == "source_first_success")
    svg = render_sequence(run)
    assert svg == render_sequence(run)
    assert read_stamp("svg", svg) == dot_digest(sequence_dot(run))
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    for message in run.messages:
        assert message.text in texts
    assert texts.count("Coordinator") == 2  # lifeline head and foot

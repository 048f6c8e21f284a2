"""Every Mermaid diagram parses with Mermaid itself and is well-formed by our own reading.

Two checks: the real Mermaid parser (``tools/mermaid-check``, pinned Mermaid
11.17.2, installed by ``tools/mermaid-check/install.sh``) on every generated
``.mmd`` file and on every Mermaid block of REVIEW.md; and a structural reading
here that Mermaid does not do (it silently creates undeclared states and
participants): every referenced state or participant is declared.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from handoff_fsm.io.lifecycle import PARTICIPANTS, MessageKind
from handoff_fsm.model import Revision
from handoff_fsm.render import sequence_mermaid, statechart_mermaid
from handoff_fsm.render.mermaid import mermaid_text, regions_can_nest
from handoff_fsm.review import review_markdown
from handoff_fsm.review.diffreview import revision_reports
from handoff_fsm.simulate.decode_cancel import decode_cancel_runs
from handoff_fsm.simulate.scenarios import scenario_runs
from handoff_fsm.structure import Edge, EdgeKind, EventKind, describe_chart, revision_chart

ROOT = Path(__file__).resolve().parents[1]
MERMAID_CHECK = ROOT / "tools" / "mermaid-check" / "mermaid-check"

_STATE_DECL = re.compile(r'^state "[^"]*" as (\w+)( \{)?$')
_TRANSITION = re.compile(r"^(\[\*\]|\w+) --> (\[\*\]|\w+)( : .+)?$")
_DESCRIPTION = re.compile(r"^(\w+) : .+$")
_CLASS = re.compile(r"^class ([\w,]+) \w+$")
_MESSAGE = re.compile(r"^(\w+)(->>|-->>|--x|-x|--\))(\w+): .+$")
_NOTE = re.compile(r"^Note (?:over|left of|right of) (\w+)(?:,(\w+))?: .+$")


def _body(source: str) -> list[str]:
    lines = source.rstrip("\n").split("\n")
    if lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1 :]
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("%%")]


def check_state_diagram(source: str) -> set[str]:
    """Raise AssertionError unless ``source`` is a well-formed stateDiagram-v2; the ids declared."""
    lines = _body(source)
    assert lines[0] == "stateDiagram-v2"
    declared: set[str] = set()
    referenced: set[str] = set()
    stack: list[str] = []
    parallel: set[str] = set()
    for line in lines[1:]:
        if line.startswith(("direction ", "classDef ")):
            continue
        if match := _STATE_DECL.match(line):
            state = match.group(1)
            assert state not in declared, f"{state} declared twice"
            declared.add(state)
            if match.group(2):
                stack.append(state)
                if "(parallel)" in line:
                    parallel.add(state)
        elif line == "}":
            assert stack, "unbalanced }"
            stack.pop()
        elif line == "--":
            assert stack and stack[-1] in parallel, "-- outside a parallel state"
        elif match := _TRANSITION.match(line):
            referenced.update(s for s in match.group(1, 2) if s != "[*]")
        elif match := _CLASS.match(line):
            referenced.update(match.group(1).split(","))
        elif match := _DESCRIPTION.match(line):
            referenced.add(match.group(1))
        else:
            raise AssertionError(f"unexpected line: {line!r}")
    assert not stack, f"unclosed blocks: {stack}"
    assert referenced <= declared, f"undeclared states: {sorted(referenced - declared)}"
    return declared


def check_sequence_diagram(source: str) -> tuple[set[str], int]:
    """Raise unless well-formed; the participants declared and the number of messages."""
    lines = _body(source)
    assert lines[0] == "sequenceDiagram"
    declared: list[str] = []
    messages = 0
    boxes = 0
    for line in lines[1:]:
        if line.startswith("title "):
            continue
        if line.startswith("participant "):
            declared.append(line.removeprefix("participant ").partition(" as ")[0])
        elif line.startswith("rect "):
            boxes += 1
        elif line == "end":
            assert boxes, "end without rect"
            boxes -= 1
        elif match := _MESSAGE.match(line):
            assert {match.group(1), match.group(3)} <= set(declared), line
            messages += 1
        elif match := _NOTE.match(line):
            assert {p for p in match.groups() if p} <= set(declared), line
        else:
            raise AssertionError(f"unexpected line: {line!r}")
    assert len(declared) == len(set(declared))
    assert boxes == 0, "unclosed rect"
    return set(declared), messages


def mermaid_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)


# ---------------------------------------------------------------------- structure


def test_the_state_diagram_declares_exactly_the_charts_states() -> None:
    model = describe_chart()
    declared = check_state_diagram(statechart_mermaid(model))
    assert declared == {s.id for s in model.states}


@pytest.mark.parametrize("revision", list(Revision), ids=str)
def test_a_revisions_state_diagram_declares_and_draws_exactly_its_chart(
    revision: Revision,
) -> None:
    model = revision_chart(revision)
    source = statechart_mermaid(model)
    assert check_state_diagram(source) == {s.id for s in model.states}
    drawn = re.findall(r"^\s*(\w+) --> (\w+)\b", source, re.MULTILINE)
    assert sorted(drawn) == sorted(
        (e.source, e.target) for e in model.edges if e.kind is not EdgeKind.REJECTION
    )
    assert f"title: HandoffChart, revision {revision.value}" in source


def test_the_state_diagram_draws_every_transition_and_rejection() -> None:
    model = describe_chart()
    source = statechart_mermaid(model)
    for edge in model.edges:
        if edge.kind is EdgeKind.REJECTION:  # two rows: what the input is, then the code
            assert f"{edge.source} : fact\u00a0{edge.event_text} /\n" in source
            assert f"{edge.source} : ✗ {edge.rejection}\n" in source
        else:
            assert re.search(rf"^\s*{edge.source} --> {edge.target}\b", source, re.MULTILINE)
    assert "[*] --> active" in source
    assert "complete --> [*]" in source


def test_regions_nest_unless_a_transition_touches_a_nested_composite() -> None:
    # Mermaid bug #4052: such a transition crashes the layout, so the regions go flat.
    model = describe_chart()
    assert regions_can_nest(model)
    nested = statechart_mermaid(model)
    assert 'state "Source" as source {' in nested
    assert 'as active {\n        direction LR\n        state "Source" as source {' in nested
    assert "\n        --\n" not in nested  # the region boxes stacked, not side by side
    touching = Edge(
        index=len(model.edges),
        source="complete",
        target="source",
        kind=EdgeKind.EVENT,
        events=("restart",),
        event_kinds=(EventKind.START,),
        guard=None,
        validators=(),
        rejection=None,
        effects=(),
        completion=None,
        actions=(),
        region=None,
    )
    changed = dataclasses.replace(model, edges=(*model.edges, touching))
    assert not regions_can_nest(changed)
    flat = statechart_mermaid(changed)
    assert 'state "Source" as source {' not in flat
    assert "[*] --> source_idle : Source" in flat
    assert "\n        --\n" in flat and "direction LR" not in flat


def test_sequence_diagrams_declare_every_participant_and_show_every_message() -> None:
    notes = (MessageKind.STATE, MessageKind.END)
    for run in scenario_runs():
        declared, messages = check_sequence_diagram(sequence_mermaid(run.lifecycle))
        assert declared == {p.value for p in PARTICIPANTS}
        assert messages == sum(1 for m in run.lifecycle.messages if m.kind not in notes)


def test_mermaid_text_escapes_what_mermaid_would_misread() -> None:
    assert mermaid_text("#3 a; b") == "#35;3 a#59; b"
    assert mermaid_text('say "hi"') == "say #quot;hi#quot;"
    assert mermaid_text("<br> 100%%") == "#lt;br#gt; 100#37;#37;"
    assert mermaid_text("a\nb\tc\x07\ud800") == "a b c\\x07\\ud800"


def test_the_checker_catches_an_undeclared_state() -> None:
    with pytest.raises(AssertionError, match="undeclared states"):
        check_state_diagram('stateDiagram-v2\n    state "a" as a\n    a --> b\n')


# ---------------------------------------------------------------------- Mermaid itself


def _mermaid_check(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    assert MERMAID_CHECK.exists(), "tools/mermaid-check is missing"
    return subprocess.run(
        [str(MERMAID_CHECK), *map(str, paths)], capture_output=True, text=True, check=False
    )


@pytest.mark.requires("node")
def test_mermaid_parses_every_generated_file_and_every_review_block(tmp_path: Path) -> None:
    files = {"statechart.mmd": statechart_mermaid(describe_chart())}
    files |= {
        f"lifecycle_{r.scenario.name}.mmd": sequence_mermaid(r.lifecycle) for r in scenario_runs()
    }
    files |= {f"{r.value}_statechart.mmd": statechart_mermaid(revision_chart(r)) for r in Revision}
    files |= {
        f"{run.revision.value}_decode_cancel.mmd": sequence_mermaid(run.lifecycle)
        for run in decode_cancel_runs()
    }
    blocks = mermaid_blocks(review_markdown())
    revisions = sum(len(report.differences) for report in revision_reports())
    assert len(blocks) == 1 + len(scenario_runs()) + revisions
    files |= {f"review_block_{i}.mmd": block for i, block in enumerate(blocks)}
    paths = []
    for name, source in files.items():
        path = tmp_path / name
        path.write_text(source, encoding="utf-8")
        paths.append(path)
    result = _mermaid_check(paths)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sum(line.startswith("ok ") for line in result.stdout.splitlines()) == len(paths)
    for block in blocks:
        if _body(block)[0] == "stateDiagram-v2":
            check_state_diagram(block)
        else:
            check_sequence_diagram(block)


@pytest.mark.requires("node")
def test_mermaid_check_rejects_a_broken_file(tmp_path: Path) -> None:
    # The check above could not fail if the tool accepted anything.
    broken = tmp_path / "broken.mmd"
    broken.write_text("sequenceDiagram\n    participant A\n    A->>>B oops\n", encoding="utf-8")
    result = _mermaid_check([broken])
    assert result.returncode == 1
    assert result.stdout.startswith("error ")

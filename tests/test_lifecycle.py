"""`handoff-fsm lifecycle`: any trace's coordinator drawn exactly as the committed lifecycles.

The committed lifecycles are drawn from their committed traces by the same
function the command uses, so the command reproduces them byte for byte.
Hostile traces (malformed lines, unknown coordinators, huge lines, bytes that
are not UTF-8) give coded errors and exit status 2, never a traceback.
"""

from __future__ import annotations

import io
import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.io.errors import TraceError, TraceErrorCode
from handoff_fsm.io.follow import follow, list_coordinators
from handoff_fsm.io.lifecycle import TEXT_LIMIT, Participant, ms_text, trace_lifecycle
from handoff_fsm.io.lines import bounded_lines
from handoff_fsm.render import (
    dot_digest,
    read_stamp,
    render_sequence,
    sequence_dot,
    sequence_mermaid,
)
from handoff_fsm.review import DIAGRAMS_DIR
from handoff_fsm.simulate.scenarios import SCENARIOS
from tests.support.cli import run_cli
from tests.test_diagrams_mermaid import MERMAID_CHECK, check_sequence_diagram

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DIAGRAMS_DIR
A = "aaaaaaaa-0000-4000-8000-00000000000a"
B = "bbbbbbbb-0000-4000-8000-00000000000b"
TIMING = {"mode": "full_prompt", "full_prompt_tokens": 16, "kv_bytes_per_token": 8}
SVG = "{http://www.w3.org/2000/svg}"


def _line(key: str, op: str, **fields: Any) -> str:
    return json.dumps({"coordinator": key, "op": op, **fields})


def _trace() -> list[str]:
    """Two interleaved coordinators; c1 sees a rejection, a duplicate and a late outcome."""
    return [
        _line("c1", "new", handoff_id=A, order="SourceFirst"),
        _line("c2", "new", handoff_id=B, order="DestinationFirst"),
        _line("c1", "fact", fact={"SourceHeld": {"handoff_id": A, "transfer_timing": TIMING}}),
        _line("c1", "start"),
        "{not json",
        _line("c2", "start"),
        _line("c1", "outcome", action_id=0, outcome="Submitted"),
        _line("c1", "outcome", action_id=0, outcome="Submitted"),
        _line("c1", "fact", fact={"TimedOut": {"handoff_id": A}}),
        _line("c1", "outcome", action_id=1, outcome="Applied"),
        _line("c1", "fact", fact={"TimedOut": {"handoff_id": A}}),
    ]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------------- one drawing path


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_committed_lifecycle_is_drawn_from_its_committed_trace(scenario: Any) -> None:
    stem = COMMITTED / f"lifecycle_{scenario.name}"
    with (stem.with_suffix(".jsonl")).open("rb") as stream:
        lifecycle = trace_lifecycle(bounded_lines(stream), title=scenario.title)
    assert sequence_mermaid(lifecycle) == stem.with_suffix(".mmd").read_text(encoding="utf-8")
    svg = stem.with_suffix(".svg").read_bytes()
    assert read_stamp("svg", svg) == dot_digest(sequence_dot(lifecycle))


@pytest.mark.requires("dot")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_command_reproduces_each_committed_lifecycle(scenario: Any, tmp_path: Path) -> None:
    stem = COMMITTED / f"lifecycle_{scenario.name}"
    out = tmp_path / "out.mmd"
    args = ["lifecycle", str(stem.with_suffix(".jsonl")), "--title", scenario.title]
    assert main([*args, "-o", str(out)]) == 0
    assert out.read_bytes() == stem.with_suffix(".mmd").read_bytes()
    svg = tmp_path / "out.svg"
    assert main([*args, "-o", str(svg)]) == 0
    assert read_stamp("svg", svg.read_bytes()) == read_stamp(
        "svg", stem.with_suffix(".svg").read_bytes()
    )


# ---------------------------------------------------------------------- any trace


def test_without_a_coordinator_the_first_one_created_is_drawn() -> None:
    lifecycle = trace_lifecycle(_trace())
    assert lifecycle.coordinator == "c1"
    assert lifecycle.title == "Lifecycle of c1"
    assert lifecycle.subtitle == (f"SourceFirst handoff {A} · Canceled after 7 inputs, 1 rejected")
    other = trace_lifecycle(_trace(), "c2")
    assert other.order.value == "DestinationFirst"
    assert other.messages[-1].text == (
        "not complete after 1 input, none rejected: source_idle, reserving, transfer_idle"
    )


def test_the_messages_of_a_run_with_rejected_duplicate_and_late_inputs() -> None:
    lifecycle = trace_lifecycle(_trace())
    shown = [f"{m.kind} {m.sender}>{m.receiver}: {m.text}" for m in lifecycle.messages]
    assert shown == [
        "fact Source>Coordinator: SourceHeld(full_prompt, 16 tokens, 8 B/token)",
        "rejected Coordinator>Source: ✗ source_held_before_submit: source held before prefill "
        "submission was acknowledged (state: source_idle, destination_idle, transfer_idle)",
        "call Caller>Coordinator: start()",
        "action Coordinator>Source: #0 SubmitPrefill",
        "state Coordinator>Coordinator: submitting, destination_idle, transfer_idle",
        "outcome Source>Coordinator: #0 Submitted",
        "state Coordinator>Coordinator: submitted, destination_idle, transfer_idle",
        "outcome Source>Coordinator: #0 Submitted (ignored)",
        "fact Caller>Coordinator: TimedOut",
        "action Coordinator>Source: #1 CancelSource",
        "state Coordinator>Coordinator: canceling_source, destination_untouched",
        "outcome Source>Coordinator: #1 Applied",
        "action Coordinator>Caller: #2 Complete (Canceled)",
        "state Coordinator>Coordinator: complete",
        "fact Caller>Coordinator: TimedOut (late, ignored)",
        "end Caller>Transfer: Canceled after 7 inputs, 1 rejected",
    ]


def test_a_stalled_cleanup_ends_not_complete_with_the_cancel_never_acknowledged() -> None:
    lines = [
        _line("k", "new", handoff_id=A, order="SourceFirst"),
        _line("k", "start"),
        _line("k", "fact", fact={"Failed": {"handoff_id": A}}),
        _line("k", "fact", fact={"TimedOut": {"handoff_id": A}}),
    ]
    lifecycle = trace_lifecycle(lines)
    texts = [m.text for m in lifecycle.messages]
    assert texts[-3:] == [
        "TimedOut (ignored)",
        "#1 CancelSource: never acknowledged",
        "not complete after 3 inputs, none rejected: canceling_source, destination_untouched",
    ]
    assert "#0 SubmitPrefill: never acknowledged" in texts
    assert lifecycle.completion is None


def test_a_foreign_fact_and_an_unreadable_line_of_the_coordinator_are_rejections() -> None:
    lines = [
        _line("k", "new", handoff_id=A, order="SourceFirst"),
        _line("k", "fact", fact={"TimedOut": {"handoff_id": B}}),
        _line("k", "bogus"),
        _line("k", "new", handoff_id=A, order="SourceFirst"),
        _line("k", "outcome", action_id=7, outcome={"Failed": "x" * 500}),
    ]
    messages = trace_lifecycle(lines).messages
    texts = [m.text for m in messages]
    assert texts[0] == f"TimedOut for handoff {B}"
    assert texts[1].startswith("✗ foreign_handoff: ")
    assert texts[2] == "line 3: 'bogus' (unreadable)"
    assert texts[3].startswith("✗ invalid_input: line 3: ")
    assert texts[4] == "line 4: new (again)"
    assert texts[5].startswith("✗ duplicate_coordinator: ")
    assert texts[6].startswith("#7 Failed('xxxx")
    assert len(texts[6]) <= TEXT_LIMIT < 500  # a hostile reason is bounded
    assert messages[6].sender is Participant.CALLER  # no action 7: its owner is unknown
    assert texts[7].startswith("✗ unknown_action: ")
    assert all(len(text) <= TEXT_LIMIT for text in texts)


def test_only_the_first_inputs_are_drawn_and_the_rest_counted() -> None:
    lines = [_line("k", "new", handoff_id=A, order="SourceFirst"), _line("k", "start")]
    lines += [_line("k", "outcome", action_id=0, outcome="Submitted")] * 50
    lifecycle = trace_lifecycle(lines, max_steps=10)
    inputs = [m for m in lifecycle.messages if m.line is not None]
    assert len(inputs) == 10
    assert lifecycle.messages[-1].text == (
        "not complete after 51 inputs, none rejected (41 later inputs not drawn): "
        "submitted, destination_idle, transfer_idle"
    )


def test_list_names_every_coordinator_with_its_completion() -> None:
    listed = list_coordinators(_trace())
    assert [(c.coordinator, c.inputs, c.rejected, c.completion) for c in listed] == [
        ("c1", 7, 1, "Canceled"),
        ("c2", 1, 0, None),
    ]


# ---------------------------------------------------------------------- hostile traces


def test_an_unknown_coordinator_is_a_coded_error_naming_the_ones_there_are() -> None:
    with pytest.raises(TraceError) as caught:
        follow(_trace(), "nope")
    assert caught.value.code is TraceErrorCode.UNKNOWN_COORDINATOR
    assert "no coordinator 'nope'" in caught.value.message
    assert "it creates 'c1', 'c2'" in caught.value.message


def test_a_trace_without_any_coordinator_is_a_coded_error() -> None:
    for lines in ([], ["", "{", "[1, 2]", '"x"', "\xff"], [b"\xff\xfe garbage"]):
        with pytest.raises(TraceError) as caught:
            follow(lines)
        assert caught.value.code is TraceErrorCode.UNKNOWN_COORDINATOR
    with pytest.raises(TraceError, match="the first: invalid_input: line 1: invalid JSON"):
        follow(["{"])


def test_a_huge_line_is_skipped_unread_and_reported() -> None:
    huge = b'{"coordinator": "k", "op": "start", "pad": "' + b"x" * (3 << 20) + b'"}\n'
    data = (_line("k", "new", handoff_id=A, order="SourceFirst") + "\n").encode() + huge
    data += (_line("k", "start") + "\n").encode()
    run = follow(bounded_lines(io.BytesIO(data)))
    assert [step.line for step in run.steps] == [3]
    assert run.unattributed_count == 1
    line, code, message = run.unattributed[0]
    assert (line, code) == (2, TraceErrorCode.LINE_TOO_LONG)
    assert "longer than the limit of 1048576 bytes" in message


def _cli(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The real command in a subprocess: what a user sees, tracebacks included."""
    return run_cli("lifecycle", *args, input=stdin, text=False, cwd=ROOT)


@pytest.mark.slow
def test_hostile_inputs_to_the_command_give_one_coded_line_and_exit_2(tmp_path: Path) -> None:
    trace = _write(tmp_path / "t.jsonl", _trace())
    out = tmp_path / "out.svg"
    cases = [
        (["-", "-o", str(out)], b"{not json\n\xff\xfe\n[]\n", "unknown_coordinator"),
        (["-", "-o", str(out)], b"[" * 300_000 + b"\n", "nested more than 4"),
        ([str(trace), "--coordinator", "zz", "-o", str(out)], b"", "unknown_coordinator"),
        ([str(tmp_path / "missing.jsonl"), "-o", str(out)], b"", "missing.jsonl: No such file"),
        ([str(tmp_path), "-o", str(out)], b"", f"{tmp_path}: Is a directory"),
        ([str(trace), "-o", str(tmp_path / "out.gif")], b"", "is written as .mmd, .md"),
        ([str(trace)], b"", "-o OUT"),
        ([str(trace), "-o", f"{trace}/under_a_file.mmd"], b"", "t.jsonl: not a directory"),
    ]
    for args, stdin, expected in cases:
        result = _cli(args, stdin)
        err = result.stderr.decode()
        assert result.returncode == 2, (args, err)
        assert expected in err, (args, err)
        assert "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, err
        assert not out.exists()


@pytest.mark.slow
def test_the_command_reads_stdin_and_lists_unattributed_lines(tmp_path: Path) -> None:
    out = tmp_path / "c1.md"
    stdin = "".join(f"{line}\n" for line in _trace()).encode()
    result = _cli(["-", "-o", str(out)], stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == f"wrote {out} (coordinator c1, 7 inputs)\n"
    assert result.stderr.decode().startswith(
        "handoff-fsm lifecycle: line 5 not drawn: invalid_input: line 5: invalid JSON"
    )
    assert out.read_text(encoding="utf-8").startswith("# Lifecycle of c1\n")


def test_list_prints_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    escape = _line("w\x1b[31m", "new", handoff_id=B, order="SourceFirst")
    trace = _write(tmp_path / "t.jsonl", [*_trace(), escape])
    assert main(["lifecycle", str(trace), "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "coordinator    order             revision  inputs  rejected  completion",
        "c1             SourceFirst       seed           7         1  Canceled",
        "c2             DestinationFirst  seed           1         0  not complete",
        '"w\\u001b[31m"  SourceFirst       seed           0         0  not complete',
    ]


# ---------------------------------------------------------------------- Mermaid itself


@pytest.mark.requires("node")
def test_every_drawn_lifecycle_passes_mermaids_parser(tmp_path: Path) -> None:
    """Hostile text (markup, Mermaid syntax, controls) in keys, reasons and messages."""
    hostile = 'k;#1 <b>x</b> %% -->> "q" \x07\\n'
    lines = [
        _line(hostile, "new", handoff_id=A, order="DestinationFirst"),
        _line(hostile, "start"),
        _line(hostile, "outcome", action_id=0, outcome={"Failed": 'no;# <br> %%{init}%% "x"\n'}),
        _line(hostile, "fact", fact={"SourceHeld": {"handoff_id": A, "transfer_timing": TIMING}}),
        _line(hostile, 'op";#<i>'),
        _line(hostile, "outcome", action_id=1, outcome="Applied"),
    ]
    paths = []
    for index, (trace, key) in enumerate(((lines, None), (_trace(), "c1"), (_trace(), "c2"))):
        path = _write(tmp_path / f"t{index}.jsonl", trace)
        out = tmp_path / f"l{index}.mmd"
        chosen = ["--coordinator", key] if key else []
        assert main(["lifecycle", str(path), "-o", str(out), *chosen]) == 0
        check_sequence_diagram(out.read_text(encoding="utf-8"))
        paths.append(out)
    result = subprocess.run(
        [str(MERMAID_CHECK), *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok ") == len(paths)


# ---------------------------------------------------------------------- revisions


def _reopened() -> list[str]:
    """A successful SourceFirst handoff, then a Canceled fact: a976b2bf reopens cleanup."""
    committed = COMMITTED / "lifecycle_source_first_success.jsonl"
    lines = committed.read_text(encoding="utf-8").splitlines()
    key = json.loads(lines[0])["coordinator"]
    handoff = json.loads(lines[0])["handoff_id"]
    canceled = {"Canceled": {"handoff_id": handoff}}
    return [
        *lines,
        _line(key, "fact", fact=canceled),
        _line(key, "outcome", action_id=6, outcome="Applied"),
        _line(key, "fact", fact=canceled),
    ]


def test_the_revision_is_a_lines_own_or_the_default() -> None:
    seed = trace_lifecycle(_reopened())  # the seed ignores everything after completion
    assert [m.text for m in seed.messages[-4:]] == [
        "Canceled (late, ignored)",
        "#6 Applied (late, ignored)",
        "Canceled (late, ignored)",
        "Success after 12 inputs, none rejected",
    ]
    reopened = trace_lifecycle(_reopened(), revision="a976b2bf")
    texts = [m.text for m in reopened.messages]
    assert texts[-8:] == [
        "Canceled (late)",
        "#6 CancelDestination",
        "canceling_decode",
        "#6 Applied",  # not late: the handoff was reopened
        "#7 Complete (Canceled)",
        "complete",
        "Canceled (late, ignored)",
        "Canceled after 12 inputs, none rejected",
    ]
    assert "(revision a976b2bf)" in reopened.subtitle
    named = [_line("k", "new", handoff_id=A, order="SourceFirst", revision="a976b2bf")]
    assert follow(named).revision.value == "a976b2bf"  # a line's own revision wins
    assert follow(named, revision="seed").revision.value == "a976b2bf"


@pytest.mark.slow
def test_the_command_takes_a_revision(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _write(tmp_path / "t.jsonl", _reopened())
    assert main(["lifecycle", str(trace), "--revision", "a976b2bf", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[1].split() == [
        "source_first_success",
        "SourceFirst",
        "a976b2bf",
        "12",
        "0",
        "Canceled",
    ]
    out = tmp_path / "reopened.mmd"
    assert main(["lifecycle", str(trace), "--revision", "a976b2bf", "-o", str(out)]) == 0
    assert "Note over Coordinator: canceling_decode" in out.read_text(encoding="utf-8")
    bad = run_cli("lifecycle", str(trace), "--revision", "x")
    assert bad.returncode == 2 and "invalid choice: 'x'" in bad.stderr


# ---------------------------------------------------------------------- times


def _simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A simulated run's trace: every line carries the virtual time of its input."""
    trace = tmp_path / "run.jsonl"
    args = ["--backend", "sglang", "--handoffs", "12", "--fault-rate", "0.3", "--seed", "7"]
    assert main(["simulate", *args, "--json", "--trace", str(trace)]) in (0, 1)
    capsys.readouterr()
    return trace


def test_a_simulated_run_is_drawn_with_the_times_of_its_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _simulated(tmp_path, capsys)
    lines = trace.read_text(encoding="utf-8").splitlines()
    at = {number: json.loads(line)["at_ms"] for number, line in enumerate(lines, start=1)}
    listed = list_coordinators(lines)
    chosen = {
        next(c.coordinator for c in listed if c.completion == "Success"),
        next(c.coordinator for c in listed if c.completion == "Canceled"),
        next(c.coordinator for c in listed if c.rejected),
    }
    for key in chosen:
        run = follow(lines, key)
        lifecycle = trace_lifecycle(lines, key)
        assert lifecycle.timed
        inputs = [m for m in lifecycle.messages if m.line is not None]
        assert len(inputs) == run.inputs
        previous = at[run.new_line]
        for message in inputs:  # rejected ones too: their time was accepted
            assert message.time is not None and message.line is not None
            assert message.time.at_ms == at[message.line]
            assert message.time.since_ms == at[message.line] - previous
            previous = at[message.line]
        duration = run.duration_ms
        assert duration is not None and duration > 0
        assert lifecycle.messages[-1].text.endswith(f", in {ms_text(duration)} ms")
        source = sequence_mermaid(lifecycle)
        for message in inputs:
            assert message.time is not None
            assert f"Coordinator: {message.time.text}: " in source
        assert source.count(" ms (+") == len(inputs)


@pytest.mark.requires("node")
def test_timed_lifecycles_from_the_command_pass_mermaids_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _simulated(tmp_path, capsys)
    paths = []
    for key in ("h0", "h2", "h4"):  # a success, a rejected input, a cancellation
        out = tmp_path / f"{key}.mmd"
        assert main(["lifecycle", str(trace), "--coordinator", key, "-o", str(out)]) == 0
        source = out.read_text(encoding="utf-8")
        check_sequence_diagram(source)
        assert ": start()" in source and " ms (+" in source
        paths.append(out)
    result = subprocess.run(
        [str(MERMAID_CHECK), *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok ") == len(paths)


@pytest.mark.requires("dot")
def test_a_timed_svg_has_a_time_column_with_the_trace_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _simulated(tmp_path, capsys)
    lines = trace.read_text(encoding="utf-8").splitlines()
    lifecycle = trace_lifecycle(lines, "h4")
    svg = render_sequence(lifecycle)
    assert svg == render_sequence(lifecycle)
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert {"t (ms)", "+ (ms)"} <= set(texts)
    for message in lifecycle.messages:
        if message.time is not None:
            assert f"{message.time.at_ms:.3f}" in texts
            assert f"+{message.time.since_ms:.3f}" in texts
    assert any(text.endswith(" ms") and ", in " in text for text in texts if text)  # the end
    for participant in Participant:  # the time column stays left of every lifeline
        assert participant.value in texts


def test_list_of_a_trace_creating_no_coordinator_is_a_coded_error() -> None:
    with pytest.raises(TraceError) as caught:
        list_coordinators(["{", '{"coordinator": "x", "op": "start"}'])
    assert caught.value.code is TraceErrorCode.UNKNOWN_COORDINATOR
    assert "2 lines name" not in caught.value.message  # the second names one: no "new"
    assert "1 line names no coordinator, the first: invalid_input: line 1" in caught.value.message
    with pytest.raises(TraceError):
        list_coordinators([])


def test_a_line_refused_for_its_time_is_drawn_as_a_rejection_without_a_time() -> None:
    lines = [
        _line("c", "new", handoff_id=A, order="SourceFirst", at_ms=1),
        _line("c", "start", at_ms=2),
        _line("c", "outcome", action_id=0, outcome="Submitted", at_ms=1.5),
        _line("c", "outcome", action_id=0, outcome="Submitted", at_ms=3),
    ]
    messages = trace_lifecycle(lines).messages
    refused = next(i for i, m in enumerate(messages) if m.line == 3)
    assert (messages[refused].text, messages[refused].time) == ("#0 Submitted", None)
    assert messages[refused + 1].text.startswith("✗ time_went_backwards: line 3: at_ms 1.5")
    later = next(m for m in messages if m.line == 4)
    assert later.time is not None and (later.time.at_ms, later.time.since_ms) == (3.0, 1.0)


@pytest.mark.parametrize("extra", [["--coordinator", "k"], ["-o", "x.mmd"], ["--title", "t"]])
def test_list_takes_nothing_that_names_one_drawing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    trace = _write(tmp_path / "t.jsonl", _reopened())
    with pytest.raises(SystemExit) as exited:
        main(["lifecycle", str(trace), "--list", *extra])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: handoff-fsm lifecycle ")
    assert f"it takes no {extra[0]}" in err

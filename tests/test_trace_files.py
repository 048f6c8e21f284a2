"""Every command that reads a trace opens it the same way, and no trace file ends in a traceback.

``replay``, ``lifecycle`` (drawing and ``--list``) and ``diagram`` read
their trace through one opener (:func:`handoff_fsm.cli.files.trace_lines`):
bytes, bounded lines, ``-`` for stdin, read errors naming the trace. A file that
is not UTF-8 is lines the replayer answers ``invalid_input``; a command that
needs a coordinator then stops with one line naming the file and the first
reason, exit status 2.
"""

from __future__ import annotations

import errno
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_fsm.cli import files, main

HID = "aaaaaaaa-0000-4000-8000-00000000000a"
NEW = json.dumps({"coordinator": "c1", "op": "new", "handoff_id": HID, "order": "SourceFirst"})
START = json.dumps({"coordinator": "c1", "op": "start"})
GOOD = f"{NEW}\n{START}\n"

NOT_UTF8 = {
    "latin1.jsonl": GOOD.replace('"c1"', '"c\xe9"').encode("latin-1"),
    "utf16.jsonl": GOOD.encode("utf-16"),
    "utf32.jsonl": GOOD.encode("utf-32-le"),
    "binary.jsonl": bytes(range(255, -1, -1)) * 4,
    "bom.jsonl": b"\xef\xbb\xbf" + NEW.encode() + b"\n",  # one line only: the BOM spoils it
}
REASONS = {
    "latin1.jsonl": "not UTF-8: invalid continuation byte",
    "utf16.jsonl": "not UTF-8: invalid start byte",
    "utf32.jsonl": "invalid JSON",  # NUL bytes are UTF-8, but not JSON
    "binary.jsonl": "not UTF-8: invalid start byte",
    "bom.jsonl": "a byte-order mark (U+FEFF) is not JSON",
}
"""Trace files none of whose lines is UTF-8 JSON creating a coordinator."""


def _commands(trace: Path, out: Path) -> dict[str, list[str]]:
    return {
        "lifecycle": ["lifecycle", str(trace), "-o", str(out.with_suffix(".mmd"))],
        "lifecycle --list": ["lifecycle", str(trace), "--list"],
        "diagram": ["diagram", str(trace), "-o", str(out.with_suffix(".dot"))],
    }


@pytest.mark.parametrize("name", NOT_UTF8)
@pytest.mark.parametrize("command", ["lifecycle", "lifecycle --list", "diagram"])
def test_a_trace_that_is_not_utf8_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    trace = tmp_path / name
    trace.write_bytes(NOT_UTF8[name])
    out = tmp_path / "out"
    assert main(_commands(trace, out)[command]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    prefix = f"handoff-fsm {command.split(maxsplit=1)[0]}: {trace}: unknown_coordinator: "
    assert err.startswith(prefix), err
    assert f"the first: invalid_input: line 1: {REASONS[name]}" in err
    assert not list(tmp_path.glob("out*"))


@pytest.mark.parametrize("name", NOT_UTF8)
def test_replay_answers_each_line_of_such_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    trace = tmp_path / name
    trace.write_bytes(NOT_UTF8[name])
    assert main(["replay", str(trace)]) == 0
    replies = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(replies) == NOT_UTF8[name].count(b"\n") + (not NOT_UTF8[name].endswith(b"\n"))
    assert {reply["error"]["code"] for reply in replies} == {"invalid_input"}


def test_lines_that_are_not_utf8_among_good_ones_are_drawn_around(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "mixed.jsonl"
    trace.write_bytes(GOOD.encode() + b'{"coordinator": "c1", "op": "st\xe4rt"}\n' + b"\xff\n")
    out = tmp_path / "c1.mmd"
    assert main(["lifecycle", str(trace), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "line 3 not drawn: invalid_input: line 3: not UTF-8" in err
    assert "line 4 not drawn: invalid_input: line 4: not UTF-8" in err
    assert main(["diagram", str(trace), "-o", str(tmp_path / "c1.dot")]) == 0
    dot = (tmp_path / "c1.dot").read_text(encoding="utf-8")
    assert "line 3: invalid_input: line 3: not UTF-8" in dot


def test_diagram_reads_a_trace_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stdin:
        buffer = io.BytesIO(GOOD.encode())

    monkeypatch.setattr("sys.stdin", Stdin)
    out = tmp_path / "o.dot"
    assert main(["diagram", "-", "-o", str(out)]) == 0
    assert "coordinator c1 (SourceFirst), 1 inputs, not complete" in out.read_text("utf-8")
    monkeypatch.setattr("sys.stdin", type("Empty", (), {"buffer": io.BytesIO(b"\xff\n")}))
    assert main(["diagram", "--trace", "-", "-o", str(out)]) == 2  # the old spelling still works
    assert capsys.readouterr().err.startswith("handoff-fsm diagram: <stdin>: unknown_coordinator: ")


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "{trace}", "-o", "{out}.jsonl"],
        ["lifecycle", "{trace}", "-o", "{out}.mmd"],
        ["lifecycle", "{trace}", "--list"],
        ["diagram", "{trace}", "-o", "{out}.dot"],
    ],
)
def test_a_read_error_halfway_names_the_trace(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    """The opener names read errors, which Python leaves nameless (open() names its own)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(GOOD, encoding="utf-8")

    def failing(stream: object, max_line_bytes: int = 1) -> Iterator[bytes]:
        yield NEW.encode() + b"\n"
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(files, "bounded_lines", failing)
    filled = [a.format(trace=trace, out=tmp_path / "out") for a in args]
    assert main(filled) == 2
    assert capsys.readouterr().err == f"handoff-fsm {args[0]}: {trace}: Input/output error\n"

"""Replay answers every line, whatever it holds: one well-formed reply, nothing else changes."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.errors import error_codes
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES, OverlongLine, bounded_lines
from handoff_fsm.io.replay import TraceReplayer, replay
from tests.differential import random_trace
from tests.hostile import HID, hostile_trace

CODES = {code.value for code in error_codes()}
PROBE = json.dumps({"coordinator": "probe", "op": "start"})
MESSAGE_LIMIT = 400
"""Longest message any reply may carry: messages quote input only through ``quoted``."""


def check_reply(text: str) -> dict[str, Any]:
    """One reply line: valid JSON of exactly the documented shape, with a bounded message."""
    assert "\n" not in text
    reply: dict[str, Any] = json.loads(text)
    assert next(iter(reply)) == "coordinator" and list(reply)[-2:] == ["complete", "completion"]
    assert set(reply) in (
        {"coordinator", "actions", "complete", "completion"},
        {"coordinator", "error", "complete", "completion"},
    )
    assert reply["coordinator"] is None or isinstance(reply["coordinator"], str)
    assert reply["complete"] is (reply["completion"] is not None)
    if "error" in reply:
        error = reply["error"]
        assert set(error) == {"code", "message"} and error["code"] in CODES
        assert len(error["message"]) <= MESSAGE_LIMIT, error["message"][:200]
    return reply


class Prober:
    """A replayer with one coordinator whose answer to ``start`` must never change."""

    def __init__(self) -> None:
        self.replayer = TraceReplayer()
        self.number = 0
        self.send(
            json.dumps(
                {"coordinator": "probe", "op": "new", "handoff_id": HID, "order": "SourceFirst"}
            )
        )
        self.send(PROBE)  # issues SubmitPrefill; from now on a start issues nothing
        self.expected = self.send(PROBE)

    def send(self, line: str | bytes) -> dict[str, Any]:
        self.number += 1
        return check_reply(self.replayer.reply_text(line, self.number))

    def hostile(self, line: str | bytes) -> dict[str, Any]:
        reply = self.send(line)
        assert self.send(PROBE) == self.expected, "a hostile line changed another coordinator"
        return reply


def _mutations(rng: random.Random, line: bytes) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(data) + 1)
        roll = rng.random()
        if roll < 0.3:
            data[at:at] = bytes([rng.randrange(256)])
        elif roll < 0.5:
            del data[at : at + rng.randint(1, 8)]
        elif roll < 0.7 and at < len(data):
            data[at] = rng.randrange(256)
        elif roll < 0.8:
            data[at:at] = rng.choice([b"[" * 50, b"{" * 50, b"]", b'"', b"\\", b"\\u", b"\\ud800"])
        elif roll < 0.9:
            data[at:at] = rng.choice(
                [b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xed\xa0\x80", b"-0", b"9" * 400]
            )
        else:
            data[at:at] = data[max(0, at - 40) : at]
    return bytes(data).replace(b"\n", b" ")


def test_random_byte_mutations_of_valid_lines_get_one_reply_each() -> None:
    rng = random.Random(9)
    prober = Prober()
    for line in random_trace(4_000, seed=6):
        hostile = _mutations(rng, line.encode())
        prober.hostile(hostile)  # as bytes, the way the command line reads them
        text = hostile.decode("utf-8", "surrogateescape")  # str with lone surrogates
        prober.hostile(text)


def test_every_line_of_the_hostile_trace_gets_one_reply() -> None:
    prober = Prober()
    for line in hostile_trace():
        reply = prober.hostile(line)
        coordinator = reply["coordinator"] or ""
        assert len(json.dumps(reply)) < len(json.dumps(coordinator)) + 600


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_invalid_input_wherever_it_is(depth: int) -> None:
    prober = Prober()
    deep = "[" * depth + "]" * depth
    lines = [
        deep,
        "{" * depth,
        '{"coordinator": "probe", "op": "start", "x": ' + deep + "}",
        '{"coordinator": "probe", "op": "fact", "fact": ' + deep + "}",
        '{"coordinator": "probe", "op": "outcome", "action_id": 0, "outcome": {"Failed": '
        + deep
        + "}}",
    ]
    for line in lines:
        reply = prober.hostile(line)
        assert reply["error"]["code"] == "invalid_input"
        assert "nested more than 4" in reply["error"]["message"]


def test_a_400_digit_fallback_is_an_infinite_fallback() -> None:
    prober = Prober()
    for digits in ("1" + "0" * 399, "-" + "9" * 400):
        line = (
            '{"coordinator": "big", "op": "new", "handoff_id": "' + HID + '", "order": '
            '"SourceFirst", "fallback_transfer_delay_ms": ' + digits + "}"
        )
        reply = prober.hostile(line)
        assert reply["error"]["code"] == "invalid_fallback"
        assert "inf" in reply["error"]["message"]


def test_a_line_over_the_limit_is_line_too_long_and_replay_goes_on() -> None:
    limit = 120
    fits = json.dumps({"coordinator": "c", "op": "new", "handoff_id": HID, "order": "SourceFirst"})
    padded = fits[:-1] + " " * (limit - len(fits)) + "}"
    assert len(padded) == limit
    long_str = "é" * 61  # 61 characters, 122 bytes: measured in bytes
    lines: list[str | bytes] = [
        padded,
        padded + "\n",  # the newline does not count
        padded[:-1] + " }",
        long_str,
        (padded[:-1] + " }").encode(),
        OverlongLine(b"x" * (limit + 1), 10**9),
        json.dumps({"coordinator": "c", "op": "start"}),
    ]
    replies = [json.loads(r) for r in replay(lines, max_line_bytes=limit)]
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes == [
        None,
        "duplicate_coordinator",
        "line_too_long",
        "line_too_long",
        "line_too_long",
        "line_too_long",
        None,
    ]
    assert replies[2]["coordinator"] is None
    assert replies[2]["error"]["message"] == (
        "line 3: 121 bytes, longer than the limit of 120 bytes (--max-line-bytes); skipped"
    )
    assert "122 bytes" in replies[3]["error"]["message"]
    assert "1000000000 bytes" in replies[5]["error"]["message"]
    assert replies[-1]["actions"][0]["id"] == 0
    with pytest.raises(ValueError, match="max_line_bytes"):
        TraceReplayer(max_line_bytes=0)


class _Endless(io.RawIOBase):
    """``size`` bytes of ``x``, then ``rest``: a huge line that never exists in memory."""

    def __init__(self, size: int, rest: bytes) -> None:
        self.left = size
        self.rest = rest
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.largest_read = max(self.largest_read, len(buffer))
        if self.left > 0:
            n = min(len(buffer), self.left)
            buffer[:n] = b"x" * n
            self.left -= n
            return n
        if self.rest:
            n = min(len(buffer), len(self.rest))
            buffer[:n] = self.rest[:n]
            self.rest = self.rest[n:]
            return n
        return 0


def test_bounded_lines_skip_a_100_mb_line_in_bounded_memory() -> None:
    size = 100 * 1024 * 1024
    rest = b"\n" + PROBE.encode() + b"\nlast"
    raw = _Endless(size, rest)
    lines = list(bounded_lines(io.BufferedReader(raw), max_line_bytes=1024))
    assert len(lines) == 3
    first = lines[0]
    assert isinstance(first, OverlongLine) and first.size == size and len(first) == 1025
    assert lines[1:] == [PROBE.encode() + b"\n", b"last"]
    assert raw.largest_read <= 1 << 17  # read in chunks, never the whole line


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", []),
        (b"abc", [b"abc"]),
        (b"abcd\n", [b"abcd\n"]),  # exactly the limit, plus its newline
        (b"abcde\nxy\n", ["overlong 5", b"xy\n"]),
        (b"abcde", ["overlong 5"]),
        (b"\n\n", [b"\n", b"\n"]),
    ],
)
def test_bounded_lines_edges(data: bytes, expected: list[object]) -> None:
    got = [
        f"overlong {line.size}" if isinstance(line, OverlongLine) else line
        for line in bounded_lines(io.BytesIO(data), max_line_bytes=4)
    ]
    assert got == expected
    with pytest.raises(ValueError, match="max_line_bytes"):
        list(bounded_lines(io.BytesIO(data), max_line_bytes=0))


PEAK_RSS = """
import os, sys
from handoff_fsm.cli import main
status = main(["replay", sys.argv[1], "-o", sys.argv[2]])
with open("/proc/self/status") as f:
    peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
print(status, peak * 1024)
"""


def _replay_peak(trace: Path, out: Path) -> int:
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, str(trace), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    status, peak = result.stdout.split()
    assert status == "0"
    return int(peak)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc for VmHWM")
def test_the_command_replays_past_a_100_mb_line_without_holding_it(tmp_path: Path) -> None:
    new = json.dumps({"coordinator": "c", "op": "new", "handoff_id": HID, "order": "SourceFirst"})
    start = json.dumps({"coordinator": "c", "op": "start"})
    small = tmp_path / "small.jsonl"
    small.write_text(f"{new}\n{start}\n")
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as trace:
        trace.write(new.encode() + b"\n")
        head = b'{"coordinator": "c", "op": "fact", "fact": "'
        trace.write(head)
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            trace.write(chunk)
        trace.write(b'"}\n' + start.encode() + b"\n")
    out = tmp_path / "out.jsonl"
    baseline = _replay_peak(small, out)
    peak = _replay_peak(huge, out)
    replies = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r.get("error", {}).get("code") for r in replies] == [None, "line_too_long", None]
    assert replies[1]["coordinator"] is None
    assert f"{len(head) + 100 * (1 << 20) + 2} bytes" in replies[1]["error"]["message"]
    assert replies[2]["actions"][0]["id"] == 0
    # The line is 100 MiB; replaying it costs at most a few times the 1 MiB limit.
    assert peak - baseline < 8 * DEFAULT_MAX_LINE_BYTES, (baseline, peak)
    assert os.path.getsize(out) < 1_000

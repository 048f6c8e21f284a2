"""Replay's memory: flat in the number of handoffs whatever the revision and the mix of
completions, bounded by what docs/replay.md says whatever the keys, and never at the
price of a reply (a retired coordinator that can still change answers exactly)."""

from __future__ import annotations

import json
import random
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.coordinator import Engine
from handoff_fsm.io.replay import (
    DEFAULT_REMEMBER_BYTES,
    KEPT_COORDINATOR_BYTES,
    TraceReplayer,
    replay,
)
from handoff_fsm.model import Revision
from tests.support.cli import run_cli

TIMING = {"mode": "full_prompt", "kv_bytes_per_token": 131072, "bandwidth_gb_s": 25.0}


class _Handoff:
    """The trace lines of one handoff under ``key``, with a random id and token counts."""

    def __init__(self, key: str, rng: random.Random) -> None:
        self.key = key
        self.id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.tokens = rng.randrange(64, 16384)
        self.cached = rng.randrange(1, self.tokens + 1)

    def line(self, op: str, **fields: Any) -> str:
        return json.dumps({"coordinator": self.key, "op": op, **fields})

    def fact(self, name: str, **fields: Any) -> str:
        return self.line("fact", fact={name: {"handoff_id": self.id, **fields}})

    def ack(self, action_id: int, outcome: Any) -> str:
        return self.line("outcome", action_id=action_id, outcome=outcome)

    def new(self) -> str:
        return self.line("new", handoff_id=self.id, order="SourceFirst")

    def success(self) -> list[str]:
        """Created, run to Success (under a976b2bf it then decodes: not final)."""
        timing = {**TIMING, "full_prompt_tokens": self.tokens}
        return [
            self.new(),
            self.line("start"),
            self.ack(0, "Submitted"),
            self.fact("SourceHeld", transfer_timing=timing),
            self.ack(1, "Accepted"),
            self.fact("DestinationReserved", transferable_prompt_tokens=self.cached),
            self.ack(2, "Scheduled"),
            self.fact("TransferCompleted"),
            self.ack(3, "Applied"),
            self.ack(4, "Applied"),
        ]

    def canceled(self) -> list[str]:
        """Created, started, canceled while prefilling: final under every revision."""
        return [
            self.new(),
            self.line("start"),
            self.ack(0, "Submitted"),
            self.fact("Canceled"),
            self.ack(1, "Applied"),
        ]

    def decode_canceled(self) -> list[str]:
        """Success, then canceled while decoding (under a976b2bf: a second Complete)."""
        return [*self.success(), self.fact("Canceled"), self.ack(6, "Applied")]

    def after_success(self) -> list[str]:
        """Every kind of line a handoff that succeeded may still get, the decode cancel last."""
        foreign = str(uuid.UUID(int=int(uuid.UUID(self.id)) ^ 1))
        return [
            self.line("start"),
            self.ack(4, "Applied"),  # a late acknowledgement
            self.ack(99, "Applied"),
            self.fact("TransferCompleted"),  # a repeated fact
            self.line("fact", fact={"Canceled": {"handoff_id": foreign}}),  # foreign_handoff
            self.line("new", handoff_id=self.id, order="SourceFirst"),  # duplicate_coordinator
            self.fact("Canceled"),  # a976b2bf: CancelDestination
            self.ack(5, "Applied"),
            self.fact("TimedOut"),
            self.ack(6, "Applied"),  # a976b2bf: the second Complete
            self.line("new", handoff_id=self.id, order="SourceFirst"),
        ]


def _mixed(count: int, seed: int, kinds: tuple[str, ...]) -> Iterator[str]:
    """``count`` handoffs one after another, each of a kind drawn from ``kinds``."""
    rng = random.Random(seed)
    for index in range(count):
        handoff = _Handoff(f"h{index:06d}", rng)
        yield from getattr(handoff, rng.choice(kinds))()


def _peak(lines: Iterator[str], **options: Any) -> int:
    """tracemalloc's peak while a fresh replayer answers ``lines``."""
    tracemalloc.start()
    try:
        replayer = TraceReplayer(**options)
        for number, line in enumerate(lines, start=1):
            replayer.reply_text(line, number)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


LEDGER_BYTES_PER_HANDOFF = 128
"""What a retired handoff with a 7-character key may add to the peak: its ledger entry
(about 28 bytes, tests/test_ledger.py), a record of its snapshot when it can still
change (under 40 bytes), and the ledger's table while it doubles (old and new side by
side). A coordinator kept whole costs about 700 bytes: flat means none is."""


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision))
@pytest.mark.parametrize(
    "kinds",
    [("success",), ("success", "canceled", "decode_canceled")],
    ids=["successes", "mixed"],
)
def test_memory_is_flat_in_the_number_of_handoffs(
    revision: Revision, kinds: tuple[str, ...]
) -> None:
    count = 500
    warm = _peak(_mixed(200, 1, kinds), revision=revision, remember_completed=0)
    assert warm > 0
    small = _peak(_mixed(count, 2, kinds), revision=revision, remember_completed=0)
    large = _peak(_mixed(4 * count, 2, kinds), revision=revision, remember_completed=0)
    per_handoff = (large - small) / (3 * count)
    assert per_handoff <= LEDGER_BYTES_PER_HANDOFF, (
        f"{revision.value}: {per_handoff:.0f} bytes per handoff ({small:,} -> {large:,})"
    )


@pytest.mark.parametrize("remember", [0, 1, 3])
def test_a_retired_handoff_that_can_still_change_answers_exactly(
    engine: Engine, remember: int
) -> None:
    rng = random.Random(7)
    handoffs = [_Handoff(f"k{index}", rng) for index in range(6)]
    lines = [line for handoff in handoffs for line in handoff.success()]
    kept = TraceReplayer(revision=Revision.A976B2BF, engine=engine, remember_completed=None)
    retiring = TraceReplayer(revision=Revision.A976B2BF, engine=engine, remember_completed=remember)
    for number, line in enumerate(lines, start=1):
        assert retiring.reply_text(line, number) == kept.reply_text(line, number)
    retired = [h.key for h in handoffs if h.key in retiring.retired]
    assert len(retired) == len(handoffs) - remember  # none kept beyond the count...
    assert not retiring.live  # ...and none left running for ever
    after = [line for handoff in handoffs for line in handoff.after_success()]
    number = len(lines)
    for line in after:
        number += 1
        assert retiring.reply_text(line, number) == kept.reply_text(line, number), line
    reply = json.loads(kept.reply_text(handoffs[0].fact("Canceled"), number + 1))
    assert reply["completion"] == "Canceled"  # the decode cancel did run to its end


def test_a_decode_cancel_after_retirement_is_the_reply_of_the_kept_coordinator() -> None:
    rng = random.Random(3)
    first, second = _Handoff("first", rng), _Handoff("second", rng)
    lines = [*first.success(), *second.success(), first.fact("Canceled"), first.ack(6, "Noop")]
    kept = list(replay(lines, revision=Revision.A976B2BF, remember_completed=None))
    retired = list(replay(lines, revision=Revision.A976B2BF, remember_completed=0))
    assert retired == kept
    cancel, complete = (json.loads(reply) for reply in retired[-2:])
    assert [next(iter(a["action"])) for a in cancel["actions"]] == ["CancelDestination"]
    assert (cancel["complete"], cancel["completion"]) == (False, "Success")
    assert [next(iter(a["action"])) for a in complete["actions"]] == ["Complete"]
    assert (complete["complete"], complete["completion"]) == (True, "Canceled")


def test_a_final_coordinator_is_still_forgotten_by_key_only() -> None:
    rng = random.Random(4)
    handoff = _Handoff("k", rng)
    lines = [*handoff.decode_canceled(), handoff.ack(6, "Applied"), handoff.new()]
    replies = [
        json.loads(r) for r in replay(lines, revision=Revision.A976B2BF, remember_completed=0)
    ]
    assert [r.get("error", {}).get("code") for r in replies[-2:]] == [
        "forgotten_coordinator",
        "duplicate_coordinator",
    ]
    assert all((r["complete"], r["completion"]) == (True, "Canceled") for r in replies[-2:])


@pytest.mark.slow
def test_lines_for_a_retired_coordinator_do_not_grow_memory() -> None:
    rng = random.Random(5)
    handoff = _Handoff("k", rng)
    replayer = TraceReplayer(revision=Revision.A976B2BF, remember_completed=0)
    number = 0
    for line in handoff.success():
        number += 1
        replayer.reply_text(line, number)

    def lines(count: int) -> Iterator[str]:
        for _ in range(count):
            yield handoff.line("start")
            yield handoff.ack(3, "Applied")

    def grow(count: int) -> int:
        nonlocal number
        tracemalloc.start()
        try:
            for line in lines(count):
                number += 1
                assert '"error"' not in replayer.reply_text(line, number)
            current, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return current

    grow(10)
    assert grow(2_000) < 2_048  # rebuilt and retired again in place, every time
    assert len(replayer.retired) == 1 and not replayer.live and not replayer.completed


# ------------------------------------------------------------------ what a kept one costs

WIDE = "漢"
"""A key character of three UTF-8 bytes: escaped to six characters in a reply's JSON."""


def _kept_bytes(key: Callable[[int], str], count: int, **options: Any) -> int:
    """What replay holds after ``count`` handoffs with these keys completed, all kept."""
    rng = random.Random(6)
    replayer = TraceReplayer(**options)
    handoffs = [_Handoff(key(index), rng) for index in range(count + 5)]
    number = 0
    for handoff in handoffs[:5]:  # warm up
        for line in handoff.canceled():
            number += 1
            replayer.reply_text(line, number)
    tracemalloc.start()
    try:
        for handoff in handoffs[5:]:
            for line in handoff.canceled():
                number += 1
                assert '"error"' not in replayer.reply_text(line, number)
            del line
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not replayer.live
    return current


@pytest.mark.parametrize(
    ("shape", "key"),
    [
        ("h<n>", lambda i: f"h{i:06d}"),
        ("a UUID", lambda i: str(uuid.UUID(int=i + 1))),
        ("20,000 ASCII characters", lambda i: f"{i:06d}" + "k" * 19_994),
        ("20,000 characters of three UTF-8 bytes", lambda i: f"{i:06d}" + WIDE * 19_994),
        ("20,000 characters needing an escape", lambda i: f"{i:06d}" + '"' * 19_994),
    ],
)
def test_a_kept_coordinator_costs_at_most_what_it_counts(
    shape: str, key: Callable[[int], str]
) -> None:
    count = 40
    held = _kept_bytes(key, count)
    counted = sum(KEPT_COORDINATOR_BYTES + len(key(i + 5).encode()) for i in range(count))
    assert held <= counted, f"{shape}: {held / count:,.0f} bytes held per kept coordinator"


def test_the_kept_ones_stay_within_the_byte_budget() -> None:
    budget = 1_000_000
    count = 60

    def key(index: int) -> str:
        return f"{index:06d}" + WIDE * 19_994  # 60 KB of UTF-8 each

    replayer = TraceReplayer(remember_bytes=budget)
    rng = random.Random(8)
    number = 0
    for index in range(count):
        for line in _Handoff(key(index), rng).canceled():
            number += 1
            replayer.reply_text(line, number)
        assert replayer.kept_bytes <= budget
    kept = len(replayer.completed)
    assert kept == budget // (KEPT_COORDINATOR_BYTES + len(key(0).encode()))
    assert len(replayer.retired) == count - kept
    # The most recent completions are the ones kept; the older answer by key only.
    assert list(replayer.completed) == [key(i) for i in range(count - kept, count)]
    reply = json.loads(replayer.reply_text(json.dumps({"coordinator": key(0), "op": "start"}), 0))
    assert reply["error"]["code"] == "forgotten_coordinator"
    assert f"or {budget:,} bytes" in reply["error"]["message"]
    assert DEFAULT_REMEMBER_BYTES >= 10_000 * (
        KEPT_COORDINATOR_BYTES + 36
    )  # UUID keys: count binds


def test_a_budget_below_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="remember_bytes"):
        TraceReplayer(remember_bytes=-1)


@pytest.mark.slow
def test_the_command_takes_a_byte_budget(tmp_path: Path) -> None:
    rng = random.Random(9)
    first, second = _Handoff("a" * 3_000, rng), _Handoff("b" * 3_000, rng)
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join([*first.canceled(), *second.canceled(), first.line("start")]) + "\n")
    command = ("replay", str(trace), "--remember-bytes")
    one = KEPT_COORDINATOR_BYTES + 3_000  # room for one kept coordinator with its key
    for budget, code in ((str(one), "forgotten_coordinator"), (str(2 * one), None), ("all", None)):
        result = run_cli(*command, budget, check=True)
        last = json.loads(result.stdout.splitlines()[-1])
        assert last.get("error", {}).get("code") == code, budget
    for bad in ("-1", "1e6", "\u0661\u0660", "", "1_000"):
        result = run_cli(*command, bad)
        assert result.returncode == 2, bad
        assert f"expected a number of bytes or 'all', got {bad!r}" in result.stderr
        assert "Traceback" not in result.stderr

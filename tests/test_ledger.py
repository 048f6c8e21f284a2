"""RetiredKeys: every key added is found with its completion, no other key ever is."""

from __future__ import annotations

import random
import tracemalloc
import uuid
from collections.abc import Callable

import pytest

from handoff_fsm.io.ledger import RetiredKeys
from handoff_fsm.model import HandoffCompletion

SUCCESS, CANCELED = HandoffCompletion.SUCCESS, HandoffCompletion.CANCELED


def test_exact_membership_through_many_growths() -> None:
    rng = random.Random(5)
    keys = [f"h{i}" for i in range(20_000)]
    keys += ["", "é", "\U0001f600" * 3, "x" * 300, "k" * 128, "\ud800", "a\x00b"]
    keys += [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(2_000)]
    completions = {key: rng.choice([SUCCESS, CANCELED]) for key in keys}
    ledger = RetiredKeys()
    for key in keys:
        ledger.add(key, completions[key])
    assert len(ledger) == len(set(keys))
    for key in keys:
        assert key in ledger
        assert ledger.completion(key) is completions[key]
    for other in ("h20000", "h-1", "H1", "h01", " h1", "x" * 299, "k" * 129, "\ud801", "a\x00"):
        assert other not in ledger
        assert ledger.completion(other) is None
    assert 5 not in ledger  # not a key at all


def test_a_key_keeps_its_first_completion() -> None:
    ledger = RetiredKeys()
    assert ledger.completion("a") is None and len(ledger) == 0
    ledger.add("a", CANCELED)
    ledger.add("a", SUCCESS)
    assert len(ledger) == 1 and ledger.completion("a") is CANCELED


def test_a_key_keeps_its_record_until_replaced() -> None:
    ledger = RetiredKeys()
    assert ledger.record("a") is None
    ledger.add("plain", CANCELED)
    ledger.add("a", SUCCESS, b"\x00\x80\xff" * 50)  # 150 bytes: a two-byte length
    ledger.add("b", SUCCESS, b"r")
    assert ledger.record("plain") == b""
    assert ledger.record("a") == b"\x00\x80\xff" * 50 and ledger.record("b") == b"r"
    ledger.add("a", CANCELED)  # add keeps the first entry
    assert (ledger.completion("a"), ledger.record("a")) == (SUCCESS, b"\x00\x80\xff" * 50)
    ledger.replace("a", SUCCESS, b"shorter")  # rewritten in place
    assert (ledger.completion("a"), ledger.record("a")) == (SUCCESS, b"shorter")
    ledger.replace("a", CANCELED)
    assert (ledger.completion("a"), ledger.record("a")) == (CANCELED, b"")
    ledger.replace("b", SUCCESS, b"longer than before")  # appended anew
    assert (ledger.completion("b"), ledger.record("b")) == (SUCCESS, b"longer than before")
    ledger.replace("new", CANCELED, b"x")  # a key never added is added
    assert (ledger.completion("new"), ledger.record("new")) == (CANCELED, b"x")
    assert len(ledger) == 4
    for key in ("plain", "a", "b", "new"):
        assert key in ledger
    assert ledger.record("c") is None and "c" not in ledger


def test_records_survive_growth() -> None:
    ledger = RetiredKeys()
    for index in range(5_000):
        ledger.add(f"k{index}", SUCCESS, f"record {index}".encode() if index % 3 else b"")
    for index in range(5_000):
        assert ledger.record(f"k{index}") == (f"record {index}".encode() if index % 3 else b"")
        assert ledger.completion(f"k{index}") is SUCCESS


def test_long_keys_use_multi_byte_lengths() -> None:
    ledger = RetiredKeys()
    for size in (127, 128, 16_383, 16_384, 70_000):
        ledger.add("k" * size, SUCCESS)
    for size in (127, 128, 16_383, 16_384, 70_000):
        assert ledger.completion("k" * size) is SUCCESS
    assert ledger.completion("k" * 129) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shape", "make", "bound"),
    [
        ("h<n> (7 characters)", lambda i: f"h{i:06d}", 40),
        ("a UUID (36 characters)", lambda i: str(uuid.UUID(int=i * 7919 + 1)), 72),
    ],
)
def test_bytes_per_key(shape: str, make: Callable[[int], str], bound: int) -> None:
    """The ledger's own allocations per key (tracemalloc; docs/replay.md quotes
    benchmarks/ledger.py)."""
    count = 50_000
    keys = [make(i) for i in range(count)]
    ledger_bytes = _allocated(lambda: _fill(RetiredKeys(), keys))
    # What a dict of the keys would hold: its table and the str objects of its keys.
    dict_bytes = _allocated(lambda: {make(i): SUCCESS for i in range(count)})
    assert ledger_bytes / count <= bound, f"{shape}: {ledger_bytes / count:.1f} bytes per key"
    assert ledger_bytes < 0.6 * dict_bytes


def _fill(ledger: RetiredKeys, keys: list[str]) -> RetiredKeys:
    for key in keys:
        ledger.add(key, SUCCESS)
    return ledger


def _allocated(build: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        kept = build()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del kept
    return size

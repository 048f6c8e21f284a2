"""Bytes per completed coordinator in replay: kept whole, retired with a record, and as
a key in the ledger.

Rule kept here: memory is what ``tracemalloc`` sees allocated while the
structure is built (the keys' ``str`` objects count for the dict, which holds
them; the ledger holds only their UTF-8 bytes). A kept completed coordinator's
cost is measured through :class:`~handoff_fsm.io.replay.TraceReplayer` itself,
replaying handoffs that complete (canceled before start, the smallest journal)
with every completed coordinator kept; a retired one that can still change
(an a976b2bf handoff that succeeded, random ids and token counts) through the
same replayer with none kept. docs/replay.md quotes this output.
Usage: ``python benchmarks/ledger.py [COUNT]``.
"""

from __future__ import annotations

import json
import random
import sys
import tracemalloc
import uuid
from collections.abc import Callable

from handoff_fsm.io.ledger import RetiredKeys
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.model import HandoffCompletion, Revision

SHAPES: dict[str, Callable[[int], str]] = {
    "h<n>, 7 characters": lambda i: f"h{i:06d}",
    "a UUID, 36 characters": lambda i: str(uuid.UUID(int=i * 7919 + 1)),
}


def allocated(build: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        kept = build()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del kept
    return size


def ledger_of(keys: list[str]) -> RetiredKeys:
    ledger = RetiredKeys()
    for key in keys:
        ledger.add(key, HandoffCompletion.SUCCESS)
    return ledger


def kept_bytes(count: int) -> float:
    """Bytes a remembered completed coordinator keeps (key ``h<n>``, remember all)."""
    replayer = TraceReplayer(remember_completed=None)

    def complete(first: int, last: int) -> None:
        for i in range(first, last):
            handoff_id = str(uuid.UUID(int=i + 1))
            key = f'"coordinator": "h{i:06d}"'
            replayer.reply_text(
                f'{{{key}, "op": "new", "handoff_id": "{handoff_id}", "order": "SourceFirst"}}', 1
            )
            fact = f'{{"Canceled": {{"handoff_id": "{handoff_id}"}}}}'
            replayer.reply_text(f'{{{key}, "op": "fact", "fact": {fact}}}', 2)

    complete(0, 1_000)  # warm up: caches, interned names
    return allocated(lambda: complete(1_000, 1_000 + count)) / count


def _success(key: str, rng: random.Random) -> list[str]:
    """The lines of one SourceFirst handoff that succeeds, with a random id and tokens."""
    handoff_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    tokens = rng.randrange(64, 16384)
    timing = {"mode": "full_prompt", "full_prompt_tokens": tokens,
              "kv_bytes_per_token": 131072, "bandwidth_gb_s": 25.0}  # fmt: skip

    def line(op: str, **fields: object) -> str:
        return json.dumps({"coordinator": key, "op": op, **fields})

    def fact(name: str, **fields: object) -> str:
        return line("fact", fact={name: {"handoff_id": handoff_id, **fields}})

    def ack(action_id: int, outcome: str) -> str:
        return line("outcome", action_id=action_id, outcome=outcome)

    return [
        line("new", handoff_id=handoff_id, order="SourceFirst"),
        line("start"),
        ack(0, "Submitted"),
        fact("SourceHeld", transfer_timing=timing),
        ack(1, "Accepted"),
        fact("DestinationReserved", transferable_prompt_tokens=rng.randrange(1, tokens + 1)),
        ack(2, "Scheduled"),
        fact("TransferCompleted"),
        ack(3, "Applied"),
        ack(4, "Applied"),
    ]


def retired_bytes(count: int) -> float:
    """Bytes an a976b2bf handoff that succeeded keeps once retired (key ``h<n>``, remember 0)."""
    replayer = TraceReplayer(revision=Revision.A976B2BF, remember_completed=0)
    rng = random.Random(1)
    number = 0

    def complete(first: int, last: int) -> None:
        nonlocal number
        for i in range(first, last):
            for line in _success(f"h{i:06d}", rng):
                number += 1
                replayer.reply_text(line, number)

    complete(0, 1_000)  # warm up, and the records' dictionary
    return allocated(lambda: complete(1_000, 1_000 + count)) / count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    kept = min(count, 100_000)
    print(f"kept completed coordinator: {kept_bytes(kept):.0f} B per handoff ({kept:,} handoffs)")
    print(
        f"retired a976b2bf success (ledger entry and record): {retired_bytes(kept):.0f} B "
        f"per handoff ({kept:,} handoffs)"
    )
    print()
    print(f"| key ({count:,} keys) | ledger | dict of str keys |")
    print("|---|---|---|")
    for shape, make in SHAPES.items():
        keys = [make(i) for i in range(count)]
        ledger = allocated(lambda keys=keys: ledger_of(keys)) / count  # type: ignore[misc]
        plain = allocated(lambda make=make: {make(i): True for i in range(count)}) / count  # type: ignore[misc]
        print(f"| {shape} | {ledger:.0f} B | {plain:.0f} B |")


if __name__ == "__main__":
    main()

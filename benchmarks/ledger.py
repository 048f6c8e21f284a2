"""Bytes per completed coordinator in replay: kept whole, and as a key in the ledger.

Rule kept here: memory is what ``tracemalloc`` sees allocated while the
structure is built (the keys' ``str`` objects count for the dict, which holds
them; the ledger holds only their UTF-8 bytes). A kept completed coordinator's
cost is measured through :class:`~handoff_fsm.io.replay.TraceReplayer` itself,
replaying handoffs that complete (canceled before start, the smallest journal)
with every completed coordinator kept. docs/replay.md quotes this output.
Usage: ``python benchmarks/ledger.py [COUNT]``.
"""

from __future__ import annotations

import sys
import tracemalloc
import uuid
from collections.abc import Callable

from handoff_fsm.io.ledger import RetiredKeys
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.model import HandoffCompletion

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


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    kept = min(count, 100_000)
    print(f"kept completed coordinator: {kept_bytes(kept):.0f} B per handoff ({kept:,} handoffs)")
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

"""A deterministic replay trace of realistic shape, written once and cached.

Rule kept here: the same parameters always give the same bytes, and a shorter
trace is a prefix of a longer one with the same seed (so memory can be compared
at two lengths of one trace). Handoffs interleave: ``in_flight`` handoffs run at
once, each step advances a randomly chosen one by one line, and a finished
handoff is replaced by a new one. Each handoff follows one scenario of the mix
below; every line is valid for the reference semantics except the one
deliberate error line of the ``duplicates`` scenario.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

FORMAT_VERSION = 1
"""Bump when the generator's output changes, so stale cached traces are not reused."""

_KEY, _UUID, _TOKENS, _MISSING = "@KEY@", "@UUID@", "@TOKENS@", "@MISSING@"


def _new(order: str, fallback: float = 0.0) -> dict[str, Any]:
    return {
        "coordinator": _KEY,
        "op": "new",
        "handoff_id": _UUID,
        "order": order,
        "fallback_transfer_delay_ms": fallback,
    }


def _start() -> dict[str, Any]:
    return {"coordinator": _KEY, "op": "start"}


def _fact(variant: str, **fields: Any) -> dict[str, Any]:
    return {"coordinator": _KEY, "op": "fact", "fact": {variant: {"handoff_id": _UUID, **fields}}}


def _ack(action_id: int, outcome: Any) -> dict[str, Any]:
    return {"coordinator": _KEY, "op": "outcome", "action_id": action_id, "outcome": outcome}


_FULL = {
    "mode": "full_prompt",
    "full_prompt_tokens": _TOKENS,
    "kv_bytes_per_token": 131072,
    "bandwidth_gb_s": 25.0,
}
_MISSING_ONLY = {**_FULL, "mode": "destination_missing"}
_NO_BANDWIDTH = {"mode": "full_prompt", "full_prompt_tokens": _TOKENS}


def _held(timing: dict[str, Any]) -> dict[str, Any]:
    return _fact("SourceHeld", transfer_timing=timing)


def _reserved() -> dict[str, Any]:
    return _fact("DestinationReserved", transferable_prompt_tokens=_MISSING)


_SOURCE_FIRST_SUCCESS = [
    _start(),
    _ack(0, "Submitted"),
    _held(_FULL),
    _ack(1, "Accepted"),
    _reserved(),
    _ack(2, "Scheduled"),
    _fact("TransferCompleted"),
    _ack(3, "Applied"),
    _ack(4, "Applied"),
]

SCENARIOS: dict[str, tuple[int, list[dict[str, Any]]]] = {
    # name: (weight in percent, lines)
    "vllm_success": (35, [_new("SourceFirst"), *_SOURCE_FIRST_SUCCESS]),
    "sglang_success": (
        30,
        [
            _new("DestinationFirst"),
            _start(),
            _ack(0, "Accepted"),
            _reserved(),
            _ack(1, "Submitted"),
            _held(_MISSING_ONLY),
            _ack(2, "Scheduled"),
            _fact("TransferCompleted"),
            _ack(3, "Applied"),
            _ack(4, "Noop"),
        ],
    ),
    "fallback_delay": (
        5,
        [
            _new("SourceFirst", 7.5),
            *_SOURCE_FIRST_SUCCESS[:2],
            _held(_NO_BANDWIDTH),
            *_SOURCE_FIRST_SUCCESS[3:],
        ],
    ),
    "timeout_cleanup": (
        10,
        [
            _new("SourceFirst"),
            *_SOURCE_FIRST_SUCCESS[:5],
            _fact("TimedOut"),
            _ack(3, "Applied"),
            _ack(4, "Noop"),
            _fact("TransferCompleted"),  # late: the handoff is complete
            _ack(2, "Scheduled"),  # late acknowledgement
        ],
    ),
    "reserve_failed": (
        8,
        [
            _new("SourceFirst"),
            *_SOURCE_FIRST_SUCCESS[:3],
            _ack(1, {"Failed": "destination out of KV blocks"}),
            _ack(2, "Applied"),
            _ack(3, "Noop"),
        ],
    ),
    "canceled": (
        5,
        [
            _new("DestinationFirst"),
            _start(),
            _ack(0, "Accepted"),
            _reserved(),
            _fact("Canceled"),
            _ack(1, "Submitted"),
            _ack(2, "Applied"),
            _ack(3, "Applied"),
        ],
    ),
    "duplicates": (
        7,
        [
            _new("SourceFirst"),
            _start(),
            _ack(0, "Submitted"),
            _ack(0, "Submitted"),  # duplicate acknowledgement
            _held(_FULL),
            _held(_FULL),  # duplicate fact
            _ack(1, "Accepted"),
            _reserved(),
            _ack(7, "Scheduled"),  # error: unknown action
            _ack(2, "Scheduled"),
            _fact("TransferCompleted"),
            _fact("TransferCompleted"),  # duplicate fact
            _ack(3, "Applied"),
            _ack(4, "Applied"),
            _ack(4, "Applied"),  # late acknowledgement
        ],
    ),
}
"""The mix of handoffs in a trace; ``timeout_cleanup`` and ``canceled`` end with cleanup."""

ERRORS_PER_HANDOFF = {"duplicates": 1}
"""Scenarios whose trace lines include deliberate errors, and how many each."""


def _templates() -> tuple[list[str], list[list[str]], list[int]]:
    names = list(SCENARIOS)
    lines = [[json.dumps(op) for op in SCENARIOS[name][1]] for name in names]
    weights = [SCENARIOS[name][0] for name in names]
    return names, lines, weights


def generate(lines: int, *, seed: int = 1, in_flight: int = 256) -> Iterator[str]:
    """The trace's first ``lines`` lines (without newlines)."""
    rng = random.Random(seed)
    _, templates, weights = _templates()
    scenario_ids = range(len(templates))
    counter = 0

    def new_handoff() -> Iterator[str]:
        nonlocal counter
        counter += 1
        (chosen,) = rng.choices(scenario_ids, weights)
        tokens = rng.randrange(64, 16384)
        substitutions = (
            ('"' + _KEY + '"', f'"h{counter}"'),
            ('"' + _UUID + '"', f'"{UUID(int=rng.getrandbits(128), version=4)}"'),
            ('"' + _TOKENS + '"', str(tokens)),
            ('"' + _MISSING + '"', str(rng.randrange(1, tokens + 1))),
        )
        rendered = []
        for template in templates[chosen]:
            line = template
            for placeholder, value in substitutions:
                line = line.replace(placeholder, value)
            rendered.append(line)
        return iter(rendered)

    flight = [new_handoff() for _ in range(in_flight)]
    emitted = 0
    while emitted < lines:
        slot = rng.randrange(in_flight)
        line = next(flight[slot], None)
        if line is None:
            flight[slot] = new_handoff()
            continue
        yield line
        emitted += 1


def cached_trace(lines: int, *, seed: int = 1, in_flight: int = 256) -> Path:
    """Path of the trace file, generated on first use under the system's temp directory."""
    directory = Path(tempfile.gettempdir()) / "handoff-fsm-bench"
    path = directory / f"trace-v{FORMAT_VERSION}-s{seed}-f{in_flight}-{lines}.jsonl"
    if path.exists():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=directory, suffix=".partial")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for line in generate(lines, seed=seed, in_flight=in_flight):
            out.write(line)
            out.write("\n")
    os.replace(partial, path)
    return path

"""Coordinator workloads, driven by one piece of code for the library and the yardstick.

Rule kept here: every workload is written once against a :class:`Side` (the
constructors and constants of one implementation), so the library and the
hand-written coordinator run byte-for-byte the same driving loop. Each handoff
uses a fresh id from a pre-generated list and builds its facts inside the timed
loop, as a caller would (pydantic validates the library's facts there: that
edge cost is counted). Each workload checks, after timing, that the handoff
really ended the way it should, so a broken side cannot look fast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any
from uuid import UUID

import floor
import handwritten
from harness import clock

import handoff_fsm as hf

TOKENS = 4096
"""Prompt tokens of every benchmarked handoff (a mid-sized prompt)."""
KV_BYTES_PER_TOKEN = 131_072
BANDWIDTH_GB_S = 25.0


@dataclass(frozen=True)
class Side:
    """What a workload needs from one coordinator implementation."""

    name: str
    coordinator: Callable[..., Any]
    source_first: Any
    destination_first: Any
    full_prompt: Any
    destination_missing: Any
    timing: Callable[..., Any]
    source_held: Callable[..., Any]
    destination_reserved: Callable[..., Any]
    transfer_completed: Callable[..., Any]
    timed_out: Callable[..., Any]
    submitted: Any
    accepted: Any
    scheduled: Any
    applied: Any
    success: Any
    canceled: Any


LIBRARY = Side(
    name="library",
    coordinator=hf.HandoffCoordinator,
    source_first=hf.HandoffOrder.SOURCE_FIRST,
    destination_first=hf.HandoffOrder.DESTINATION_FIRST,
    full_prompt=hf.TransferTimingMode.FULL_PROMPT,
    destination_missing=hf.TransferTimingMode.DESTINATION_MISSING,
    timing=hf.HandoffTransferTiming,
    source_held=hf.SourceHeld,
    destination_reserved=hf.DestinationReserved,
    transfer_completed=hf.TransferCompleted,
    timed_out=hf.TimedOut,
    submitted=hf.HandoffActionOutcome.SUBMITTED,
    accepted=hf.HandoffActionOutcome.ACCEPTED,
    scheduled=hf.HandoffActionOutcome.SCHEDULED,
    applied=hf.HandoffActionOutcome.APPLIED,
    success=hf.HandoffCompletion.SUCCESS,
    canceled=hf.HandoffCompletion.CANCELED,
)

LIBRARY_A976B2BF = replace(
    LIBRARY,
    name="library (a976b2bf)",
    coordinator=partial(hf.HandoffCoordinator, revision=hf.Revision.A976B2BF),
)
"""The library following upstream a976b2bf (the hand-written yardstick is the seed)."""

HANDWRITTEN = Side(
    name="hand-written",
    coordinator=handwritten.HandoffCoordinator,
    source_first=handwritten.HandoffOrder.SOURCE_FIRST,
    destination_first=handwritten.HandoffOrder.DESTINATION_FIRST,
    full_prompt=handwritten.TransferTimingMode.FULL_PROMPT,
    destination_missing=handwritten.TransferTimingMode.DESTINATION_MISSING,
    timing=handwritten.HandoffTransferTiming,
    source_held=handwritten.SourceHeld,
    destination_reserved=handwritten.DestinationReserved,
    transfer_completed=handwritten.TransferCompleted,
    timed_out=handwritten.TimedOut,
    submitted=handwritten.HandoffActionOutcome.SUBMITTED,
    accepted=handwritten.HandoffActionOutcome.ACCEPTED,
    scheduled=handwritten.HandoffActionOutcome.SCHEDULED,
    applied=handwritten.HandoffActionOutcome.APPLIED,
    success=handwritten.HandoffCompletion.SUCCESS,
    canceled=handwritten.HandoffCompletion.CANCELED,
)

FLOOR = replace(LIBRARY, name="floor", coordinator=floor.HandoffCoordinator)
"""The hand-written coordinator on the library's own value types (:mod:`floor`), driven with
the library's facts and outcomes: what the types cost, without the library's machinery."""

Workload = Callable[[Side, Sequence[UUID]], float]
"""``workload(side, ids)``: one operation per id; returns the seconds the operations took."""


def _expect(condition: bool, side: Side, what: str) -> None:
    if not condition:
        raise RuntimeError(f"{side.name}: {what}")


def construction(side: Side, ids: Sequence[UUID]) -> float:
    """Construct a coordinator (and let it go)."""
    new = side.coordinator
    order = side.source_first
    start = clock()
    for handoff_id in ids:
        new(handoff_id, order, 0.0)
    return clock() - start


def success_source_first(side: Side, ids: Sequence[UUID]) -> float:
    """A whole successful vLLM-style handoff: construct, start, every fact and acknowledgement."""
    new, order, timing, mode = side.coordinator, side.source_first, side.timing, side.full_prompt
    held, reserved, completed = side.source_held, side.destination_reserved, side.transfer_completed
    submitted, accepted, scheduled, applied = (
        side.submitted,
        side.accepted,
        side.scheduled,
        side.applied,
    )
    start = clock()
    for handoff_id in ids:
        c = new(handoff_id, order, 0.0)
        a = c.start()[0]
        c.on_action_outcome(a.id, submitted)
        t = timing(
            mode=mode,
            full_prompt_tokens=TOKENS,
            kv_bytes_per_token=KV_BYTES_PER_TOKEN,
            bandwidth_gb_s=BANDWIDTH_GB_S,
        )
        a = c.on_fact(held(handoff_id=handoff_id, transfer_timing=t))[0]
        c.on_action_outcome(a.id, accepted)
        a = c.on_fact(reserved(handoff_id=handoff_id, transferable_prompt_tokens=TOKENS))[0]
        c.on_action_outcome(a.id, scheduled)
        a = c.on_fact(completed(handoff_id=handoff_id))[0]
        a = c.on_action_outcome(a.id, applied)[0]
        c.on_action_outcome(a.id, applied)
    elapsed = clock() - start
    _expect(c.completion == side.success, side, "source-first handoff did not succeed")
    return elapsed


def success_destination_first(side: Side, ids: Sequence[UUID]) -> float:
    """A whole successful SGLang-style handoff (destination reserved first)."""
    new, order = side.coordinator, side.destination_first
    timing, mode = side.timing, side.destination_missing
    held, reserved, completed = side.source_held, side.destination_reserved, side.transfer_completed
    submitted, accepted, scheduled, applied = (
        side.submitted,
        side.accepted,
        side.scheduled,
        side.applied,
    )
    start = clock()
    for handoff_id in ids:
        c = new(handoff_id, order, 0.0)
        a = c.start()[0]
        c.on_action_outcome(a.id, accepted)
        a = c.on_fact(reserved(handoff_id=handoff_id, transferable_prompt_tokens=TOKENS))[0]
        c.on_action_outcome(a.id, submitted)
        t = timing(
            mode=mode,
            full_prompt_tokens=TOKENS,
            kv_bytes_per_token=KV_BYTES_PER_TOKEN,
            bandwidth_gb_s=BANDWIDTH_GB_S,
        )
        a = c.on_fact(held(handoff_id=handoff_id, transfer_timing=t))[0]
        c.on_action_outcome(a.id, scheduled)
        a = c.on_fact(completed(handoff_id=handoff_id))[0]
        a = c.on_action_outcome(a.id, applied)[0]
        c.on_action_outcome(a.id, applied)
    elapsed = clock() - start
    _expect(c.completion == side.success, side, "destination-first handoff did not succeed")
    return elapsed


def timeout_cleanup(side: Side, ids: Sequence[UUID]) -> float:
    """Source-first up to a scheduled transfer, then a timeout: cancel both owners, complete."""
    new, order, timing, mode = side.coordinator, side.source_first, side.timing, side.full_prompt
    held, reserved, timed_out = side.source_held, side.destination_reserved, side.timed_out
    submitted, accepted, scheduled, applied = (
        side.submitted,
        side.accepted,
        side.scheduled,
        side.applied,
    )
    start = clock()
    for handoff_id in ids:
        c = new(handoff_id, order, 0.0)
        a = c.start()[0]
        c.on_action_outcome(a.id, submitted)
        t = timing(
            mode=mode,
            full_prompt_tokens=TOKENS,
            kv_bytes_per_token=KV_BYTES_PER_TOKEN,
            bandwidth_gb_s=BANDWIDTH_GB_S,
        )
        a = c.on_fact(held(handoff_id=handoff_id, transfer_timing=t))[0]
        c.on_action_outcome(a.id, accepted)
        a = c.on_fact(reserved(handoff_id=handoff_id, transferable_prompt_tokens=TOKENS))[0]
        c.on_action_outcome(a.id, scheduled)
        cancel_source, cancel_destination = c.on_fact(timed_out(handoff_id=handoff_id))
        c.on_action_outcome(cancel_source.id, applied)
        c.on_action_outcome(cancel_destination.id, applied)
    elapsed = clock() - start
    _expect(c.completion == side.canceled, side, "timed-out handoff was not canceled")
    return elapsed


def _awaiting_activation(side: Side, handoff_id: UUID) -> Any:
    """A coordinator whose transfer completed: a repeated TransferCompleted is a no-op."""
    c = side.coordinator(handoff_id, side.source_first, 0.0)
    a = c.start()[0]
    c.on_action_outcome(a.id, side.submitted)
    t = side.timing(
        mode=side.full_prompt,
        full_prompt_tokens=TOKENS,
        kv_bytes_per_token=KV_BYTES_PER_TOKEN,
        bandwidth_gb_s=BANDWIDTH_GB_S,
    )
    a = c.on_fact(side.source_held(handoff_id=handoff_id, transfer_timing=t))[0]
    c.on_action_outcome(a.id, side.accepted)
    a = c.on_fact(side.destination_reserved(handoff_id=handoff_id, transferable_prompt_tokens=1))
    c.on_action_outcome(a[0].id, side.scheduled)
    c.on_fact(side.transfer_completed(handoff_id=handoff_id))
    return c


def duplicate_fact(side: Side, ids: Sequence[UUID]) -> float:
    """A repeated TransferCompleted, re-delivered as a new message (the fact is built per call)."""
    handoff_id = ids[0]
    c = _awaiting_activation(side, handoff_id)
    completed = side.transfer_completed
    on_fact = c.on_fact
    start = clock()
    for _ in ids:
        actions = on_fact(completed(handoff_id=handoff_id))
    elapsed = clock() - start
    _expect(actions == [] and not c.is_complete, side, "a duplicate fact issued actions")
    return elapsed


def duplicate_fact_prebuilt(side: Side, ids: Sequence[UUID]) -> float:
    """The same repeated TransferCompleted, one fact object passed again (dispatch cost only)."""
    handoff_id = ids[0]
    c = _awaiting_activation(side, handoff_id)
    fact = side.transfer_completed(handoff_id=handoff_id)
    on_fact = c.on_fact
    start = clock()
    for _ in ids:
        actions = on_fact(fact)
    elapsed = clock() - start
    _expect(actions == [] and not c.is_complete, side, "a duplicate fact issued actions")
    return elapsed


# ----------------------------------------------------------------------------- live objects

LiveBuilder = Callable[[Side, list[object], Sequence[UUID]], None]
"""``build(side, slots, ids)``: store one live coordinator per id into ``slots``."""


def fresh_coordinators(side: Side, slots: list[object], ids: Sequence[UUID]) -> None:
    """Coordinators just constructed."""
    new, order = side.coordinator, side.source_first
    for i, handoff_id in enumerate(ids):
        slots[i] = new(handoff_id, order, 0.0)


def mid_handoff_coordinators(side: Side, slots: list[object], ids: Sequence[UUID]) -> None:
    """Coordinators after start, Submitted, SourceHeld and Accepted (the journal is not empty).

    The returned action lists are dropped, as a caller does once it acted on them;
    the coordinator keeps its transfer timing, which is therefore counted.
    """
    new, order, timing, mode = side.coordinator, side.source_first, side.timing, side.full_prompt
    held, submitted, accepted = side.source_held, side.submitted, side.accepted
    for i, handoff_id in enumerate(ids):
        c = new(handoff_id, order, 0.0)
        c.on_action_outcome(c.start()[0].id, submitted)
        t = timing(
            mode=mode,
            full_prompt_tokens=TOKENS,
            kv_bytes_per_token=KV_BYTES_PER_TOKEN,
            bandwidth_gb_s=BANDWIDTH_GB_S,
        )
        a = c.on_fact(held(handoff_id=handoff_id, transfer_timing=t))[0]
        c.on_action_outcome(a.id, accepted)
        slots[i] = c

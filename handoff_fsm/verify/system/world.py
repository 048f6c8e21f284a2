"""The world of ``handoff-fsm check --system`` (docs/verification.md): its parts as data.

Rule kept here: everything in a world state is a small integer or a tuple of them,
so a state is one hashable tuple and two states are equal exactly when every part
is. This module names the parts and says what the honest workers do (DESIGN §10);
it knows nothing of the session, which :mod:`~handoff_fsm.verify.system.session`
runs, nor of the search (:mod:`~handoff_fsm.verify.system.search`).

A world state is the tuple ``(session, source, destination, memory, network,
timers, losses, duplicates, flags)``:

* ``session``: the number of the session state (the coordinator's snapshot with the
  policy's decisive state, see :class:`~handoff_fsm.policy.PolicySnapshot`);
* ``source``, ``destination``: what each worker holds for the request (below);
* ``memory``: under ``by-id`` answers (:class:`~handoff_fsm.verify.system.assumptions.Answers`)
  each action id a worker answered, with its answer (sorted), so that an action
  delivered again (a duplicate, a re-sent cancel) is answered the same way and changes
  nothing: an idempotent worker. Under ``by-state``, the default, it stays empty: a
  worker answers every copy from what it holds when the copy arrives;
* ``network``: every message in flight, a sorted multiset (a sorted tuple);
* ``timers``: the policy's armed timers, by ``(action id, send)`` (the deadline is
  ``(-1, 0)``): time is abstract, so when a timer is due does not matter;
* ``losses``, ``duplicates``: what is left of the network's fault budgets;
* ``flags``: the client canceled, a worker failed.
"""

from __future__ import annotations

from typing import Final

from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    DestinationReserved,
    Failed,
    HandoffAction,
    HandoffActionOutcome,
    HandoffFact,
    HandoffTransferTiming,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferCompleted,
    TransferTimingMode,
)
from handoff_fsm.verify.exploration import HANDOFF_ID
from handoff_fsm.verify.system.assumptions import Workers

World = tuple[
    int,
    int,
    int,
    tuple[tuple[int, int], ...],
    tuple["Message", ...],
    tuple[tuple[int, int], ...],
    int,
    int,
    int,
]
"""``(session, source, destination, memory, network, timers, losses, duplicates, flags)``."""

Message = tuple[int, int, int, int]
"""``(ACTION, action id, action kind, 0)``, ``(ACK, action id, outcome, action kind)`` or
``(FACT, fact, sender, 0)``: each an index into the tables below."""

TimerKey = tuple[int, int]
"""``(action id, send)`` of a policy timer; :data:`DEADLINE` for the deadline."""
DEADLINE: Final[TimerKey] = (-1, 0)

SESSION, SOURCE, DESTINATION, MEMORY, NETWORK, TIMERS, LOSSES, DUPLICATES, FLAGS = range(9)
"""Positions in a :data:`World`."""

# ---------------------------------------------------------------------- messages

ACTION, ACK, FACT = 0, 1, 2
"""A message's channel: an action to a worker, an acknowledgement or a fact to the session."""

ACTION_KINDS: Final[tuple[type[HandoffAction], ...]] = (
    SubmitPrefill,
    ReserveDestination,
    StartTransfer,
    ActivateDestination,
    ReleaseSource,
    CancelSource,
    CancelDestination,
)
"""The actions a worker performs (``Complete`` is performed by nobody)."""
KIND_INDEX: Final = {kind: index for index, kind in enumerate(ACTION_KINDS)}

TO_SOURCE: Final = frozenset(
    KIND_INDEX[kind] for kind in (SubmitPrefill, ReleaseSource, CancelSource)
)
"""Action kinds sent to the source; the rest go to the destination, which pulls the KV,
so it owns the transfer (``StartTransfer``)."""
CLEANUP: Final = frozenset(KIND_INDEX[kind] for kind in (CancelSource, CancelDestination))
"""The cleanup actions: the only ones the policy sends again."""

OUTCOMES: Final[tuple[HandoffActionOutcome, ...]] = (
    HandoffActionOutcome.SUBMITTED,
    HandoffActionOutcome.ACCEPTED,
    HandoffActionOutcome.SCHEDULED,
    HandoffActionOutcome.APPLIED,
    HandoffActionOutcome.NOOP,
    HandoffActionOutcome.failed("the destination holds no reservation"),
    HandoffActionOutcome.failed("the destination holds no received KV cache"),
    HandoffActionOutcome.failed("the worker already holds the request"),
    HandoffActionOutcome.failed("the worker was told to cancel the request"),
)
"""Every answer an honest worker gives."""
(
    SUBMITTED,
    ACCEPTED,
    SCHEDULED,
    APPLIED,
    NOOP,
    NO_RESERVATION,
    NOTHING_RECEIVED,
    BUSY,
    WAS_CANCELED,
) = range(9)

SOURCE_HELD, DESTINATION_RESERVED, TRANSFER_COMPLETED, FAILED, CANCELED = range(5)
"""The facts of the world, by index into :data:`FACTS`."""
FROM_SOURCE, FROM_DESTINATION = range(2)
"""Who sent a fact (the client's ``Canceled`` reaches the session as it is sent)."""
SENDERS: Final = ("source", "destination")

TIMING: Final = HandoffTransferTiming(
    mode=TransferTimingMode.FULL_PROMPT,
    full_prompt_tokens=10,
    kv_bytes_per_token=1024,
    bandwidth_gb_s=1.0,
)
"""What the source reports in ``SourceHeld`` (the exploration's valid timing)."""
TRANSFERABLE_TOKENS: Final = 10

FACTS: Final[tuple[HandoffFact, ...]] = (
    SourceHeld.observed(HANDOFF_ID, TIMING),
    DestinationReserved.observed(HANDOFF_ID, TRANSFERABLE_TOKENS),
    TransferCompleted.observed(HANDOFF_ID),
    Failed.observed(HANDOFF_ID),
    Canceled.observed(HANDOFF_ID),
)

# ---------------------------------------------------------------------- workers

FREE, HOLDING = 0, 1
"""The source: holds nothing for the request, or holds it (prefilling, then the KV)."""
SOURCE_STATES: Final = ("free", "holding")

RESERVED, RECEIVED, DECODING = 1, 2, 3
"""The destination (``FREE`` is 0): room reserved, the KV cache received (it pulled it),
decoding the request (its own until it finishes)."""
DESTINATION_STATES: Final = ("free", "reserved", "received", "decoding")

CLIENT_CANCELED, SOURCE_FAILED, DESTINATION_FAILED = 1, 2, 4
"""Bits of a world's ``flags``: the client canceled (its ``Canceled`` reached the
session), a worker failed (each fails at most once)."""
SOURCE_TOLD_TO_CANCEL, DESTINATION_TOLD_TO_CANCEL = 8, 16
"""Bits of ``flags`` that only :attr:`Workers.REMEMBERING` sets: the worker was told to
cancel the request (it refuses any later work on it)."""


Answer = tuple[int, int, int | None]
"""What a worker does with an action: ``(its state after, its acknowledgement, the fact
it sends, or None)``."""

WORK: Final = frozenset(
    KIND_INDEX[kind]
    for kind in (SubmitPrefill, ReserveDestination, StartTransfer, ActivateDestination)
)
"""The actions that give a worker the request (or more of it); a cancel frees it."""


def answers(
    source: int, destination: int, flags: int, kind: int, workers: Workers
) -> tuple[int, int, int, int, int | None]:
    """What the worker an action goes to does with it, when it has not answered it
    before: ``(source, destination, flags)`` after, its acknowledgement, the fact it
    sends (or None). A remembering worker that was told to cancel refuses work."""
    to_source = kind in TO_SOURCE
    told = SOURCE_TOLD_TO_CANCEL if to_source else DESTINATION_TOLD_TO_CANCEL
    if flags & told and kind in WORK:
        return source, destination, flags, WAS_CANCELED, None
    if workers is Workers.REMEMBERING and kind in CLEANUP:
        flags |= told
    if to_source:
        source, answer, fact = source_answers(source, kind)
    else:
        destination, answer, fact = destination_answers(destination, kind)
    return source, destination, flags, answer, fact


def source_answers(state: int, kind: int) -> Answer:
    """What the honest source does with an action it has not answered before.

    ``SubmitPrefill``: it takes the request (``Submitted``) and sends ``SourceHeld``
    when its prefill is done, which the network may deliver at any later moment, so
    the fact is in flight from now on. ``ReleaseSource``, ``CancelSource``: it frees
    what it holds (``Applied``), or answers ``Noop`` holding nothing.
    """
    if kind == KIND_INDEX[SubmitPrefill]:
        return (HOLDING, SUBMITTED, SOURCE_HELD) if state == FREE else (state, BUSY, None)
    return (FREE, APPLIED, None) if state != FREE else (FREE, NOOP, None)


def destination_answers(state: int, kind: int) -> Answer:
    """What the honest destination does with an action it has not answered before
    (each fact it will send is in flight from now on, as for the source)."""
    if kind == KIND_INDEX[ReserveDestination]:
        if state == FREE:
            return (RESERVED, ACCEPTED, DESTINATION_RESERVED)
        return (state, BUSY, None)
    if kind == KIND_INDEX[StartTransfer]:
        if state == RESERVED:
            return (RECEIVED, SCHEDULED, TRANSFER_COMPLETED)
        return (state, NO_RESERVATION, None)
    if kind == KIND_INDEX[ActivateDestination]:
        return (DECODING, APPLIED, None) if state == RECEIVED else (state, NOTHING_RECEIVED, None)
    # CancelDestination: free what is held (a decoding request too); Noop when nothing is.
    return (FREE, APPLIED, None) if state != FREE else (FREE, NOOP, None)


# ---------------------------------------------------------------------- words


def worker_of(kind: int) -> str:
    """``source`` or ``destination``: who performs (and acknowledges) an action kind."""
    return "source" if kind in TO_SOURCE else "destination"


def message_text(message: Message) -> str:
    """A message as a counterexample step names it."""
    channel, a, b, c = message
    if channel == ACTION:
        return f"#{a} {ACTION_KINDS[b].__name__} to the {worker_of(b)}"
    if channel == ACK:
        return f"the {worker_of(c)}'s {OUTCOMES[b]} for #{a} {ACTION_KINDS[c].__name__}"
    return f"{type(FACTS[a]).__name__} from the {SENDERS[b]}"

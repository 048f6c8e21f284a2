"""Fake source, destination and transfer engines: they answer actions as engines would.

Rule kept here: an endpoint acts on what it receives and on its own clock
events only, and tracks what it holds per handoff (``holding``). It frees what
it holds *before* acknowledging a release or cancel, refuses nothing it was not
told to refuse (a ``FAIL`` fault), ignores its own pending events for a request
that was canceled meanwhile, and answers a re-sent cancel with its first
answer (an idempotent endpoint). Counters (output tokens, KV hashes made
visible) come from what the endpoints did, never from constants: they feed
the conformance record. The facts it publishes are built with ``observed``
(``SourceHeld.observed`` ...), without pydantic: every value in them comes from a
:class:`~handoff_fsm.simulate.SimulationConfig`, which checked it when it was built.
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any, Protocol

from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffTransferTiming,
    NormalizedHandoffEvent,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferCompleted,
)
from handoff_fsm.model import Failed as FailedFact
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.faults import AckFault, FaultInjector
from handoff_fsm.simulate.record import (
    DESTINATION_ACCEPTED,
    DESTINATION_ACTIVATED,
    DESTINATION_CANCELED,
    DESTINATION_FINISHED,
    DESTINATION_REFUSED,
    DESTINATION_RESERVED,
    SOURCE_CANCELED,
    SOURCE_HELD,
    SOURCE_PREFILLING,
    SOURCE_REFUSED,
    SOURCE_RELEASED,
    SimulatedHandoff,
)

_SUBMITTED = HandoffActionOutcome.SUBMITTED
_ACCEPTED = HandoffActionOutcome.ACCEPTED
_SCHEDULED = HandoffActionOutcome.SCHEDULED
_APPLIED = HandoffActionOutcome.APPLIED
_NOOP = HandoffActionOutcome.NOOP
_FAIL = AckFault.FAIL
_SOURCE_HELD = NormalizedHandoffEvent.SOURCE_HELD
_SOURCE_RELEASED = NormalizedHandoffEvent.SOURCE_RELEASED
_DESTINATION_ACCEPTED = NormalizedHandoffEvent.DESTINATION_ACCEPTED
_DESTINATION_RESERVED = NormalizedHandoffEvent.DESTINATION_RESERVED
_DESTINATION_ACTIVATED = NormalizedHandoffEvent.DESTINATION_ACTIVATED

Event = Callable[[Any, Any, Any], None]
"""A scheduled callback: ``event(handoff, a, b)``."""
Entry = tuple[float, int, Event, Any, Any, Any]
"""A scheduled event ``(time, sequence, event, handoff, a, b)``: at ``time`` the driver
runs ``event(handoff, a, b)``; the sequence number orders events of equal time."""


class Wire(Protocol):
    """What endpoints need from the driver: the clock, the event queue, the way back.

    Endpoints post their own events (``post((time, sequence(), event, h, a, b))``):
    a handoff is about ten events, so this is the hot path, and a call less per
    event is measurable. Faulty acknowledgements go through :meth:`answer`.
    """

    now: float

    @property
    def post(self) -> Callable[[Entry], None]:
        """Schedule an entry."""

    @property
    def sequence(self) -> Callable[[], int]:
        """The next sequence number."""

    def deliver(self, h: SimulatedHandoff, action_id: int, outcome: HandoffActionOutcome) -> None:
        """Feed an acknowledgement to the coordinator now (as an event: ``a``, ``b``)."""

    def answer(
        self,
        h: SimulatedHandoff,
        action_id: int,
        outcome: HandoffActionOutcome,
        delay_ms: float,
        fault: AckFault | None,
    ) -> None:
        """Acknowledge ``action_id`` in ``delay_ms``, unless ``fault`` loses, doubles, delays it."""

    def publish(self, h: SimulatedHandoff, fact: Any) -> None:
        """Deliver a fact the endpoint observed, now."""

    def request_finished(self, h: SimulatedHandoff) -> None:
        """The destination decoded the request's last token."""


class _Endpoint:
    __slots__ = ("_ack", "_deliver", "_faults", "_post", "_sequence", "_wire", "holding")

    def __init__(
        self, wire: Wire, config: SimulationConfig, rng: Random, faults: FaultInjector | None
    ):
        self._wire = wire
        self._post = wire.post
        self._sequence = wire.sequence
        self._deliver = wire.deliver
        self._ack = config.ack_ms.sampler(rng)
        self._faults = faults
        self.holding: set[int] = set()
        """Numbers of the handoffs this endpoint holds resources for."""


class FakeSource(_Endpoint):
    """Prefills, holds the KV cache, emits the request's first output token, releases."""

    __slots__ = ("_prefill", "_timing", "_timings", "output_tokens")

    def __init__(
        self, wire: Wire, config: SimulationConfig, rng: Random, faults: FaultInjector | None
    ):
        super().__init__(wire, config, rng, faults)
        self._prefill = config.prefill_ms.sampler(rng)
        self._timings: dict[int, HandoffTransferTiming] = {}
        # validated once; each prompt's timing differs only in its (checked) token count
        self._timing = HandoffTransferTiming(
            config.timing_mode, 0, config.kv_bytes_per_token, config.bandwidth_gb_s
        ).for_prompt
        self.output_tokens = 0

    def submit(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        faults = self._faults
        fault = faults.ack_fault(h.index, SubmitPrefill) if faults is not None else None
        wire = self._wire
        if fault is _FAIL:
            h.source = SOURCE_REFUSED
            wire.answer(h, action_id, _REFUSED_PREFILL, self._ack(), None)
            return
        h.source = SOURCE_PREFILLING
        self.holding.add(h.index)
        ack, now, post, sequence = self._ack(), wire.now, self._post, self._sequence
        if fault is None:
            post((now + ack, sequence(), self._deliver, h, action_id, _SUBMITTED))
        else:
            wire.answer(h, action_id, _SUBMITTED, ack, fault)
        post((now + ack + self._prefill(), sequence(), self._prefilled, h, None, None))

    def _prefilled(self, h: SimulatedHandoff, _a: Any, _b: Any) -> None:
        if h.source != SOURCE_PREFILLING:
            return  # canceled while prefilling
        h.source = SOURCE_HELD
        self.output_tokens += 1  # prefill produces the request's first token
        h.lifecycle.append(_SOURCE_HELD)
        tokens = h.prompt_tokens
        timing = self._timings.get(tokens)
        if timing is None:
            timing = self._timings[tokens] = self._timing(tokens)
        self._wire.publish(h, SourceHeld.observed(h.handoff_id, timing))

    def release(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        faults = self._faults
        fault = faults.ack_fault(h.index, ReleaseSource) if faults is not None else None
        if fault is _FAIL:
            self._wire.answer(h, action_id, _REFUSED_RELEASE, self._ack(), None)
            return
        outcome = _NOOP
        if h.source == SOURCE_HELD:
            h.source = SOURCE_RELEASED
            self.holding.discard(h.index)
            h.lifecycle.append(_SOURCE_RELEASED)
            outcome = _APPLIED
        if fault is None:
            wire = self._wire
            self._post(
                (wire.now + self._ack(), self._sequence(), self._deliver, h, action_id, outcome)
            )
        else:
            self._wire.answer(h, action_id, outcome, self._ack(), fault)

    def cancel(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        outcome = h.source_cancel
        if outcome is None:  # the first time: free what is held (a re-sent cancel repeats)
            outcome = _NOOP
            if h.source in (SOURCE_PREFILLING, SOURCE_HELD):
                h.source = SOURCE_CANCELED
                self.holding.discard(h.index)
                outcome = _APPLIED
            h.source_cancel = outcome
        faults = self._faults
        fault = faults.ack_fault(h.index, CancelSource) if faults is not None else None
        self._wire.answer(h, action_id, outcome, self._ack(), fault)


class FakeDestination(_Endpoint):
    """Reserves room, receives KV blocks, makes them visible on activation, decodes."""

    __slots__ = (
        "_decode",
        "_output_tokens",
        "_reserve",
        "_visible_on_store",
        "block_tokens",
        "held_after_cancel_ms",
        "output_tokens",
        "repeated_after_activation",
        "visible_before_activation",
        "visible_on_activation",
    )

    def __init__(
        self, wire: Wire, config: SimulationConfig, rng: Random, faults: FaultInjector | None
    ):
        super().__init__(wire, config, rng, faults)
        self._reserve = config.reserve_ms.sampler(rng)
        self._decode = config.decode_ms_per_token.sampler(rng)
        self._output_tokens = config.destination_output_tokens
        self._visible_on_store = config.destination_quirks.visible_on_store
        self.block_tokens = config.block_tokens
        self.output_tokens = 0
        self.visible_before_activation = 0
        """KV block hashes made visible before their request was activated (must stay 0)."""
        self.visible_on_activation = 0
        self.repeated_after_activation = 0
        """Hashes made visible again after activation, though already visible (must stay 0)."""
        self.held_after_cancel_ms = 0.0
        """KV and batch-slot time requests kept after they were canceled while decoding."""

    def reserve(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        faults = self._faults
        fault = faults.ack_fault(h.index, ReserveDestination) if faults is not None else None
        wire = self._wire
        if fault is _FAIL:
            h.destination = DESTINATION_REFUSED
            wire.answer(h, action_id, _REFUSED_RESERVATION, self._ack(), None)
            return
        h.destination = DESTINATION_ACCEPTED
        self.holding.add(h.index)
        h.lifecycle.append(_DESTINATION_ACCEPTED)
        ack, now, post, sequence = self._ack(), wire.now, self._post, self._sequence
        if fault is None:
            post((now + ack, sequence(), self._deliver, h, action_id, _ACCEPTED))
        else:
            wire.answer(h, action_id, _ACCEPTED, ack, fault)
        post((now + ack + self._reserve(), sequence(), self._reserved, h, None, None))

    def _reserved(self, h: SimulatedHandoff, _a: Any, _b: Any) -> None:
        if h.destination != DESTINATION_ACCEPTED:
            return  # canceled while reserving
        h.destination = DESTINATION_RESERVED
        h.lifecycle.append(_DESTINATION_RESERVED)
        self._wire.publish(h, DestinationReserved.observed(h.handoff_id, h.transferable_tokens))

    def store(self, h: SimulatedHandoff) -> None:
        """The transfer landed the prompt's missing full blocks (dropped unless still reserved).

        Like vLLM's prefix cache, only full blocks have a hash; the blocks the
        destination already had (its cached prefix) are not transferred.
        """
        if h.destination != DESTINATION_RESERVED:
            return
        block_tokens = self.block_tokens
        cached = h.prompt_tokens - h.transferable_tokens
        h.stored_blocks = h.prompt_tokens // block_tokens - cached // block_tokens
        if self._visible_on_store:
            self._make_visible(h)

    def _make_visible(self, h: SimulatedHandoff) -> int:
        """Make the stored blocks not yet visible visible; returns how many became visible."""
        newly = h.stored_blocks - h.visible_blocks
        h.visible_blocks = h.stored_blocks
        if h.destination == DESTINATION_ACTIVATED:
            self.visible_on_activation += newly
        else:
            self.visible_before_activation += newly
        return newly

    def activate(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        faults = self._faults
        fault = faults.ack_fault(h.index, ActivateDestination) if faults is not None else None
        wire = self._wire
        if fault is _FAIL:
            wire.answer(h, action_id, _REFUSED_ACTIVATION, self._ack(), None)
            return
        if h.destination != DESTINATION_RESERVED:  # the coordinator never asks this
            wire.answer(h, action_id, _NOTHING_TO_ACTIVATE, self._ack(), fault)
            return
        h.destination = DESTINATION_ACTIVATED
        self._make_visible(h)
        h.lifecycle.append(_DESTINATION_ACTIVATED)
        ack, now, post, sequence = self._ack(), wire.now, self._post, self._sequence
        if fault is None:
            post((now + ack, sequence(), self._deliver, h, action_id, _APPLIED))
        else:
            wire.answer(h, action_id, _APPLIED, ack, fault)
        # Decoding is one event: the request's tokens stream out when the last one
        # is decoded (a request canceled before that emits none).
        decode, decoding = self._decode, 0.0
        for _ in range(self._output_tokens):
            decoding += decode()
        post((now + decoding, sequence(), self._decoded, h, None, None))
        cancel_at = faults.decode_cancel(h.index) if faults is not None else None
        if cancel_at is not None:
            post((now + cancel_at * decoding, sequence(), self._decode_canceled, h, None, None))

    def _decode_canceled(self, h: SimulatedHandoff, _a: Any, _b: Any) -> None:
        """The request is canceled while it decodes: the caller reports ``Canceled``."""
        if h.destination != DESTINATION_ACTIVATED:
            return
        h.decode_cancel_at = self._wire.now
        self._wire.publish(h, Canceled.observed(h.handoff_id))

    def _released_after_cancel(self, h: SimulatedHandoff) -> None:
        """The request's KV and batch slot are free: count how long they outlived its cancel."""
        if h.decode_cancel_at is not None:
            self.held_after_cancel_ms += self._wire.now - h.decode_cancel_at
            h.decode_cancel_at = None

    def _decoded(self, h: SimulatedHandoff, _a: Any, _b: Any) -> None:
        if h.destination != DESTINATION_ACTIVATED:
            return  # canceled while decoding
        # A decoded token that fills a block publishes that block's hash: the tokens
        # decoded now fill blocks first..last (length L fills block L // B - 1). Visible
        # prompt blocks are never re-published; count those among them if any were.
        tokens, block_tokens = self._output_tokens, self.block_tokens
        length = h.prompt_tokens + h.decoded
        first, last = length // block_tokens, (length + tokens) // block_tokens - 1
        self.output_tokens += tokens
        h.decoded += tokens
        visible = (h.prompt_tokens - h.transferable_tokens) // block_tokens
        repeated = min(last, visible + h.visible_blocks - 1) - max(first, visible) + 1
        if repeated > 0:
            self.repeated_after_activation += repeated
        h.destination = DESTINATION_FINISHED
        self.holding.discard(h.index)
        if h.decode_cancel_at is not None:
            self._released_after_cancel(h)
        self._wire.request_finished(h)

    def cancel(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        outcome = h.destination_cancel
        if outcome is None:
            outcome = _NOOP
            if h.destination in (DESTINATION_ACCEPTED, DESTINATION_RESERVED, DESTINATION_ACTIVATED):
                h.destination = DESTINATION_CANCELED
                self.holding.discard(h.index)
                self._released_after_cancel(h)
                outcome = _APPLIED
            h.destination_cancel = outcome
        faults = self._faults
        fault = faults.ack_fault(h.index, CancelDestination) if faults is not None else None
        self._wire.answer(h, action_id, outcome, self._ack(), fault)


class FakeTransfer(_Endpoint):
    """Moves the KV cache: ``TransferCompleted`` ``delay_ms`` after it was scheduled."""

    __slots__ = ("_destination", "delays_ms", "in_flight")

    def __init__(
        self,
        wire: Wire,
        config: SimulationConfig,
        rng: Random,
        faults: FaultInjector | None,
        destination: FakeDestination,
    ):
        super().__init__(wire, config, rng, faults)
        self._destination = destination
        self.in_flight = 0
        self.delays_ms: list[float] = []
        """The delay of every transfer started, in start order."""

    def start(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        faults = self._faults
        fault = faults.ack_fault(h.index, StartTransfer) if faults is not None else None
        wire = self._wire
        if fault is _FAIL:
            wire.answer(h, action_id, _REFUSED_TRANSFER, self._ack(), None)
            return
        delay: float = action.delay_ms  # type: ignore[union-attr]  # a StartTransfer
        fails = faults is not None and faults.transfer_fails(h.index)
        self.in_flight += 1
        self.delays_ms.append(delay)
        ack, now, post, sequence = self._ack(), wire.now, self._post, self._sequence
        if fault is None:
            post((now + ack, sequence(), self._deliver, h, action_id, _SCHEDULED))
        else:
            wire.answer(h, action_id, _SCHEDULED, ack, fault)
        post((now + ack + delay, sequence(), self._landed, h, fails, None))

    def _landed(self, h: SimulatedHandoff, fails: bool, _b: Any) -> None:
        self.in_flight -= 1
        if fails:
            self._wire.publish(h, FailedFact.observed(h.handoff_id))
            return
        self._destination.store(h)
        self._wire.publish(h, TransferCompleted.observed(h.handoff_id))


_REFUSED_PREFILL = HandoffActionOutcome.failed("injected: the source refused the prefill")
_REFUSED_RELEASE = HandoffActionOutcome.failed("injected: the source failed to release")
_REFUSED_RESERVATION = HandoffActionOutcome.failed("injected: the destination refused to reserve")
_REFUSED_ACTIVATION = HandoffActionOutcome.failed("injected: the destination failed to activate")
_NOTHING_TO_ACTIVATE = HandoffActionOutcome.failed("the destination holds no reservation")
_REFUSED_TRANSFER = HandoffActionOutcome.failed("injected: the transfer could not be scheduled")

"""Fake engines on their own: what they answer, what they hold, what they count.

The endpoints run against a recording wire (a clock and lists) instead of the
driver, so each answer, fact and timing can be checked directly.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import count
from random import Random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffOrder,
    NormalizedHandoffEvent,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferCompleted,
)
from handoff_fsm.policy import SessionPolicy
from handoff_fsm.simulate import (
    AckFault,
    Count,
    DestinationQuirks,
    FaultPlan,
    Fixed,
    ScriptedAck,
    ScriptedTransferFailure,
    SimulationConfig,
)
from handoff_fsm.simulate.endpoints import (
    Entry,
    Event,
    FakeDestination,
    FakeSource,
    FakeTransfer,
)
from handoff_fsm.simulate.faults import FaultInjector
from handoff_fsm.simulate.record import (
    DESTINATION_ACTIVATED,
    DESTINATION_CANCELED,
    DESTINATION_FINISHED,
    SOURCE_CANCELED,
    SOURCE_HELD,
    SOURCE_REFUSED,
    SOURCE_RELEASED,
    SimulatedHandoff,
)

E = NormalizedHandoffEvent
ID = uuid.UUID(int=7)
APPLIED, NOOP = HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP
CONFIG = SimulationConfig(
    ack_ms=Fixed(0.5),
    prefill_ms=Fixed(10.0),
    reserve_ms=Fixed(2.0),
    decode_ms_per_token=Fixed(4.0),
    prompt_tokens=Count(100),
    block_tokens=16,
)


@dataclass
class RecordingWire:
    """The driver's side of the endpoints, reduced to a clock and what was sent."""

    now: float = 0.0
    scheduled: list[tuple[float, Event, SimulatedHandoff, Any]] = field(default_factory=list)
    answers: list[tuple[int, HandoffActionOutcome, float, AckFault | None]] = field(
        default_factory=list
    )
    published: list[tuple[float, object]] = field(default_factory=list)
    finished: list[SimulatedHandoff] = field(default_factory=list)

    sequence: Callable[[], int] = field(default_factory=lambda: count().__next__)

    def post(self, entry: Entry) -> None:
        when, _, event, h, a, b = entry
        if event == self.deliver:  # an acknowledgement without a fault
            self.answers.append((a, b, when, None))
        else:
            self.scheduled.append((when, event, h, a))

    def deliver(self, h: SimulatedHandoff, action_id: int, outcome: HandoffActionOutcome) -> None:
        raise AssertionError("endpoints post acknowledgements, they never deliver them")

    def answer(
        self,
        h: SimulatedHandoff,
        action_id: int,
        outcome: HandoffActionOutcome,
        delay_ms: float,
        fault: AckFault | None,
    ) -> None:
        self.answers.append((action_id, outcome, self.now + delay_ms, fault))

    def publish(self, h: SimulatedHandoff, fact: object) -> None:
        self.published.append((self.now, fact))

    def request_finished(self, h: SimulatedHandoff) -> None:
        self.finished.append(h)

    def run_next(self) -> None:
        self.scheduled.sort(key=lambda entry: entry[0])
        when, event, h, a = self.scheduled.pop(0)
        self.now = when
        event(h, a, None)


def handoff(prompt: int = 100, transferable: int = 100) -> SimulatedHandoff:
    coordinator = HandoffCoordinator(ID, HandoffOrder.SOURCE_FIRST)
    return SimulatedHandoff(
        0,
        ID,
        coordinator,
        SessionPolicy(coordinator),
        started_ms=0.0,
        prompt_tokens=prompt,
        transferable_tokens=transferable,
    )


def endpoints(
    config: SimulationConfig = CONFIG, plan: FaultPlan | None = None
) -> tuple[RecordingWire, FakeSource, FakeDestination, FakeTransfer]:
    wire = RecordingWire()
    faults = FaultInjector(plan, Random(0)) if plan is not None else None
    destination = FakeDestination(wire, config, Random(0), faults)
    return (
        wire,
        FakeSource(wire, config, Random(0), faults),
        destination,
        FakeTransfer(wire, config, Random(0), faults, destination),
    )


def test_source_prefills_holds_and_publishes_its_timing() -> None:
    wire, source, _, _ = endpoints()
    h = handoff()
    source.submit(h, 0, SubmitPrefill.issued_for(ID))
    assert wire.answers == [(0, HandoffActionOutcome.SUBMITTED, 0.5, None)]
    assert source.holding == {0}
    assert wire.published == []
    wire.run_next()  # the prefill finishes after the acknowledgement plus the prefill time
    ((when, fact),) = wire.published
    assert when == 10.5
    assert isinstance(fact, SourceHeld)
    assert fact.transfer_timing.full_prompt_tokens == 100
    assert fact.transfer_timing.kv_bytes_per_token == CONFIG.kv_bytes_per_token
    assert fact.transfer_timing.bandwidth_gb_s == CONFIG.bandwidth_gb_s
    assert h.source == SOURCE_HELD
    assert source.output_tokens == 1  # the prefill emits the first token
    assert h.lifecycle == [E.SOURCE_HELD]


def test_source_release_frees_before_answering() -> None:
    wire, source, _, _ = endpoints()
    h = handoff()
    source.submit(h, 0, SubmitPrefill.issued_for(ID))
    wire.run_next()
    source.release(h, 5, ReleaseSource.issued_for(ID))
    assert wire.answers[-1][:2] == (5, APPLIED)
    assert h.source == SOURCE_RELEASED and not source.holding
    assert h.lifecycle == [E.SOURCE_HELD, E.SOURCE_RELEASED]


def test_a_cancel_during_prefill_frees_the_source_and_silences_the_prefill() -> None:
    wire, source, _, _ = endpoints()
    h = handoff()
    source.submit(h, 0, SubmitPrefill.issued_for(ID))
    source.cancel(h, 1, CancelSource.issued_for(ID))
    assert wire.answers[-1][:2] == (1, APPLIED)
    assert h.source == SOURCE_CANCELED and not source.holding
    wire.run_next()
    assert wire.published == [] and source.output_tokens == 0


def test_a_resent_cancel_gets_the_first_answer_again() -> None:
    wire, source, _, _ = endpoints()
    h = handoff()
    source.submit(h, 0, SubmitPrefill.issued_for(ID))
    source.cancel(h, 1, CancelSource.issued_for(ID))
    source.cancel(h, 1, CancelSource.issued_for(ID))  # nothing is held now, yet: Applied
    assert [outcome for _, outcome, _, _ in wire.answers[1:]] == [APPLIED, APPLIED]


def test_cancel_of_an_untouched_source_is_a_noop() -> None:
    wire, source, _, _ = endpoints()
    source.cancel(handoff(), 3, CancelSource.issued_for(ID))
    assert wire.answers == [(3, NOOP, 0.5, None)]


def test_an_injected_failure_refuses_and_holds_nothing() -> None:
    plan = FaultPlan(script=(ScriptedAck(0, SubmitPrefill, AckFault.FAIL),))
    wire, source, _, _ = endpoints(plan=plan)
    h = handoff()
    source.submit(h, 0, SubmitPrefill.issued_for(ID))
    ((_, outcome, _, fault),) = wire.answers
    assert outcome.is_failed and fault is None
    assert h.source == SOURCE_REFUSED and not source.holding and not wire.scheduled


def test_other_ack_faults_reach_the_wire_and_the_endpoint_still_acts() -> None:
    plan = FaultPlan(script=(ScriptedAck(0, ReserveDestination, AckFault.LOSE),))
    wire, _, destination, _ = endpoints(plan=plan)
    h = handoff()
    destination.reserve(h, 0, ReserveDestination.issued_for(ID))
    assert wire.answers == [(0, HandoffActionOutcome.ACCEPTED, 0.5, AckFault.LOSE)]
    assert destination.holding == {0}
    wire.run_next()
    ((when, fact),) = wire.published
    assert when == 2.5 and isinstance(fact, DestinationReserved)
    assert fact.transferable_prompt_tokens == 100


def reserved(
    config: SimulationConfig = CONFIG, prompt: int = 100, transferable: int = 100
) -> tuple[RecordingWire, FakeDestination, FakeTransfer, SimulatedHandoff]:
    wire, _, destination, transfer = endpoints(config)
    h = handoff(prompt, transferable)
    destination.reserve(h, 0, ReserveDestination.issued_for(ID))
    wire.run_next()
    return wire, destination, transfer, h


def test_transfer_lands_delay_after_it_was_scheduled_and_stores_full_blocks() -> None:
    wire, destination, transfer, h = reserved()
    wire.now = 20.0
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 3.0))
    assert wire.answers[-1] == (1, HandoffActionOutcome.SCHEDULED, 20.5, None)
    assert transfer.in_flight == 1 and transfer.delays_ms == [3.0]
    wire.run_next()
    assert wire.published[-1][0] == 23.5
    assert isinstance(wire.published[-1][1], TransferCompleted)
    assert transfer.in_flight == 0
    assert h.stored_blocks == 100 // 16  # full blocks only carry a hash
    assert destination.visible_before_activation == 0  # stored, not yet visible


def test_a_failed_transfer_publishes_failed_and_stores_nothing() -> None:
    config = SimulationConfig(ack_ms=Fixed(0.5))
    plan = FaultPlan(script=(ScriptedTransferFailure(0),))
    wire, _, destination, transfer = endpoints(config, plan)
    h = handoff()
    destination.reserve(h, 0, ReserveDestination.issued_for(ID))
    wire.run_next()
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 3.0))
    wire.run_next()
    assert isinstance(wire.published[-1][1], Failed)
    assert h.stored_blocks == 0 and transfer.in_flight == 0


def test_activation_makes_the_stored_hashes_visible_then_decodes() -> None:
    wire, destination, transfer, h = reserved(prompt=100, transferable=60)
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 1.0))
    wire.run_next()
    assert h.stored_blocks == 100 // 16 - 40 // 16  # the cached prefix is not transferred
    destination.activate(h, 2, ActivateDestination.issued_for(ID))
    assert wire.answers[-1][:2] == (2, APPLIED)
    assert h.destination == DESTINATION_ACTIVATED
    assert destination.visible_on_activation == 4
    assert destination.output_tokens == 0
    decode_start = wire.now
    wire.run_next()  # both tokens, one decode step each
    assert wire.now == decode_start + 2 * 4.0
    assert destination.output_tokens == 2 and h.decoded == 2
    assert h.destination == DESTINATION_FINISHED and not destination.holding
    assert wire.finished == [h]
    assert destination.repeated_after_activation == 0
    assert h.lifecycle == [
        E.DESTINATION_ACCEPTED,
        E.DESTINATION_RESERVED,
        E.DESTINATION_ACTIVATED,
    ]


def test_a_destination_that_shows_kv_on_arrival_is_counted_before_activation() -> None:
    config = SimulationConfig(
        ack_ms=Fixed(0.5), destination_quirks=DestinationQuirks(visible_on_store=True)
    )
    wire, destination, transfer, h = reserved(config)
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 1.0))
    wire.run_next()
    assert destination.visible_before_activation == 100 // 16
    destination.activate(h, 2, ActivateDestination.issued_for(ID))
    assert destination.visible_on_activation == 0  # nothing new became visible


def test_a_cancel_while_decoding_frees_and_stops_the_decode() -> None:
    wire, destination, transfer, h = reserved()
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 1.0))
    wire.run_next()
    destination.activate(h, 2, ActivateDestination.issued_for(ID))
    destination.cancel(h, 3, CancelDestination.issued_for(ID))
    assert wire.answers[-1][:2] == (3, APPLIED)
    assert h.destination == DESTINATION_CANCELED and not destination.holding
    wire.run_next()
    assert destination.output_tokens == 0 and wire.finished == []


@pytest.mark.parametrize("transferable", [100, 60])
def test_kv_landing_after_a_cancel_is_dropped(transferable: int) -> None:
    wire, destination, transfer, h = reserved(transferable=transferable)
    transfer.start(h, 1, StartTransfer.issued_with_delay(ID, 1.0))
    destination.cancel(h, 2, CancelDestination.issued_for(ID))
    wire.run_next()
    assert h.stored_blocks == 0 and not destination.holding
    assert isinstance(wire.published[-1][1], TransferCompleted)  # the transfer still reports


@given(
    prompt=st.integers(0, 300),
    cached=st.integers(0, 300),
    visible=st.integers(0, 40),
    before=st.integers(0, 50),
    output=st.integers(1, 60),
    block=st.integers(1, 33),
)
def test_decoding_counts_each_visible_block_it_would_publish_again(
    *, prompt: int, cached: int, visible: int, before: int, output: int, block: int
) -> None:
    """The count done at once equals the rule applied token by token: a decoded token
    that makes the length L a multiple of B publishes block L // B - 1; count it if that
    block is among the visible ones (from the first transferred block on)."""
    cached = min(cached, prompt)
    _, _, destination, _ = endpoints(
        replace(CONFIG, destination_output_tokens=output, block_tokens=block)
    )
    h = handoff(prompt, prompt - cached)
    h.destination, h.visible_blocks, h.decoded = DESTINATION_ACTIVATED, visible, before
    destination._decoded(h, None, None)
    first_visible = cached // block
    expected = sum(
        1
        for length in range(prompt + before + 1, prompt + before + output + 1)
        if length % block == 0 and first_visible <= length // block - 1 < first_visible + visible
    )
    assert destination.repeated_after_activation == expected
    assert (destination.output_tokens, h.decoded) == (output, before + output)

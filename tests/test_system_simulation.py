"""The simulator's runs stay inside the explored world (issue 21, item 8).

The simulator drives the same real session policy in virtual time, against fake
workers, with the faults the world has (lost and late acknowledgements, a client that
cancels, also while the destination decodes). Every time a handoff's policy is called,
the session state (coordinator and policy) and what each fake worker holds are read
off and mapped onto the world's terms; each must be one the exploration reached. The
payloads the world fixes (handoff id, timing, tokens, failure reasons) are left out of
the comparison, and the destination's reserved and received states are one (the
simulator's destination has no state for the transfer it lets the transfer endpoint do).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from handoff_fsm import Canceled, HandoffOrder, Revision
from handoff_fsm.policy import PolicySnapshot, SessionPolicy, SessionStep
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.driver import Simulation
from handoff_fsm.simulate.faults import CLEANUP_ACTIONS, WORK_ACTIONS, AckFaultRates, FaultPlan
from handoff_fsm.simulate.record import (
    DESTINATION_ACCEPTED,
    DESTINATION_ACTIVATED,
    DESTINATION_RESERVED,
    SOURCE_HELD,
    SOURCE_PREFILLING,
)
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.verify.system.assumptions import SystemAssumptions
from handoff_fsm.verify.system.properties import SystemSettings
from handoff_fsm.verify.system.report import ACK_TIMEOUT, CLEANUP_TIMEOUT, DEADLINE_AFTER
from handoff_fsm.verify.system.search import explore_graph
from handoff_fsm.verify.system.session import Session
from handoff_fsm.verify.system.world import DECODING, FREE, HOLDING

pytestmark = pytest.mark.slow  # a system check (tests/quick.py)

RETRIES = 1
REVISION = Revision.A976B2BF
ORDER = HandoffOrder.SOURCE_FIRST


def signature(coordinator: HandoffSnapshot, policy: PolicySnapshot) -> tuple[Any, ...]:
    """A session state without the payloads the world fixes and the simulator draws."""
    flags, awaited, buffer, given_up, abandoned = policy.decisive
    return (
        coordinator.state,
        coordinator.source_engaged,
        coordinator.destination_engaged,
        coordinator.completion,
        coordinator.next_action_id,
        tuple((i.id, type(i.action).__name__) for i in coordinator.issued),
        tuple((o.action_id, o.outcome.kind) for o in coordinator.outcomes),
        flags,
        tuple((i.id, type(i.action).__name__, sends) for i, sends in awaited),
        tuple(type(fact).__name__ for fact in buffer),
        given_up,
        tuple(i.id for i in abandoned),
    )


def explored() -> set[tuple[Any, ...]]:
    """Every world state of the exploration, mapped as the simulator's are."""
    settings = SystemSettings(
        REVISION,
        cleanup_retries=RETRIES,
        orders=(ORDER,),
        assumptions=SystemAssumptions(losses=1),
    )
    session = Session(
        REVISION,
        SessionPolicy.factory(
            deadline=DEADLINE_AFTER,
            ack_timeout=ACK_TIMEOUT,
            cleanup_ack_timeout=CLEANUP_TIMEOUT,
            cleanup_retries=RETRIES,
        ),
    )
    graph = explore_graph(settings, session, None)
    snapshots = session._snapshots  # the session states the world reached
    return {
        (signature(*snapshots[w[0]]), w[1], w[2] if w[2] in (FREE, DECODING) else "holds")
        for w in graph.worlds
    }


def test_every_state_a_simulation_passes_through_was_explored() -> None:
    rates = AckFaultRates(lose=0.04, late=0.08)
    config = SimulationConfig(
        handoffs=400,
        concurrency=8,
        seed=11,
        order=ORDER,
        revision=REVISION,
        deadline_ms=400.0,
        ack_timeout_ms=60.0,
        cleanup_retry_ms=30.0,
        cleanup_retries=RETRIES,
        faults=FaultPlan(
            acks=dict.fromkeys((*WORK_ACTIONS, *CLEANUP_ACTIONS), rates),
            external_facts={Canceled: 0.05},
            decode_cancel=0.3,
        ),
    )
    simulation = Simulation(config)
    seen: list[tuple[int, tuple[Any, ...]]] = []

    class Watched(SessionPolicy):
        """The real policy, reporting what the world would see after each of its calls."""

        def _seen(self, step: SessionStep) -> SessionStep:
            h = self.__dict__.get("handoff")
            if h is None:  # its first call, start(): the handoff is live
                h = next(h for h in simulation._live.values() if h.policy is self)
                self.__dict__["handoff"] = h
            source = HOLDING if h.source in (SOURCE_PREFILLING, SOURCE_HELD) else FREE
            held = (DESTINATION_ACCEPTED, DESTINATION_RESERVED)
            destination = (
                DECODING
                if h.destination == DESTINATION_ACTIVATED
                else "holds"
                if h.destination in held
                else FREE
            )
            session = signature(self.coordinator.snapshot(), self.snapshot())  # type: ignore[attr-defined]
            seen.append((h.index, (session, source, destination)))
            return step

        def start(self, now: float) -> SessionStep:
            return self._seen(super().start(now))

        def fact(self, fact: Any, now: float) -> SessionStep:
            return self._seen(super().fact(fact, now))

        def outcome(self, action_id: int, outcome: Any, now: float) -> SessionStep:
            return self._seen(super().outcome(action_id, outcome, now))

        def expire(self, timer: Any, now: float) -> SessionStep:
            return self._seen(super().expire(timer, now))

    simulation._policy = Watched.factory(
        deadline=config.deadline_ms,
        ack_timeout=config.ack_timeout_ms,
        cleanup_ack_timeout=config.cleanup_retry_ms,
        cleanup_retries=RETRIES,
    )
    result = simulation.run()
    faults: dict[int, Counter[str]] = {}
    for index, kind in result.fault_log:
        faults.setdefault(index, Counter())[kind] += 1
    within = {  # the world's budgets: one lost message, one cancel of the client
        index
        for index in range(result.started)
        if faults.get(index, Counter())["ack_lose"] <= 1
        and faults.get(index, Counter())["fact_Canceled"]
        + faults.get(index, Counter())["decode_canceled"]
        <= 1
    }
    faulty = {index for index in within if faults.get(index)}
    assert len(faulty) > 50 and result.reopened > 5  # the faults do happen
    world = explored()
    outside = [state for index, state in seen if index in within and state not in world]
    assert not outside, f"{len(outside)} simulated states the exploration never reached"
    assert len({state for index, state in seen if index in within}) > 40

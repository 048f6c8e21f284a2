"""Fault plans: what they refuse, and how the injector draws from them."""

from __future__ import annotations

from random import Random

import pytest

from handoff_fsm import (
    ActivateDestination,
    Canceled,
    CancelSource,
    Complete,
    Failed,
    ReleaseSource,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
)
from handoff_fsm.simulate import (
    AckFault,
    AckFaultRates,
    FaultPlan,
    ScriptedAck,
    ScriptedFact,
    ScriptedTransferFailure,
)
from handoff_fsm.simulate.faults import CLEANUP_ACTIONS, FAULT_COUNTERS, WORK_ACTIONS, FaultInjector


def test_the_default_plan_injects_nothing() -> None:
    assert not FaultPlan().active
    assert not FaultPlan.uniform(0.0).active
    assert FaultPlan.uniform(0.0).rate == 0.0


def test_uniform_covers_every_fault_class_and_never_fails_a_cancel() -> None:
    plan = FaultPlan.uniform(0.2)
    assert plan.active and plan.rate == 0.2
    for kind in WORK_ACTIONS:
        assert plan.acks[kind] == AckFaultRates(fail=0.05, lose=0.05, duplicate=0.05, late=0.05)
    for kind in CLEANUP_ACTIONS:
        assert plan.acks[kind].fail == 0.0
        assert plan.acks[kind].total == pytest.approx(0.2)
    assert plan.transfer_failure == 0.2
    assert sum(plan.external_facts.values()) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (lambda: FaultPlan.uniform(1.5), "probability"),
        (lambda: FaultPlan(acks={CancelSource: AckFaultRates(fail=0.1)}), "must not fail"),
        (lambda: FaultPlan(acks={Complete: AckFaultRates(lose=0.1)}), "never acknowledged"),
        (lambda: FaultPlan(acks={SubmitPrefill: AckFaultRates(fail=0.6, lose=0.6)}), "add up"),
        (lambda: FaultPlan(acks={SubmitPrefill: AckFaultRates(late=float("nan"))}), "late"),
        (lambda: FaultPlan(external_facts={SourceHeld: 0.1}), "not an external fact"),  # type: ignore[dict-item]
        (lambda: FaultPlan(transfer_failure=-0.1), "transfer_failure"),
        (lambda: FaultPlan(late_by_ms=-1.0), "late_by_ms"),
        (lambda: FaultPlan(script=(ScriptedAck(0, CancelSource, AckFault.FAIL),)), "must not fail"),
        (
            lambda: FaultPlan(script=(ScriptedAck(0, Complete, AckFault.LOSE),)),
            "never acknowledged",
        ),
        (lambda: FaultPlan(script=(ScriptedFact(0, Failed, -1.0),)), "at_ms"),
        (lambda: FaultPlan(script=(ScriptedTransferFailure(-1),)), "start at 0"),
    ],
)
def test_plans_the_protocol_cannot_survive_are_refused(plan: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan()  # type: ignore[operator]


def test_a_scripted_ack_fault_applies_to_the_first_acknowledgement_only() -> None:
    plan = FaultPlan(script=(ScriptedAck(3, CancelSource, AckFault.LOSE),))
    injector = FaultInjector(plan, Random(0))
    assert injector.ack_fault(2, CancelSource) is None
    assert injector.ack_fault(3, CancelSource) is AckFault.LOSE
    assert injector.ack_fault(3, CancelSource) is None  # the re-sent cancel gets through
    assert injector.counts["ack_lose"] == 1


def test_probabilities_are_honoured_and_split_by_kind() -> None:
    rates = AckFaultRates(fail=0.1, lose=0.2, duplicate=0.05, late=0.15)
    injector = FaultInjector(FaultPlan(acks={StartTransfer: rates}), Random(11))
    draws = [injector.ack_fault(i, StartTransfer) for i in range(40000)]
    for fault, expected in (
        (AckFault.FAIL, 0.1),
        (AckFault.LOSE, 0.2),
        (AckFault.DUPLICATE, 0.05),
        (AckFault.LATE, 0.15),
    ):
        assert draws.count(fault) / len(draws) == pytest.approx(expected, abs=0.01)
    assert draws.count(None) / len(draws) == pytest.approx(0.5, abs=0.01)
    assert injector.ack_fault(0, ActivateDestination) is None  # no rate for this kind


def test_equal_seeds_inject_equal_faults() -> None:
    plan = FaultPlan.uniform(0.3)

    def stream(seed: int) -> list[object]:
        injector = FaultInjector(plan, Random(seed))
        out: list[object] = []
        for i in range(300):
            out.append(injector.ack_fault(i, ReleaseSource))
            out.append(injector.transfer_fails(i))
            out.append(injector.external_facts(i))
        return out

    assert stream(5) == stream(5)
    assert stream(5) != stream(6)


def test_external_facts_come_from_the_script_and_the_rates() -> None:
    plan = FaultPlan(
        external_facts={TimedOut: 1.0},
        fact_window_ms=10.0,
        script=(ScriptedFact(1, Canceled, 42.0), ScriptedTransferFailure(1)),
    )
    injector = FaultInjector(plan, Random(0))
    none_scripted = injector.external_facts(0)
    assert [cls for _, cls in none_scripted] == [TimedOut]
    assert 0.0 <= none_scripted[0][0] < 10.0
    scripted = injector.external_facts(1)
    assert scripted[0] == (42.0, Canceled)
    assert [cls for _, cls in scripted] == [Canceled, TimedOut]
    assert not injector.transfer_fails(0)
    assert injector.transfer_fails(1)
    assert set(injector.counts) == set(FAULT_COUNTERS)
    assert injector.counts["fact_TimedOut"] == 2
    assert injector.counts["fact_Canceled"] == 1
    assert injector.counts["transfer_failed"] == 1

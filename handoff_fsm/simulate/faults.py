"""Fault injection: which acknowledgements go wrong, and which facts arrive uninvited.

Rule kept here: a :class:`FaultPlan` is data (per-action probabilities and a
script); a :class:`FaultInjector` draws from it with its own seeded
``random.Random``, in the order the driver asks, so equal plans and seeds
inject equal faults. The plan refuses the fault no coordinator can survive: a
*failed* cleanup action (the reference treats a failed
CancelSource/CancelDestination as an error). A cleanup acknowledgement that is
always lost is allowed: the session policy re-sends the cancel a bounded number
of times, then abandons it, which the run reports as a problem.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from random import Random

from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    Failed,
    HandoffAction,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
)

ExternalFact = type[Failed] | type[TimedOut] | type[Canceled]
"""A fact that may arrive at any moment of a handoff, from outside the endpoints."""

EXTERNAL_FACTS: tuple[ExternalFact, ...] = (Failed, TimedOut, Canceled)
WORK_ACTIONS: tuple[type[HandoffAction], ...] = (
    SubmitPrefill,
    ReserveDestination,
    StartTransfer,
    ActivateDestination,
    ReleaseSource,
)
"""Acknowledged actions that may fail (a failure starts cleanup)."""
CLEANUP_ACTIONS: tuple[type[HandoffAction], ...] = (CancelSource, CancelDestination)
"""Acknowledged actions that must not fail (cleanup)."""


class AckFault(StrEnum):
    """What can go wrong with one action's acknowledgement."""

    FAIL = "fail"
    """The endpoint refuses the action and answers ``Failed(reason)``."""
    LOSE = "lose"
    """The endpoint acts, but its acknowledgement never arrives."""
    DUPLICATE = "duplicate"
    """The acknowledgement arrives twice."""
    LATE = "late"
    """The acknowledgement arrives ``late_by_ms`` late (usually after completion)."""


@dataclass(frozen=True, slots=True)
class AckFaultRates:
    """Probabilities, per acknowledgement of one action kind, of each :class:`AckFault`."""

    fail: float = 0.0
    lose: float = 0.0
    duplicate: float = 0.0
    late: float = 0.0

    @property
    def total(self) -> float:
        return self.fail + self.lose + self.duplicate + self.late


@dataclass(frozen=True, slots=True)
class ScriptedAck:
    """Fault the first acknowledgement of ``action`` in handoff number ``handoff``."""

    handoff: int
    action: type[HandoffAction]
    fault: AckFault


@dataclass(frozen=True, slots=True)
class ScriptedFact:
    """Deliver ``fact`` to handoff number ``handoff``, ``at_ms`` after it started."""

    handoff: int
    fact: ExternalFact
    at_ms: float


@dataclass(frozen=True, slots=True)
class ScriptedTransferFailure:
    """The transfer of handoff number ``handoff`` ends in ``Failed``, not ``TransferCompleted``."""

    handoff: int


Scripted = ScriptedAck | ScriptedFact | ScriptedTransferFailure

FAULT_COUNTERS: tuple[str, ...] = (
    *(f"ack_{fault.value}" for fault in AckFault),
    "transfer_failed",
    *(f"fact_{cls.__name__}" for cls in EXTERNAL_FACTS),
    "decode_canceled",
)
"""Names of the injected-fault counters, in report order."""


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject: probabilities per action kind and per handoff, and a script.

    Probabilistic and scripted faults add up. The default plan injects nothing.
    """

    acks: Mapping[type[HandoffAction], AckFaultRates] = field(default_factory=dict)
    external_facts: Mapping[ExternalFact, float] = field(default_factory=dict)
    """Per handoff, the probability of each external fact (at a uniform moment of the window)."""
    transfer_failure: float = 0.0
    decode_cancel: float = 0.0
    """Per handoff that succeeded, the probability its request is canceled while the
    destination decodes (a ``Canceled`` fact at a uniform moment of the decode)."""
    script: tuple[Scripted, ...] = ()
    fact_window_ms: float = 100.0
    late_by_ms: float = 5000.0
    duplicate_after_ms: float = 1.0
    rate: float | None = None
    """The single rate this plan was made from by :meth:`uniform`, for reports."""

    def __post_init__(self) -> None:
        for kind, rates in self.acks.items():
            if kind not in WORK_ACTIONS and kind not in CLEANUP_ACTIONS:
                raise ValueError(f"{kind.__name__} is never acknowledged: it cannot be faulted")
            for name in ("fail", "lose", "duplicate", "late"):
                _check_probability(f"{kind.__name__}.{name}", getattr(rates, name))
            if rates.total > 1.0 + 1e-12:
                raise ValueError(
                    f"{kind.__name__}: fault probabilities add up to {rates.total} > 1"
                )
            if kind in CLEANUP_ACTIONS and rates.fail:
                raise ValueError(f"{kind.__name__} is a cleanup action: it must not fail")
        for fact, probability in self.external_facts.items():
            if fact not in EXTERNAL_FACTS:
                raise ValueError(
                    f"{fact.__name__} is not an external fact (Failed/TimedOut/Canceled)"
                )
            _check_probability(f"external {fact.__name__}", probability)
        _check_probability("transfer_failure", self.transfer_failure)
        _check_probability("decode_cancel", self.decode_cancel)
        for name in ("fact_window_ms", "late_by_ms", "duplicate_after_ms"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0.0:
                raise ValueError(f"{name} must be a finite number of ms >= 0, got {value!r}")
        for entry in self.script:
            _check_scripted(entry)

    @classmethod
    def uniform(cls, rate: float) -> FaultPlan:
        """One knob for every fault class: the CLI's ``--fault-rate``.

        Each acknowledgement is faulted with probability ``rate`` (fail, lose,
        duplicate or late, equally likely; cleanup acknowledgements are never
        failed), each transfer fails with probability ``rate``, and each handoff
        receives an external Failed, TimedOut or Canceled fact (equally likely)
        with probability ``rate``, at a uniform moment of its first ``fact_window_ms``.
        """
        _check_probability("fault rate", rate)
        if rate == 0.0:
            return cls(rate=0.0)
        work = AckFaultRates(fail=rate / 4, lose=rate / 4, duplicate=rate / 4, late=rate / 4)
        cleanup = AckFaultRates(lose=rate / 3, duplicate=rate / 3, late=rate / 3)
        return cls(
            acks={
                **dict.fromkeys(WORK_ACTIONS, work),
                **dict.fromkeys(CLEANUP_ACTIONS, cleanup),
            },
            external_facts=dict.fromkeys(EXTERNAL_FACTS, rate / 3),
            transfer_failure=rate,
            rate=rate,
        )

    @property
    def active(self) -> bool:
        """True if this plan can inject anything at all."""
        return bool(
            self.script
            or any(rates.total for rates in self.acks.values())
            or any(self.external_facts.values())
            or self.transfer_failure
            or self.decode_cancel
        )


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")


def _check_scripted(entry: Scripted) -> None:
    if entry.handoff < 0:
        raise ValueError(f"{entry}: handoff numbers start at 0")
    if isinstance(entry, ScriptedAck):
        if entry.action not in WORK_ACTIONS and entry.action not in CLEANUP_ACTIONS:
            raise ValueError(f"{entry.action.__name__} is never acknowledged: it cannot be faulted")
        if entry.action in CLEANUP_ACTIONS and entry.fault is AckFault.FAIL:
            raise ValueError(f"{entry.action.__name__} is a cleanup action: it must not fail")
    elif isinstance(entry, ScriptedFact):
        if entry.fact not in EXTERNAL_FACTS:
            raise ValueError(f"{entry.fact.__name__} is not an external fact")
        if not math.isfinite(entry.at_ms) or entry.at_ms < 0.0:
            raise ValueError(f"{entry}: at_ms must be finite and >= 0")


class FaultInjector:
    """Draws the faults of one run from a :class:`FaultPlan`, and counts them.

    Every query with a non-zero probability consumes exactly one draw, so the
    stream of faults depends only on the plan, the seed and the order of queries.
    """

    __slots__ = (
        "_bounds",
        "_decode_cancel",
        "_draw",
        "_fact_rates",
        "_scripted_acks",
        "_scripted_facts",
        "_scripted_transfers",
        "_transfer_rate",
        "_window",
        "counts",
        "log",
    )

    def __init__(self, plan: FaultPlan, rng: Random) -> None:
        self._draw = rng.random
        self._bounds: dict[type[HandoffAction], tuple[float, float, float, float]] = {
            kind: (
                r.fail,
                r.fail + r.lose,
                r.fail + r.lose + r.duplicate,
                r.fail + r.lose + r.duplicate + r.late,
            )
            for kind, r in plan.acks.items()
            if r.total
        }
        self._fact_rates = [(cls, p) for cls, p in plan.external_facts.items() if p]
        self._window = plan.fact_window_ms
        self._transfer_rate = plan.transfer_failure
        self._decode_cancel = plan.decode_cancel
        self._scripted_acks: dict[tuple[int, type[HandoffAction]], AckFault] = {}
        self._scripted_facts: dict[int, list[tuple[float, ExternalFact]]] = {}
        self._scripted_transfers: set[int] = set()
        for entry in plan.script:
            if isinstance(entry, ScriptedAck):
                self._scripted_acks[(entry.handoff, entry.action)] = entry.fault
            elif isinstance(entry, ScriptedFact):
                self._scripted_facts.setdefault(entry.handoff, []).append((entry.at_ms, entry.fact))
            else:
                self._scripted_transfers.add(entry.handoff)
        self.counts: dict[str, int] = dict.fromkeys(FAULT_COUNTERS, 0)
        self.log: list[tuple[int, str]] = []
        """Every fault injected, as (handoff number, counter name), in the order drawn:
        which handoff got which fault (faults are rare, so this costs the hot path nothing)."""

    def _count(self, handoff: int, kind: str) -> None:
        self.counts[kind] += 1
        self.log.append((handoff, kind))

    def ack_fault(self, handoff: int, kind: type[HandoffAction]) -> AckFault | None:
        """The fault, if any, of the next acknowledgement of ``kind`` in ``handoff``.

        A scripted fault applies to the first acknowledgement only (a re-sent
        cancel is answered normally), probabilities to every one.
        """
        fault: AckFault | None = None
        if self._scripted_acks:
            fault = self._scripted_acks.pop((handoff, kind), None)
        if fault is None:
            bounds = self._bounds.get(kind)
            if bounds is None:
                return None
            x = self._draw()
            if x >= bounds[3]:
                return None
            if x < bounds[0]:
                fault = AckFault.FAIL
            elif x < bounds[1]:
                fault = AckFault.LOSE
            elif x < bounds[2]:
                fault = AckFault.DUPLICATE
            else:
                fault = AckFault.LATE
        self._count(handoff, f"ack_{fault.value}")
        return fault

    def transfer_fails(self, handoff: int) -> bool:
        """Whether the transfer of ``handoff`` fails (asked once per started transfer)."""
        fails = handoff in self._scripted_transfers or (
            self._transfer_rate > 0.0 and self._draw() < self._transfer_rate
        )
        if fails:
            self._count(handoff, "transfer_failed")
        return fails

    def decode_cancel(self, handoff: int) -> float | None:
        """When ``handoff``'s decoding request is canceled, as a fraction of its decode
        (None: it is not).

        Draws only when the plan cancels decodes, so other plans' fault streams stay as
        they were."""
        rate = self._decode_cancel
        if rate > 0.0 and self._draw() < rate:
            self._count(handoff, "decode_canceled")
            return self._draw()
        return None

    def external_facts(self, handoff: int) -> list[tuple[float, ExternalFact]]:
        """The external facts ``handoff`` receives, as (ms after its start, fact class)."""
        facts = list(self._scripted_facts.pop(handoff, ()))
        draw = self._draw
        for cls, probability in self._fact_rates:
            if draw() < probability:
                facts.append((draw() * self._window, cls))
        for _, cls in facts:
            self._count(handoff, f"fact_{cls.__name__}")
        return facts

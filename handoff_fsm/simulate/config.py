"""Simulation settings: the workload, the fake engines' latencies, the driver's policy.

Rule kept here: a configuration is a frozen value, checked when it is built;
every random quantity is a *distribution* that the driver turns into a sampler
over a ``random.Random`` it seeded itself, so equal configurations give equal
runs. Times are virtual milliseconds, and a configuration is refused unless every
time its run can reach stays under :data:`MAX_VIRTUAL_MS`
(:attr:`SimulationConfig.latest_ms`), so none overflows to infinity and the trace
of any run replays. What a configuration says is told back by :func:`settings`,
one entry per field, so a new field is never left out of what ``simulate`` prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from itertools import repeat
from random import Random
from typing import Any, Final, TypeVar

from handoff_fsm.conformance import expected_order
from handoff_fsm.coordinator import ENGINES, Engine
from handoff_fsm.model import (
    U64_MAX,
    Backend,
    HandoffOrder,
    Revision,
    TransferTimingMode,
    checked_revision,
    transfer_delay_ms,
)
from handoff_fsm.simulate.faults import FaultPlan, ScriptedFact

Sampler = Callable[[], float]
CountSampler = Callable[[], int]
_E = TypeVar("_E", bound=StrEnum)

MAX_VIRTUAL_MS: Final = 1e300
"""The latest virtual time a run may reach, in ms: far beyond any run worth simulating,
and far enough below the largest float (1.8e308) that no sum of two times the driver
forms overflows to infinity."""
WAITS_PER_HANDOFF: Final = 32
"""Waits one after another in a handoff's longest chain of events, besides cancels: an
acknowledgement (with a duplicate or a late one after it) and the fact it leads to for each
of its actions, its deadline, an external fact, the decode (docs/simulation.md)."""
WAITS_PER_CANCEL_SEND: Final = 4
"""Waits each send of a cancel may add to that chain (its re-send timer and its
acknowledgement, for either owner and for a decoding destination canceled again)."""


def _check_number(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, not {type(value).__name__}")


def _check_ms(name: str, value: float) -> None:
    _check_number(name, value)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be a finite number of ms >= 0, got {value!r}")


def _check_int(name: str, value: int, low: int = 0, high: int = U64_MAX) -> None:
    """An int in ``[low, high]``: token counts must also fit the wire's u64."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, not {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if value > high:
        raise ValueError(f"{name} must fit in a u64 (<= {high}), got {value}")


def _member(name: str, kind: type[_E], value: str) -> _E:
    """``value`` as a member of the enum ``kind`` (given as the member or its text)."""
    try:
        return kind(value)
    except ValueError:
        expected = ", ".join(member.value for member in kind)
        raise ValueError(f"{name} must be one of {expected}, got {value!r}") from None


def _check_kind(name: str, value: object, kinds: tuple[type, ...]) -> None:
    if not isinstance(value, kinds):
        expected = " or ".join(kind.__name__ for kind in kinds)
        raise ValueError(f"{name} must be a {expected}, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class Fixed:
    """Always ``ms``."""

    ms: float

    def __post_init__(self) -> None:
        _check_ms("Fixed.ms", self.ms)

    def sampler(self, rng: Random) -> Sampler:
        return repeat(self.ms).__next__

    @property
    def max_ms(self) -> float:
        """The longest draw."""
        return self.ms

    def describe(self) -> str:
        return f"{self.ms:g} ms"


@dataclass(frozen=True, slots=True)
class Uniform:
    """Uniform on ``[low, high]``."""

    low: float
    high: float

    def __post_init__(self) -> None:
        _check_ms("Uniform.low", self.low)
        _check_ms("Uniform.high", self.high)
        if self.high < self.low:
            raise ValueError(f"Uniform: high {self.high} < low {self.low}")

    def sampler(self, rng: Random) -> Sampler:
        low, span, draw = self.low, self.high - self.low, rng.random
        return lambda: low + span * draw()

    @property
    def max_ms(self) -> float:
        """The longest draw (``random()`` is below 1)."""
        return self.high

    def describe(self) -> str:
        return f"uniform {self.low:g} to {self.high:g} ms"


@dataclass(frozen=True, slots=True)
class Exponential:
    """Exponential with mean ``mean_ms`` (memoryless service times)."""

    mean_ms: float

    def __post_init__(self) -> None:
        _check_ms("Exponential.mean_ms", self.mean_ms)
        if self.mean_ms == 0.0:
            raise ValueError("Exponential.mean_ms must be > 0 (use Fixed(0.0) for no latency)")

    def sampler(self, rng: Random) -> Sampler:
        rate, draw = 1.0 / self.mean_ms, rng.expovariate
        return lambda: draw(rate)

    @property
    def max_ms(self) -> float:
        """The longest draw: ``expovariate`` is ``-log(1 - random()) * mean`` and
        ``random()`` is a multiple of 2**-53 below 1, so ``1 - random() >= 2**-53``."""
        return self.mean_ms * _LONGEST_EXPONENTIAL

    def describe(self) -> str:
        return f"exponential, mean {self.mean_ms:g} ms"


_LONGEST_EXPONENTIAL: Final = 53 * math.log(2) * (1 + 1e-12)
"""The largest ``-log(1 - random())``, rounded up: the longest exponential draw in means."""


Latency = Fixed | Uniform | Exponential
"""A distribution of virtual milliseconds."""


@dataclass(frozen=True, slots=True)
class Count:
    """Always ``n`` (tokens)."""

    n: int

    def __post_init__(self) -> None:
        _check_int("Count.n", self.n)

    def sampler(self, rng: Random) -> CountSampler:
        return repeat(self.n).__next__

    @property
    def most(self) -> int:
        """The largest draw."""
        return self.n

    def describe(self) -> str:
        return str(self.n)


@dataclass(frozen=True, slots=True)
class CountRange:
    """Uniform integer on ``[low, high]`` (tokens)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        _check_int("CountRange.low", self.low)
        _check_int("CountRange.high", self.high)
        if self.high < self.low:
            raise ValueError(f"CountRange needs low <= high, got {self.low}..{self.high}")

    def sampler(self, rng: Random) -> CountSampler:
        low, width, draw = self.low, self.high - self.low + 1, rng.random
        return lambda: low + int(draw() * width)

    @property
    def most(self) -> int:
        """The largest draw."""
        return self.high

    def describe(self) -> str:
        return f"uniform {self.low} to {self.high}"


Tokens = Count | CountRange
"""A distribution of token counts."""


@dataclass(frozen=True, slots=True)
class DestinationQuirks:
    """Misbehaviours of the fake destination, off by default.

    They exist to show that the conformance record catches a destination that
    breaks the KV-visibility contract; they are not protocol faults.
    """

    visible_on_store: bool = False
    """Make transferred KV visible as soon as it lands, before activation."""


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Everything a run depends on besides the seed-free wall clock.

    ``order`` overrides the backend's handoff order (only to show that the
    conformance record notices); by default vLLM runs SourceFirst and SGLang
    DestinationFirst. TRT-LLM is refused (``unsupported_backend``) under the seed, as in
    the reference; under ``revision="a976b2bf"`` it runs SourceFirst like vLLM.
    """

    backend: Backend = Backend.VLLM
    handoffs: int = 1000
    concurrency: int = 64
    seed: int = 0
    faults: FaultPlan = field(default_factory=FaultPlan)
    coordinator_engine: Engine = "compiled"
    order: HandoffOrder | None = None
    revision: Revision = Revision.SEED
    """The protocol revision the coordinators follow."""

    # workload
    prompt_tokens: Tokens = CountRange(128, 4096)
    destination_cached_tokens: Tokens = Count(0)
    """Prompt tokens the destination already has; the rest are transferable."""
    destination_output_tokens: int = 2
    """Tokens the destination decodes after activation (the fixture's two)."""
    block_tokens: int = 16
    """Tokens per KV block; each transferred block has one hash."""

    # transfer timing published by the source
    timing_mode: TransferTimingMode = TransferTimingMode.FULL_PROMPT
    kv_bytes_per_token: int | None = 131_072
    bandwidth_gb_s: float | None = 25.0
    fallback_transfer_delay_ms: float = 5.0

    # fake engine latencies
    ack_ms: Latency = Uniform(0.05, 0.5)
    """Round trip of an action and its acknowledgement."""
    prefill_ms: Latency = Uniform(10.0, 60.0)
    """From the Submitted acknowledgement to the source holding the KV cache."""
    reserve_ms: Latency = Uniform(0.5, 3.0)
    """From the Accepted acknowledgement to the destination's reservation."""
    decode_ms_per_token: Latency = Fixed(8.0)

    # session policy (handoff_fsm.policy.SessionPolicy, in virtual ms)
    deadline_ms: float | None = 1000.0
    """Coordinator-level time-out: a handoff not complete this long after start gets TimedOut."""
    ack_timeout_ms: float | None = None
    """A work action not acknowledged this long after it was sent is fed as Failed (None: the
    deadline ends a handoff whose acknowledgement was lost)."""
    cleanup_retry_ms: float = 20.0
    """A cancel not acknowledged this long after it was sent is sent again
    (docs/simulation.md)."""
    cleanup_retries: int = 10
    """How many times a cancel is sent again before it is abandoned (a reported problem)."""
    destination_quirks: DestinationQuirks = DestinationQuirks()

    def __post_init__(self) -> None:
        if type(self.backend) is not Backend:
            object.__setattr__(self, "backend", Backend(self.backend))
        object.__setattr__(self, "revision", checked_revision(self.revision))
        if self.order is not None:
            object.__setattr__(self, "order", _member("order", HandoffOrder, self.order))
        object.__setattr__(
            self, "timing_mode", _member("timing_mode", TransferTimingMode, self.timing_mode)
        )
        # refuses TRT-LLM under the seed (unsupported_backend) before any run
        expected_order(self.backend, self.revision)
        _check_int("handoffs", self.handoffs)
        _check_int("concurrency", self.concurrency, low=1)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, not {type(self.seed).__name__}")
        _check_int("destination_output_tokens", self.destination_output_tokens, low=1)
        _check_int("block_tokens", self.block_tokens, low=1)
        _check_kind("faults", self.faults, (FaultPlan,))
        _check_kind("destination_quirks", self.destination_quirks, (DestinationQuirks,))
        for name in ("prompt_tokens", "destination_cached_tokens"):
            _check_kind(name, getattr(self, name), (Count, CountRange))
        for name in ("ack_ms", "prefill_ms", "reserve_ms", "decode_ms_per_token"):
            _check_kind(name, getattr(self, name), (Fixed, Uniform, Exponential))
        if self.kv_bytes_per_token is not None:
            _check_int("kv_bytes_per_token", self.kv_bytes_per_token)
        if self.bandwidth_gb_s is not None:  # NaN or negative: the coordinator refuses it
            _check_number("bandwidth_gb_s", self.bandwidth_gb_s)
        if self.coordinator_engine not in ENGINES:
            raise ValueError(f"unknown coordinator engine {self.coordinator_engine!r}")
        _check_ms("fallback_transfer_delay_ms", self.fallback_transfer_delay_ms)
        _check_ms("cleanup_retry_ms", self.cleanup_retry_ms)
        if self.cleanup_retry_ms == 0.0:
            raise ValueError("cleanup_retry_ms must be > 0")
        if self.deadline_ms is not None:
            _check_ms("deadline_ms", self.deadline_ms)
        if self.ack_timeout_ms is not None:
            _check_ms("ack_timeout_ms", self.ack_timeout_ms)
            if self.ack_timeout_ms == 0.0:
                raise ValueError("ack_timeout_ms must be > 0")
        _check_int("cleanup_retries", self.cleanup_retries)
        latest = self.latest_ms
        if not latest <= MAX_VIRTUAL_MS:  # also refuses NaN
            name, longest = max(self.waits_ms().items(), key=lambda item: _order_key(item[1]))
            raise ValueError(
                f"the run could reach {latest:.3g} virtual ms, beyond the {MAX_VIRTUAL_MS:g} "
                f"ms every time must stay under (so each stays finite): {self.handoffs} "
                f"handoffs of up to {self.waits_per_handoff} waits, the longest {name} of "
                f"{longest:.3g} ms; run fewer handoffs or shorter waits"
            )

    def waits_ms(self) -> dict[str, float]:
        """The longest wait each setting allows between an event and one it causes (ms)."""
        plan = self.faults
        scripted = [entry.at_ms for entry in plan.script if isinstance(entry, ScriptedFact)]
        return {
            "ack_ms": self.ack_ms.max_ms,
            "prefill_ms": self.prefill_ms.max_ms,
            "reserve_ms": self.reserve_ms.max_ms,
            "decode (decode_ms_per_token x destination_output_tokens)": (
                self.decode_ms_per_token.max_ms * self.destination_output_tokens
            ),
            "transfer delay": self._longest_transfer_ms(),
            "deadline_ms": self.deadline_ms or 0.0,
            "ack_timeout_ms": self.ack_timeout_ms or 0.0,
            "cleanup_retry_ms": self.cleanup_retry_ms,
            "faults.late_by_ms": plan.late_by_ms,
            "faults.duplicate_after_ms": plan.duplicate_after_ms,
            "faults.fact_window_ms": plan.fact_window_ms,
            "a scripted fact's at_ms": max(scripted, default=0.0),
        }

    @property
    def waits_per_handoff(self) -> int:
        """How many waits one handoff's longest chain of events can hold."""
        return WAITS_PER_HANDOFF + WAITS_PER_CANCEL_SEND * (self.cleanup_retries + 1)

    @property
    def latest_ms(self) -> float:
        """No virtual time of this run can be later than this (ms).

        Every event the driver schedules comes one wait after the event that caused it,
        at most the longest of :meth:`waits_ms`; one handoff's events form chains of at
        most :attr:`waits_per_handoff` waits; and a handoff starts at time 0 or when an
        earlier one completes. So no event comes later than ``handoffs`` (at least one)
        times that many of the longest wait.
        """
        longest = max(self.waits_ms().values(), key=_order_key)
        return longest * self.waits_per_handoff * max(self.handoffs, 1)

    def _longest_transfer_ms(self) -> float:
        """The longest transfer delay a handoff can be given (infinite if not a number)."""
        delay = transfer_delay_ms(
            self.prompt_tokens.most, self.kv_bytes_per_token, self.bandwidth_gb_s
        )  # the largest prompt moves the most (a destination_missing one moves less)
        if delay is None:
            return self.fallback_transfer_delay_ms
        if math.isnan(delay):
            return math.inf
        return max(delay, self.fallback_transfer_delay_ms)

    @property
    def handoff_order(self) -> HandoffOrder:
        """The order the coordinators run with: the override, else the backend's."""
        backend_order = expected_order(self.backend, self.revision)
        return backend_order if self.order is None else self.order


_DEFAULTS: Final[Mapping[str, Any]] = {
    f.name: f.default for f in fields(SimulationConfig) if not callable(f.default_factory)
}
"""Each field's default, for :func:`command_config`'s own defaults."""

SESSION_SETTINGS: Final = ("deadline_ms", "ack_timeout_ms", "cleanup_retry_ms", "cleanup_retries")
"""The session policy's settings (:class:`~handoff_fsm.policy.SessionPolicy`'s ``deadline``,
``ack_timeout``, ``cleanup_ack_timeout``, ``cleanup_retries``), each a ``simulate`` option."""


def command_config(
    *,
    backend: Backend | str = Backend.VLLM,
    handoffs: int = 1000,
    concurrency: int = 64,
    seed: int = 0,
    fault_rate: float = 0.0,
    decode_cancel_rate: float = 0.0,
    engine: Engine = "compiled",
    revision: Revision | str = Revision.SEED,
    deadline_ms: float | None = _DEFAULTS["deadline_ms"],
    ack_timeout_ms: float | None = _DEFAULTS["ack_timeout_ms"],
    cleanup_retry_ms: float = _DEFAULTS["cleanup_retry_ms"],
    cleanup_retries: int = _DEFAULTS["cleanup_retries"],
) -> SimulationConfig:
    """The configuration ``handoff-fsm simulate`` runs for its options (the one place
    that maps them, so a configuration can be told back as a command line)."""
    return SimulationConfig(
        backend=Backend(backend),
        handoffs=handoffs,
        concurrency=concurrency,
        seed=seed,
        faults=replace(FaultPlan.uniform(fault_rate), decode_cancel=decode_cancel_rate),
        coordinator_engine=engine,
        revision=Revision(revision),
        deadline_ms=deadline_ms,
        ack_timeout_ms=ack_timeout_ms,
        cleanup_retry_ms=cleanup_retry_ms,
        cleanup_retries=cleanup_retries,
    )


# ---------------------------------------------------------------------- told back


_LABELS: Final[Mapping[str, str]] = {
    "backend": "backend",
    "handoffs": "handoffs",
    "concurrency": "concurrency",
    "seed": "seed",
    "coordinator_engine": "coordinator engine",
    "order": "order",
    "revision": "protocol revision",
    "prompt_tokens": "prompt tokens",
    "destination_cached_tokens": "destination cached tokens",
    "destination_output_tokens": "destination output tokens",
    "block_tokens": "tokens per KV block",
    "timing_mode": "transfer timing mode",
    "kv_bytes_per_token": "KV bytes per token",
    "bandwidth_gb_s": "bandwidth",
    "fallback_transfer_delay_ms": "fallback transfer delay",
    "ack_ms": "acknowledgement round trip",
    "prefill_ms": "prefill",
    "reserve_ms": "reservation",
    "decode_ms_per_token": "decode per token",
    "deadline_ms": "deadline",
    "ack_timeout_ms": "acknowledgement time-out",
    "cleanup_retry_ms": "cancel re-sent after",
    "cleanup_retries": "cancel re-sent at most",
    # the fault plan's fields
    "rate": "fault rate",
    "acks": "acknowledgement faults",
    "external_facts": "external facts",
    "transfer_failure": "transfer failure rate",
    "decode_cancel": "decode-cancel rate",
    "script": "scripted faults",
    "fact_window_ms": "external fact window",
    "late_by_ms": "late acknowledgements by",
    "duplicate_after_ms": "duplicates after",
    # the destination's quirks
    "visible_on_store": "destination KV visible on store",
}
"""The words for each field (a field missing here is shown under its own name)."""
_UNITS: Final[Mapping[str, str]] = {
    "bandwidth_gb_s": "GB/s",
    "cleanup_retries": "times",
    "acks": "action kinds",
    "external_facts": "kinds",
    "script": "scripted",
}


def settings(config: SimulationConfig) -> list[tuple[str, str]]:
    """Every setting of ``config`` as ``(name, value in words)``, in field order.

    One row per field of :class:`SimulationConfig`, found by walking its fields (so a
    field added later is shown too); the fault plan and the destination quirks, values
    with fields of their own, give one row per field of theirs. A fault plan made from one
    rate (:meth:`~handoff_fsm.simulate.faults.FaultPlan.uniform`) shows the fields that
    rate set as set by it.
    """
    rows: list[tuple[str, str]] = []
    for setting in fields(config):
        value = getattr(config, setting.name)
        if isinstance(value, FaultPlan):
            rows += _plan_rows(value)
        elif isinstance(value, DestinationQuirks):
            rows += [
                (_label(f.name), _words(f.name, getattr(value, f.name))) for f in fields(value)
            ]
        elif setting.name == "order":
            order = config.handoff_order.value
            rows.append(("order", f"{order} (the backend's)" if value is None else order))
        else:
            rows.append((_label(setting.name), _words(setting.name, value)))
    return rows


def _plan_rows(plan: FaultPlan) -> list[tuple[str, str]]:
    """The fault plan's rows: its rate first (``none``: a plan that injects nothing)."""
    by_rate = FaultPlan.uniform(plan.rate) if plan.rate is not None else None
    default = FaultPlan()
    rate = f"{plan.rate:g}" if plan.rate is not None else "custom plan" if plan.active else "none"
    rows = [(_label("rate"), rate)]
    for setting in fields(plan):
        value = getattr(plan, setting.name)
        if setting.name == "rate":
            continue
        if by_rate is not None and value == getattr(by_rate, setting.name) != getattr(
            default, setting.name
        ):
            rows.append((_label(setting.name), "from the fault rate"))
            continue
        rows.append((_label(setting.name), _words(setting.name, value)))
    return rows


def _label(name: str) -> str:
    return _LABELS.get(name, name.replace("_", " "))


def _words(name: str, value: object) -> str:
    """A setting's value as a person reads it."""
    if value is None:
        return "off" if name.endswith("_ms") else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, StrEnum):
        return value.value
    describe = getattr(value, "describe", None)
    if callable(describe):
        return str(describe())
    if isinstance(value, Mapping | tuple):
        return f"{len(value)} {_UNITS.get(name, 'set')}" if value else "none"
    if isinstance(value, float):
        text = f"{value:g}"
        return f"{text} ms" if name.endswith("_ms") else f"{text} {_UNITS.get(name, '')}".strip()
    return f"{value} {_UNITS.get(name, '')}".strip()


def _order_key(value: float) -> float:
    """``value`` for ``max``: NaN (never expected) as infinity, so it is never passed over."""
    return math.inf if math.isnan(value) else value

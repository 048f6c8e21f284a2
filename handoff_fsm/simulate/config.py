"""Simulation settings: the workload, the fake engines' latencies, the driver's policy.

Rule kept here: a configuration is a frozen value, checked when it is built;
every random quantity is a *distribution* that the driver turns into a sampler
over a ``random.Random`` it seeded itself, so equal configurations give equal
runs. Times are virtual milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import repeat
from random import Random
from typing import TypeVar

from handoff_fsm.conformance import expected_order
from handoff_fsm.coordinator import ENGINES, Engine
from handoff_fsm.model import (
    U64_MAX,
    Backend,
    HandoffOrder,
    Revision,
    TransferTimingMode,
    checked_revision,
)
from handoff_fsm.simulate.faults import FaultPlan

Sampler = Callable[[], float]
CountSampler = Callable[[], int]
_E = TypeVar("_E", bound=StrEnum)


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

    @property
    def handoff_order(self) -> HandoffOrder:
        """The order the coordinators run with: the override, else the backend's."""
        backend_order = expected_order(self.backend, self.revision)
        return backend_order if self.order is None else self.order


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
    )

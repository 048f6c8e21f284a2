"""Simulation settings: distributions are seeded and bounded, bad settings are refused."""

from __future__ import annotations

import io
import json
import math
import statistics
from dataclasses import replace
from random import Random
from typing import Any

import pytest

from handoff_fsm import (
    Backend,
    ConformanceError,
    HandoffErrorCode,
    HandoffOrder,
    TransferTimingMode,
)
from handoff_fsm.io import replay
from handoff_fsm.model import Revision
from handoff_fsm.simulate import (
    Count,
    CountRange,
    Exponential,
    FaultPlan,
    Fixed,
    Simulation,
    SimulationConfig,
    TraceWriter,
    Uniform,
    simulate,
)
from handoff_fsm.simulate.config import MAX_VIRTUAL_MS


def test_fixed_is_constant() -> None:
    draw = Fixed(2.5).sampler(Random(0))
    assert [draw() for _ in range(3)] == [2.5, 2.5, 2.5]


def test_uniform_stays_in_bounds_and_depends_only_on_the_seed() -> None:
    first = Uniform(1.0, 3.0).sampler(Random(7))
    second = Uniform(1.0, 3.0).sampler(Random(7))
    values = [first() for _ in range(1000)]
    assert values == [second() for _ in range(1000)]
    assert all(1.0 <= v <= 3.0 for v in values)
    assert min(values) < 1.1 and max(values) > 2.9


def test_exponential_has_the_requested_mean() -> None:
    draw = Exponential(4.0).sampler(Random(1))
    assert statistics.fmean(draw() for _ in range(20000)) == pytest.approx(4.0, rel=0.05)


def test_count_range_is_inclusive() -> None:
    draw = CountRange(3, 5).sampler(Random(2))
    assert {draw() for _ in range(500)} == {3, 4, 5}
    assert Count(9).sampler(Random(2))() == 9


@pytest.mark.parametrize(
    "build",
    [
        lambda: Fixed(-1.0),
        lambda: Fixed(float("nan")),
        lambda: Uniform(3.0, 1.0),
        lambda: Exponential(0.0),
        lambda: Count(-1),
        lambda: Count(2**64),  # beyond the wire's u64: no fact could carry it
        lambda: Count(True),
        lambda: Count(2.5),  # type: ignore[arg-type]
        lambda: CountRange(5, 3),
        lambda: CountRange(0, 2**64),
        lambda: CountRange(0.5, 3),  # type: ignore[arg-type]
        lambda: Fixed("1"),  # type: ignore[arg-type]
        lambda: Uniform(False, 1.0),
    ],
)
def test_bad_distributions_are_refused(build: object) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  # each message names its own value
        build()  # type: ignore[operator]


def test_orders_follow_the_backend_unless_overridden() -> None:
    assert SimulationConfig(backend=Backend.VLLM).handoff_order is HandoffOrder.SOURCE_FIRST
    assert SimulationConfig(backend=Backend.SGLANG).handoff_order is HandoffOrder.DESTINATION_FIRST
    override = SimulationConfig(backend=Backend.SGLANG, order=HandoffOrder.SOURCE_FIRST)
    assert override.handoff_order is HandoffOrder.SOURCE_FIRST


def test_backend_given_as_text_is_converted() -> None:
    assert SimulationConfig(backend="sglang").backend is Backend.SGLANG  # type: ignore[arg-type]


def test_trtllm_is_refused_as_the_reference_refuses_it() -> None:
    with pytest.raises(ConformanceError) as caught:
        SimulationConfig(backend=Backend.TRTLLM)
    assert caught.value.code is HandoffErrorCode.UNSUPPORTED_BACKEND
    assert "TRT-LLM does not support destination handoff" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("handoffs", -1),
        ("concurrency", 0),
        ("destination_output_tokens", 0),
        ("block_tokens", 0),
        ("fallback_transfer_delay_ms", -1.0),
        ("cleanup_retry_ms", 0.0),
        ("deadline_ms", float("inf")),
        ("coordinator_engine", "interpreted"),
        # wrong types are refused when the configuration is built, not mid-run
        ("handoffs", True),
        ("handoffs", 10.0),
        ("concurrency", "64"),
        ("seed", 1.5),
        ("block_tokens", 16.0),
        ("prompt_tokens", 512),
        ("destination_cached_tokens", (0, 1)),
        ("ack_ms", 0.5),
        ("prefill_ms", Count(3)),
        ("kv_bytes_per_token", -1),
        ("kv_bytes_per_token", 2**64),
        ("kv_bytes_per_token", 1.5),
        ("bandwidth_gb_s", "25"),
        ("deadline_ms", "1000"),
        ("cleanup_retries", 2.0),
        ("faults", 0.1),
        ("destination_quirks", True),
        ("order", "Backwards"),
        ("timing_mode", "Sometimes"),
    ],
)
def test_bad_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field.split("_", maxsplit=1)[0]):
        SimulationConfig(**{field: value})  # type: ignore[arg-type]


def test_settings_given_as_text_are_converted() -> None:
    config = SimulationConfig(order="DestinationFirst", timing_mode="full_prompt")  # type: ignore[arg-type]
    assert config.order is HandoffOrder.DESTINATION_FIRST
    assert config.timing_mode is TransferTimingMode.FULL_PROMPT


def test_the_largest_token_counts_run() -> None:
    """Every value a fake worker puts in a fact was checked here: the largest u64 prompt
    is published, its transfer outlasts the deadline, and each handoff is cleaned up."""
    result = simulate(
        SimulationConfig(handoffs=2, prompt_tokens=Count(2**64 - 1), deadline_ms=100.0)
    )
    assert (result.completed, result.canceled, result.timeouts) == (2, 2, 2)
    assert result.ok, result.problems


# ------------------------------------------------------------ virtual time stays finite


@pytest.mark.parametrize(
    ("settings", "longest"),
    [
        ({"ack_ms": Fixed(1e308), "deadline_ms": None}, "ack_ms"),  # two round trips: inf
        ({"prefill_ms": Exponential(1e307)}, "prefill_ms"),  # its longest draw is 3.7e308
        ({"deadline_ms": 1.5e308}, "deadline_ms"),
        ({"ack_timeout_ms": 1e305}, "ack_timeout_ms"),
        ({"bandwidth_gb_s": float("nan")}, "transfer delay"),  # a delay that is not a number
        ({"bandwidth_gb_s": 1e-300, "deadline_ms": None}, "transfer delay"),
        ({"decode_ms_per_token": Fixed(1e300), "destination_output_tokens": 10}, "decode"),
        ({"faults": FaultPlan(late_by_ms=1e299)}, "faults.late_by_ms"),
        ({"handoffs": 2**64 - 1, "deadline_ms": 1e290}, "deadline_ms"),  # many handoffs
    ],
)
def test_a_run_whose_times_could_overflow_is_refused(
    settings: dict[str, Any], longest: str
) -> None:
    with pytest.raises(ValueError, match="virtual ms") as caught:
        SimulationConfig(**settings)
    message = str(caught.value)
    assert f"{MAX_VIRTUAL_MS:g} ms every time must stay under" in message
    assert f"the longest {longest}" in message


EXTREME = [
    SimulationConfig(handoffs=3, concurrency=1, ack_ms=Fixed(1e297), deadline_ms=None),
    SimulationConfig(handoffs=4, concurrency=2, prefill_ms=Exponential(1e295)),
    SimulationConfig(handoffs=2, prompt_tokens=Count(2**64 - 1), deadline_ms=100.0),
    SimulationConfig(
        handoffs=40,
        concurrency=4,
        faults=FaultPlan.uniform(0.4),
        cleanup_retries=3,
        ack_timeout_ms=0.3,
        seed=5,
    ),
    SimulationConfig(
        handoffs=40,
        revision=Revision.A976B2BF,
        faults=replace(FaultPlan.uniform(0.2), decode_cancel=0.5, late_by_ms=1e290),
        seed=2,
    ),
]


@pytest.mark.parametrize("config", EXTREME, ids=range(len(EXTREME)))
def test_every_time_of_an_accepted_run_is_finite_and_within_its_bound(
    config: SimulationConfig,
) -> None:
    assert config.latest_ms <= MAX_VIRTUAL_MS
    out = io.StringIO()
    simulation = Simulation(config, recorder=TraceWriter(out, clock=lambda: simulation.now))
    result = simulation.run()
    lines = out.getvalue().splitlines()
    times = [json.loads(line)["at_ms"] for line in lines]
    assert all(math.isfinite(t) for t in times) and math.isfinite(result.virtual_ms)
    assert max(times) <= config.latest_ms and result.virtual_ms <= config.latest_ms
    replies = [json.loads(reply) for reply in replay(lines, revision=config.revision)]
    assert not [r for r in replies if r.get("error", {}).get("code") == "invalid_time"]

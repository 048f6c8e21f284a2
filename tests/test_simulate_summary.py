"""The run summary: nearest-rank percentiles, a flat JSON object, a table."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from handoff_fsm.cli.simulate import print_summary
from handoff_fsm.simulate import FaultPlan, SimulationConfig, simulate, summarize
from handoff_fsm.simulate.summary import WALL_CLOCK_KEYS, percentile


@pytest.mark.parametrize(
    ("q", "expected"), [(0.0, 1.0), (0.5, 5.0), (0.9, 9.0), (0.99, 10.0), (1.0, 10.0)]
)
def test_percentiles_are_nearest_rank(q: float, expected: float) -> None:
    assert percentile([float(i) for i in range(1, 11)], q) == expected


def test_no_values_have_no_percentile() -> None:
    assert percentile([], 0.5) is None


def test_the_summary_is_flat_json_with_the_promised_keys() -> None:
    result = simulate(SimulationConfig(handoffs=300, faults=FaultPlan.uniform(0.1), seed=5))
    summary = summarize(result)
    text = json.dumps(summary)
    assert json.loads(text) == summary
    for key in (
        "handoffs",
        "succeeded",
        "canceled",
        "leaked",
        "transfer_delay_p50_ms",
        "transfer_delay_p99_ms",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "latency_max_ms",
        *WALL_CLOCK_KEYS,
    ):
        assert key in summary
    assert summary["handoffs"] == 300 and summary["fault_rate"] == 0.1
    assert summary["succeeded"] + summary["canceled"] == summary["completed"] == 300
    assert summary["leaked"] == 0 and summary["problems"] == 0
    assert summary["latency_p50_ms"] <= summary["latency_p99_ms"] <= summary["latency_max_ms"]
    assert summary["latency_max_ms"] == max(result.latencies_ms)
    assert summary["rejected"] == sum(summary["rejected_by_code"].values())
    assert summary["handoffs_per_s"] == pytest.approx(300 / summary["wall_s"])


def test_an_empty_run_summarizes_without_percentiles() -> None:
    summary = summarize(simulate(SimulationConfig(handoffs=0)))
    assert summary["completed"] == 0 and summary["latency_p50_ms"] is None
    assert summary["transfer_delay_max_ms"] is None


def test_the_table_shows_outcomes_latencies_and_throughput() -> None:
    out = io.StringIO()
    summary = summarize(simulate(SimulationConfig(handoffs=50, seed=1)))
    print_summary(summary, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    for label in ("succeeded", "canceled", "leaked", "end-to-end", "transfer delay", "handoffs/s"):
        assert label in text
    assert "problem" not in text


def test_the_table_lists_problems() -> None:
    out = io.StringIO()
    summary = summarize(simulate(SimulationConfig(handoffs=1, deadline_ms=None)))
    summary.update(problems=12, first_problems=["h0: [source] still held"] * 10, leaked=12)
    print_summary(summary, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert text.count("problem: h0: [source] still held") == 10
    assert "... and 2 more problems" in text

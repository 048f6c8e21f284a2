"""The summary of a run: one flat JSON object, or a table for people.

Rule kept here: the summary is a pure function of the result; only ``wall_s``
and ``handoffs_per_s`` depend on the machine, so two runs with the same seed
give byte-identical JSON once those two keys are dropped. Percentiles are
nearest-rank (an observed value, no interpolation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from handoff_fsm.simulate.result import SimulationResult

PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
WALL_CLOCK_KEYS: frozenset[str] = frozenset({"wall_s", "handoffs_per_s"})
"""The only summary keys allowed to differ between two runs with the same seed."""
_SHOWN_PROBLEMS = 10


def percentile(ordered: Sequence[float], q: float) -> float | None:
    """Nearest-rank ``q`` percentile of an already sorted sequence (``None`` if empty)."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _distribution(prefix: str, values: Sequence[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    stats: dict[str, float | None] = {
        f"{prefix}_{name}_ms": percentile(ordered, q) for name, q in PERCENTILES
    }
    stats[f"{prefix}_max_ms"] = ordered[-1] if ordered else None
    return stats


def summarize(result: SimulationResult) -> dict[str, Any]:
    """The run as one flat, JSON-ready dict (key order is part of the format)."""
    config = result.config
    obs = result.observations
    problems = result.problems
    return {
        "backend": config.backend.value,
        "order": result.order.value,
        "coordinator_engine": config.coordinator_engine,
        "seed": config.seed,
        "concurrency": config.concurrency,
        "fault_rate": config.faults.rate,
        "handoffs": config.handoffs,
        "completed": result.completed,
        "succeeded": result.succeeded,
        "canceled": result.canceled,
        "leaked": result.leaked,
        "stuck": len(result.stuck),
        "abandoned": len(result.abandoned),
        "inputs": result.inputs,
        "rejected": sum(result.rejected.values()),
        "rejected_by_code": result.rejected,
        "late_inputs": result.late_inputs,
        "timeouts": result.timeouts,
        "cleanup_resends": result.cleanup_resends,
        "ack_timeouts": result.ack_timeouts,
        "held_back": result.held_back,
        "unapplied": result.unapplied,
        "revision": config.revision.value,
        "reopened": result.reopened,
        "destination_held_after_cancel_ms": result.destination_held_after_cancel_ms,
        "faults": result.faults,
        "transfers": len(result.transfer_delays_ms),
        **_distribution("transfer_delay", result.transfer_delays_ms),
        **_distribution("latency", result.latencies_ms),
        "virtual_ms": result.virtual_ms,
        "events": result.events,
        "source_drained": obs.source_drained,
        "destination_drained": obs.destination_drained,
        "driver_drained": obs.driver_drained,
        "problems": len(problems),
        "first_problems": list(problems[:_SHOWN_PROBLEMS]),
        "wall_s": result.wall_s,
        "handoffs_per_s": result.completed / result.wall_s if result.wall_s > 0 else None,
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} ms"


def title(summary: dict[str, Any]) -> str:
    """The table's title: what ran (backend, order, size, faults, seed)."""
    rate = summary["fault_rate"]
    return (
        f"handoff-fsm simulate: {summary['backend']} ({summary['order']}), "
        f"{summary['handoffs']} handoffs, concurrency {summary['concurrency']}, "
        f"fault rate {rate if rate is not None else 'custom'}, seed {summary['seed']}"
    )


def rows(summary: dict[str, Any], *, wall_clock: bool = True) -> list[tuple[str, str]]:
    """The table's ``(metric, value)`` rows; sub-rows start with two spaces.

    ``wall_clock=False`` leaves out the rows that differ between runs of the same
    seed (wall clock, throughput): what a file that must not change keeps.
    """
    table: list[tuple[str, str]] = [
        ("completed", f"{summary['completed']} / {summary['handoffs']}"),
        ("succeeded", str(summary["succeeded"])),
        ("canceled", str(summary["canceled"])),
        ("leaked", str(summary["leaked"])),
        ("stuck", str(summary["stuck"])),
        ("cleanup abandoned", str(summary["abandoned"])),
        ("rejected inputs", str(summary["rejected"])),
        *((f"  {code}", str(n)) for code, n in summary["rejected_by_code"].items()),
        ("late inputs (after completion)", str(summary["late_inputs"])),
        ("deadline time-outs", str(summary["timeouts"])),
        ("cancels re-sent", str(summary["cleanup_resends"])),
        ("acknowledgement time-outs", str(summary["ack_timeouts"])),
        ("premature facts held back", str(summary["held_back"])),
        ("  never applied (cleanup came first)", str(summary["unapplied"])),
        ("decode cancels reopened (a976b2bf)", str(summary["reopened"])),
        (
            "destination KV/slot held after cancel",
            f"{summary['destination_held_after_cancel_ms']:.3f} ms",
        ),
        ("faults injected", str(sum(summary["faults"].values()))),
        *((f"  {kind}", str(n)) for kind, n in summary["faults"].items() if n),
    ]
    for prefix, label in (("transfer_delay", "transfer delay"), ("latency", "end-to-end latency")):
        table += [
            (f"{label} {name}", _ms(summary[f"{prefix}_{name}_ms"]))
            for name in ("p50", "p90", "p99", "max")
        ]
    table += [
        ("virtual time", _ms(summary["virtual_ms"])),
        ("events", str(summary["events"])),
    ]
    if wall_clock:
        table += [
            ("wall clock", f"{summary['wall_s']:.3f} s"),
            (
                "throughput",
                "-"
                if summary["handoffs_per_s"] is None
                else f"{summary['handoffs_per_s']:,.0f} handoffs/s",
            ),
        ]
    return table

"""What a sweep's cells say together: each metric's mean and 95% interval across seeds.

Rule kept here: everything is a pure function of the finished cells, in the grid's order,
and of nothing else (no wall clock, no worker, no order of completion), so the same sweep
gives the same numbers and the same ``summary.md`` byte for byte. A configuration's
estimate of a metric is the mean over its seeds with Student's t interval for that mean
(95%, n - 1 degrees of freedom, computed here without SciPy), clipped at 0 since no metric
is negative; one seed gives a mean and no interval. :func:`series` hands the plots the same
numbers (drawn by :mod:`handoff_fsm.render.sweep_plots`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from handoff_fsm.simulate.sweep import Cell, Configuration, Summary, Value, option_text

TIMES: Final = "\N{MULTIPLICATION SIGN}"
LEVEL: Final = 0.95
"""The intervals' confidence level."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One number of a cell's summary that a sweep compares across configurations."""

    name: str
    """Its key in the summary."""
    label: str
    unit: str
    """``ms`` or ``count``."""


METRICS: Final = (
    Metric("latency_p50_ms", "End-to-end latency p50", "ms"),
    Metric("latency_p99_ms", "End-to-end latency p99", "ms"),
    Metric("succeeded", "Completed with Success", "count"),
    Metric("canceled", "Completed with Canceled", "count"),
    Metric("destination_held_after_cancel_ms", "Destination KV held after cancel", "ms"),
    Metric("leaked", "Leaks", "count"),
    Metric("rejected", "Rejected inputs", "count"),
)
"""What ``summary.md`` gives per configuration and the plots draw, in this order."""
METRIC_NAMES: Final = tuple(metric.name for metric in METRICS)
RATES: Final = ("fault_rate", "decode_cancel_rate")
"""The options a plot puts on its x axis when the grid sweeps them."""
LINES: Final = ("backend", "revision")
"""The options that tell a plot's lines apart (every other swept option is a panel)."""


# ---------------------------------------------------------------------- statistics


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution with ``df`` degrees of freedom: P(T <= t)."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@cache
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (p > 0.5) of Student's t with ``df`` degrees of freedom, by bisection
    to the float's precision (``t_quantile(0.975, 1)`` = 12.706...)."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return high


@dataclass(frozen=True, slots=True)
class Estimate:
    """A metric across a configuration's seeds: the mean and its 95% interval."""

    n: int
    """Seeds that gave a value (a latency needs a completed handoff)."""
    mean: float | None
    low: float | None
    """``None`` with fewer than two values."""
    high: float | None


def estimate(values: Sequence[float]) -> Estimate:
    """The mean of ``values`` and Student's t interval for it at :data:`LEVEL`, clipped at 0."""
    n = len(values)
    if n == 0:
        return Estimate(0, None, None, None)
    mean = math.fsum(values) / n
    if n == 1:
        return Estimate(1, mean, None, None)
    half = t_quantile((1.0 + LEVEL) / 2.0, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Estimate(n, mean, max(0.0, mean - half), mean + half)


# ---------------------------------------------------------------------- groups


@dataclass(frozen=True, slots=True)
class Group:
    """One configuration of a sweep, with its seeds and an estimate of every metric."""

    configuration: Configuration
    seeds: tuple[int, ...]
    estimates: Mapping[str, Estimate]

    def value(self, option: str) -> Value:
        return dict(self.configuration)[option]


def groups(cells: Sequence[tuple[Cell, Summary]]) -> list[Group]:
    """The cells by configuration (in the order of their first cell), each estimated."""
    by_configuration: dict[Configuration, list[tuple[int, Summary]]] = {}
    for cell, summary in cells:
        by_configuration.setdefault(cell.configuration, []).append((cell.seed, summary))
    found = []
    for configuration, runs in by_configuration.items():
        estimates = {
            metric.name: estimate(
                [float(s[metric.name]) for _, s in runs if s.get(metric.name) is not None]
            )
            for metric in METRICS
        }
        found.append(Group(configuration, tuple(seed for seed, _ in runs), estimates))
    return found


def swept(options: Mapping[str, Sequence[Value]]) -> list[str]:
    """The options given more than one value, in the grid's order."""
    return [name for name, values in options.items() if len(values) > 1]


def option_name(name: str) -> str:
    """An option as the command line spells it, without its dashes: ``decode-cancel-rate``."""
    return name.replace("_", "-")


def _sort_key(value: Value) -> tuple[int, float, str]:
    if isinstance(value, int | float):
        return (0, float(value), "")
    return (1, 0.0, "" if value is None else str(value))


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a plot: a backend and revision's estimates along the swept rate."""

    label: str
    x: tuple[float, ...]
    estimates: tuple[Estimate, ...]


@dataclass(frozen=True, slots=True)
class Panel:
    """The lines of one combination of the other swept options."""

    title: str
    lines: tuple[Line, ...]


def series(
    found: Sequence[Group], options: Mapping[str, Sequence[Value]], metric: str, rate: str
) -> list[Panel]:
    """What a plot of ``metric`` against ``rate`` draws: one panel per combination of the
    swept options that are neither ``rate`` nor :data:`LINES`, one line per backend and
    revision in it, the points in increasing ``rate``."""
    others = [name for name in swept(options) if name != rate and name not in LINES]
    panels: dict[tuple[Value, ...], dict[tuple[Value, ...], list[Group]]] = {}
    for group in found:
        panel = tuple(group.value(name) for name in others)
        line = tuple(group.value(name) for name in LINES if name in options)
        panels.setdefault(panel, {}).setdefault(line, []).append(group)
    drawn = []
    for panel, lines in panels.items():
        title = ", ".join(
            f"{option_name(name)} {option_text(value)}"
            for name, value in zip(others, panel, strict=True)
        )
        shown = []
        for line, members in lines.items():
            ordered = sorted(members, key=lambda g: _sort_key(g.value(rate)))
            shown.append(
                Line(
                    " ".join(str(value) for value in line),
                    tuple(float(g.value(rate) or 0.0) for g in ordered),
                    tuple(g.estimates[metric] for g in ordered),
                )
            )
        drawn.append(Panel(title, tuple(shown)))
    return drawn


def plot_name(metric: str, rate: str) -> str:
    """The file of the plot of ``metric`` against ``rate``."""
    return f"{metric}-vs-{rate}.svg"


def is_plot_name(name: str) -> bool:
    """Whether ``name`` is one of the plots a sweep writes (of any metric and rate)."""
    return any(name == plot_name(m, r) for m in METRIC_NAMES for r in RATES)


def plotted(options: Mapping[str, Sequence[Value]]) -> list[str]:
    """The rates a plot is drawn against: those the grid sweeps."""
    return [rate for rate in RATES if len(options.get(rate, ())) > 1]


# ---------------------------------------------------------------------- summary.md


def _number(value: float, unit: str) -> str:
    return f"{value:,.3f}" if unit == "ms" else f"{value:,.2f}"


def _interval(e: Estimate, unit: str) -> str:
    if e.low is None or e.high is None:
        return "—"
    return f"{_number(e.low, unit)} \N{EN DASH} {_number(e.high, unit)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(head: Sequence[str], body: Sequence[Sequence[str]], right: int) -> str:
    """A Markdown table; the columns from ``right`` on are right-aligned (numbers)."""
    align = ["---" if i < right else "---:" for i in range(len(head))]
    lines = [
        f"| {' | '.join(_cell(h) for h in head)} |",
        f"|{'|'.join(align)}|",
        *(f"| {' | '.join(_cell(c) for c in row)} |" for row in body),
    ]
    return "\n".join(lines) + "\n"


def metric_table(
    found: Sequence[Group], options: Mapping[str, Sequence[Value]], metric: Metric
) -> str:
    """The table of one metric: per configuration (its swept options), mean, interval, seeds."""
    keys = swept(options)
    head = [*(option_name(name) for name in keys), "mean", f"{LEVEL:.0%} interval", "seeds"]
    body = []
    for group in found:
        e = group.estimates[metric.name]
        mean = "—" if e.mean is None else _number(e.mean, metric.unit)
        body.append(
            [
                *(option_text(group.value(name)) for name in keys),
                mean,
                _interval(e, metric.unit),
                str(e.n),
            ]
        )
    if not keys:
        head.insert(0, "configuration")
        body = [["(the only one)", *row] for row in body]
    return _table(head, body, right=max(1, len(keys)))


def seeds_text(seeds: Sequence[int]) -> str:
    """``0-9`` for a run of seeds, else ``0,3,5`` (as ``--seeds`` takes them)."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def sweep_command(options: Mapping[str, Sequence[Value]], seeds: Sequence[int]) -> str:
    """The ``handoff-fsm sweep`` command of this grid (writing into ``DIR``)."""
    words = ["handoff-fsm sweep"]
    for name, values in options.items():
        words.append(f"--{option_name(name)} {','.join(option_text(v) for v in values)}")
    words += [f"--seeds {seeds_text(seeds)}", "-o DIR"]
    return " ".join(words)


def summary_markdown(
    cells: Sequence[tuple[Cell, Summary]],
    options: Mapping[str, Sequence[Value]],
    seeds: Sequence[int],
    plots: Sequence[str],
) -> str:
    """``summary.md``: the grid, then per metric its plots (of ``plots``, file names) and its
    table."""
    found = groups(cells)
    out = [
        f"# Sweep: {len(cells)} cells ({len(found)} configurations {TIMES} {len(seeds)} seeds)\n",
        "<!-- Generated by `handoff-fsm sweep`; regenerate it, do not edit. -->\n",
        "Each cell is one `handoff-fsm simulate` run (its summary is in `sweep.json`). Each "
        f"number is a configuration's mean over its seeds, with the {LEVEL:.0%} interval of "
        "that mean (Student's t, n \N{MINUS SIGN} 1 degrees of freedom, clipped at 0; none "
        "with one seed). Times are virtual ms, so the same sweep gives the same file.\n",
        f"```sh\n{sweep_command(options, seeds)}\n```\n",
        "## Grid\n",
        _table(
            ["option", "values"],
            [
                *([option_name(n), ", ".join(map(option_text, v))] for n, v in options.items()),
                ["seeds", f"{seeds_text(seeds)} ({len(seeds)})"],
            ],
            right=2,
        ),
    ]
    for metric in METRICS:
        unit = "ms, virtual" if metric.unit == "ms" else "per run"
        out.append(f"## {metric.label} ({unit})\n")
        for name in plots:
            if name.startswith(f"{metric.name}-vs-"):
                rate = name.removeprefix(f"{metric.name}-vs-").removesuffix(".svg")
                out.append(f"![{metric.label} against {option_name(rate)}]({name})\n")
        out.append(f"`{metric.name}` in each cell's summary.\n")
        out.append(metric_table(found, options, metric))
    return "\n".join(out)


def estimate_data(e: Estimate) -> dict[str, Any]:
    """An estimate as JSON values (for a plot's data)."""
    return {"n": e.n, "mean": e.mean, "low": e.low, "high": e.high}

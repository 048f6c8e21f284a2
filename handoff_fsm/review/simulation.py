"""What ``handoff-fsm simulate --plots DIR`` writes: the plots and a ``summary.md``.

Rule kept here: the folder is computed in memory first, as ``name -> bytes``
(:func:`plot_files`), from the run alone, then written, each file atomically
(:func:`~handoff_fsm.io.atomic.write_files`); the same configuration
gives the same bytes, so the folder can be committed and checked for drift.
That is why ``summary.md`` holds the table ``simulate`` prints *without* its
two wall-clock rows (the only figures that differ between runs of one seed),
and only numbers of virtual time otherwise. Its tables give the numbers each
plot draws (from :mod:`handoff_fsm.simulate.phases`), so the Markdown reads on
its own; the plots are embedded by relative links.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from handoff_fsm.io.atomic import write_files
from handoff_fsm.render.plots import HOLDS, LATENCY, PHASES, PLOT_NAMES, plots, run_line, svg
from handoff_fsm.simulate.config import (
    SESSION_SETTINGS,
    SimulationConfig,
    command_config,
    settings,
)
from handoff_fsm.simulate.phases import (
    COMPLETIONS,
    FAULT_LABELS,
    PhaseBar,
    RunTimes,
    hold_spreads,
    phases_by_completion,
    phases_by_fault,
    spread,
)
from handoff_fsm.simulate.result import SimulationResult
from handoff_fsm.simulate.summary import rows, summarize

SUMMARY_NAME: Final = "summary.md"
PLOT_FILES: Final = frozenset((*PLOT_NAMES, SUMMARY_NAME))
"""The names of the files ``--plots DIR`` writes into ``DIR``."""


def command_line(config: SimulationConfig) -> str | None:
    """The ``handoff-fsm simulate`` command that runs ``config`` (``None``: no command
    line can: the configuration was built in Python with other settings)."""
    plan = config.faults
    if plan.rate is None:
        return None
    same = command_config(
        backend=config.backend,
        handoffs=config.handoffs,
        concurrency=config.concurrency,
        seed=config.seed,
        fault_rate=plan.rate,
        decode_cancel_rate=plan.decode_cancel,
        engine=config.coordinator_engine,
        revision=config.revision,
        **{name: getattr(config, name) for name in SESSION_SETTINGS},
    )  # cannot fail: every value was checked when ``config`` was built
    if same != config:
        return None
    words = [
        "handoff-fsm simulate",
        f"--backend {config.backend.value}",
        f"--handoffs {config.handoffs}",
        f"--concurrency {config.concurrency}",
        f"--fault-rate {plan.rate!r}",
    ]
    if plan.decode_cancel:
        words.append(f"--decode-cancel-rate {plan.decode_cancel!r}")
    if config.revision.value != "seed":
        words.append(f"--revision {config.revision.value}")
    words.append(f"--seed {config.seed}")
    defaults = command_config()
    for name in SESSION_SETTINGS:
        value = getattr(config, name)
        if value != getattr(defaults, name):
            text = "off" if value is None else repr(value)
            words.append(f"--{name.replace('_', '-')} {text}")
    if config.coordinator_engine != "compiled":
        words.append(f"--engine {config.coordinator_engine}")
    return " ".join(words)


def parameters(config: SimulationConfig) -> list[tuple[str, str]]:
    """Every setting the run depended on, as ``(name, value)`` rows: the simulator's own
    account of its configuration (:func:`~handoff_fsm.simulate.config.settings`), the one
    ``simulate`` prints above its table too."""
    return settings(config)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(head: Sequence[str], body: Sequence[Sequence[str]], right: int = 1) -> str:
    """A Markdown table; columns from ``right`` on are right-aligned (numbers)."""
    align = ["---" if i < right else "---:" for i in range(len(head))]
    lines = [
        f"| {' | '.join(_cell(h) for h in head)} |",
        f"|{'|'.join(align)}|",
        *(f"| {' | '.join(_cell(c) for c in row)} |" for row in body),
    ]
    return "\n".join(lines) + "\n"


def _handoffs(n: int) -> str:
    return f"{n} handoff" if n == 1 else f"{n} handoffs"


def _ms(value: float) -> str:
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _phase_table(bars: Sequence[PhaseBar], run: RunTimes, first: str) -> str:
    head = [first, "handoffs", *(phase.value for phase in run.phases), "total"]
    body = [
        [bar.label, str(bar.count), *(_ms(m) for m in bar.means_ms), _ms(bar.total_ms)]
        for bar in bars
    ]
    return _table(head, body)


def summary_markdown(result: SimulationResult, run: RunTimes) -> str:
    """``summary.md``: parameters, the run's table, each plot with the numbers it draws."""
    config = result.config
    summary: dict[str, Any] = summarize(result)
    command = command_line(config)
    out = [
        f"# Simulation: {run_line(config, run.order.value)}\n",
        "<!-- Generated by `handoff-fsm simulate --plots`; regenerate it, do not edit. -->\n",
        "Every time here is virtual (the driver's clock, in ms): the same parameters give "
        "the same file.\n",
        "## Parameters\n",
    ]
    if command is not None:
        out.append(f"```sh\n{command} --plots DIR\n```\n")
    out.append(_table(["parameter", "value"], parameters(config), right=2))
    out.append("## Summary\n")
    out.append(
        "The table `handoff-fsm simulate` prints, without its wall-clock rows (wall clock, "
        "throughput: the only ones that differ between runs of one seed).\n"
    )
    table = [
        (f"↳ {metric[2:]}" if metric.startswith("  ") else metric, value)
        for metric, value in rows(summary, wall_clock=False)
    ]
    out.append(_table(["metric", "value"], table))
    problems = result.problems
    if problems:
        out.append(f"**Problems: {len(problems)}** (the first {min(len(problems), 10)}):\n")
        out.extend(f"- {_cell(problem)}" for problem in problems[:10])
        out.append("")

    out.append("## End-to-end latency\n")
    out.append(f"![End-to-end latency per completion]({LATENCY})\n")
    latency_rows = []
    for completion in COMPLETIONS:
        s = spread(
            h.latency_ms
            for h in run.completed
            if h.completion is completion and h.latency_ms is not None
        )
        if s is not None:
            quantiles = (s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms)
            latency_rows.append([completion.value, str(s.count), *map(_ms, quantiles)])
    if latency_rows:
        out.append(
            _table(["completion", "handoffs", "p50 ms", "p90 ms", "p99 ms", "max ms"], latency_rows)
        )
    not_complete = [h.key for h in run.handoffs if h.completed_ms is None]
    if not_complete:
        out.append(
            f"{_handoffs(len(not_complete))} never completed ({', '.join(not_complete[:10])}"
            f"{', ...' if len(not_complete) > 10 else ''}): they are in no plot.\n"
        )

    out.append("## Where the time goes\n")
    out.append(f"![Each phase's share of the mean start()-to-Complete time]({PHASES})\n")
    out.append(
        "Mean ms per handoff in each phase. A phase lasts from the action that begins it "
        "until the next one begins (submit→held: `SubmitPrefill` until the next action, ...); "
        "cleanup, from the first failure, time-out or cancel the coordinator accepted until "
        "`Complete`. The phases of each handoff add up to its end-to-end latency.\n"
    )
    out.append(_phase_table(phases_by_completion(run), run, "completion"))
    out.append(
        "By injected fault: each handoff counts once, under the only kind of fault it "
        f"received, or under {FAULT_LABELS['several']!r}.\n"
    )
    out.append(_phase_table(phases_by_fault(run), run, "fault"))

    out.append("## Who held the KV, and for how long\n")
    out.append(f"![How long each owner held the request's KV]({HOLDS})\n")
    out.append(
        "The source holds it from `SourceHeld` until `ReleaseSource` or `CancelSource` is "
        "issued; the destination from `DestinationReserved` until `ActivateDestination` (then "
        "the request owns it) or `CancelDestination`; the transfer from `StartTransfer` until "
        "`TransferCompleted` or a `Failed` fact.\n"
    )
    hold_rows = [
        [
            hold.owner.value,
            hold.completion.value,
            str(hold.spread.count),
            *map(
                _ms,
                (
                    hold.spread.min_ms,
                    hold.spread.p50_ms,
                    hold.spread.p90_ms,
                    hold.spread.p99_ms,
                    hold.spread.max_ms,
                ),
            ),
            str(hold.held_at_end),
        ]
        for hold in hold_spreads(run)
    ]
    if hold_rows:
        out.append(
            _table(
                [
                    "owner",
                    "completion",
                    "handoffs",
                    "min ms",
                    "p50 ms",
                    "p90 ms",
                    "p99 ms",
                    "max ms",
                    "never let go",
                ],
                hold_rows,
                right=2,
            )
        )
    return "\n".join(out)


def plot_files(result: SimulationResult, run: RunTimes) -> dict[str, bytes]:
    """Everything ``--plots DIR`` writes, by file name (draws with matplotlib)."""
    files = {plot.name: svg(plot) for plot in plots(run, result.config)}
    files[SUMMARY_NAME] = summary_markdown(result, run).encode("utf-8")
    return dict(sorted(files.items()))


def write_plots(folder: Path, result: SimulationResult, run: RunTimes) -> list[Path]:
    """Write :func:`plot_files` into ``folder`` (created if needed), each file atomically;
    returns the paths."""
    return write_files(folder, plot_files(result, run))

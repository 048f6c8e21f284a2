"""``simulate --plots``: what the figures draw is the phase module's numbers, byte-stable SVGs.

The figures are inspected as matplotlib objects (bar widths, step heights, box
extents) and compared with :mod:`handoff_fsm.simulate.phases`; the SVGs carry
the digest of their data; two ``--plots`` runs in separate processes write the
same bytes; ``summary.md`` holds the parameters, the summary table and links to
the plots. Needs matplotlib (the ``plots`` extra, in ``dev``).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.cli import run_cli

pytest.importorskip("matplotlib", reason="the plots need matplotlib: pip install '.[plots]'")

from matplotlib.container import BarContainer
from matplotlib.patches import PathPatch, StepPatch

from handoff_fsm.cli import main
from handoff_fsm.model import HandoffCompletion
from handoff_fsm.render.plots import (
    HOLDS,
    LATENCY,
    PHASES,
    PLOT_NAMES,
    STAMP_KEY,
    Plot,
    digest,
    figure,
    plots,
    read_stamp,
    svg,
)
from handoff_fsm.review.simulation import SUMMARY_NAME, command_line, parameters, plot_files
from handoff_fsm.simulate import FaultPlan, SimulationConfig
from handoff_fsm.simulate.config import command_config
from handoff_fsm.simulate.phases import (
    hold_spreads,
    latency_histogram,
    phases_by_completion,
    phases_by_fault,
    simulate_times,
)
from handoff_fsm.simulate.summary import rows, summarize

CONFIG = SimulationConfig(handoffs=400, concurrency=16, seed=3, faults=FaultPlan.uniform(0.1))
RESULT, RUN = simulate_times(CONFIG)
PLOTS = {plot.name: plot for plot in plots(RUN, CONFIG)}


def test_the_plots_are_the_three_named_figures() -> None:
    assert tuple(PLOTS) == PLOT_NAMES == (LATENCY, PHASES, HOLDS)


def test_the_latency_figure_draws_the_histogram() -> None:
    histogram = latency_histogram(RUN)
    assert histogram is not None
    (ax,) = figure(PLOTS[LATENCY]).axes
    filled = [p for p in ax.patches if isinstance(p, StepPatch) and p.get_fill()]
    assert len(filled) == len(histogram.counts) == 2
    for patch, (completion, counts) in zip(filled, histogram.counts, strict=True):
        values, edges, _ = patch.get_data()
        assert list(values) == list(counts)
        assert list(edges) == list(histogram.edges_ms)
        assert str(patch.get_label()).startswith(f"{completion.value}: ")
    legend = ax.get_legend()
    assert legend is not None
    texts = [t.get_text() for t in legend.get_texts()]
    spreads = dict(histogram.spreads)
    success = spreads[HandoffCompletion.SUCCESS]
    assert texts[0] == (
        f"Success: {success.count} handoffs, p50 {success.p50_ms:.1f} ms, "
        f"p99 {success.p99_ms:.1f} ms, max {success.max_ms:.1f} ms"
    )
    assert texts[-1] == "deadline 1000 ms (TimedOut)"
    assert "ms" in ax.get_xlabel() and ax.get_xscale() == "log"


def _bars(ax: Any) -> dict[str, list[float]]:
    """The drawn width of every segment, by phase name."""
    return {
        str(c.get_label()): [p.get_width() for p in c.patches]
        for c in ax.containers
        if isinstance(c, BarContainer)
    }


def test_the_phase_figure_draws_each_group_s_mean_phases() -> None:
    fig = figure(PLOTS[PHASES])
    by_completion, by_fault = fig.axes[:2]
    for ax, bars in ((by_completion, phases_by_completion(RUN)), (by_fault, phases_by_fault(RUN))):
        drawn = _bars(ax)
        assert list(drawn) == [phase.value for phase in RUN.phases]  # stacked in order
        for i, phase in enumerate(RUN.phases):
            expected = [100.0 * bar.means_ms[i] / bar.total_ms for bar in bars]
            assert drawn[phase.value] == pytest.approx(expected, rel=1e-12)
        for j in range(len(bars)):
            assert math.fsum(widths[j] for widths in drawn.values()) == pytest.approx(100.0)
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == [
            f"{bar.label}\n{bar.count} handoffs, mean {bar.total_ms:.1f} ms"
            if bar.total_ms < 100
            else f"{bar.label}\n{bar.count} handoffs, mean {bar.total_ms:.0f} ms"
            for bar in bars
        ]
    # Segments wide enough show their mean ms.
    shown = {t.get_text() for ax in fig.axes[:2] for t in ax.texts}
    success = phases_by_completion(RUN)[0]
    assert f"{success.means_ms[0]:.1f}" in shown


def test_the_hold_figure_draws_each_owner_s_spread() -> None:
    (ax,) = figure(PLOTS[HOLDS]).axes
    spreads = hold_spreads(RUN)
    boxes = [p for p in ax.patches if isinstance(p, PathPatch)]
    assert len(boxes) == len(spreads) == 6
    for box, hold in zip(boxes, spreads, strict=True):
        xs = np.asarray(box.get_path().vertices, dtype=float)[:, 0]
        assert (min(xs), max(xs)) == pytest.approx((hold.spread.p25_ms, hold.spread.p75_ms))
    vertical = [[float(x) for x in np.asarray(line.get_xdata())] for line in ax.lines]
    medians = {round(xs[0], 9) for xs in vertical if len(set(xs)) == 1}
    assert {round(h.spread.p50_ms, 9) for h in spreads} <= medians
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == f"source, Success\n{spreads[0].spread.count} handoffs"
    assert ax.get_xscale() == "symlog" and "ms" in ax.get_xlabel()


@pytest.mark.slow
def test_each_svg_carries_the_digest_of_its_data() -> None:
    for plot in PLOTS.values():
        data = svg(plot)
        assert read_stamp(data) == digest(plot)
        assert data.count(f'<metadata id="{STAMP_KEY}">'.encode()) == 1
        assert b"<dc:date>" not in data and b"Matplotlib v" not in data


def test_the_digest_changes_with_any_drawn_value() -> None:
    other_result, other_run = simulate_times(command_config(handoffs=400, seed=4, fault_rate=0.1))
    others = {plot.name: plot for plot in plots(other_run, other_result.config)}
    for name, plot in PLOTS.items():
        assert digest(plot) != digest(others[name]), name
        retitled = Plot(plot.name, plot.kind, {**plot.data, "title": "another title"})
        assert digest(retitled) != digest(plot)


def test_plots_of_an_empty_run_still_draw() -> None:
    config = SimulationConfig(handoffs=0)
    result, run = simulate_times(config)
    files = plot_files(result, run)
    assert set(files) == {*PLOT_NAMES, SUMMARY_NAME}
    assert "no handoff completed" in json.dumps([p.data for p in plots(run, config)])


def _plots_run(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    args = ["--handoffs", "150", "--fault-rate", "0.1", "--seed", "9", "--plots", str(folder)]
    return run_cli("simulate", *args, *extra, timeout=300)


@pytest.mark.slow
def test_two_plots_runs_write_the_same_bytes(tmp_path: Path) -> None:
    """Separate processes: other hash seeds, other matplotlib id counters, same files."""
    runs = [_plots_run(tmp_path / name, "--json") for name in ("a", "b")]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.splitlines()) == 1  # --json: stdout is the summary alone
        assert run.stderr.startswith("handoff-fsm simulate: wrote holds.svg, latency.svg, ")
    files = [
        {path.name: path.read_bytes() for path in sorted((tmp_path / name).iterdir())}
        for name in ("a", "b")
    ]
    assert set(files[0]) == {*PLOT_NAMES, SUMMARY_NAME}
    assert files[0] == files[1]


@pytest.mark.slow
def test_summary_md_has_the_parameters_the_table_and_the_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--handoffs", "400", "--concurrency", "16", "--fault-rate", "0.1", "--seed", "3"]
    assert main(["simulate", *args, "--plots", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "wall clock" in captured.out  # the printed table is unchanged
    text = (tmp_path / SUMMARY_NAME).read_text(encoding="utf-8")
    assert command_line(CONFIG) is not None and f"{command_line(CONFIG)} --plots DIR" in text
    for name, value in parameters(CONFIG):
        assert f"| {name} | {value} |" in text
    for metric, value in rows(summarize(RESULT), wall_clock=False):
        shown = f"↳ {metric[2:]}" if metric.startswith("  ") else metric
        assert f"| {shown} | {value} |" in text
    assert "wall clock" not in text.split("## Summary", 1)[1].split("\n|", 1)[1]
    for name in PLOT_NAMES:
        assert f"]({name})" in text  # relative links: the folder moves as a whole
    success = phases_by_completion(RUN)[0]
    row = f"| Success | {success.count} | " + " | ".join(
        f"{m:.1f}" if m < 100 else f"{m:.0f}" for m in (*success.means_ms, success.total_ms)
    )
    assert row in text
    assert (tmp_path / PHASES).read_bytes() == svg(PLOTS[PHASES])


def test_a_command_line_is_given_only_when_one_reproduces_the_run() -> None:
    assert command_line(CONFIG) == (
        "handoff-fsm simulate --backend vllm --handoffs 400 --concurrency 16 --fault-rate 0.1 "
        "--seed 3"
    )
    assert command_config(handoffs=400, concurrency=16, seed=3, fault_rate=0.1) == CONFIG
    custom = SimulationConfig(handoffs=400, deadline_ms=50.0)
    assert command_line(custom) is None
    assert command_line(SimulationConfig(faults=FaultPlan())) is None  # no single rate
    a976 = command_config(backend="trtllm", revision="a976b2bf", decode_cancel_rate=0.25)
    assert command_line(a976) == (
        "handoff-fsm simulate --backend trtllm --handoffs 1000 --concurrency 64 "
        "--fault-rate 0.0 --decode-cancel-rate 0.25 --revision a976b2bf --seed 0"
    )


def test_a_run_with_problems_still_plots_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Handoff 0 loses its activation acknowledgement and nothing times out: stuck."""
    from handoff_fsm.simulate import config as simulate_config  # noqa: PLC0415
    from tests.test_simulate_cli import stuck_config  # noqa: PLC0415

    monkeypatch.setattr(simulate_config, "command_config", stuck_config)
    assert main(["simulate", "--handoffs", "3", "--plots", str(tmp_path)]) == 1
    capsys.readouterr()
    text = (tmp_path / SUMMARY_NAME).read_text(encoding="utf-8")
    assert "**Problems: 3** (the first 3):\n\n- h0: never completed\n" in text
    assert "1 handoff never completed (h0): they are in no plot." in text
    assert "| Success | 2 |" in text
    assert "| fault rate | custom plan |" in text and "| scripted faults | 1 scripted |" in text
    assert "```sh" not in text  # no command repeats a configuration the CLI cannot make


def test_the_digest_names_the_drawing_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure drawn by other code (another plots.py) from the same data is stale."""
    from handoff_fsm.render import plots as plots_module  # noqa: PLC0415

    before = digest(PLOTS[PHASES])
    monkeypatch.setattr(plots_module, "drawing_code", lambda: "0" * 64)
    assert digest(PLOTS[PHASES]) != before

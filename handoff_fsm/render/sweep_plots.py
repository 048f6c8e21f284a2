"""The SVG plots of ``handoff-fsm sweep``: a metric against a swept rate, per backend and revision.

Rule kept here: a plot is its data, as for ``simulate --plots`` (:mod:`.plots`, whose
matplotlib settings, SVG metadata and stamp these plots share): :func:`sweep_plot` turns the
numbers of :func:`~handoff_fsm.simulate.sweep_report.series` into a
:class:`~handoff_fsm.render.plots.Plot` of JSON values (numbers, texts, colours), and
:func:`svg` draws it from that data alone, stamped with the SHA-256 of the data and of the
code that draws it (this module and :mod:`.plots`). One line per backend and revision, its
points the mean over the seeds, the band around it the 95% interval of that mean; one panel
per combination of the other swept options. The same data gives the same bytes on the same
matplotlib; matplotlib is imported only to draw.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_fsm.render.plots import (
    RC,
    Plot,
    drawing_code,
    figure_svg,
    require_matplotlib,
)
from handoff_fsm.simulate.sweep_report import (
    LEVEL,
    Metric,
    Panel,
    estimate_data,
    option_name,
    plot_name,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito colours, told apart with any colour vision; one per backend and revision.
LINE_COLORS: Final = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS: Final = ("o", "s", "^", "D", "v", "P", "X")
DASHES: Final = ("-", "--", "-.", ":")
"""Line styles in turn, so that lines drawn over each other (equal numbers) both show."""
_COLUMNS: Final = 3
"""Panels per row, at most."""


def sweep_plot(metric: Metric, rate: str, panels: Sequence[Panel], seeds: int) -> Plot:
    """The plot of ``metric`` against ``rate`` as data (``seeds``: how many seeds per point)."""
    labels = list(dict.fromkeys(line.label for panel in panels for line in panel.lines))
    style = {
        label: (LINE_COLORS[i % len(LINE_COLORS)], MARKERS[i % len(MARKERS)], DASHES[i % 4])
        for i, label in enumerate(labels)
    }
    unit = "ms, virtual time" if metric.unit == "ms" else "per run"
    return Plot(
        plot_name(metric.name, rate),
        "sweep",
        {
            "title": f"{metric.label} against {option_name(rate)}",
            "subtitle": f"each point: the mean over {seeds} seed{'s' if seeds != 1 else ''}; "
            f"band: the {LEVEL:.0%} interval of that mean (Student's t)",
            "xlabel": option_name(rate),
            "ylabel": f"{metric.label} ({unit})",
            "panels": [
                {
                    "title": panel.title,
                    "lines": [
                        {
                            "label": line.label,
                            "color": style[line.label][0],
                            "marker": style[line.label][1],
                            "dashes": style[line.label][2],
                            "x": list(line.x),
                            "points": [estimate_data(e) for e in line.estimates],
                        }
                        for line in panel.lines
                    ],
                }
                for panel in panels
            ],
            "legend": [
                {
                    "label": label,
                    "color": style[label][0],
                    "marker": style[label][1],
                    "dashes": style[label][2],
                }
                for label in labels
            ],
        },
    )


@cache
def _own_code() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def digest(plot: Plot) -> str:
    """SHA-256 (hex) of the plot's canonical JSON and of the code that draws it: the stamp."""
    text = json.dumps(
        {"kind": plot.kind, "data": plot.data, "drawn_by": [_own_code(), drawing_code()]},
        sort_keys=True,
        ensure_ascii=True,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _draw(fig: Figure, data: Mapping[str, Any]) -> None:
    panels = data["panels"]
    columns = 2 if len(panels) == 4 else min(_COLUMNS, max(1, len(panels)))
    rows = math.ceil(len(panels) / columns) if panels else 1
    width = 8.0 if columns == 1 else 4.6 * columns
    fig.set_size_inches(width, 1.4 + 3.6 * rows)
    fig.suptitle(f"{data['title']}\n{data['subtitle']}", fontsize=12, linespacing=1.5)
    axes = fig.subplots(rows, columns, squeeze=False, sharey=True)
    for index, ax in enumerate(axes.flat):
        if index >= len(panels):
            ax.set_visible(False)
            continue
        panel = panels[index]
        ticks: set[float] = set()
        for line in panel["lines"]:
            x = line["x"]
            ticks.update(x)
            mean = [_nan(p["mean"]) for p in line["points"]]
            low = [_nan(p["low"]) for p in line["points"]]
            high = [_nan(p["high"]) for p in line["points"]]
            ax.fill_between(x, low, high, color=line["color"], alpha=0.18, linewidth=0)
            ax.plot(
                x,
                mean,
                color=line["color"],
                marker=line["marker"],
                linestyle=line["dashes"],
                markersize=5,
                linewidth=1.6,
                label=line["label"],
            )
        shown = sorted(ticks)
        ax.set_xticks(shown, [f"{value:g}" for value in shown])
        ax.grid(axis="both", color="#dddddd", linewidth=0.6)
        if panel["title"]:
            ax.set_title(panel["title"], loc="left", fontsize=10)
        if index % columns == 0:
            ax.set_ylabel(data["ylabel"])
        if index >= len(panels) - columns:
            ax.set_xlabel(data["xlabel"])
    from matplotlib.lines import Line2D  # noqa: PLC0415  # optional dependency

    fig.legend(
        [
            Line2D(
                [],
                [],
                color=entry["color"],
                marker=entry["marker"],
                linestyle=entry["dashes"],
                linewidth=1.6,
            )
            for entry in data["legend"]
        ],
        [entry["label"] for entry in data["legend"]],
        loc="outside lower center",
        ncols=min(len(data["legend"]), 4) or 1,
        frameon=False,
        title="backend, revision",
        title_fontsize=9,
    )


def figure(plot: Plot) -> Figure:
    """Draw ``plot`` from its data (imports matplotlib)."""
    require_matplotlib()
    import matplotlib  # noqa: PLC0415  # optional dependency, loaded only to draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    with matplotlib.rc_context(dict(RC)):
        fig = Figure(layout="constrained")
        FigureCanvasAgg(fig)
        _draw(fig, plot.data)
    return fig


def svg(plot: Plot) -> bytes:
    """The plot as SVG bytes, stamped with :func:`digest` (same data, same bytes)."""
    return figure_svg(figure(plot), digest(plot))

"""The SVG plots of ``handoff-fsm simulate --plots``: latency, phases, KV holds.

Rule kept here: a plot is its data. :func:`plots` turns a run's numbers
(:mod:`handoff_fsm.simulate.phases`) into :class:`Plot` values that hold
everything drawn (numbers, texts, colours) as JSON-ready data, without
matplotlib; :func:`figure` draws a plot from that data alone, and :func:`svg`
writes it with a ``<metadata id="data-sha256">`` stamp: the SHA-256 of the data
and of this module's source, the code that draws it (:func:`digest`). So a
figure is current exactly when its stamp equals the digest a fresh run gives
with this code, whatever matplotlib or fonts drew it, and a test can check what
was drawn against the numbers.

matplotlib is an optional extra (``pip install 'handoff-fsm[plots]'``), imported
only when a plot is drawn, and never through ``pyplot``: each figure is a
:class:`matplotlib.figure.Figure` on its own Agg canvas (written out by the SVG
backend), so no GUI backend is loaded and no global state (``matplotlib.use``,
pyplot's figure list) is touched.
The SVG bytes are the same for the same data on the same matplotlib: a fixed
``svg.hashsalt`` for element ids, no date or creator in the metadata, the
DejaVu Sans that matplotlib ships, text as paths, fixed sizes.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_fsm.model import HandoffCompletion
from handoff_fsm.render.stamp import DATA_KEY
from handoff_fsm.render.stamp import read_stamp as read_figure_stamp
from handoff_fsm.render.stamp import stamp as stamp_figure
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.phases import (
    BINS_PER_DECADE,
    Phase,
    PhaseBar,
    RunTimes,
    hold_spreads,
    latency_histogram,
    phases_by_completion,
    phases_by_fault,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import Formatter
    from matplotlib.typing import RcKeyType

EXTRA: Final = "handoff-fsm[plots]"
INSTALL_HINT: Final = f"pip install '{EXTRA}'"

STAMP_KEY: Final = DATA_KEY
"""The id of the ``<metadata>`` element that carries a plot's data digest."""

LATENCY: Final = "latency.svg"
PHASES: Final = "phases.svg"
HOLDS: Final = "holds.svg"
PLOT_NAMES: Final = (LATENCY, PHASES, HOLDS)

# Okabe-Ito colours: told apart with any colour vision.
PHASE_COLORS: Final[Mapping[Phase, str]] = {
    Phase.SUBMIT: "#0072B2",
    Phase.RESERVE: "#56B4E9",
    Phase.TRANSFER: "#009E73",
    Phase.ACTIVATION: "#E69F00",
    Phase.RELEASE: "#CC79A7",
    Phase.CLEANUP: "#D55E00",
}
COMPLETION_COLORS: Final[Mapping[HandoffCompletion, str]] = {
    HandoffCompletion.SUCCESS: "#0072B2",
    HandoffCompletion.CANCELED: "#D55E00",
}
_DARK_TEXT_ON: Final = frozenset({"#56B4E9", "#E69F00", "#CC79A7", "#009E73"})
"""Segment colours light enough for black labels (white on the others)."""

RC: Final[Mapping[RcKeyType, Any]] = {
    "svg.hashsalt": "handoff-fsm",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 10.0,
    "axes.titlesize": 11.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": 9.0,
    "ytick.labelsize": 9.0,
    "legend.fontsize": 9.0,
    "figure.titlesize": 13.0,
    "figure.dpi": 100.0,
    "savefig.dpi": 100.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
}
"""Everything that decides the SVG's bytes that matplotlib would otherwise take from
the user's matplotlibrc."""
SVG_METADATA: Final[Mapping[str, str | None]] = {"Date": None, "Creator": None}


class PlotsUnavailableError(RuntimeError):
    """matplotlib, which only ``--plots`` needs, is not installed."""

    def __init__(self) -> None:
        super().__init__(f"--plots draws with matplotlib, which is not installed: {INSTALL_HINT}")


def require_matplotlib() -> None:
    """Raise :class:`PlotsUnavailableError` unless matplotlib imports (check before a run)."""
    try:
        import matplotlib  # noqa: F401, PLC0415  # optional: only --plots needs it
    except ImportError as error:
        raise PlotsUnavailableError() from error


@dataclass(frozen=True, slots=True)
class Plot:
    """One figure as data: ``kind`` picks the drawing, ``data`` is everything it draws."""

    name: str
    kind: str
    data: Mapping[str, Any]


@cache
def drawing_code() -> str:
    """SHA-256 (hex) of this module's source: the code that turns data into a figure."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def digest(plot: Plot) -> str:
    """SHA-256 (hex) of the plot's canonical JSON and of :func:`drawing_code`: what the
    SVG's stamp must say (other data, or data drawn by other code, is another figure)."""
    text = json.dumps(
        {"kind": plot.kind, "data": plot.data, "drawn_by": drawing_code()},
        sort_keys=True,
        ensure_ascii=True,
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def read_stamp(svg_bytes: bytes) -> str | None:
    """The data digest an SVG drawn by :func:`svg` carries (``None``: unstamped)."""
    return read_figure_stamp("svg", svg_bytes, STAMP_KEY)


# ---------------------------------------------------------------------- data (no matplotlib)


def run_line(config: SimulationConfig, order: str) -> str:
    """One line naming the run: backend, order, size, faults, seed, revision."""
    plan = config.faults
    faults = "custom faults" if plan.rate is None else f"fault rate {plan.rate:g}"
    if plan.decode_cancel:
        faults += f", decode-cancel rate {plan.decode_cancel:g}"
    return (
        f"{config.backend.value} ({order}), {config.handoffs} handoffs, concurrency "
        f"{config.concurrency}, {faults}, seed {config.seed}, revision {config.revision.value}"
    )


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def _count(n: int) -> str:
    return f"{n} handoff" if n == 1 else f"{n} handoffs"


def _latency_plot(run: RunTimes, config: SimulationConfig, subtitle: str) -> Plot:
    histogram = latency_histogram(run)
    groups: list[dict[str, Any]] = []
    edges: list[float] = []
    if histogram is not None:
        edges = list(histogram.edges_ms)
        spreads = dict(histogram.spreads)
        for completion, counts in histogram.counts:
            s = spreads[completion]
            groups.append(
                {
                    "label": (
                        f"{completion.value}: {_count(s.count)}, p50 {_ms(s.p50_ms)}, "
                        f"p99 {_ms(s.p99_ms)}, max {_ms(s.max_ms)}"
                    ),
                    "color": COMPLETION_COLORS[completion],
                    "counts": list(counts),
                }
            )
    deadline = config.deadline_ms
    shown = deadline is not None and bool(edges) and edges[0] <= deadline <= edges[-1]
    return Plot(
        LATENCY,
        "latency",
        {
            "title": "End-to-end latency per completion (start() to Complete, virtual time)",
            "subtitle": subtitle,
            "xlabel": "end-to-end latency (ms, log scale)",
            "ylabel": f"handoffs per bin ({BINS_PER_DECADE} bins per decade)",
            "edges_ms": edges,
            "groups": groups,
            "deadline_ms": deadline if shown else None,
            "deadline_label": f"deadline {deadline:g} ms (TimedOut)" if shown else "",
            "empty": "no handoff completed" if not groups else "",
        },
    )


def _bars(bars: Sequence[PhaseBar]) -> list[dict[str, Any]]:
    return [
        {
            "label": f"{bar.label}\n{_count(bar.count)}, mean {_ms(bar.total_ms)}",
            "means_ms": list(bar.means_ms),
            "total_ms": bar.total_ms,
        }
        for bar in bars
    ]


def _phases_plot(run: RunTimes, subtitle: str) -> Plot:
    phases = run.phases
    return Plot(
        PHASES,
        "phases",
        {
            "title": "Where the time goes: each phase's share of the mean start()-to-Complete time",
            "subtitle": subtitle,
            "xlabel": "share of the group's mean end-to-end time (%); segments labelled in mean "
            "ms per handoff",
            "phases": [{"name": phase.value, "color": PHASE_COLORS[phase]} for phase in phases],
            "panels": [
                {"title": "by completion", "bars": _bars(phases_by_completion(run))},
                {
                    "title": "by injected fault (each handoff in one row: its only kind of "
                    "fault, or several kinds)",
                    "bars": _bars(phases_by_fault(run)),
                },
            ],
            "note": "A phase lasts from the action that begins it until the next one begins; "
            "cleanup, from the first failure, time-out or cancel until Complete.",
        },
    )


def _holds_plot(run: RunTimes, subtitle: str) -> Plot:
    rows = []
    for hold in hold_spreads(run):
        s = hold.spread
        label = f"{hold.owner.value}, {hold.completion.value}\n{_count(s.count)}"
        if hold.held_at_end:
            label += f" (+{hold.held_at_end} never let go)"
        rows.append(
            {
                "owner": hold.owner.value,
                "label": label,
                "color": COMPLETION_COLORS[hold.completion],
                "min_ms": s.min_ms,
                "p25_ms": s.p25_ms,
                "p50_ms": s.p50_ms,
                "p75_ms": s.p75_ms,
                "max_ms": s.max_ms,
                "median": f"median {_ms(s.p50_ms)}",
            }
        )
    return Plot(
        HOLDS,
        "holds",
        {
            "title": "How long each owner held the request's KV, per completion",
            "subtitle": subtitle,
            "xlabel": "time held (ms; linear below 1 ms, log scale above)",
            "legend": [
                {"label": completion.value, "color": color}
                for completion, color in COMPLETION_COLORS.items()
                if any(row["color"] == color for row in rows)
            ],
            "rows": rows,
            "note": "box: p25 to p75, line: median, whiskers: min to max\n"
            "source: SourceHeld until ReleaseSource/CancelSource; destination: "
            "DestinationReserved until ActivateDestination/CancelDestination;\n"
            "transfer: StartTransfer until TransferCompleted (or Failed)",
            "empty": "no owner held the KV" if not rows else "",
        },
    )


def plots(run: RunTimes, config: SimulationConfig) -> tuple[Plot, ...]:
    """The three plots of a run, as data (latency, phases, holds)."""
    subtitle = run_line(config, run.order.value)
    return (
        _latency_plot(run, config, subtitle),
        _phases_plot(run, subtitle),
        _holds_plot(run, subtitle),
    )


# ---------------------------------------------------------------------- drawing (matplotlib)


def figure(plot: Plot) -> Figure:
    """Draw ``plot`` from its data (imports matplotlib; raises :class:`PlotsUnavailableError`)."""
    require_matplotlib()
    import matplotlib  # noqa: PLC0415  # optional dependency, loaded only to draw
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    with matplotlib.rc_context(dict(RC)):
        fig = Figure(layout="constrained")
        FigureCanvasAgg(fig)
        _DRAWERS[plot.kind](fig, plot.data)
    return fig


def svg(plot: Plot) -> bytes:
    """The plot as SVG bytes, stamped with :func:`digest` (same data, same bytes)."""
    return figure_svg(figure(plot), digest(plot))


def figure_svg(fig: Figure, data_digest: str) -> bytes:
    """A figure of these settings (:data:`RC`) as SVG bytes without a date, stamped with
    the digest of the data it draws: every plot of the package is written this way."""
    import matplotlib  # noqa: PLC0415  # optional dependency, loaded only to draw

    out = io.BytesIO()
    with matplotlib.rc_context(dict(RC)):
        fig.savefig(out, format="svg", metadata=dict(SVG_METADATA))
    return stamp_figure("svg", out.getvalue(), data_digest, STAMP_KEY)


def _plain_ms() -> Formatter:
    """Tick labels as plain numbers of ms (0.1, 1, 10, 1000), not powers of ten."""
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    return FuncFormatter(lambda value, _position: f"{value:g}")


def _titles(fig: Figure, data: Mapping[str, Any]) -> None:
    fig.suptitle(f"{data['title']}\n{data['subtitle']}", fontsize=12, linespacing=1.5)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_latency(fig: Figure, data: Mapping[str, Any]) -> None:
    fig.set_size_inches(10.0, 4.8)
    _titles(fig, data)
    ax = fig.add_subplot()
    if data["empty"]:
        _empty(ax, data["empty"])
        return
    edges = data["edges_ms"]
    for group in data["groups"]:
        ax.stairs(
            group["counts"],
            edges,
            fill=True,
            alpha=0.35,
            color=group["color"],
            label=group["label"],
        )
        ax.stairs(group["counts"], edges, color=group["color"], linewidth=1.4)
    if data["deadline_ms"] is not None:
        ax.axvline(
            data["deadline_ms"],
            color="#555555",
            linestyle=":",
            linewidth=1.2,
            label=data["deadline_label"],
        )
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(_plain_ms())
    ax.set_xlim(edges[0], edges[-1] * 1.25)
    peak = max(max(group["counts"]) for group in data["groups"])
    ax.set_ylim(0.0, peak * 1.35)  # room for the legend above the highest bin
    ax.set_xlabel(data["xlabel"])
    ax.set_ylabel(data["ylabel"])
    ax.grid(axis="both", which="major", color="#dddddd", linewidth=0.6)
    ax.legend(loc="upper left", frameon=False)


def _draw_phases(fig: Figure, data: Mapping[str, Any]) -> None:
    panels = [panel for panel in data["panels"] if panel["bars"]]
    rows = [len(panel["bars"]) for panel in panels]
    fig.set_size_inches(10.0, 2.2 + 0.5 * sum(rows) + 0.7 * len(panels))
    _titles(fig, data)
    if not panels:
        _empty(fig.add_subplot(), "no handoff completed")
        return
    axes = fig.subplots(
        len(panels), 1, height_ratios=[r + 1.2 for r in rows], squeeze=False, sharex=True
    )
    phases = data["phases"]
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        bars = panel["bars"]
        positions = list(range(len(bars)))
        left = [0.0] * len(bars)
        for i, phase in enumerate(phases):
            means = [bar["means_ms"][i] for bar in bars]
            shares = [
                100.0 * m / bar["total_ms"] if bar["total_ms"] > 0 else 0.0
                for m, bar in zip(means, bars, strict=True)
            ]
            container = ax.barh(
                positions,
                shares,
                left=left,
                height=0.7,
                color=phase["color"],
                label=phase["name"],
                edgecolor="white",
                linewidth=0.5,
            )
            text_color = "black" if phase["color"] in _DARK_TEXT_ON else "white"
            labels = [
                (f"{m:.1f}" if m < 100 else f"{m:.0f}") if share >= 7.0 else ""
                for m, share in zip(means, shares, strict=True)
            ]
            ax.bar_label(container, labels=labels, label_type="center", color=text_color, size=8)
            left = [a + b for a, b in zip(left, shares, strict=True)]
        ax.set_yticks(positions, [bar["label"] for bar in bars])
        ax.invert_yaxis()
        ax.set_xlim(0.0, 100.0)
        ax.set_title(panel["title"], loc="left")
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    axes[-1, 0].set_xlabel(data["xlabel"])
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="outside lower center",
        ncols=len(phases),
        frameon=False,
        title=data["note"],
        title_fontsize=9,
    )


def _draw_holds(fig: Figure, data: Mapping[str, Any]) -> None:
    rows = data["rows"]
    fig.set_size_inches(10.0, 2.2 + 0.5 * max(len(rows), 1))
    _titles(fig, data)
    ax = fig.add_subplot()
    if data["empty"]:
        _empty(ax, data["empty"])
        return
    stats = [
        {
            "whislo": row["min_ms"],
            "q1": row["p25_ms"],
            "med": row["p50_ms"],
            "q3": row["p75_ms"],
            "whishi": row["max_ms"],
            "fliers": [],
            "label": row["label"],
        }
        for row in rows
    ]
    drawn = ax.bxp(
        stats,
        orientation="horizontal",
        widths=0.6,
        patch_artist=True,
        showfliers=False,
        medianprops={"color": "black", "linewidth": 1.6},
    )
    for box, row in zip(drawn["boxes"], rows, strict=True):
        box.set_facecolor(row["color"])
        box.set_alpha(0.55)
    for y in range(1, len(rows)):  # a rule between owners
        if rows[y]["owner"] != rows[y - 1]["owner"]:
            ax.axhline(y + 0.5, color="#999999", linewidth=0.6)
    for y, row in enumerate(rows, start=1):
        ax.text(row["max_ms"] * 1.12 + 0.05, y, row["median"], va="center", size=8.5)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=1.0)
    ax.xaxis.set_major_formatter(_plain_ms())
    ax.set_xlim(0.0, max(row["max_ms"] for row in rows) * 8.0)
    ax.set_xlabel(data["xlabel"])
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    from matplotlib.patches import Patch  # noqa: PLC0415

    fig.legend(
        [Patch(facecolor=entry["color"], alpha=0.55) for entry in data["legend"]],
        [entry["label"] for entry in data["legend"]],
        loc="outside lower center",
        ncols=len(data["legend"]),
        frameon=False,
        title=data["note"],
        title_fontsize=9,
    )


_DRAWERS: Final[Mapping[str, Callable[[Figure, Mapping[str, Any]], None]]] = {
    "latency": _draw_latency,
    "phases": _draw_phases,
    "holds": _draw_holds,
}

"""The files ``handoff-fsm diagrams`` and ``handoff-fsm review`` write, and the drift check.

Rule kept here: every output is first computed in memory as ``name -> bytes``
(:func:`diagram_files`, :func:`review_files`), from the code alone, then
written, each file atomically (:func:`~handoff_fsm.io.atomic.write_files`); the
drift check compares the same mapping with a folder. So what ``make diagrams``
writes, what the tests regenerate and what the drift check expects are one
computation, and the same code gives the same bytes.

A figure is drawn only when it is written (:func:`diagram_sources` holds how to
draw each file): when Graphviz cannot draw (``dot`` missing), every file that
needs no Graphviz (DOT, Mermaid, Markdown, traces) is still written, and
:class:`NotDrawnError` names the figures left out. The review links those files
by paths relative to itself, so :func:`write_review` writes them beside it.

What is written: the chart family (every revision in one chart) at the top,
one folder per revision (``seed/``, ``a976b2bf/``) with that revision's chart
(:mod:`~handoff_fsm.structure.revisions`), each chart also exported as the documents
other tools run (SCXML, JSON, YAML, XState: :mod:`~handoff_fsm.render.export`), its
transition table and its run of
the decode-phase cancel (:mod:`~handoff_fsm.simulate.decode_cancel`) and its system
check's counterexamples (:mod:`~handoff_fsm.review.system`), the two runs side by side
at the top, and the scripted lifecycles. Names are paths
relative to the folder (``seed/statechart.svg``).

The drift check compares text files (DOT, Mermaid, Markdown) byte for byte and
figures (SVG, PNG) by the hash of the DOT they were drawn from
(:mod:`~handoff_fsm.render.stamp`): a figure drawn by another Graphviz
version or with other fonts is current, one drawn from another DOT is stale.
Every file under the folder counts, in subfolders too.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from handoff_fsm.chart import HandoffChart
from handoff_fsm.io.atomic import write_bytes, write_files
from handoff_fsm.model import VERDICT_LOSSES, Revision
from handoff_fsm.render.dot import statechart_dot
from handoff_fsm.render.export import SUFFIXES, export_document
from handoff_fsm.render.graphviz import GraphvizError, render
from handoff_fsm.render.mermaid import statechart_mermaid
from handoff_fsm.render.sequence import (
    COMPACT,
    has_held,
    render_sequence,
    render_sequence_legend,
    sequence_mermaid,
)
from handoff_fsm.render.side_by_side import Panel, side_by_side_svg
from handoff_fsm.render.stamp import comparable
from handoff_fsm.review.design import (
    SIDE_BY_SIDE_FILE,
    TABLES_NAME,
    decode_cancel_file,
    lifecycle_file,
    review_markdown,
    statechart_file,
    tables_file,
)
from handoff_fsm.review.provenance import provenance
from handoff_fsm.review.system import stale_system_files, system_files
from handoff_fsm.review.tables import inputs_markdown, transition_tables_markdown
from handoff_fsm.simulate.decode_cancel import TITLE as DECODE_CANCEL_TITLE
from handoff_fsm.simulate.decode_cancel import DecodeCancelRun, decode_cancel_runs
from handoff_fsm.simulate.scenarios import scenario_runs
from handoff_fsm.structure.describe import ChartModel, describe_chart
from handoff_fsm.structure.revisions import revision_chart

DIAGRAMS_DIR: Final = Path("diagrams")
"""Where ``make diagrams`` writes (relative to the repository root)."""
REVIEW_NAME: Final = "REVIEW.md"

Source = Callable[[], bytes]
"""How to make one file's bytes (a figure is drawn only when it is called)."""


class NotDrawnError(GraphvizError):
    """Graphviz could not draw some figures; every other file was written.

    The message is Graphviz's reason (how to install it, when ``dot`` is missing)
    and the figures not drawn, in one line.
    """

    def __init__(
        self, reason: GraphvizError, not_drawn: tuple[str, ...], written: tuple[Path, ...]
    ) -> None:
        super().__init__(f"{reason}; not drawn: {', '.join(not_drawn)}")
        self.reason = reason
        self.not_drawn = not_drawn
        """The figures (paths relative to the folder) left out."""
        self.written = written
        """The files that were written."""


def _text(source: str) -> bytes:
    return source.encode("utf-8")


def _lines(trace: tuple[str, ...]) -> bytes:
    return _text("".join(f"{line}\n" for line in trace))


def _given(data: bytes) -> Source:
    return lambda: data


def transitions_markdown(model: ChartModel) -> str:
    """The transition tables file of a chart: the family's, or one revision's."""
    if model.revision is None:
        source, about = "handoff_fsm.chart", ""
    else:
        name = f"`{model.revision.value}`"
        source = f"handoff_fsm.chart and the compiled table of revision {model.revision.value}"
        about = (
            f"The chart as revision {name} runs it: the states no {name} run enters and the "
            f"transitions it cannot take are left out, and the parts of a guard that are the "
            f"same in every chart state {name} reaches are decided, not written. Every "
            f"revision in one chart: [../{TABLES_NAME}](../{TABLES_NAME}).\n\n"
        )
    return (
        f"# Transitions of {model.title}\n\n"
        f"<!-- Generated by `handoff-fsm diagrams` from {source}; do not edit. -->\n\n"
        + about
        + transition_tables_markdown(model)
        + "## Inputs and the events they become\n\n"
        + inputs_markdown(model)
    )


def _chart_sources(model: ChartModel, chart: type[HandoffChart]) -> dict[str, Source]:
    """A chart's picture in every format, its transition tables, and the chart exported in
    every format other tools run (:mod:`handoff_fsm.render.export`)."""
    revision = model.revision
    dot = statechart_dot(model)
    return {
        statechart_file("dot", revision): _given(_text(dot)),
        statechart_file("svg", revision): partial(render, dot, "svg"),
        statechart_file("png", revision): partial(render, dot, "png"),
        statechart_file("mmd", revision): _given(_text(statechart_mermaid(model))),
        tables_file(revision): _given(_text(transitions_markdown(model))),
        **{
            statechart_file(suffix, revision): _given(_text(export_document(model, fmt, chart)))
            for fmt, suffix in SUFFIXES.items()
        },
    }


def diagram_sources(chart: type[HandoffChart] = HandoffChart) -> dict[str, Source]:
    """Everything ``handoff-fsm diagrams`` writes, by path, each file's bytes made on demand.

    The text files are computed here; the figures are drawn (by Graphviz) only when
    their source is called.
    """
    files = _chart_sources(describe_chart(chart), chart)
    for revision in Revision:
        files |= _chart_sources(revision_chart(revision, chart), chart)
    for run in scenario_runs():
        files[lifecycle_file(run, "jsonl")] = _given(_lines(run.trace))
        files[lifecycle_file(run, "mmd")] = _given(_text(sequence_mermaid(run.lifecycle)))
        files[lifecycle_file(run, "svg")] = partial(render_sequence, run.lifecycle, "svg")
    runs = decode_cancel_runs()
    for decode in runs:
        files[decode_cancel_file(decode.revision, "jsonl")] = _given(_lines(decode.trace))
        files[decode_cancel_file(decode.revision, "mmd")] = _given(
            _text(sequence_mermaid(decode.lifecycle))
        )
        files[decode_cancel_file(decode.revision, "svg")] = partial(
            render_sequence, decode.lifecycle, "svg"
        )
    files[SIDE_BY_SIDE_FILE] = partial(decode_cancel_side_by_side, runs)
    files |= system_files()
    return dict(sorted(files.items()))


def diagram_files(chart: type[HandoffChart] = HandoffChart) -> dict[str, bytes]:
    """Everything ``handoff-fsm diagrams`` writes, by path (needs Graphviz's ``dot``)."""
    return {name: source() for name, source in diagram_sources(chart).items()}


def review_files(
    chart: type[HandoffChart] = HandoffChart,
    *,
    against: str | None = None,
    losses: int = VERDICT_LOSSES,
) -> dict[str, bytes]:
    """What ``handoff-fsm review`` writes into the diagrams folder."""
    markdown = review_markdown(describe_chart(chart), against=against, losses=losses)
    return {REVIEW_NAME: _text(markdown)}


def _write_drawn(folder: Path, sources: Mapping[str, Source]) -> list[Path]:
    """Write every file of ``sources`` that can be made; figures Graphviz cannot draw are
    left out, and then :class:`NotDrawnError` names them (after the rest is written)."""
    files: dict[str, bytes] = {}
    failures: dict[str, GraphvizError] = {}
    for name, source in sources.items():
        try:
            files[name] = source()
        except GraphvizError as error:
            failures[name] = error
    written = write_files(folder, files)
    for stale in stale_system_files(folder, sources):  # a property that holds now
        stale.unlink()
    if failures:
        first = next(iter(failures.values()))
        raise NotDrawnError(first, tuple(failures), tuple(written))
    return written


def write_diagrams(outdir: Path = DIAGRAMS_DIR) -> list[Path]:
    """Write every diagram into ``outdir`` (created if missing), each file atomically;
    files whose bytes are unchanged are left alone.

    Without Graphviz every file that needs none is written, then :class:`NotDrawnError`
    names the figures it could not draw.
    """
    return _write_drawn(outdir, diagram_sources())


def write_review(
    path: Path = DIAGRAMS_DIR / REVIEW_NAME,
    *,
    against: str | None = None,
    git: bool = False,
    losses: int = VERDICT_LOSSES,
) -> list[Path]:
    """Write the design review to ``path``, and the files it links beside it.

    The review links the chart, tables, lifecycles and traces by paths relative to
    itself, so what :func:`write_diagrams` writes is written into ``path``'s folder
    too (which must exist), and every link resolves wherever the review goes. Returns
    the review's path, then theirs. ``against`` (``git:REV``) adds the diff of the
    working tree against that revision; ``git`` also writes the working tree's commit
    into the review's provenance (for a copy that travels; the committed review leaves
    it out, see :mod:`.provenance`); ``losses`` is the verdict's tolerance (0: none
    judged). Without Graphviz the review and the files that
    need none are written, then :class:`NotDrawnError` names the figures left out.
    """
    sources = diagram_sources()
    if path.name in sources:  # before anything is computed or written
        raise FileExistsError(
            errno.EEXIST, "the review would be overwritten by a file it links", str(path)
        )
    model = describe_chart()
    stamp = provenance(model, git=git)
    data = _text(review_markdown(model, against=against, stamp=stamp, losses=losses))
    write_bytes(path, data)
    try:
        beside = _write_drawn(path.parent, sources)
    except NotDrawnError as error:
        raise NotDrawnError(error.reason, error.not_drawn, (path, *error.written)) from None
    return [path, *beside]


@dataclass(frozen=True, slots=True)
class Drift:
    """How a folder differs from what the code generates."""

    stale: tuple[str, ...]
    """Files whose text differs, or figures drawn from another DOT (or unstamped)."""
    missing: tuple[str, ...]
    """Files the code generates that the folder lacks."""
    extra: tuple[str, ...]
    """Files in the folder the code does not generate."""

    @property
    def ok(self) -> bool:
        return not (self.stale or self.missing or self.extra)

    def __str__(self) -> str:
        if self.ok:
            return "up to date"
        parts = [
            f"{what}: {', '.join(names)}"
            for what, names in (
                ("stale", self.stale),
                ("missing", self.missing),
                ("not generated", self.extra),
            )
            if names
        ]
        return "; ".join(parts) + " (regenerate with `make diagrams`)"


def drift(folder: Path, expected: Mapping[str, bytes]) -> Drift:
    """Compare ``folder`` with ``expected`` (``path -> bytes``), file by file.

    Paths are relative to ``folder``, ``/``-separated; files in subfolders count.
    Text must match byte for byte; a figure must carry the stamp of the expected one
    (:func:`~handoff_fsm.render.stamp.comparable`), whatever Graphviz drew it.
    """
    present = {
        path.relative_to(folder).as_posix(): path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    return Drift(
        stale=tuple(
            sorted(
                name
                for name, data in expected.items()
                if name in present
                and comparable(name, present[name].read_bytes()) != comparable(name, data)
            )
        ),
        missing=tuple(sorted(n for n in expected if n not in present)),
        extra=tuple(sorted(n for n in present if n not in expected)),
    )


def decode_cancel_side_by_side(runs: tuple[DecodeCancelRun, ...]) -> bytes:
    """The runs' drawings next to each other (compact, to read at a web page's width), each
    marking where the runs part, and their legend once, under both."""
    panels = tuple(
        Panel(
            heading=f"{run.revision.value}",
            lines=run.words,
            svg=render_sequence(
                run.lifecycle, "svg", COMPACT, legend=False, parting=run.parting_line
            ),
        )
        for run in runs
    )
    timed = any(run.lifecycle.timed for run in runs)
    held = any(has_held(run.lifecycle) for run in runs)
    legend = render_sequence_legend("svg", timed=timed, held=held)
    return side_by_side_svg(DECODE_CANCEL_TITLE, panels, footer=legend)

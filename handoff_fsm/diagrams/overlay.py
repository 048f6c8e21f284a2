"""Trace overlay: the statechart with one coordinator's path through a trace drawn on it.

Rule kept here: the path is what the real replay did. The trace is followed
with :func:`~handoff_fsm.diagrams.follow.follow` (the replayer behind
``handoff-fsm replay``, and its own coordinator's chart state before and
after each line), and the declared transitions an input fired are the ones
python-statemachine's own interpreter fires for that step
(:func:`handoff_fsm.verify.coverage.step_transitions`). A rejected input marks
the rejecting row of its state; every error reply is listed beside the chart.
When the trace has times (``"at_ms"``, as replay accepted them), each step
number on the chart carries its time, and the title the handoff's duration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.diagrams.dot import Highlight, statechart_dot
from handoff_fsm.diagrams.follow import TraceLine, follow
from handoff_fsm.diagrams.lifecycle import ms_text
from handoff_fsm.diagrams.model import ChartModel, describe_chart
from handoff_fsm.diagrams.render import render
from handoff_fsm.diagrams.stamp import Format
from handoff_fsm.errors import TraceError
from handoff_fsm.io.lines import bounded_lines
from handoff_fsm.model import HandoffCompletion, HandoffOrder, Revision
from handoff_fsm.verify.coverage import rejection_transition, step_transitions

_REJECTION_CODES = frozenset(rejection.code for rejection in REJECTIONS.values())

TraceOverlayError = TraceError
"""What :func:`trace_path` raises for a trace without that coordinator (``unknown_coordinator``)."""


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One input of the chosen coordinator and what it did to the chart."""

    number: int
    """1-based position among this coordinator's inputs (``new`` excluded)."""
    line: int
    """Line of the trace file (1-based)."""
    op: str
    event: str | None
    """The chart event the input became (``None``: stopped before the chart)."""
    before: tuple[str, ...]
    after: tuple[str, ...]
    edges: tuple[int, ...]
    """Indexes of the declared transitions it fired (see :class:`~.model.Edge`)."""
    rejected_by: int | None
    """The rejecting transition that turned the event down, if one did."""
    error: tuple[str, str] | None
    """``(code, message)`` of an error reply."""
    at_ms: float | None = None
    """The line's time (``"at_ms"``) as replay accepted it."""


@dataclass(frozen=True, slots=True)
class TracePath:
    """Everything the overlay draws for one coordinator of a trace."""

    coordinator: str
    order: HandoffOrder
    revision: Revision
    steps: tuple[TraceStep, ...]
    unattributed_errors: tuple[tuple[int, str, str], ...]
    """``(line, code, message)`` of error replies that name no coordinator."""
    final_state: tuple[str, ...]
    completion: HandoffCompletion | None
    duration_ms: float | None = None
    """From ``new`` to the completion, when the trace has times
    (:attr:`~handoff_fsm.diagrams.follow.FollowedRun.duration_ms`)."""


def trace_path(
    lines: Iterable[TraceLine],
    coordinator: str | None = None,
    *,
    revision: Revision | str = Revision.SEED,
) -> TracePath:
    """Replay ``lines`` and follow ``coordinator`` (default: the first one the trace creates).

    Raises :class:`~handoff_fsm.errors.TraceError` (``unknown_coordinator``) when the
    trace creates no such coordinator.
    """
    run = follow(lines, coordinator, revision=revision)
    transitions = step_transitions(run.revision)
    steps = []
    for step in run.steps:
        fired: tuple[int, ...] = ()
        rejected_by = None
        code = step.error[0] if step.error is not None else None
        if (
            step.event is not None
            and code is None
            and (step.actions or step.after is not step.before)
        ):
            fired = tuple(sorted(transitions[(step.before.index, step.event)]))
        elif step.event is not None and code in _REJECTION_CODES:
            assert code is not None
            rejected_by = rejection_transition(step.before.leaves, step.event, code)
        steps.append(
            TraceStep(
                number=step.number,
                line=step.line,
                op=step.op,
                event=step.event,
                before=step.before.leaves,
                after=step.after.leaves,
                edges=fired,
                rejected_by=rejected_by,
                error=(step.error[0].value, step.error[1]) if step.error is not None else None,
                at_ms=step.at_ms,
            )
        )
    return TracePath(
        coordinator=run.coordinator,
        order=run.order,
        revision=run.revision,
        steps=tuple(steps),
        unattributed_errors=tuple(
            (line, code.value, text) for line, code, text in run.unattributed
        ),
        final_state=run.final_state,
        completion=run.completion,
        duration_ms=run.duration_ms,
    )


def overlay_highlight(path: TracePath, model: ChartModel, *, title: str = "") -> Highlight:
    """What to mark on the chart for ``path``."""
    parents = {state.id: state.parent for state in model.states}
    visited: set[str] = set()
    initial = model.state(model.initial)
    leaves = [path.steps[0].before] if path.steps else [_initial_leaves(model, initial.id)]
    leaves += [step.after for step in path.steps]
    for configuration in leaves:
        for leaf in configuration:
            node: str | None = leaf
            while node is not None:
                visited.add(node)
                node = parents[node]
    taken: dict[int, list[int]] = {}
    rejected: dict[int, list[int]] = {}
    for step in path.steps:
        for edge in step.edges:
            taken.setdefault(edge, []).append(step.number)
        if step.rejected_by is not None:
            rejected.setdefault(step.rejected_by, []).append(step.number)
    times = {
        step.number: f"t={ms_text(step.at_ms)} ms" for step in path.steps if step.at_ms is not None
    }
    notes = [
        f"step {step.number} (line {step.line}, {step.op}"
        f"{', ' + times[step.number] if step.number in times else ''}): "
        f"{step.error[0]}: {step.error[1]}"
        for step in path.steps
        if step.error is not None
    ]
    notes += [f"line {line}: {code}: {message}" for line, code, message in path.unattributed_errors]
    return Highlight(
        visited=frozenset(visited),
        taken={edge: tuple(numbers) for edge, numbers in sorted(taken.items())},
        final=frozenset(path.final_state),
        rejected={edge: tuple(numbers) for edge, numbers in sorted(rejected.items())},
        title=title,
        notes=tuple(notes),
        times=times,
    )


def _initial_leaves(model: ChartModel, state_id: str) -> tuple[str, ...]:
    state = model.state(state_id)
    if not state.is_cluster:
        return (state.id,)
    children = model.children(state_id)
    if state.kind.value == "parallel":
        return tuple(leaf for child in children for leaf in _initial_leaves(model, child.id))
    first = next((c for c in children if c.initial), children[0])
    return _initial_leaves(model, first.id)


def overlay_dot(
    lines: Iterable[TraceLine],
    coordinator: str | None = None,
    *,
    name: str = "",
    revision: Revision | str = Revision.SEED,
) -> str:
    """The statechart as DOT with ``coordinator``'s path through the trace highlighted.

    ``revision`` is that of ``new`` lines naming none, as for ``handoff-fsm replay``.
    """
    model = describe_chart()
    path = trace_path(lines, coordinator, revision=revision)
    status = path.completion.value if path.completion is not None else "not complete"
    if path.duration_ms is not None:
        status += f" in {ms_text(path.duration_ms)}\u00a0ms"  # no line break before the unit
    revised = "" if path.revision is Revision.SEED else f", revision {path.revision.value}"
    title = (
        f"{model.name}: {name + ' · ' if name else ''}coordinator {path.coordinator} "
        f"({path.order.value}{revised}), {len(path.steps)} inputs, {status}"
    )
    return statechart_dot(model, overlay_highlight(path, model, title=title))


OVERLAY_SUFFIXES = (".svg", ".png", ".dot")
"""What an overlay is written as."""


def overlay_bytes(source: str, suffix: str) -> bytes:
    """The overlay DOT ``source`` as the file ``suffix`` names (see :data:`OVERLAY_SUFFIXES`)."""
    suffix = suffix.lower()
    if suffix not in OVERLAY_SUFFIXES:
        raise ValueError(f"output must end in .svg, .png or .dot, not {suffix or 'no suffix'!r}")
    if suffix == ".dot":
        return source.encode("utf-8")
    fmt: Format = "svg" if suffix == ".svg" else "png"
    return render(source, fmt)


def write_overlay(
    trace: Path,
    output: Path,
    coordinator: str | None = None,
    *,
    revision: Revision | str = Revision.SEED,
) -> Path:
    """Draw the overlay of ``trace`` into ``output`` (``.svg``, ``.png`` or ``.dot``)."""
    if output.suffix.lower() not in OVERLAY_SUFFIXES:
        raise ValueError(f"output must end in .svg, .png or .dot, not {output.name!r}")
    with trace.open("rb") as stream:
        source = overlay_dot(bounded_lines(stream), coordinator, name=trace.name, revision=revision)
    data = overlay_bytes(source, output.suffix)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    return output

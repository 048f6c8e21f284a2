"""Trace overlay: the statechart with one coordinator's path through a trace drawn on it.

Rule kept here: the path is handed in, as the :class:`~handoff_fsm.io.follow.FollowedRun`
that :func:`~handoff_fsm.io.follow.follow` made of what the real replay did (the
replayer behind ``handoff-fsm replay``, its own coordinator's chart state before and
after each line, and the declared transitions python-statemachine's own interpreter
fires for each step); this module only draws it. A rejected input marks the rejecting
row of its state; every error reply is listed beside the chart. When the trace has
times (``"at_ms"``, as replay accepted them), each step number on the chart carries its
time, and the title the handoff's duration.
"""

from __future__ import annotations

from handoff_fsm.io.follow import FollowedRun
from handoff_fsm.io.lifecycle import ms_text
from handoff_fsm.model import Revision
from handoff_fsm.render.dot import Highlight, statechart_dot
from handoff_fsm.render.graphviz import render
from handoff_fsm.render.stamp import Format
from handoff_fsm.structure.describe import ChartModel, describe_chart


def overlay_highlight(run: FollowedRun, model: ChartModel, *, title: str = "") -> Highlight:
    """What to mark on the chart for ``run``."""
    parents = {state.id: state.parent for state in model.states}
    visited: set[str] = set()
    initial = model.state(model.initial)
    leaves = [run.steps[0].before.leaves] if run.steps else [_initial_leaves(model, initial.id)]
    leaves += [step.after.leaves for step in run.steps]
    for configuration in leaves:
        for leaf in configuration:
            node: str | None = leaf
            while node is not None:
                visited.add(node)
                node = parents[node]
    taken: dict[int, list[int]] = {}
    rejected: dict[int, list[int]] = {}
    for step in run.steps:
        for edge in step.transitions:
            taken.setdefault(edge, []).append(step.number)
        if step.rejected_by is not None:
            rejected.setdefault(step.rejected_by, []).append(step.number)
    times = {
        step.number: f"t={ms_text(step.at_ms)} ms" for step in run.steps if step.at_ms is not None
    }
    notes = [
        f"step {step.number} (line {step.line}, {step.op}"
        f"{', ' + times[step.number] if step.number in times else ''}): "
        f"{step.error[0].value}: {step.error[1]}"
        for step in run.steps
        if step.error is not None
    ]
    notes += [f"line {line}: {code.value}: {message}" for line, code, message in run.unattributed]
    return Highlight(
        visited=frozenset(visited),
        taken={edge: tuple(numbers) for edge, numbers in sorted(taken.items())},
        final=frozenset(run.final_state),
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


def overlay_dot(run: FollowedRun, *, name: str = "") -> str:
    """The statechart as DOT with ``run``'s path through its trace highlighted.

    ``name`` (the trace's file name, say) goes into the title.
    """
    model = describe_chart()
    status = run.completion.value if run.completion is not None else "not complete"
    if run.duration_ms is not None:
        status += f" in {ms_text(run.duration_ms)}\u00a0ms"  # no line break before the unit
    revised = "" if run.revision is Revision.SEED else f", revision {run.revision.value}"
    title = (
        f"{model.name}: {name + ' · ' if name else ''}coordinator {run.coordinator} "
        f"({run.order.value}{revised}), {len(run.steps)} inputs, {status}"
    )
    return statechart_dot(model, overlay_highlight(run, model, title=title))


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

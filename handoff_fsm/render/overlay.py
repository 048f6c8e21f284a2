"""Trace overlay: the chart of the trace's revision with one coordinator's path drawn on it.

Rule kept here: the path is handed in, as the :class:`~handoff_fsm.io.follow.FollowedRun`
that :func:`~handoff_fsm.io.follow.follow` made of what the real replay did (the
replayer behind ``handoff-fsm replay``, its own coordinator's chart state before and
after each line, and the declared transitions python-statemachine's own interpreter
fires for each step, in the order it fires them); this module only draws it, on the
chart of the revision that coordinator follows
(:func:`~handoff_fsm.structure.revisions.revision_chart`), never on a chart with
transitions that revision cannot take. A state is *visited* when the run rested in
it or a transition it fired entered it (``released``, passed through on the way to
``complete``: what entering a state enters, as the framework enters it,
:func:`~handoff_fsm.structure.revisions.entered_with`). Each taken transition is
numbered by its step, and a step that fired several numbers each of them apart
(``#8a``, ``#8b``, in firing order), so no number stands on two transitions. A
rejected input marks the rejecting row of its state; every error reply is listed
beside the chart. When the trace has times (``"at_ms"``, as replay accepted them),
each step number on the chart carries its time, and the title the handoff's duration.
"""

from __future__ import annotations

from string import ascii_lowercase

from handoff_fsm.io.follow import FollowedRun
from handoff_fsm.io.lifecycle import ms_text
from handoff_fsm.model import Revision
from handoff_fsm.render.dot import Highlight, statechart_dot
from handoff_fsm.render.graphviz import render
from handoff_fsm.render.stamp import Format
from handoff_fsm.structure.describe import ChartModel
from handoff_fsm.structure.revisions import entered_with, revision_chart


def step_tag(number: int, index: int, count: int) -> str:
    """How a step's ``index``-th of ``count`` fired transitions is numbered: ``#8``, ``#8b``."""
    if count == 1:
        return f"#{number}"
    letters = ascii_lowercase
    part = letters[index] if index < len(letters) else f".{index + 1}"
    return f"#{number}{part}"


def visited_states(run: FollowedRun, model: ChartModel) -> frozenset[str]:
    """The states ``run`` was in: where it rested between inputs, with what holds them, and
    what each transition it fired entered (the framework's fired transitions)."""
    visited = set(entered_with(model, model.initial))
    for step in run.steps:
        for leaf in (*step.before.leaves, *step.after.leaves):
            visited |= entered_with(model, leaf)
    edges = {edge.index: edge for edge in model.edges}
    for step in run.steps:
        for index in step.transitions:
            visited |= entered_with(model, edges[index].target)
    return frozenset(visited)


def overlay_highlight(run: FollowedRun, model: ChartModel, *, title: str = "") -> Highlight:
    """What to mark on ``model`` (the chart of ``run``'s revision) for ``run``."""
    taken: dict[int, list[int]] = {}
    rejected: dict[int, list[int]] = {}
    parts: dict[tuple[int, int], str] = {}
    for step in run.steps:
        for position, edge in enumerate(step.transitions):
            taken.setdefault(edge, []).append(step.number)
            if len(step.transitions) > 1:
                tag = step_tag(step.number, position, len(step.transitions))
                parts[(step.number, edge)] = tag.removeprefix(f"#{step.number}")
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
        visited=visited_states(run, model),
        taken={edge: tuple(numbers) for edge, numbers in sorted(taken.items())},
        final=frozenset(run.final_state),
        rejected={edge: tuple(numbers) for edge, numbers in sorted(rejected.items())},
        title=title,
        notes=tuple(notes),
        times=times,
        parts=parts,
    )


def overlay_dot(run: FollowedRun, *, name: str = "") -> str:
    """The chart of ``run``'s revision as DOT with its path through the trace highlighted.

    ``name`` (the trace's file name, say) goes into the title.
    """
    model = revision_chart(run.revision)
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

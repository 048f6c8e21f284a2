"""Trace overlay: the statechart with one coordinator's path through a trace drawn on it.

Rule kept here: the path is what the real replay did. The trace is replayed
with :class:`~handoff_fsm.io.replay.TraceReplayer` (the same code as
``handoff-fsm replay``); before and after each input of the chosen
coordinator, its chart state is read from its public snapshot, and the
declared transitions that input fired are the ones python-statemachine's own
interpreter fires for that step (:func:`handoff_fsm.verify.coverage.step_transitions`).
A rejected input marks the rejecting row of its state; every error reply is
listed beside the chart.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED, FACT_EVENTS, REJECTIONS, START
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.diagrams.dot import Highlight, statechart_dot
from handoff_fsm.diagrams.model import ChartModel, describe_chart
from handoff_fsm.diagrams.render import render
from handoff_fsm.engines.compiled import ChartState
from handoff_fsm.errors import HandoffError, HandoffErrorCode
from handoff_fsm.io.jsontext import loads
from handoff_fsm.io.lines import bounded_lines
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.io.wire import fact_from_wire, outcome_from_wire
from handoff_fsm.model import HandoffCompletion, HandoffOrder
from handoff_fsm.verify.coverage import chart_state_of, rejection_transition, step_transitions

_REJECTION_CODES = frozenset(rejection.code for rejection in REJECTIONS.values())


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


@dataclass(frozen=True, slots=True)
class TracePath:
    """Everything the overlay draws for one coordinator of a trace."""

    coordinator: str
    order: HandoffOrder
    steps: tuple[TraceStep, ...]
    unattributed_errors: tuple[tuple[int, str, str], ...]
    """``(line, code, message)`` of error replies that name no coordinator."""
    final_state: tuple[str, ...]
    completion: HandoffCompletion | None


class TraceOverlayError(ValueError):
    """The trace has no such coordinator (or none at all)."""


def _parse(line: str) -> dict[str, Any] | None:
    try:
        op = loads(line)  # replay's own reader: no recursion limit, the same refusals
    except ValueError:
        return None
    return op if isinstance(op, dict) else None


def _state_of(coordinator: HandoffCoordinator) -> ChartState:
    state = chart_state_of(coordinator.snapshot())
    if state is None:  # every state a coordinator reaches is in the compiled chart
        raise AssertionError(f"{coordinator!r} is in no compiled chart state")
    return state


def _event_of(op: dict[str, Any], coordinator: HandoffCoordinator) -> str | None:
    """The chart event an input becomes (``None`` where the journal stops it first)."""
    kind = op.get("op")
    if kind == "start":
        return START
    if kind == "fact":
        return FACT_EVENTS[type(fact_from_wire(op["fact"]))]
    outcome = outcome_from_wire(op["outcome"])
    issued = {entry.id: entry.action for entry in coordinator.snapshot().issued}
    action = issued.get(op["action_id"])
    if action is None:
        return None
    return ACTION_FAILED if outcome.is_failed else ACKNOWLEDGEMENTS[type(action)].event


def _apply(op: dict[str, Any], coordinator: HandoffCoordinator) -> int:
    """Give ``op`` to ``coordinator``; the number of actions it issued."""
    kind = op["op"]
    if kind == "start":
        return len(coordinator.start())
    if kind == "fact":
        return len(coordinator.on_fact(fact_from_wire(op["fact"])))
    return len(coordinator.on_action_outcome(op["action_id"], outcome_from_wire(op["outcome"])))


_NOT_APPLIED = frozenset(
    {
        HandoffErrorCode.INVALID_INPUT,
        HandoffErrorCode.DUPLICATE_COORDINATOR,
        HandoffErrorCode.UNKNOWN_COORDINATOR,
        HandoffErrorCode.FORGOTTEN_COORDINATOR,
        HandoffErrorCode.LINE_TOO_LONG,
    }
)
"""Error replies for lines that never reach a coordinator."""


def trace_path(lines: Iterable[str], coordinator: str | None = None) -> TracePath:
    """Replay ``lines`` and follow ``coordinator`` (default: the first one the trace creates).

    The replies are :class:`~handoff_fsm.io.replay.TraceReplayer`'s. The followed
    coordinator is mirrored by a coordinator of our own, fed the same inputs the
    replayer accepted; its replies must agree with the replayer's (checked), and
    its snapshots say which chart state each input started from and reached.
    """
    replayer = TraceReplayer()
    target = coordinator
    mirror: HandoffCoordinator | None = None
    steps: list[TraceStep] = []
    unattributed: list[tuple[int, str, str]] = []
    transitions = step_transitions()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        op = _parse(line)
        key = op.get("coordinator") if op is not None else None
        reply = replayer.reply(line, number)
        error = reply.get("error")
        code = HandoffErrorCode(error["code"]) if error is not None else None
        if not isinstance(key, str):
            if error is not None:
                unattributed.append((number, error["code"], error["message"]))
            continue
        assert op is not None
        if mirror is None:
            if op.get("op") == "new" and code is None and target in (None, key):
                target = key
                mirror = HandoffCoordinator(
                    op["handoff_id"], op["order"], op.get("fallback_transfer_delay_ms", 0.0)
                )
            continue
        if key != target or (op.get("op") == "new" and code is not None):
            continue
        before = _state_of(mirror)
        event = None
        issued = 0
        if code not in _NOT_APPLIED:
            event = _event_of(op, mirror)
            try:
                issued = _apply(op, mirror)
            except HandoffError as mirrored:
                if mirrored.code is not code:
                    raise AssertionError(
                        f"line {number}: replay said {code}, the mirror {mirrored.code}"
                    ) from None
            else:
                if code is not None:
                    raise AssertionError(f"line {number}: replay said {code}, mirror accepted")
        after = _state_of(mirror)
        fired: tuple[int, ...] = ()
        rejected_by = None
        if event is not None and code is None and (issued or after is not before):
            fired = tuple(sorted(transitions[(before.index, event)]))
        elif event is not None and code in _REJECTION_CODES:
            rejected_by = rejection_transition(before.leaves, event, code)
        steps.append(
            TraceStep(
                number=len(steps) + 1,
                line=number,
                op=str(op.get("op")),
                event=event,
                before=before.leaves,
                after=after.leaves,
                edges=fired,
                rejected_by=rejected_by,
                error=(error["code"], error["message"]) if error is not None else None,
            )
        )
    if mirror is None or target is None:
        named = f"coordinator {target!r}" if target is not None else "any coordinator"
        raise TraceOverlayError(f"the trace creates no {named} (no valid 'new' line)")
    return TracePath(
        coordinator=target,
        order=mirror.order,
        steps=tuple(steps),
        unattributed_errors=tuple(unattributed),
        final_state=mirror.state,
        completion=mirror.completion,
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
    notes = [
        f"step {step.number} (line {step.line}, {step.op}): {step.error[0]}: {step.error[1]}"
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


def overlay_dot(lines: Iterable[str], coordinator: str | None = None, *, name: str = "") -> str:
    """The statechart as DOT with ``coordinator``'s path through the trace highlighted."""
    model = describe_chart()
    path = trace_path(lines, coordinator)
    status = path.completion.value if path.completion is not None else "not complete"
    title = (
        f"{model.name}: {name + ' · ' if name else ''}coordinator {path.coordinator} "
        f"({path.order.value}), {len(path.steps)} inputs, {status}"
    )
    return statechart_dot(model, overlay_highlight(path, model, title=title))


def write_overlay(trace: Path, output: Path, coordinator: str | None = None) -> Path:
    """Draw the overlay of ``trace`` into ``output`` (``.svg``, ``.png`` or ``.dot``)."""
    suffix = output.suffix.lower()
    if suffix not in (".svg", ".png", ".dot"):
        raise ValueError(f"output must end in .svg, .png or .dot, not {output.name!r}")
    with trace.open("rb") as stream:  # an over-long line is cut, as replay cuts it
        lines = (line.decode("utf-8") for line in bounded_lines(stream))
        source = overlay_dot(lines, coordinator, name=trace.name)
    data = source.encode("utf-8") if suffix == ".dot" else render(source, suffix[1:])  # type: ignore[arg-type]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    return output

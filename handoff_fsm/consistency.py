"""Which coordinator states are reachable: the compiled chart walked together with the journal.

Rule kept here: ``restore()`` accepts a snapshot exactly when some sequence of
accepted inputs leads a coordinator to it. That is decided here from the
compiled chart's recorded steps and the journal's rules, never from a list of
state names: :func:`reachable_shapes` walks every chart state with an abstract
journal (which action kinds were issued under which ids, which were
acknowledged and how) and which payloads are stored, feeding every input class
the coordinator can accept. A snapshot's *shape* must be one of those; its
values (ids, handoff ids, timing, delays) are then checked against the rules the
validators and effects apply to them.

The shapes are few (a few hundred per revision) and computed once, on first use.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from handoff_fsm.chart import (
    ACKNOWLEDGEMENTS,
    ACTION_FAILED,
    FACT_EVENTS,
    REJECTIONS,
    START,
)
from handoff_fsm.engines.compiled import ChartState, CompiledChart, Step, compiled_chart
from handoff_fsm.model import ACTION_TYPES, HandoffAction, OutcomeKind, Revision

JournalEntry = tuple[int, type[HandoffAction], OutcomeKind | None]
"""(action id, action kind, kind of the recorded outcome or ``None`` while unacknowledged)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """Everything about a coordinator's state except the values of its payloads."""

    chart_state: int
    """Index of the compiled chart state."""
    next_action_id: int
    journal: tuple[JournalEntry, ...]
    """Issued actions the journal still remembers, by id."""
    timing_stored: bool
    tokens_stored: bool


_ISSUES: Final[dict[str, type[Any]]] = {
    "issue_" + re.sub(r"(?<!^)(?=[A-Z])", "_", kind.__name__).lower(): kind for kind in ACTION_TYPES
}
"""Which action each ``issue_*`` effect issues (named after the action kind)."""


@cache
def reachable_shapes(revision: Revision = Revision.SEED) -> frozenset[Shape]:
    """Every shape a coordinator following ``revision`` can be in, for every order."""
    compiled = compiled_chart(revision)
    steps = {(step.source, step.event): step for step in compiled.steps}
    initial = [Shape(state.index, 0, (), False, False) for state in compiled.initial.values()]
    seen = set(initial)
    queue = deque(initial)
    while queue:
        shape = queue.popleft()
        for successor in _successors(compiled, steps, shape):
            if successor not in seen:
                seen.add(successor)
                queue.append(successor)
    return frozenset(seen)


def _successors(
    compiled: CompiledChart, steps: dict[tuple[int, str], Step], shape: Shape
) -> Iterator[Shape]:
    """The shapes one accepted input leads to (rejected inputs change nothing)."""
    state = compiled.states[shape.chart_state]
    for event in (START, *FACT_EVENTS.values()):
        step = steps.get((state.index, event))
        if step is not None and not any(name in REJECTIONS for name in step.validators):
            # Validators that check payloads pass for some payload: the step is taken.
            yield _apply(compiled, step, shape)
    if state.is_complete:
        return  # outcomes after completion are ignored (the journal was cleared)
    for position, (action_id, kind, recorded) in enumerate(shape.journal):
        if recorded is not None:
            continue
        ack = ACKNOWLEDGEMENTS[kind]
        answers = [(outcome, ack.event) for outcome in ack.accepted]
        if ack.may_fail:
            answers.append((OutcomeKind.FAILED, ACTION_FAILED))
        for outcome, event in answers:
            journal = list(shape.journal)
            journal[position] = (action_id, kind, outcome)
            acknowledged = _replace(shape, journal=tuple(journal))
            step = steps.get((state.index, event))
            yield acknowledged if step is None else _apply(compiled, step, acknowledged)


def _apply(compiled: CompiledChart, step: Step, shape: Shape) -> Shape:
    journal = list(shape.journal)
    next_id = shape.next_action_id
    timing, tokens = shape.timing_stored, shape.tokens_stored
    for name in step.effects:
        kind = _ISSUES.get(name)
        if kind is not None:
            journal.append((next_id, kind, None))
            next_id += 1
            if name == "issue_complete":
                journal = []  # the journal forgets everything when Complete is issued
        elif name == "store_transfer_timing":
            timing = True
        elif name == "store_transferable_tokens":
            tokens = True
        else:
            raise AssertionError(f"effect {name!r} has no rule in consistency.py")
    target: ChartState = compiled.states[step.target]
    return Shape(target.index, next_id, tuple(journal), timing, tokens)


def _replace(shape: Shape, *, journal: tuple[JournalEntry, ...]) -> Shape:
    return Shape(
        shape.chart_state, shape.next_action_id, journal, shape.timing_stored, shape.tokens_stored
    )


def same_float(a: float, b: float) -> bool:
    """Bit-for-bit the same delay (NaN equals NaN, ``-0.0`` differs from ``0.0``)."""
    return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (
        math.isnan(a) and math.isnan(b)
    )

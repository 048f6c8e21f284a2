"""One coordinator followed through a trace: what replay did to it, line by line.

Rule kept here: the followed coordinator is the replayer's own. The trace is
replayed by :class:`~handoff_fsm.io.replay.TraceReplayer` (the code behind
``handoff-fsm replay``), every reply is the replayer's, and the chart state
before and after each line of the followed coordinator is read from the very
object the replayer applied that line to. So a drawing made from a
:class:`FollowedRun` (the statechart overlay, the lifecycle diagram) shows
what ``handoff-fsm replay`` did, never a second interpretation of the trace;
a line's time is the one the replayer accepted
(:attr:`~handoff_fsm.io.replay.TraceReplayer.line_at_ms`), never read again here.

Hostile traces change nothing here: every line, however malformed or long
(read with :func:`~handoff_fsm.io.lines.bounded_lines`), is the replayer's
coded reply (``invalid_input``, ``line_too_long``, ...), read with replay's own
JSON reader (:func:`~handoff_fsm.io.jsontext.loads`), and a coordinator the
trace never creates is a :class:`~handoff_fsm.errors.TraceError`
(``unknown_coordinator``).
Memory stays bounded by ``max_steps`` for the followed coordinator and by a
few fields per coordinator for :func:`list_coordinators`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import ChartState
from handoff_fsm.errors import ErrorCode, HandoffError, handoff_error
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.inputs import Input
from handoff_fsm.io.jsontext import loads
from handoff_fsm.io.lines import OverlongLine
from handoff_fsm.io.replay import ReplayStep, TraceReplayer
from handoff_fsm.model import (
    HandoffAction,
    HandoffCompletion,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
)
from handoff_fsm.structure.transitions import chart_state_of, rejection_transition, step_transitions

TraceLine = str | bytes
"""A trace line as text or bytes (an :class:`~handoff_fsm.io.lines.OverlongLine` is bytes)."""

MAX_STEPS: Final = 2000
"""Lines of the followed coordinator kept by default (later ones are counted, not kept)."""
MAX_UNATTRIBUTED: Final = 100
"""Errors of lines that name no coordinator kept by default (later ones are counted)."""

_NOT_APPLIED: Final = frozenset(
    {
        TraceErrorCode.INVALID_INPUT,
        TraceErrorCode.DUPLICATE_COORDINATOR,
        TraceErrorCode.UNKNOWN_COORDINATOR,
        TraceErrorCode.FORGOTTEN_COORDINATOR,
        TraceErrorCode.LINE_TOO_LONG,
        TraceErrorCode.INVALID_TIME,
        TraceErrorCode.TIME_WENT_BACKWARDS,
    }
)
"""Error replies for lines that never reach a coordinator."""
_REJECTION_CODES: Final = frozenset(rejection.code for rejection in REJECTIONS.values())
"""Codes the chart's rejecting transitions refuse an event with."""
_READ: Final = frozenset({TraceErrorCode.INVALID_TIME, TraceErrorCode.TIME_WENT_BACKWARDS})
"""Of those, the ones for lines read whole (refused for their time): their input is shown."""


@dataclass(frozen=True, slots=True)
class FollowedStep:
    """One line of the followed coordinator (after its ``new``) and what it did."""

    number: int
    """1-based position among the coordinator's lines after ``new``."""
    line: int
    """Line of the trace (1-based)."""
    op: str
    """The line's ``op`` as written (``"?"`` when it has none)."""
    input: Input | None
    """The decoded input; ``None`` for a malformed line or a repeated ``new``."""
    at_ms: float | None
    """The line's time (``"at_ms"``) when the replayer accepted one (its
    :attr:`~handoff_fsm.io.replay.TraceReplayer.line_at_ms`)."""
    event: str | None
    """The chart event the input became (``None``: it never reached the chart)."""
    before: ChartState
    after: ChartState
    transitions: tuple[int, ...]
    """Indexes of the declared transitions it fired
    (:func:`~handoff_fsm.structure.transitions.step_transitions`; see
    :class:`~handoff_fsm.structure.describe.Edge`)."""
    rejected_by: int | None
    """The rejecting transition that turned its event down, if one did."""
    changed: bool
    """The coordinator's state (its snapshot) changed."""
    actions: tuple[IssuedHandoffAction, ...]
    error: tuple[ErrorCode, str] | None
    """``(code, message)`` of an error reply."""
    late: bool
    """The coordinator was complete before this line (issued Complete, not reopened since)."""
    completion: HandoffCompletion | None
    """The completion the reply reported."""


@dataclass(frozen=True, slots=True)
class FollowedRun:
    """Everything a drawing of one coordinator's run needs."""

    coordinator: str
    handoff_id: UUID
    order: HandoffOrder
    revision: Revision
    fallback_transfer_delay_ms: float
    new_line: int
    """The trace line that created it."""
    new_at_ms: float | None
    steps: tuple[FollowedStep, ...]
    omitted: int
    """Lines of this coordinator after the first ``max_steps``: followed, not kept."""
    inputs: int
    """All its lines after ``new`` (kept and omitted)."""
    rejected: int
    """Of those, the ones answered with an error."""
    unattributed: tuple[tuple[int, ErrorCode, str], ...]
    """``(line, code, message)`` of error replies to lines that name no coordinator."""
    unattributed_count: int
    final_state: tuple[str, ...]
    completion: HandoffCompletion | None
    issued: tuple[IssuedHandoffAction, ...]
    """Every action it issued, in order (also those of omitted lines)."""

    @property
    def duration_ms(self) -> float | None:
        """From ``new`` to the line that gave the run its completion, by the lines' times.

        ``None`` when the run is not complete, either line has no time, or the completion
        came in a line not kept (after ``max_steps``).
        """
        completion = at_ms = None
        for step in self.steps:
            if step.completion != completion:  # a976b2bf may reopen a success and end again
                completion, at_ms = step.completion, step.at_ms
        if completion is None or self.omitted or at_ms is None or self.new_at_ms is None:
            return None
        return at_ms - self.new_at_ms


@dataclass(frozen=True, slots=True)
class CoordinatorSummary:
    """One coordinator of a trace, as ``handoff-fsm lifecycle --list`` prints it."""

    coordinator: str
    order: HandoffOrder
    handoff_id: UUID
    revision: Revision
    line: int
    inputs: int
    rejected: int
    completion: HandoffCompletion | None


# ---------------------------------------------------------------------- reading lines


def _read(line: TraceLine) -> dict[str, Any] | None:
    """A line's JSON object (``None`` where it has none).

    Read with replay's own JSON reader, so this never sees a line differently from the
    replayer (an over-long line is not read at all). Only the input is read here; what
    replay made of it comes from :meth:`~handoff_fsm.io.replay.TraceReplayer.step`.
    """
    if isinstance(line, OverlongLine):
        return None
    try:
        value = loads(line)
    except HandoffError:
        return None
    return value if isinstance(value, dict) else None


def _error(step: ReplayStep) -> tuple[ErrorCode, str] | None:
    return None if step.error is None else (step.error.code, step.error.message)


# ---------------------------------------------------------------------- listing


def list_coordinators(
    lines: Iterable[TraceLine], *, revision: Revision | str = Revision.SEED
) -> tuple[CoordinatorSummary, ...]:
    """Every coordinator the trace creates, in order, with its inputs and completion.

    ``revision`` is that of ``new`` lines naming none (``handoff-fsm replay --revision``).
    Raises :class:`~handoff_fsm.errors.TraceError` (``unknown_coordinator``) when the
    trace creates none (as :func:`follow` does), naming the first line that names no
    coordinator, if any: an empty listing would hide, say, a trace that is not UTF-8.
    """
    replayer = TraceReplayer(remember_completed=None, revision=Revision(revision))
    found: dict[str, CoordinatorSummary] = {}
    first_unattributed: list[tuple[int, ErrorCode, str]] = []
    unattributed_count = 0
    for number, line in enumerate(lines, start=1):
        step = replayer.step(line, number)
        if step.key is None:
            error = _error(step)
            if error is not None:
                unattributed_count += 1
                if not first_unattributed:  # the message names the first
                    first_unattributed.append((number, *error))
            continue
        coordinator = replayer.coordinator(step.key)
        if step.created and coordinator is not None:
            found[step.key] = CoordinatorSummary(
                coordinator=step.key,
                order=coordinator.order,
                handoff_id=coordinator.handoff_id,
                revision=coordinator.revision,
                line=number,
                inputs=0,
                rejected=0,
                completion=None,
            )
            continue
        summary = found.get(step.key)
        if summary is None or coordinator is None:
            continue
        error = _error(step)
        found[step.key] = CoordinatorSummary(
            coordinator=summary.coordinator,
            order=summary.order,
            handoff_id=summary.handoff_id,
            revision=summary.revision,
            line=summary.line,
            inputs=summary.inputs + 1,
            rejected=summary.rejected + (error is not None),
            completion=coordinator.completion or summary.completion,
        )
    if not found:
        raise handoff_error(
            TraceErrorCode.UNKNOWN_COORDINATOR,
            _no_such(None, [], first_unattributed, unattributed_count),
        )
    return tuple(found.values())


# ---------------------------------------------------------------------- following


def _state_of(coordinator: HandoffCoordinator) -> ChartState:
    state = chart_state_of(coordinator.snapshot())
    if state is None:  # every state a coordinator reaches is in the compiled chart
        raise AssertionError(f"{coordinator!r} is in no compiled chart state")
    return state


def _input(fields: dict[str, Any]) -> Input | None:
    if fields.get("op") not in ("start", "fact", "outcome"):
        return None
    try:
        return Input.from_wire(fields)
    except (HandoffError, KeyError, ValueError):
        return None


def _event(op: Input | None, kinds: dict[int, type[HandoffAction]]) -> str | None:
    """The chart event an input becomes (``None`` where the journal stops it first)."""
    if op is None:
        return None
    return op.chart_event(kinds.get(op.action_id) if op.kind == "outcome" else None)


_NAMED: Final = 5
"""Coordinators an ``unknown_coordinator`` message names (the ones the trace does create)."""


def _fired(
    transitions: dict[tuple[int, str], frozenset[int]],
    event: str | None,
    *,
    before: ChartState,
    after: ChartState,
    actions: tuple[IssuedHandoffAction, ...],
    error: tuple[ErrorCode, str] | None,
) -> tuple[tuple[int, ...], int | None]:
    """The declared transitions a step fired, and the rejecting one that refused it."""
    if event is None:
        return (), None
    if error is None:
        if actions or after is not before:
            return tuple(sorted(transitions[(before.index, event)])), None
        return (), None
    if error[0] in _REJECTION_CODES:
        return (), rejection_transition(before.leaves, event, error[0])
    return (), None


def _no_such(
    coordinator: str | None,
    others: list[str],
    unattributed: list[tuple[int, ErrorCode, str]],
    count: int,
) -> str:
    named = f"no coordinator {coordinator!r}" if coordinator is not None else "no coordinator"
    message = f"the trace creates {named} (no valid 'new' line)"
    if others:
        listed = ", ".join(repr(key) for key in others[:_NAMED])
        message += f"; it creates {listed}" + (", ..." if len(others) > _NAMED else "")
    if unattributed:
        _, code, text = unattributed[0]
        lines = "1 line names" if count == 1 else f"{count} lines name"
        message += f"; {lines} no coordinator, the first: {code.value}: {text}"
    return message


def follow(
    lines: Iterable[TraceLine],
    coordinator: str | None = None,
    *,
    revision: Revision | str = Revision.SEED,
    max_steps: int = MAX_STEPS,
) -> FollowedRun:
    """Replay ``lines`` and follow ``coordinator`` (default: the first one the trace creates).

    ``revision`` is that of ``new`` lines naming none, as for ``handoff-fsm replay
    --revision``. Raises :class:`~handoff_fsm.errors.TraceError` (``unknown_coordinator``)
    when the trace creates no such coordinator. Every other problem of the trace is an
    error reply, kept in the run.
    """
    replayer = TraceReplayer(remember_completed=None, revision=Revision(revision))
    target = coordinator
    current: HandoffCoordinator | None = None
    created: dict[str, Any] = {}
    steps: list[FollowedStep] = []
    unattributed: list[tuple[int, ErrorCode, str]] = []
    unattributed_count = omitted = inputs = rejected = 0
    kinds: dict[int, type[HandoffAction]] = {}
    others: list[str] = []
    issued: list[IssuedHandoffAction] = []
    completion: HandoffCompletion | None = None
    complete = False
    transitions = None
    for number, line in enumerate(lines, start=1):
        fields = _read(line)
        followed = (
            current is not None and fields is not None and fields.get("coordinator") == target
        )
        if followed:
            assert current is not None
            before = _state_of(current)
            snapshot = current.snapshot()
        replied = replayer.step(line, number)
        key = replied.key
        error = _error(replied)
        if key is None:
            if error is not None:
                unattributed_count += 1
                if len(unattributed) < MAX_UNATTRIBUTED:
                    unattributed.append((number, *error))
            continue
        if current is None:
            if replied.created and target not in (None, key) and len(others) <= _NAMED:
                others.append(key)
            if replied.created and target in (None, key):
                target = key
                current = replayer.coordinator(key)
                created = {"line": number, "at_ms": replied.at_ms}
            continue
        if not followed or key != target:
            continue
        assert fields is not None
        current = replayer.coordinator(key) or current
        applied = error is None or error[0] not in _NOT_APPLIED
        read_whole = error is not None and error[0] in _READ
        op = _input(fields) if applied or read_whole else None
        event = _event(op, kinds) if applied else None
        actions = replied.actions
        for action in actions:
            kinds[action.id] = type(action.action)
        issued += actions
        late = complete  # a976b2bf: a reopened handoff is no longer complete
        completion = current.completion
        complete = current.is_complete
        inputs += 1
        rejected += error is not None
        if len(steps) >= max_steps:
            omitted += 1
            continue
        if transitions is None:
            transitions = step_transitions(current.revision)
        after = _state_of(current)
        fired, rejected_by = _fired(
            transitions, event, before=before, after=after, actions=actions, error=error
        )
        steps.append(
            FollowedStep(
                number=len(steps) + 1,
                line=number,
                op=str(fields.get("op", "?")),
                input=op,
                at_ms=replayer.line_at_ms,
                event=event,
                before=before,
                after=after,
                transitions=fired,
                rejected_by=rejected_by,
                changed=current.snapshot() != snapshot,
                actions=actions,
                error=error,
                late=late,
                completion=completion,
            )
        )
    if current is None or target is None:
        raise handoff_error(
            TraceErrorCode.UNKNOWN_COORDINATOR,
            _no_such(target, others, unattributed, unattributed_count),
        )
    return FollowedRun(
        coordinator=target,
        handoff_id=current.handoff_id,
        order=current.order,
        revision=current.revision,
        fallback_transfer_delay_ms=current.fallback_transfer_delay_ms,
        new_line=created["line"],
        new_at_ms=created["at_ms"],
        steps=tuple(steps),
        omitted=omitted,
        inputs=inputs,
        rejected=rejected,
        unattributed=tuple(unattributed),
        unattributed_count=unattributed_count,
        final_state=current.state,
        completion=completion,
        issued=tuple(issued),
    )

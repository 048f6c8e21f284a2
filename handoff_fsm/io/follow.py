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
:func:`follow_all` follows every coordinator of a trace in that same one replay (a
trace of many handoffs is replayed once, not once per handoff), each run exactly the
one :func:`follow` gives for its key. Memory stays bounded by ``max_steps`` per
followed coordinator, by ``max_coordinators`` followed ones for :func:`follow_all`,
and by a few fields per coordinator for :func:`list_coordinators`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Final
from uuid import UUID

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import ChartState
from handoff_fsm.errors import ErrorCode, HandoffError, handoff_error
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.inputs import Input
from handoff_fsm.io.jsontext import loads
from handoff_fsm.io.lines import OverlongLine, line_size
from handoff_fsm.io.replay import ReplayStep, TraceReplayer
from handoff_fsm.model import (
    HandoffAction,
    HandoffCompletion,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
)
from handoff_fsm.structure.transitions import chart_state_of, fired_in_order, rejection_transition

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
    text: str
    """The line as read, for people (:func:`line_text`)."""
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
    """Indexes of the declared transitions it fired, in the order the framework fired them
    (:func:`~handoff_fsm.structure.transitions.fired_in_order`; see
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
    outstanding: tuple[IssuedHandoffAction, ...]
    """The coordinator's :attr:`~handoff_fsm.coordinator.HandoffCoordinator.outstanding`
    after the line: the actions still awaiting their outcome."""
    reply: str
    """The reply line ``handoff-fsm replay`` prints for it
    (:attr:`~handoff_fsm.io.replay.ReplayStep.text`)."""


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
    new_text: str
    """That line as read, for people (:func:`line_text`)."""
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


LINE_TEXT_LIMIT: Final = 2000
"""Characters of a line kept as its text (:attr:`FollowedStep.text`); the rest is counted."""


def line_text(line: TraceLine) -> str:
    """A trace line for people: decoded (a byte that is not UTF-8 shown as U+FFFD), without
    its newline, and cut after :data:`LINE_TEXT_LIMIT` characters with its size said."""
    head = line[: LINE_TEXT_LIMIT * 4 + 1]
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    text = text.removesuffix("\n").removesuffix("\r")
    if (
        len(text) <= LINE_TEXT_LIMIT
        and len(head) == len(line)
        and not isinstance(line, OverlongLine)
    ):
        return text
    return f"{text[:LINE_TEXT_LIMIT]}… ({line_size(line):,} bytes)"


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
    transitions: dict[tuple[int, str], tuple[int, ...]],
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
            return transitions[(before.index, event)], None
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


@dataclass(slots=True)
class _Following:
    """One coordinator being followed: what it did so far, line by line."""

    key: str
    coordinator: HandoffCoordinator
    new_line: int
    new_text: str
    new_at_ms: float | None
    max_steps: int
    steps: list[FollowedStep] = field(default_factory=list)
    kinds: dict[int, type[HandoffAction]] = field(default_factory=dict)
    issued: list[IssuedHandoffAction] = field(default_factory=list)
    completion: HandoffCompletion | None = None
    complete: bool = False
    omitted: int = 0
    inputs: int = 0
    rejected: int = 0

    def record(
        self,
        number: int,
        line: TraceLine,
        fields: dict[str, Any],
        replied: ReplayStep,
        *,
        before: ChartState,
        snapshot: object,
        current: HandoffCoordinator,
        at_ms: float | None,
    ) -> None:
        """What line ``number`` (which names this coordinator) did to it."""
        self.coordinator = current
        error = _error(replied)
        applied = error is None or error[0] not in _NOT_APPLIED
        read_whole = error is not None and error[0] in _READ
        op = _input(fields) if applied or read_whole else None
        event = _event(op, self.kinds) if applied else None
        actions = replied.actions
        for action in actions:
            self.kinds[action.id] = type(action.action)
        self.issued += actions
        late = self.complete  # a976b2bf: a reopened handoff is no longer complete
        self.completion = current.completion
        self.complete = current.is_complete
        self.inputs += 1
        self.rejected += error is not None
        if len(self.steps) >= self.max_steps:
            self.omitted += 1
            return
        after = _state_of(current)
        fired, rejected_by = _fired(
            fired_in_order(current.revision),
            event,
            before=before,
            after=after,
            actions=actions,
            error=error,
        )
        self.steps.append(
            FollowedStep(
                number=len(self.steps) + 1,
                line=number,
                op=str(fields.get("op", "?")),
                text=line_text(line),
                input=op,
                at_ms=at_ms,
                event=event,
                before=before,
                after=after,
                transitions=fired,
                rejected_by=rejected_by,
                changed=current.snapshot() != snapshot,
                actions=actions,
                error=error,
                late=late,
                completion=self.completion,
                outstanding=current.outstanding,
                reply=replied.text,
            )
        )

    def run(self, unattributed: list[tuple[int, ErrorCode, str]], count: int) -> FollowedRun:
        current = self.coordinator
        return FollowedRun(
            coordinator=self.key,
            handoff_id=current.handoff_id,
            order=current.order,
            revision=current.revision,
            fallback_transfer_delay_ms=current.fallback_transfer_delay_ms,
            new_line=self.new_line,
            new_text=self.new_text,
            new_at_ms=self.new_at_ms,
            steps=tuple(self.steps),
            omitted=self.omitted,
            inputs=self.inputs,
            rejected=self.rejected,
            unattributed=tuple(unattributed),
            unattributed_count=count,
            final_state=current.state,
            completion=self.completion,
            issued=tuple(self.issued),
        )


@dataclass(slots=True)
class _Tracer:
    """One replay of a trace, following the coordinators ``choose`` picks as they are created.

    ``choose(key, followed)`` is asked once per coordinator the trace creates, with the
    number already followed. Only the lines of followed coordinators cost a snapshot.
    """

    replayer: TraceReplayer
    choose: Callable[[str, int], bool]
    max_steps: int
    following: dict[str, _Following] = field(default_factory=dict)
    passed: list[str] = field(default_factory=list)
    """Coordinators created but not followed (the first few, for messages)."""
    passed_count: int = 0
    unattributed: list[tuple[int, ErrorCode, str]] = field(default_factory=list)
    unattributed_count: int = 0

    def trace(self, lines: Iterable[TraceLine]) -> None:
        for number, line in enumerate(lines, start=1):
            self.line(number, line)

    def line(self, number: int, line: TraceLine) -> None:
        fields = _read(line)
        named = fields.get("coordinator") if fields is not None else None
        followed = self.following.get(named) if isinstance(named, str) else None
        if followed is not None:
            current = self.replayer.coordinator(followed.key) or followed.coordinator
            before, snapshot = _state_of(current), current.snapshot()
        replied = self.replayer.step(line, number)
        key = replied.key
        if key is None:
            error = _error(replied)
            if error is not None:
                self.unattributed_count += 1
                if len(self.unattributed) < MAX_UNATTRIBUTED:
                    self.unattributed.append((number, *error))
            return
        if followed is not None and key == followed.key:
            assert fields is not None
            current = self.replayer.coordinator(key) or current
            followed.record(
                number,
                line,
                fields,
                replied,
                before=before,
                snapshot=snapshot,
                current=current,
                at_ms=self.replayer.line_at_ms,
            )
            return
        if not replied.created or key in self.following:
            return
        created = self.replayer.coordinator(key)
        if created is None or not self.choose(key, len(self.following)):
            self.passed_count += 1
            if len(self.passed) <= _NAMED:
                self.passed.append(key)
            return
        self.following[key] = _Following(
            key, created, number, line_text(line), replied.at_ms, self.max_steps
        )

    def runs(self) -> tuple[FollowedRun, ...]:
        return tuple(
            followed.run(self.unattributed, self.unattributed_count)
            for followed in self.following.values()
        )


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
    tracer = _Tracer(
        TraceReplayer(remember_completed=None, revision=Revision(revision)),
        lambda key, followed: followed == 0 and coordinator in (None, key),
        max_steps,
    )
    tracer.trace(lines)
    if not tracer.following:
        others = tracer.passed if coordinator is not None else []
        raise handoff_error(
            TraceErrorCode.UNKNOWN_COORDINATOR,
            _no_such(coordinator, others, tracer.unattributed, tracer.unattributed_count),
        )
    (run,) = tracer.runs()
    return run


MAX_FOLLOWED: Final = 500
"""Coordinators :func:`follow_all` follows by default (later ones are counted, not followed)."""


@dataclass(frozen=True, slots=True)
class FollowedTrace:
    """Every coordinator of a trace, followed in one replay (:func:`follow_all`)."""

    runs: tuple[FollowedRun, ...]
    """In the order the trace creates them."""
    not_followed: int
    """Coordinators the trace creates beyond ``max_coordinators`` (counted, not followed)."""


def follow_all(
    lines: Iterable[TraceLine],
    *,
    revision: Revision | str = Revision.SEED,
    max_steps: int = MAX_STEPS,
    max_coordinators: int = MAX_FOLLOWED,
    include: Collection[str] = (),
) -> FollowedTrace:
    """Replay ``lines`` once and follow every coordinator it creates, as :func:`follow` would.

    Each run is the one :func:`follow` gives for its key (one replay serves them all, so
    a trace of many handoffs costs one replay, not one per handoff). The first
    ``max_coordinators`` created are followed, and those named in ``include`` whenever
    they come. Raises :class:`~handoff_fsm.errors.TraceError` (``unknown_coordinator``)
    when the trace creates none, or none of ``include``.
    """
    wanted = frozenset(include)
    tracer = _Tracer(
        TraceReplayer(remember_completed=None, revision=Revision(revision)),
        lambda key, followed: followed < max_coordinators or key in wanted,
        max_steps,
    )
    tracer.trace(lines)
    missing = sorted(wanted - set(tracer.following))
    if not tracer.following or missing:
        others = [key for key in tracer.following if key not in wanted] + tracer.passed
        raise handoff_error(
            TraceErrorCode.UNKNOWN_COORDINATOR,
            _no_such(
                missing[0] if missing else None,
                others if missing else [],
                tracer.unattributed,
                tracer.unattributed_count,
            ),
        )
    return FollowedTrace(tracer.runs(), tracer.passed_count)

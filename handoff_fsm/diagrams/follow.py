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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED, FACT_EVENTS, START
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import ChartState
from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error
from handoff_fsm.io.jsontext import loads
from handoff_fsm.io.lines import OverlongLine
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.io.wire import issued_from_wire
from handoff_fsm.model import HandoffCompletion, HandoffOrder, IssuedHandoffAction, Revision
from handoff_fsm.verify.coverage import chart_state_of
from handoff_fsm.verify.invariants import Op

TraceLine = str | bytes
"""A trace line as text or bytes (an :class:`~handoff_fsm.io.lines.OverlongLine` is bytes)."""

MAX_STEPS: Final = 2000
"""Lines of the followed coordinator kept by default (later ones are counted, not kept)."""
MAX_UNATTRIBUTED: Final = 100
"""Errors of lines that name no coordinator kept by default (later ones are counted)."""

_NOT_APPLIED: Final = frozenset(
    {
        HandoffErrorCode.INVALID_INPUT,
        HandoffErrorCode.DUPLICATE_COORDINATOR,
        HandoffErrorCode.UNKNOWN_COORDINATOR,
        HandoffErrorCode.FORGOTTEN_COORDINATOR,
        HandoffErrorCode.LINE_TOO_LONG,
        HandoffErrorCode.INVALID_TIME,
        HandoffErrorCode.TIME_WENT_BACKWARDS,
    }
)
"""Error replies for lines that never reach a coordinator."""
_READ: Final = frozenset({HandoffErrorCode.INVALID_TIME, HandoffErrorCode.TIME_WENT_BACKWARDS})
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
    input: Op | None
    """The decoded input; ``None`` for a malformed line or a repeated ``new``."""
    at_ms: float | None
    """The line's time (``"at_ms"``) when the replayer accepted one (its
    :attr:`~handoff_fsm.io.replay.TraceReplayer.line_at_ms`)."""
    event: str | None
    """The chart event the input became (``None``: it never reached the chart)."""
    before: ChartState
    after: ChartState
    changed: bool
    """The coordinator's state (its snapshot) changed."""
    actions: tuple[IssuedHandoffAction, ...]
    error: tuple[HandoffErrorCode, str] | None
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
    unattributed: tuple[tuple[int, HandoffErrorCode, str], ...]
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


# ---------------------------------------------------------------------- reading replies


@dataclass(frozen=True, slots=True)
class _Reply:
    number: int
    key: str | None
    """The coordinator the line names (``None``: unreadable, or no string key)."""
    fields: dict[str, Any] | None
    """The line's JSON object, when it is one."""
    reply: dict[str, Any]


def _read(line: TraceLine) -> tuple[str | None, dict[str, Any] | None]:
    """The coordinator a line names and its JSON object (``None`` where it has none).

    Read with replay's own JSON reader, so this never sees a line differently from the
    replayer (an over-long line is not read at all).
    """
    if isinstance(line, OverlongLine):
        return None, None
    try:
        value = loads(line)
    except HandoffError:
        return None, None
    fields = value if isinstance(value, dict) else None
    key = fields.get("coordinator") if fields is not None else None
    return (key if isinstance(key, str) else None), fields


def _replies(lines: Iterable[TraceLine], replayer: TraceReplayer) -> Iterator[_Reply]:
    """Each line with its reply from ``replayer``."""
    for number, line in enumerate(lines, start=1):
        key, fields = _read(line)
        yield _Reply(number, key, fields, replayer.reply(line, number))


def _error(reply: dict[str, Any]) -> tuple[HandoffErrorCode, str] | None:
    error = reply.get("error")
    if error is None:
        return None
    return HandoffErrorCode(error["code"]), str(error["message"])


def _created(item: _Reply) -> bool:
    return (
        item.key is not None
        and item.fields is not None
        and item.fields.get("op") == "new"
        and "error" not in item.reply
    )


def _completion(reply: dict[str, Any]) -> HandoffCompletion | None:
    value = reply.get("completion")
    return HandoffCompletion(value) if value is not None else None


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
    first_unattributed: list[tuple[int, HandoffErrorCode, str]] = []
    unattributed_count = 0
    for item in _replies(lines, replayer):
        if item.key is None:
            error = _error(item.reply)
            if error is not None:
                unattributed_count += 1
                if not first_unattributed:  # the message names the first
                    first_unattributed.append((item.number, *error))
            continue
        if _created(item) and item.key not in found:
            assert item.fields is not None
            coordinator = replayer.live[item.key].coordinator
            found[item.key] = CoordinatorSummary(
                coordinator=item.key,
                order=coordinator.order,
                handoff_id=coordinator.handoff_id,
                revision=coordinator.revision,
                line=item.number,
                inputs=0,
                rejected=0,
                completion=None,
            )
            continue
        summary = found.get(item.key)
        if summary is None:
            continue
        error = _error(item.reply)
        found[item.key] = CoordinatorSummary(
            coordinator=summary.coordinator,
            order=summary.order,
            handoff_id=summary.handoff_id,
            revision=summary.revision,
            line=summary.line,
            inputs=summary.inputs + 1,
            rejected=summary.rejected + (error is not None),
            completion=_completion(item.reply) or summary.completion,
        )
    if not found:
        raise handoff_error(
            HandoffErrorCode.UNKNOWN_COORDINATOR,
            _no_such(None, [], first_unattributed, unattributed_count),
        )
    return tuple(found.values())


# ---------------------------------------------------------------------- following


def _state_of(coordinator: HandoffCoordinator) -> ChartState:
    state = chart_state_of(coordinator.snapshot())
    if state is None:  # every state a coordinator reaches is in the compiled chart
        raise AssertionError(f"{coordinator!r} is in no compiled chart state")
    return state


def _input(fields: dict[str, Any]) -> Op | None:
    if fields.get("op") not in ("start", "fact", "outcome"):
        return None
    try:
        return Op.from_wire(fields)
    except (HandoffError, KeyError, ValueError):
        return None


def _event(op: Op | None, kinds: dict[int, type]) -> str | None:
    """The chart event an input becomes (``None`` where the journal stops it first)."""
    if op is None:
        return None
    if op.kind == "start":
        return START
    if op.kind == "fact":
        return FACT_EVENTS[type(op.fact)]
    kind = kinds.get(op.action_id)
    if kind is None or kind not in ACKNOWLEDGEMENTS or op.outcome is None:
        return None
    return ACTION_FAILED if op.outcome.is_failed else ACKNOWLEDGEMENTS[kind].event


_NAMED: Final = 5
"""Coordinators an ``unknown_coordinator`` message names (the ones the trace does create)."""


def _no_such(
    coordinator: str | None,
    others: list[str],
    unattributed: list[tuple[int, HandoffErrorCode, str]],
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
    unattributed: list[tuple[int, HandoffErrorCode, str]] = []
    unattributed_count = omitted = inputs = rejected = 0
    kinds: dict[int, type] = {}
    others: list[str] = []
    issued: list[IssuedHandoffAction] = []
    completion: HandoffCompletion | None = None
    complete = False
    for number, line in enumerate(lines, start=1):
        key, fields = _read(line)
        followed = current is not None and key == target and fields is not None
        if followed:
            assert current is not None
            before = _state_of(current)
            snapshot = current.snapshot()
        reply = replayer.reply(line, number)
        error = _error(reply)
        if key is None:
            if error is not None:
                unattributed_count += 1
                if len(unattributed) < MAX_UNATTRIBUTED:
                    unattributed.append((number, *error))
            continue
        if current is None:
            item = _Reply(number, key, fields, reply)
            if _created(item) and target not in (None, key) and len(others) <= _NAMED:
                others.append(key)
            if _created(item) and target in (None, key):
                target = key
                current = replayer.live[key].coordinator
                created = {"line": number, "at_ms": replayer.line_at_ms}
            continue
        if not followed:
            continue
        assert fields is not None
        live = replayer.live.get(key)
        if live is not None:
            current = live.coordinator
        applied = error is None or error[0] not in _NOT_APPLIED
        read_whole = error is not None and error[0] in _READ
        op = _input(fields) if applied or read_whole else None
        event = _event(op, kinds) if applied else None
        actions = tuple(issued_from_wire(entry) for entry in reply.get("actions", ()))
        for action in actions:
            kinds[action.id] = type(action.action)
        issued += actions
        late = complete  # a976b2bf: a reopened handoff is no longer complete
        completion = _completion(reply)
        complete = reply.get("complete") is True
        inputs += 1
        rejected += error is not None
        if len(steps) >= max_steps:
            omitted += 1
            continue
        steps.append(
            FollowedStep(
                number=len(steps) + 1,
                line=number,
                op=str(fields.get("op", "?")),
                input=op,
                at_ms=replayer.line_at_ms,
                event=event,
                before=before,
                after=_state_of(current),
                changed=current.snapshot() != snapshot,
                actions=actions,
                error=error,
                late=late,
                completion=completion,
            )
        )
    if current is None or target is None:
        raise handoff_error(
            HandoffErrorCode.UNKNOWN_COORDINATOR,
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

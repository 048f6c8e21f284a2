"""Trace replay: JSON lines in, one JSON reply per line out, streaming.

Rule kept here: every line gets exactly one reply, whatever it holds. A line is
bounded (``max_line_bytes``, else ``line_too_long``), read by the one JSON reader
(:mod:`handoff_fsm.io.jsontext`) and the one reader per scalar
(:mod:`handoff_fsm.io.wire`), checked completely, its optional time (``at_ms``)
checked last against the file's clock (:mod:`handoff_fsm.io.clock`), then
applied to the coordinator it names (the time never changes what that does);
every failure becomes an error reply, quoting at most a
few dozen characters of the input, and replay goes on.

Every line for a coordinator reaches that coordinator, also after it completed:
replay prints what the coordinator answers, never an answer of its own (a late
acknowledgement or a repeated fact gets no actions because the coordinator issues
none). Memory stays bounded by the live handoffs plus the completed coordinators
kept whole: the most recent ``remember_completed`` completions, within
``remember_bytes`` (each counts :data:`KEPT_COORDINATOR_BYTES` plus its key's
UTF-8 length, so a long key cannot make the kept ones cost more than the budget
says). An older one is retired into a compact ledger
(:class:`~handoff_fsm.io.ledger.RetiredKeys`), whatever the revision: its key can
never start a second handoff (``new`` is ``duplicate_coordinator``). A final one
is reduced to its key and completion, and any other line for it is
``forgotten_coordinator``; one that completed but can still change (``a976b2bf``
after Success: a terminal fact reopens it) keeps a record of its snapshot
(:mod:`handoff_fsm.io.records`), from which a later line for it rebuilds it, so
that line gets exactly the reply it would have had if it had never been retired.
Each key is held once (the reply prefix that quotes it is cached only when short).
Each action is printed with the handoff id it carries.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial
from typing import Any
from uuid import UUID

from handoff_fsm.coordinator import Engine, HandoffCoordinator
from handoff_fsm.errors import HandoffError, handoff_error, quoted
from handoff_fsm.io.clock import TIME_KEY, TraceClock
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.jsontext import loads
from handoff_fsm.io.ledger import RetiredKeys
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES, LARGEST_MAX_LINE_BYTES, line_size
from handoff_fsm.io.records import CoordinatorRecords
from handoff_fsm.io.wire import (
    f64_from_wire,
    fact_from_wire,
    handoff_id_from_wire,
    outcome_from_wire,
    u64_from_wire,
)
from handoff_fsm.model import (
    ORDERS,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
    StartTransfer,
    checked_revision,
)

CoordinatorFactory = Callable[..., HandoffCoordinator]
"""Builds a coordinator for a trace's ``new`` line (another implementation can be replayed).

Called as ``factory(handoff_id, order, fallback)``, with ``revision=`` added when the
line's revision is not the seed (so a factory that knows only the seed still works)."""

_REQUIRED = frozenset({"coordinator", "op"})
_OP_SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    # op: the exact key sets a line may have (required first, all allowed last)
    "new": (
        _REQUIRED | {"handoff_id", "order"},
        _REQUIRED | {"handoff_id", "order", "fallback_transfer_delay_ms"},
        _REQUIRED | {"handoff_id", "order", "revision"},
        _REQUIRED | {"handoff_id", "order", "fallback_transfer_delay_ms", "revision"},
    ),
    "start": (_REQUIRED,),
    "fact": (_REQUIRED | {"fact"},),
    "outcome": (_REQUIRED | {"action_id", "outcome"},),
}
"""Every op may also carry ``"at_ms"`` (:mod:`handoff_fsm.io.clock`), checked apart."""
_KEY_RANGES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    name: (shapes[0], shapes[-1] | {TIME_KEY}) for name, shapes in _OP_SHAPES.items()
}
"""Per op, (required keys, allowed keys): a line's keys are valid iff they lie between.

That is the same as "one of the op's shapes, perhaps with ``at_ms``" because each op's
shapes are exactly the required keys plus every subset of its optional ones (checked
in tests/test_replay.py). It words the error for a line whose keys fit no shape."""


def _op_of_keys() -> dict[frozenset[str], tuple[str, bool]]:
    """Every valid key set of a line: the op it must name, and whether it is timed."""
    table: dict[frozenset[str], tuple[str, bool]] = {}
    for name, shapes in _OP_SHAPES.items():
        for shape in shapes:
            for timed in (False, True):
                keys = shape | {TIME_KEY} if timed else shape
                assert keys not in table, f"ops {table[keys][0]!r} and {name!r} share {keys}"
                table[keys] = (name, timed)
    return table


_OP_OF_KEYS = _op_of_keys()
"""A line's key set names the one op it can be (no two ops share one): a valid line is
recognised by one lookup, and only a refused one is examined key by key."""


_PREFIX_CACHE_CHARS = 256
"""A reply prefix (``{"coordinator": KEY, ``) is kept with its coordinator only up to this
length; a longer one, a long key's (six characters per escaped non-ASCII character), is
written again for each reply, so the key is held once."""


class _Live:
    """A coordinator replay keeps, with the reply text it starts with when that is short."""

    __slots__ = ("completion", "coordinator", "cost", "handoff_id", "handoff_id_text", "prefix")

    def __init__(self, coordinator: HandoffCoordinator, key: str) -> None:
        self.coordinator = coordinator
        prefix = _prefix(key)
        self.prefix: str | None = prefix if len(prefix) <= _PREFIX_CACHE_CHARS else None
        """The start of every reply for it (``None``: made per reply, see _PREFIX_CACHE_CHARS)."""
        self.handoff_id: UUID = coordinator.handoff_id
        self.handoff_id_text = str(coordinator.handoff_id)
        self.completion: HandoffCompletion | None = None
        """How it completed, set when it completed (what the ledger records of it)."""
        self.cost = 0
        """What it counts against ``remember_bytes`` while it is kept completed."""


DEFAULT_REMEMBER_COMPLETED = 10_000
"""Completed coordinators kept answering late lines (their memory: benchmarks/ledger.py)."""

DEFAULT_REMEMBER_BYTES = 16 * 2**20
"""The bytes the kept completed coordinators may count, 16 MiB: ten thousand kept ones
with keys of up to about 650 bytes fit, so with ordinary keys the count binds first."""

KEPT_COORDINATOR_BYTES = 1_024
"""What one kept completed coordinator counts against ``remember_bytes`` besides its
key's UTF-8 length: at least what it costs (tests/test_replay_memory.py measures it
with tracemalloc, benchmarks/ledger.py prints it)."""


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """What one trace line did, as data (:meth:`TraceReplayer.step`).

    ``text`` is the reply line ``handoff-fsm replay`` prints for it; the other fields
    are what that text says, taken from the objects replay made it of (never parsed
    back from the text), for readers that follow a trace: pictures, lifecycles, pages.
    """

    text: str
    key: str | None
    """The coordinator the reply names (``None``: the line names none that replay read)."""
    created: bool
    """The line was a ``new`` that created its coordinator."""
    actions: tuple[IssuedHandoffAction, ...]
    error: HandoffError | None
    """The error replied, if any."""
    at_ms: float | None
    """The line's time as replay accepted it (:attr:`TraceReplayer.line_at_ms`)."""


class TraceReplayer:
    """Applies trace operations to named coordinators (docs/architecture.md §7, docs/replay.md).

    Replies are formatted as JSON text directly (the same text ``json.dumps`` would
    give for the reply object): at a million lines, building and re-encoding reply
    dicts would cost as much as the coordinators themselves.
    """

    def __init__(
        self,
        *,
        engine: Engine = "compiled",
        remember_completed: int | None = DEFAULT_REMEMBER_COMPLETED,
        factory: CoordinatorFactory | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        revision: Revision = Revision.SEED,
        remember_bytes: int | None = DEFAULT_REMEMBER_BYTES,
    ) -> None:
        if remember_completed is not None and remember_completed < 0:
            raise ValueError(f"remember_completed must be >= 0 or None, not {remember_completed}")
        if remember_bytes is not None and remember_bytes < 0:
            raise ValueError(f"remember_bytes must be >= 0 or None, not {remember_bytes}")
        if not 1 <= max_line_bytes <= LARGEST_MAX_LINE_BYTES:
            raise ValueError(
                f"max_line_bytes must be from 1 to {LARGEST_MAX_LINE_BYTES}, not {max_line_bytes}"
            )
        self.engine: Engine = engine
        self.factory: CoordinatorFactory = factory or partial(HandoffCoordinator, engine=engine)
        """Builds the coordinator for a ``new`` line: ``factory(handoff_id, order, fallback)``."""
        self.revision = checked_revision(revision)
        """The revision of ``new`` lines that name none."""
        self.remember_completed = remember_completed
        """How many completed coordinators are kept whole (``None``: all of them, whatever
        ``remember_bytes`` says, and none is ever retired)."""
        self.remember_bytes = remember_bytes
        """What the kept completed coordinators may count in all (``None``: no bound), each
        :data:`KEPT_COORDINATOR_BYTES` plus its key's UTF-8 length."""
        self.kept_bytes = 0
        """What the completed coordinators kept now count against ``remember_bytes``."""
        self.max_line_bytes = max_line_bytes
        """Longest line replay reads (UTF-8 bytes, newline not counted): else ``line_too_long``."""
        self._quick_line_limit = max_line_bytes // 4  # no shorter str can exceed the limit
        self.live: dict[str, _Live] = {}
        self.completed: OrderedDict[str, _Live] = OrderedDict()
        """Completed coordinators kept whole, oldest completion first, still answering: a
        queue, so the oldest is taken off in constant time (a plain ``dict`` keeps order
        too, but finding its first entry walks past the slots of every entry removed
        since it last resized, and retiring removes one per completion)."""
        self.retired = RetiredKeys()
        """Keys (and completions, and records) of the completed coordinators no longer kept."""
        self._records = CoordinatorRecords()
        """Makes the records of retired coordinators that can still change, and reads them."""
        self.clock = TraceClock()
        """The file's last accepted ``at_ms`` (:mod:`handoff_fsm.io.clock`)."""
        self.line_at_ms: float | None = None
        """The accepted ``at_ms`` of the line last replied to (``None``: it had none, or it
        was refused before or for its time). Replies never show it; drawings do."""
        self.refused = 0
        """Lines answered with an error so far (``handoff-fsm replay --strict`` reads it)."""
        self._last: tuple[str | None, bool, list[IssuedHandoffAction], HandoffError | None]
        self._last = (None, False, [], None)
        """(key, created, actions, error) of the line last replied to, for :meth:`step`."""

    def step(self, line: str | bytes, line_number: int) -> ReplayStep:
        """Reply to one trace line, and say what the reply says as data (never raises)."""
        self._last = (None, False, [], None)
        text = self.reply_text(line, line_number)
        key, created, actions, error = self._last
        return ReplayStep(text, key, created, tuple(actions), error, self.line_at_ms)

    def coordinator(self, key: str) -> HandoffCoordinator | None:
        """The coordinator replay keeps whole under ``key`` (running or completed), if any
        (``None`` for a retired one, even one a record would rebuild)."""
        kept = self.live.get(key) or self.completed.get(key)
        return kept.coordinator if kept is not None else None

    def reply(self, line: str | bytes, line_number: int) -> dict[str, Any]:
        """The reply object for one trace line (never raises for bad input)."""
        reply: dict[str, Any] = json.loads(self.reply_text(line, line_number))
        return reply

    def reply_text(self, line: str | bytes, line_number: int) -> str:
        """The reply to one trace line as one line of JSON text (no newline)."""
        if len(line) > self._quick_line_limit and line_size(line) > self.max_line_bytes:
            return self._error_reply(
                None,
                handoff_error(
                    TraceErrorCode.LINE_TOO_LONG,
                    f"line {line_number}: {line_size(line)} bytes, longer than the limit of "
                    f"{self.max_line_bytes} bytes (--max-line-bytes); skipped",
                ),
            )
        self.line_at_ms = None
        key: str | None = None
        try:
            op = loads(line)
            shape = _OP_OF_KEYS.get(frozenset(op)) if type(op) is dict else None
            if shape is None or op["op"] != shape[0] or type(op["coordinator"]) is not str:
                key = op.get("coordinator") if type(op) is dict else None
                if type(key) is not str:
                    key = None
                raise _refused(op, key)
            key = op["coordinator"]
            name, timed = shape
            # Read the whole line, then its time, then act: a line refused while being
            # read leaves the clock alone, and one refused for its time reaches no
            # coordinator.
            if name == "new":
                created = self._read_new(op)
                if timed:
                    self.line_at_ms = self.clock.advance(op[TIME_KEY], line_number)
                return self._new(key, *created)
            if name == "outcome":
                action_id = u64_from_wire(op["action_id"], "action_id")
                value: HandoffFact | HandoffActionOutcome | None = outcome_from_wire(op["outcome"])
            else:
                action_id = None
                value = fact_from_wire(op["fact"]) if name == "fact" else None
            if timed:
                self.line_at_ms = self.clock.advance(op[TIME_KEY], line_number)
            return self._dispatch(key, value, action_id)
        except HandoffError as error:
            if error.code is TraceErrorCode.INVALID_INPUT:
                error.message = f"line {line_number}: {error.message}"
            return self._error_reply(key, error)

    def _read_new(self, op: dict[str, Any]) -> tuple[UUID, HandoffOrder, float, Revision]:
        """The values of a ``new`` line: handoff id, order, fallback and revision."""
        handoff_id = handoff_id_from_wire(op["handoff_id"])
        order = ORDERS.get(op["order"]) if isinstance(op["order"], str) else None
        if order is None:
            raise _invalid(
                f'"order" must be "SourceFirst" or "DestinationFirst", got {quoted(op["order"])}'
            )
        fallback = (
            f64_from_wire(op["fallback_transfer_delay_ms"], "fallback_transfer_delay_ms")
            if "fallback_transfer_delay_ms" in op
            else 0.0
        )
        revision = self.revision
        if "revision" in op:
            if type(op["revision"]) is not str:
                raise _invalid(f'"revision" must be a string, got {quoted(op["revision"])}')
            revision = checked_revision(op["revision"])
        return handoff_id, order, fallback, revision

    def _new(
        self,
        key: str,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback: float,
        revision: Revision,
    ) -> str:
        if key in self.live or key in self.completed or key in self.retired:
            raise handoff_error(
                TraceErrorCode.DUPLICATE_COORDINATOR, f"coordinator {quoted(key)} already exists"
            )
        coordinator = (
            self.factory(handoff_id, order, fallback)
            if revision is Revision.SEED
            else self.factory(handoff_id, order, fallback, revision=revision)
        )
        live = self.live[key] = _Live(coordinator, key)
        self._last = (key, True, [], None)
        return (live.prefix or _prefix(key)) + _NO_ACTIONS_RUNNING

    def _dispatch(self, key: str, value: Any, action_id: int | None) -> str:
        """Apply start (``value`` None), a fact, or an outcome (``action_id`` given)."""
        live = self.live.get(key)
        if live is None:
            return self._dispatch_completed(key, value, action_id)
        coordinator = live.coordinator
        try:  # the hot path: _apply, inlined
            if action_id is not None:
                actions = coordinator.on_action_outcome(action_id, value)
            elif value is None:
                actions = coordinator.start()
            else:
                actions = coordinator.on_fact(value)
        except HandoffError as error:
            return self._error_reply(key, error)
        completion = coordinator.completion
        complete = coordinator.is_complete
        # A coordinator that completed joins the completed ones, whether or not an input
        # can still change it (under a976b2bf a terminal fact reopens one that succeeded).
        if complete and completion is not None:
            del self.live[key]
            live.completion = completion
            self._bury(key, live)
        self._last = (key, False, actions, None)
        text = _actions_text(actions, live.handoff_id, live.handoff_id_text) if actions else ""
        return _reply_text(live.prefix or _prefix(key), text, _STATUS[completion, complete])

    def _dispatch_completed(self, key: str, value: Any, action_id: int | None) -> str:
        """Apply a line to a completed coordinator: kept whole, or rebuilt from its record."""
        kept = self.completed.get(key)
        revived = kept is None
        if kept is None:
            kept = self._revive(key)
        coordinator = kept.coordinator
        try:
            actions = _apply(coordinator, value, action_id)
        except HandoffError as error:  # it changed nothing: its record still holds
            return self._error_reply(key, error)
        completion = coordinator.completion
        complete = coordinator.is_complete
        if not complete:  # reopened: running again
            if not revived:
                self._unkeep(key, kept)
            self.live[key] = kept
        elif revived:  # back into its record: what it answered may have changed it
            kept.completion = completion
            self._retire(key, kept)
        elif completion is not kept.completion:  # completed anew: the most recent completion
            self._unkeep(key, kept)
            kept.completion = completion
            self._bury(key, kept)
        self._last = (key, False, actions, None)
        text = _actions_text(actions, kept.handoff_id, kept.handoff_id_text) if actions else ""
        return _reply_text(kept.prefix or _prefix(key), text, _STATUS[completion, complete])

    def _revive(self, key: str) -> _Live:
        """The retired coordinator ``key``, rebuilt from its record (else the line's error)."""
        record = self.retired.record(key)
        if not record:
            raise self._missing(key)
        revived = _Live(self._records.decode(record), key)
        revived.completion = self.retired.completion(key)
        return revived

    def _missing(self, key: str) -> HandoffError:
        """The error for a line naming a coordinator replay does not keep."""
        completion = self.retired.completion(key)
        if completion is None:
            return handoff_error(
                TraceErrorCode.UNKNOWN_COORDINATOR, f"no coordinator named {quoted(key)}"
            )
        budget = "" if self.remember_bytes is None else f" (or {self.remember_bytes:,} bytes)"
        return handoff_error(
            TraceErrorCode.FORGOTTEN_COORDINATOR,
            f"coordinator {quoted(key)} completed ({completion.value}) before the last "
            f"{self.remember_completed} completions{budget} and is remembered by key only "
            "(--remember and --remember-bytes keep more)",
        )

    def _bury(self, key: str, completed_one: _Live) -> None:
        """Keep ``completed_one`` as the most recent completion; retire the oldest ones
        beyond ``remember_completed`` or ``remember_bytes``."""
        completed = self.completed
        completed[key] = completed_one
        limit = self.remember_completed
        if limit is None:
            return
        completed_one.cost = KEPT_COORDINATOR_BYTES + _utf8_length(key)
        self.kept_bytes += completed_one.cost
        budget = self.remember_bytes
        while len(completed) > limit or (budget is not None and self.kept_bytes > budget):
            self._retire(*completed.popitem(last=False))

    def _unkeep(self, key: str, kept: _Live) -> None:
        """Take ``kept`` out of the completed ones (it reopened, or completed anew)."""
        del self.completed[key]
        self.kept_bytes -= kept.cost
        kept.cost = 0

    def _retire(self, key: str, kept: _Live) -> None:
        """Record ``kept`` in the ledger: its completion, and a record if it can still change."""
        self.kept_bytes -= kept.cost
        assert kept.completion is not None  # set before it was kept or revived
        coordinator = kept.coordinator
        record = None if _is_final(coordinator) else self._records.encode(coordinator)
        self.retired.replace(key, kept.completion, record or b"")

    def _error_reply(self, key: str | None, error: HandoffError) -> str:
        self._last = (key, False, [], error)
        self.refused += 1
        if key is None:
            return format_error(key, error, None)
        kept = self.live.get(key) or self.completed.get(key)
        if kept is not None:
            coordinator = kept.coordinator
            return format_error(key, error, coordinator.completion, coordinator.is_complete)
        return format_error(key, error, self.retired.completion(key))


def format_reply(
    key: str,
    actions: list[IssuedHandoffAction],
    completion: HandoffCompletion | None,
    complete: bool | None = None,
) -> str:
    """The reply line ``handoff-fsm replay`` prints for these actions (for recorders).

    ``complete`` defaults to "a completion is known"; it differs only while an a976b2bf
    handoff that succeeded is cleaning up again (not complete, completion Success).
    """
    text = ""
    if actions:
        first = actions[0].action.handoff_id
        text = _actions_text(actions, first, str(first))
    return _reply_text(_prefix(key), text, _status_text(completion, complete))


def format_error(
    key: str | None,
    error: HandoffError,
    completion: HandoffCompletion | None,
    complete: bool | None = None,
) -> str:
    """The error reply line ``handoff-fsm replay`` prints for ``error``."""
    return (
        f'{_prefix(key)}"error": {{"code": "{error.code.value}", '
        f'"message": {json.dumps(error.message)}}}, {_status_text(completion, complete)}}}'
    )


def _reply_text(prefix: str, actions_text: str, status_text: str) -> str:
    """The one shape of a reply with actions (``prefix`` from :func:`_prefix`)."""
    return f'{prefix}"actions": [{actions_text}], {status_text}}}'


def _apply(coordinator: Any, value: Any, action_id: int | None) -> list[IssuedHandoffAction]:
    """Give ``coordinator`` start (``value`` None), a fact, or an outcome (``action_id``)."""
    if action_id is not None:
        actions: list[IssuedHandoffAction] = coordinator.on_action_outcome(action_id, value)
    elif value is None:
        actions = coordinator.start()
    else:
        actions = coordinator.on_fact(value)
    return actions


def _utf8_length(key: str) -> int:
    """``len(key.encode())``, without encoding an ASCII key (``isascii`` is one flag read)."""
    return len(key) if key.isascii() else len(key.encode("utf-8", "surrogatepass"))


def _is_final(coordinator: Any) -> bool:
    """Whether no input can change ``coordinator`` any more (a replayed implementation
    without ``is_final`` is final once complete, as under the seed)."""
    final = getattr(coordinator, "is_final", None)
    return bool(coordinator.is_complete if final is None else final)


def _actions_text(
    actions: list[IssuedHandoffAction], handoff_id: UUID, handoff_id_text: str
) -> str:
    """The actions as JSON text; ``handoff_id_text`` is ``str(handoff_id)``, made once."""
    if len(actions) == 1:  # the usual reply
        return _issued_text(actions[0], handoff_id, handoff_id_text)
    return ", ".join([_issued_text(issued, handoff_id, handoff_id_text) for issued in actions])


def _prefix(key: str | None) -> str:
    return f'{{"coordinator": {json.dumps(key)}, '


def _status_text(completion: HandoffCompletion | None, complete: bool | None = None) -> str:
    if complete is None:
        complete = completion is not None
    return _STATUS[completion, complete]


_STATUS: dict[tuple[HandoffCompletion | None, bool], str] = {
    (completion, complete): (
        f'"complete": {"true" if complete else "false"}, "completion": '
        f"{'null' if completion is None else json.dumps(completion.value)}"
    )
    for completion in (None, *HandoffCompletion)
    for complete in (False, True)
}
"""The end of every reply, by completion and whether the coordinator is complete."""

_NO_ACTIONS_RUNNING = _reply_text("", "", _STATUS[None, False])
"""A reply without its prefix: no actions, not complete (what ``new`` answers)."""


def _float_text(value: float) -> str:
    """What ``json.dumps`` writes for a float (NaN and infinities as literals)."""
    if value != value:  # noqa: PLR0124 - NaN is the one float unequal to itself
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _issued_text(issued: IssuedHandoffAction, handoff_id: UUID, handoff_id_text: str) -> str:
    action = issued.action
    name = type(action).__name__
    carried = action.handoff_id
    if carried is not handoff_id and carried != handoff_id:  # printed as the action has it
        handoff_id_text = str(carried)
    if type(action) is StartTransfer:
        body = f'"handoff_id": "{handoff_id_text}", "delay_ms": {_float_text(action.delay_ms)}'
    else:
        body = f'"handoff_id": "{handoff_id_text}"'
    return f'{{"id": {issued.id}, "action": {{"{name}": {{{body}}}}}}}'


def _invalid(message: str) -> HandoffError:
    return handoff_error(TraceErrorCode.INVALID_INPUT, message)


def _refused(op: Any, key: str | None) -> HandoffError:
    """Why a line whose keys fit none of its op's shapes is refused (the first reason)."""
    if type(op) is not dict:
        return _invalid(f"a trace line is a JSON object, got {type(op).__name__}")
    if key is None:
        return _invalid('"coordinator" must be a string naming the coordinator')
    name = op.get("op")
    key_range = _KEY_RANGES.get(name) if type(name) is str else None
    if key_range is None:
        return _invalid(f'"op" must be one of {sorted(_OP_SHAPES)}, got {quoted(name)}')
    keys: AbstractSet[str] = op.keys()
    required, allowed = key_range
    missing = sorted(required - keys)
    unknown = [quoted(k) for k in sorted(keys - allowed)[:4]]
    return _invalid(
        f"op {name!r}: missing keys {missing}, unknown keys [{', '.join(unknown)}"
        f"{', ...' if len(keys - allowed) > 4 else ''}]"
    )


def replay(
    lines: Iterable[str | bytes],
    *,
    engine: Engine = "compiled",
    remember_completed: int | None = DEFAULT_REMEMBER_COMPLETED,
    factory: CoordinatorFactory | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    revision: Revision = Revision.SEED,
    remember_bytes: int | None = DEFAULT_REMEMBER_BYTES,
) -> Iterator[str]:
    """Replay trace lines lazily; yields one JSON reply line (no newline) per input line.

    ``revision`` is the protocol revision of ``new`` lines that do not name one.

    ``factory(handoff_id, order, fallback)`` builds the coordinators (default: a
    :class:`HandoffCoordinator` on ``engine``), so another implementation can be replayed.
    Lines already in memory are checked against ``max_line_bytes`` too; to read a
    stream without ever holding an over-long line, pass
    :func:`handoff_fsm.io.lines.bounded_lines` (as ``handoff-fsm replay`` does).
    """
    replayer = TraceReplayer(
        engine=engine,
        remember_completed=remember_completed,
        factory=factory,
        max_line_bytes=max_line_bytes,
        revision=revision,
        remember_bytes=remember_bytes,
    )
    reply_text = replayer.reply_text
    for number, line in enumerate(lines, start=1):
        yield reply_text(line, number)

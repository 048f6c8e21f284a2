"""Trace replay: JSON lines in, one JSON reply per line out, streaming.

Rule kept here: a trace line is read, checked completely, then applied to the
coordinator it names; every failure becomes an error reply and replay goes
on. Memory holds the live coordinators only: a completed coordinator is
replaced by a two-field tombstone that answers later lines exactly as the
coordinator would (late acknowledgements and repeated facts get no actions, a
fact for another handoff is still an error).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import Any, BinaryIO, TextIO
from uuid import UUID

from handoff_fsm.coordinator import Engine, HandoffCoordinator
from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error
from handoff_fsm.model import (
    U64_MAX,
    HandoffCompletion,
    HandoffOrder,
    IssuedHandoffAction,
    StartTransfer,
)
from handoff_fsm.wire import fact_from_wire, outcome_from_wire

_ORDERS = {order.value: order for order in HandoffOrder}
_REQUIRED = frozenset({"coordinator", "op"})
_OP_SHAPES: dict[str, tuple[frozenset[str], ...]] = {
    # op: the exact key sets a line may have (required first, all allowed last)
    "new": (
        _REQUIRED | {"handoff_id", "order"},
        _REQUIRED | {"handoff_id", "order", "fallback_transfer_delay_ms"},
    ),
    "start": (_REQUIRED,),
    "fact": (_REQUIRED | {"fact"},),
    "outcome": (_REQUIRED | {"action_id", "outcome"},),
}


class _Live:
    """A running coordinator with the reply text it always starts with."""

    __slots__ = ("coordinator", "handoff_id_text", "prefix")

    def __init__(self, coordinator: HandoffCoordinator, prefix: str) -> None:
        self.coordinator = coordinator
        self.prefix = prefix
        self.handoff_id_text = str(coordinator.handoff_id)


class _Tombstone:
    """What remains of a completed coordinator: enough to answer every later line."""

    __slots__ = ("completion", "handoff_id", "prefix")

    def __init__(self, live: _Live) -> None:
        self.handoff_id = live.coordinator.handoff_id
        self.completion = live.coordinator.completion
        self.prefix = live.prefix


class TraceReplayer:
    """Applies trace operations to named coordinators (see DESIGN.md §7 / README).

    Replies are formatted as JSON text directly (the same text ``json.dumps`` would
    give for the reply object): at a million lines, building and re-encoding reply
    dicts would cost as much as the coordinators themselves.
    """

    def __init__(self, *, engine: Engine = "compiled") -> None:
        self.engine: Engine = engine
        self.live: dict[str, _Live] = {}
        self.completed: dict[str, _Tombstone] = {}

    def reply(self, line: str | bytes, line_number: int) -> dict[str, Any]:
        """The reply object for one trace line (never raises for bad input)."""
        reply: dict[str, Any] = json.loads(self.reply_text(line, line_number))
        return reply

    def reply_text(self, line: str | bytes, line_number: int) -> str:
        """The reply to one trace line as one line of JSON text (no newline)."""
        key: str | None = None
        try:
            op = json.loads(line)
            if type(op) is dict and type(op.get("coordinator")) is str:
                key = op["coordinator"]
            return self._apply(op, key)
        except HandoffError as error:
            if error.code is HandoffErrorCode.INVALID_INPUT:
                error.message = f"line {line_number}: {error.message}"
            return self._error_reply(key, error)
        except ValueError as error:  # JSON syntax, or bytes that are not UTF-8
            return self._error_reply(
                key,
                handoff_error(
                    HandoffErrorCode.INVALID_INPUT, f"line {line_number}: invalid JSON: {error}"
                ),
            )

    def _apply(self, op: Any, key: str | None) -> str:
        if type(op) is not dict:
            raise _invalid(f"a trace line is a JSON object, got {type(op).__name__}")
        if key is None:
            raise _invalid('"coordinator" must be a string naming the coordinator')
        name = op.get("op")
        shapes = _OP_SHAPES.get(name) if type(name) is str else None
        if shapes is None:
            raise _invalid(f'"op" must be one of {sorted(_OP_SHAPES)}, got {name!r}')
        keys = op.keys()
        if not any(keys == shape for shape in shapes):
            required, allowed = shapes[0], shapes[-1]
            missing = sorted(required - keys)
            unknown = sorted(keys - allowed)
            raise _invalid(f"op {name!r}: missing keys {missing}, unknown keys {unknown}")
        if name == "new":
            return self._new(key, op)
        if name == "start":
            return self._dispatch(key, None, None)
        if name == "fact":
            return self._dispatch(key, fact_from_wire(op["fact"]), None)
        action_id = op["action_id"]
        if type(action_id) is not int or not 0 <= action_id <= U64_MAX:
            raise _invalid(f"action_id must be an integer in 0..2^64-1, got {action_id!r}")
        return self._dispatch(key, outcome_from_wire(op["outcome"]), action_id)

    def _new(self, key: str, op: dict[str, Any]) -> str:
        handoff_id = _uuid(op["handoff_id"])
        order = _ORDERS.get(op["order"]) if isinstance(op["order"], str) else None
        if order is None:
            raise _invalid(
                f'"order" must be "SourceFirst" or "DestinationFirst", got {op["order"]!r}'
            )
        fallback = op.get("fallback_transfer_delay_ms", 0.0)
        if type(fallback) not in (int, float):
            raise _invalid(f'"fallback_transfer_delay_ms" must be a number, got {fallback!r}')
        if key in self.live or key in self.completed:
            raise handoff_error(
                HandoffErrorCode.DUPLICATE_COORDINATOR, f"coordinator {key!r} already exists"
            )
        coordinator = HandoffCoordinator(handoff_id, order, float(fallback), engine=self.engine)
        live = self.live[key] = _Live(coordinator, _prefix(key))
        return live.prefix + _NO_ACTIONS_RUNNING

    def _dispatch(self, key: str, value: Any, action_id: int | None) -> str:
        """Apply start (``value`` None), a fact, or an outcome (``action_id`` given)."""
        live = self.live.get(key)
        if live is None:
            tombstone = self.completed.get(key)
            if tombstone is None:
                raise handoff_error(
                    HandoffErrorCode.UNKNOWN_COORDINATOR, f"no coordinator named {key!r}"
                )
            return self._after_completion(tombstone, value, action_id)
        coordinator = live.coordinator
        try:
            if action_id is not None:
                actions = coordinator.on_action_outcome(action_id, value)
            elif value is None:
                actions = coordinator.start()
            else:
                actions = coordinator.on_fact(value)
        except HandoffError as error:
            return self._error_reply(key, error)
        text = (
            ", ".join([_issued_text(issued, live.handoff_id_text) for issued in actions])
            if actions
            else ""
        )
        completion = coordinator.completion
        if completion is None:
            return f'{live.prefix}"actions": [{text}], "complete": false, "completion": null}}'
        del self.live[key]
        self.completed[key] = _Tombstone(live)
        return (
            f'{live.prefix}"actions": [{text}], "complete": true, '
            f'"completion": "{completion.value}"}}'
        )

    def _after_completion(self, tombstone: _Tombstone, value: Any, action_id: int | None) -> str:
        # A completed coordinator issues nothing; it still refuses facts of other handoffs.
        if action_id is None and value is not None and value.handoff_id != tombstone.handoff_id:
            error = handoff_error(
                HandoffErrorCode.FOREIGN_HANDOFF,
                f"fact belongs to a different handoff: {type(value).__name__} for "
                f"{value.handoff_id}, this coordinator is {tombstone.handoff_id}",
                handoff_id=tombstone.handoff_id,
                state=("complete",),
            )
            return self._error_reply(None, error, tombstone)
        return f'{tombstone.prefix}"actions": [], {_status_text(tombstone.completion)}}}'

    def _error_reply(
        self, key: str | None, error: HandoffError, tombstone: _Tombstone | None = None
    ) -> str:
        completion: HandoffCompletion | None = None
        if tombstone is not None:
            prefix, completion = tombstone.prefix, tombstone.completion
        elif key is None:
            prefix = _prefix(None)
        else:
            live = self.live.get(key)
            known = self.completed.get(key)
            if live is not None:
                completion = live.coordinator.completion
            elif known is not None:
                completion = known.completion
            prefix = _prefix(key)
        return (
            f'{prefix}"error": {{"code": "{error.code.value}", '
            f'"message": {json.dumps(error.message)}}}, {_status_text(completion)}}}'
        )


_NO_ACTIONS_RUNNING = '"actions": [], "complete": false, "completion": null}'


def _prefix(key: str | None) -> str:
    return f'{{"coordinator": {json.dumps(key)}, '


def _status_text(completion: HandoffCompletion | None) -> str:
    if completion is None:
        return '"complete": false, "completion": null'
    return f'"complete": true, "completion": "{completion.value}"'


def _float_text(value: float) -> str:
    """What ``json.dumps`` writes for a float (NaN and infinities as literals)."""
    if value != value:  # noqa: PLR0124 - NaN is the one float unequal to itself
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _issued_text(issued: IssuedHandoffAction, handoff_id_text: str) -> str:
    action = issued.action
    name = type(action).__name__
    if type(action) is StartTransfer:
        body = f'"handoff_id": "{handoff_id_text}", "delay_ms": {_float_text(action.delay_ms)}'
    else:
        body = f'"handoff_id": "{handoff_id_text}"'
    return f'{{"id": {issued.id}, "action": {{"{name}": {{{body}}}}}}}'


def _invalid(message: str) -> HandoffError:
    return handoff_error(HandoffErrorCode.INVALID_INPUT, message)


def _uuid(value: Any) -> UUID:
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            pass
    raise _invalid(f'"handoff_id" must be a UUID string, got {value!r}')


def replay(lines: Iterable[str | bytes], *, engine: Engine = "compiled") -> Iterator[str]:
    """Replay trace lines lazily; yields one JSON reply line (no newline) per input line."""
    reply_text = TraceReplayer(engine=engine).reply_text
    for number, line in enumerate(lines, start=1):
        yield reply_text(line, number)


def cli_replay(args: argparse.Namespace) -> int:
    """``handoff-fsm replay TRACE|- [-o OUT] [--engine ...]``."""
    with ExitStack() as stack:
        # Bytes in: a line that is not UTF-8 is one invalid_input reply, not a crash.
        source: BinaryIO = (
            sys.stdin.buffer if args.trace == "-" else stack.enter_context(open(args.trace, "rb"))
        )
        out: TextIO = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        write = out.write
        for reply in replay(source, engine=args.engine):
            write(reply)
            write("\n")
    return 0

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
)
from handoff_fsm.wire import fact_from_wire, issued_to_wire, outcome_from_wire

_ORDERS = {order.value: order for order in HandoffOrder}
_OP_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # op: (required keys, optional keys)
    "new": (
        frozenset({"coordinator", "op", "handoff_id", "order"}),
        frozenset({"fallback_transfer_delay_ms"}),
    ),
    "start": (frozenset({"coordinator", "op"}), frozenset()),
    "fact": (frozenset({"coordinator", "op", "fact"}), frozenset()),
    "outcome": (frozenset({"coordinator", "op", "action_id", "outcome"}), frozenset()),
}


class _Tombstone:
    """What remains of a completed coordinator: enough to answer every later line."""

    __slots__ = ("completion", "handoff_id")

    def __init__(self, coordinator: HandoffCoordinator) -> None:
        self.handoff_id = coordinator.handoff_id
        self.completion = coordinator.completion


class TraceReplayer:
    """Applies trace operations to named coordinators (see DESIGN.md §7 / README)."""

    def __init__(self, *, engine: Engine = "compiled") -> None:
        self.engine: Engine = engine
        self.live: dict[str, HandoffCoordinator] = {}
        self.completed: dict[str, _Tombstone] = {}

    def reply(self, line: str | bytes, line_number: int) -> dict[str, Any]:
        """The reply object for one trace line (never raises for bad input)."""
        key: str | None = None
        try:
            op = json.loads(line)
            if isinstance(op, dict) and isinstance(op.get("coordinator"), str):
                key = op["coordinator"]
            return self._apply(op, key)
        except HandoffError as error:
            if error.code is HandoffErrorCode.INVALID_INPUT:
                error.message = f"line {line_number}: {error.message}"
            return self._error_reply(key, error)
        except ValueError as error:  # JSON syntax
            return self._error_reply(
                key,
                handoff_error(
                    HandoffErrorCode.INVALID_INPUT, f"line {line_number}: invalid JSON: {error}"
                ),
            )

    def _apply(self, op: Any, key: str | None) -> dict[str, Any]:
        if not isinstance(op, dict):
            raise _invalid(f"a trace line is a JSON object, got {type(op).__name__}")
        if key is None:
            raise _invalid('"coordinator" must be a string naming the coordinator')
        name = op.get("op")
        shape = _OP_KEYS.get(name) if isinstance(name, str) else None
        if shape is None:
            raise _invalid(f'"op" must be one of {sorted(_OP_KEYS)}, got {name!r}')
        required, optional = shape
        keys = op.keys()
        if not required <= keys or not keys <= required | optional:
            missing = sorted(required - keys)
            unknown = sorted(keys - required - optional)
            raise _invalid(f"op {name!r}: missing keys {missing}, unknown keys {unknown}")
        if name == "new":
            return self._new(key, op)
        if name == "start":
            return self._dispatch(key, "start", None, None)
        if name == "fact":
            return self._dispatch(key, "fact", fact_from_wire(op["fact"]), None)
        action_id = op["action_id"]
        if type(action_id) is not int or not 0 <= action_id <= U64_MAX:
            raise _invalid(f"action_id must be an integer in 0..2^64-1, got {action_id!r}")
        return self._dispatch(key, "outcome", outcome_from_wire(op["outcome"]), action_id)

    def _new(self, key: str, op: dict[str, Any]) -> dict[str, Any]:
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
        self.live[key] = HandoffCoordinator(handoff_id, order, float(fallback), engine=self.engine)
        return _reply(key, [], False, None)

    def _dispatch(self, key: str, kind: str, value: Any, action_id: int | None) -> dict[str, Any]:
        coordinator = self.live.get(key)
        if coordinator is None:
            tombstone = self.completed.get(key)
            if tombstone is None:
                raise handoff_error(
                    HandoffErrorCode.UNKNOWN_COORDINATOR, f"no coordinator named {key!r}"
                )
            return self._after_completion(key, tombstone, kind, value)
        try:
            if kind == "start":
                actions = coordinator.start()
            elif kind == "fact":
                actions = coordinator.on_fact(value)
            else:
                assert action_id is not None
                actions = coordinator.on_action_outcome(action_id, value)
        except HandoffError as error:
            return self._error_reply(key, error, coordinator.is_complete, coordinator.completion)
        if coordinator.is_complete:
            del self.live[key]
            self.completed[key] = _Tombstone(coordinator)
            return _reply(key, actions, True, coordinator.completion)
        return _reply(key, actions, False, None)

    def _after_completion(
        self, key: str, tombstone: _Tombstone, kind: str, value: Any
    ) -> dict[str, Any]:
        # A completed coordinator issues nothing; it still refuses facts of other handoffs.
        if kind == "fact" and value.handoff_id != tombstone.handoff_id:
            error = handoff_error(
                HandoffErrorCode.FOREIGN_HANDOFF,
                f"fact belongs to a different handoff: {type(value).__name__} for "
                f"{value.handoff_id}, this coordinator is {tombstone.handoff_id}",
                handoff_id=tombstone.handoff_id,
                state=("complete",),
            )
            return self._error_reply(key, error, True, tombstone.completion)
        return _reply(key, [], True, tombstone.completion)

    def _error_reply(
        self,
        key: str | None,
        error: HandoffError,
        complete: bool | None = None,
        completion: HandoffCompletion | None = None,
    ) -> dict[str, Any]:
        if complete is None:
            complete, completion = self._status(key)
        return {
            "coordinator": key,
            "error": {"code": error.code.value, "message": error.message},
            "complete": complete,
            "completion": completion.value if completion is not None else None,
        }

    def _status(self, key: str | None) -> tuple[bool, HandoffCompletion | None]:
        if key is None:
            return False, None
        coordinator = self.live.get(key)
        if coordinator is not None:
            return coordinator.is_complete, coordinator.completion
        tombstone = self.completed.get(key)
        if tombstone is not None:
            return True, tombstone.completion
        return False, None


def _reply(
    key: str,
    actions: list[IssuedHandoffAction],
    complete: bool,
    completion: HandoffCompletion | None,
) -> dict[str, Any]:
    return {
        "coordinator": key,
        "actions": [issued_to_wire(issued) for issued in actions],
        "complete": complete,
        "completion": completion.value if completion is not None else None,
    }


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
    replayer = TraceReplayer(engine=engine)
    for number, line in enumerate(lines, start=1):
        yield json.dumps(replayer.reply(line, number), allow_nan=True)


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

"""Recording a run: every coordinator input, in the replay format or in memory.

Rule kept here: a recorder sees each input *before* the coordinator does and
each reply right after, in exactly the order the driver fed them, so a trace
written here is a valid ``handoff-fsm replay`` input (docs/architecture.md §7) and the
replies recorded here are, line for line, what replaying it must print. Given
the run's clock, every line carries the virtual time its input reached the
coordinator (``"at_ms"``, exact: the float as it is, which JSON writes and reads
back bit for bit); the clock of a discrete-event run never goes back, so the
times never decrease, as replay requires (:mod:`handoff_fsm.io.clock`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TextIO
from uuid import UUID

from handoff_fsm.errors import HandoffError
from handoff_fsm.io.inputs import Input
from handoff_fsm.io.replay import format_error, format_reply
from handoff_fsm.io.wire import dumps, fact_to_wire, outcome_to_wire
from handoff_fsm.model import (
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
)


class Recorder(Protocol):
    """What the driver tells a recorder; ``key`` names the coordinator (``h<number>``)."""

    def new(
        self,
        key: str,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback_ms: float,
        revision: Revision = Revision.SEED,
    ) -> None: ...
    def start(self, key: str) -> None: ...
    def fact(self, key: str, fact: HandoffFact) -> None: ...
    def outcome(self, key: str, action_id: int, outcome: HandoffActionOutcome) -> None: ...
    def reply(
        self,
        key: str,
        actions: list[IssuedHandoffAction],
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None: ...
    def error(
        self,
        key: str,
        error: HandoffError,
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None: ...


class TraceWriter:
    """Writes inputs as replay-format JSON lines; optionally keeps the expected replies.

    ``replies`` (if given) receives one JSON line per input, formatted as
    ``handoff-fsm replay`` formats its output, so a test can compare the two.
    ``clock`` (if given) is the run's virtual time in ms, read as each input is
    recorded and written as its ``"at_ms"``; a :class:`~handoff_fsm.simulate.Simulation`
    is built with its recorder, so pass ``clock=lambda: simulation.now``.
    """

    __slots__ = ("_clock", "_replies", "_write")

    def __init__(
        self,
        out: TextIO,
        replies: list[str] | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._write = out.write
        self._replies = replies
        self._clock = clock

    def _line(self, key: str, op: str, fields: dict[str, Any] | None = None) -> None:
        line: dict[str, Any] = {"coordinator": key, "op": op}
        if self._clock is not None:
            line["at_ms"] = self._clock()
        if fields:
            line |= fields
        self._write(dumps(line))
        self._write("\n")

    def new(
        self,
        key: str,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback_ms: float,
        revision: Revision = Revision.SEED,
    ) -> None:
        fields: dict[str, Any] = {
            "handoff_id": str(handoff_id),
            "order": order.value,
            "fallback_transfer_delay_ms": fallback_ms,
        }
        if revision is not Revision.SEED:
            fields["revision"] = revision.value
        self._line(key, "new", fields)
        self.reply(key, [], False, None)

    def start(self, key: str) -> None:
        self._line(key, "start")

    def fact(self, key: str, fact: HandoffFact) -> None:
        self._line(key, "fact", {"fact": fact_to_wire(fact)})

    def outcome(self, key: str, action_id: int, outcome: HandoffActionOutcome) -> None:
        self._line(key, "outcome", {"action_id": action_id, "outcome": outcome_to_wire(outcome)})

    def reply(
        self,
        key: str,
        actions: list[IssuedHandoffAction],
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        if self._replies is not None:
            self._replies.append(format_reply(key, actions, completion, complete))

    def error(
        self,
        key: str,
        error: HandoffError,
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        if self._replies is not None:
            self._replies.append(format_error(key, error, completion, complete))


@dataclass(frozen=True, slots=True)
class NewHandoff:
    """A coordinator the driver created (a trace's ``new`` line): not an input to one."""

    kind: ClassVar[str] = "new"
    handoff_id: UUID
    order: HandoffOrder


LoggedInput = tuple[str, Input | NewHandoff]
"""``(key, what)``: the coordinator named ``key`` was created, or given an :class:`Input`."""


class InputLog:
    """Keeps every input as Python values, to feed the same inputs to coordinators directly."""

    __slots__ = ("fallback_ms", "inputs", "issued")

    def __init__(self) -> None:
        self.inputs: list[LoggedInput] = []
        self.fallback_ms = 0.0
        self.issued = 0
        """Actions the coordinators issued in reply (to check a replay did the same work)."""

    def new(
        self,
        key: str,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback_ms: float,
        revision: Revision = Revision.SEED,
    ) -> None:
        self.fallback_ms = fallback_ms
        self.inputs.append((key, NewHandoff(handoff_id, order)))

    def start(self, key: str) -> None:
        self.inputs.append((key, Input.START))

    def fact(self, key: str, fact: HandoffFact) -> None:
        self.inputs.append((key, Input("fact", fact=fact)))

    def outcome(self, key: str, action_id: int, outcome: HandoffActionOutcome) -> None:
        self.inputs.append((key, Input("outcome", action_id=action_id, outcome=outcome)))

    def reply(
        self,
        key: str,
        actions: list[IssuedHandoffAction],
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        self.issued += len(actions)

    def error(
        self,
        key: str,
        error: HandoffError,
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        pass

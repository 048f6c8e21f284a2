"""ONE input record: what a coordinator is given, in memory and on the wire, and its reply.

Rule kept here: an input to a coordinator is an :class:`Input` (``start()``, a fact,
or an action outcome) wherever it appears — trace replay and followed traces,
exhaustive exploration, the behavioural diff, the loss tables and the simulator's
traces — and its wire form is the ``handoff-fsm replay`` line
(:meth:`Input.to_wire` / :meth:`Input.from_wire`, through :mod:`~handoff_fsm.io.wire`).
What an input got back is a :class:`Reply`, captured by :func:`reply_of`, which never
raises: a coordinator that escapes with anything but a :class:`HandoffError` or a
list of issued actions is a finding, not a crash of the checker.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED, FACT_EVENTS, START
from handoff_fsm.errors import ErrorCode, HandoffError
from handoff_fsm.io.wire import fact_from_wire, fact_to_wire, outcome_from_wire, outcome_to_wire
from handoff_fsm.model import (
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
    SourceHeld,
)

InputKind = Literal["start", "fact", "outcome"]
"""Which of the coordinator's three calls an input is."""


@dataclass(frozen=True, slots=True)
class Input:
    """One input to a coordinator: ``start()``, ``on_fact(fact)`` or ``on_action_outcome``."""

    START: ClassVar[Input]
    """``start()``: the one input that carries nothing."""

    kind: InputKind
    fact: HandoffFact | None = None
    action_id: int = -1
    outcome: HandoffActionOutcome | None = None

    def to_wire(self, key: str) -> dict[str, Any]:
        """The trace line (``handoff-fsm replay`` format) giving this input to ``key``."""
        if self.kind == "start":
            return {"coordinator": key, "op": "start"}
        if self.kind == "fact":
            assert self.fact is not None
            return {"coordinator": key, "op": "fact", "fact": fact_to_wire(self.fact)}
        assert self.outcome is not None
        return {
            "coordinator": key,
            "op": "outcome",
            "action_id": self.action_id,
            "outcome": outcome_to_wire(self.outcome),
        }

    @classmethod
    def from_wire(cls, line: dict[str, Any]) -> Input:
        """The input of a trace line whose ``op`` is ``start``, ``fact`` or ``outcome``."""
        op = line["op"]
        if op == "start":
            return Input.START
        if op == "fact":
            return cls("fact", fact=fact_from_wire(line["fact"]))
        if op == "outcome":
            return cls(
                "outcome", action_id=line["action_id"], outcome=outcome_from_wire(line["outcome"])
            )
        raise ValueError(f"not an input line: {line!r}")

    def chart_event(self, acknowledges: type[HandoffAction] | None = None) -> str | None:
        """The chart event this input becomes when it reaches the chart.

        For an outcome, ``acknowledges`` is the kind of the action it names; ``None``
        (an id the journal does not know) or an action no outcome acknowledges means
        the journal stops the input before the chart.
        """
        if self.kind == "start":
            return START
        if self.kind == "fact":
            return FACT_EVENTS[type(self.fact)]
        if acknowledges is None or acknowledges not in ACKNOWLEDGEMENTS or self.outcome is None:
            return None
        return ACTION_FAILED if self.outcome.is_failed else ACKNOWLEDGEMENTS[acknowledges].event

    def __str__(self) -> str:
        if self.kind == "start":
            return "start()"
        if self.kind == "fact":
            assert self.fact is not None
            return f"on_fact({_fact_text(self.fact)})"
        return f"on_action_outcome({self.action_id}, {self.outcome})"


Input.START = Input("start")


def _fact_text(fact: HandoffFact) -> str:
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        detail = f"bandwidth {timing.bandwidth_gb_s} GB/s"
    elif isinstance(fact, DestinationReserved):
        detail = f"{fact.transferable_prompt_tokens} tokens"
    else:
        detail = ""
    return f"{type(fact).__name__}({', '.join(filter(None, [str(fact.handoff_id), detail]))})"


@dataclass(frozen=True, slots=True)
class Reply:
    """What one input got back: actions, or an error code, or something that escaped."""

    actions: tuple[IssuedHandoffAction, ...] = ()
    error: ErrorCode | None = None
    """Set when the input was rejected with a :class:`HandoffError`."""
    crash: str | None = None
    """Set when something other than a list of actions or a HandoffError came out."""
    is_complete: bool = False
    completion: HandoffCompletion | None = None

    @property
    def rejected(self) -> bool:
        return self.error is not None


class Coordinator(Protocol):
    """What the observer and the explorer need of an implementation.

    ``HandoffCoordinator`` has it all; any object with these members can be checked.
    """

    @property
    def is_complete(self) -> bool: ...
    @property
    def completion(self) -> HandoffCompletion | None: ...
    def start(self) -> list[IssuedHandoffAction]: ...
    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]: ...
    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]: ...
    def snapshot(self) -> Hashable:
        """The complete state: hashable, and equal exactly for equal states."""
        ...


def reply_of(coordinator: Coordinator, op: Input) -> Reply:
    """Give ``op`` to ``coordinator`` and capture its reply (never raises)."""
    try:
        if op.kind == "start":
            result = coordinator.start()
        elif op.kind == "fact":
            assert op.fact is not None
            result = coordinator.on_fact(op.fact)
        else:
            assert op.outcome is not None
            result = coordinator.on_action_outcome(op.action_id, op.outcome)
    except HandoffError as error:
        return Reply(
            error=error.code,
            is_complete=coordinator.is_complete,
            completion=coordinator.completion,
        )
    except Exception as error:  # reported, not hidden: it is a finding (inputs_handled)
        return Reply(crash=f"raised {type(error).__name__}: {error}")
    if type(result) is not list or not all(type(a) is IssuedHandoffAction for a in result):
        return Reply(crash=f"returned {result!r} instead of a list of issued actions")
    return Reply(
        actions=tuple(result),
        is_complete=coordinator.is_complete,
        completion=coordinator.completion,
    )


class Reached(Protocol):
    """A state an exploration reached: its parent, and the input that led from it."""

    @property
    def parent(self) -> Reached | None: ...
    @property
    def via(self) -> Input | None: ...


def inputs_to(node: Reached) -> list[Input]:
    """The inputs that lead from the first state to ``node``, in order (its path)."""
    path: list[Input] = []
    current: Reached | None = node
    while current is not None and current.via is not None:
        path.append(current.via)
        current = current.parent
    path.reverse()
    return path

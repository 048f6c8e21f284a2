"""The coordinator as a simulated handoff's session policy feeds it: counted and recorded.

Rule kept here: every input that reaches a coordinator goes through one
:class:`FedCoordinator`, which counts it, counts a refusal by its error code
(then re-raises it: what to do about it is the policy's business) and shows
input and reply to the run's recorder, in the order they happen. So the run's
``inputs`` and ``rejected`` figures and its trace describe exactly what the
coordinator saw, including the held-back facts the session policy applies
later and the ``Failed``/``TimedOut`` inputs the policy makes up itself.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.errors import HandoffError
from handoff_fsm.model import (
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
)
from handoff_fsm.simulate.trace import Recorder


class Tally(Protocol):
    """Where the counts go (the simulation)."""

    inputs: int
    rejected: dict[str, int]


class FedCoordinator:
    """A coordinator behind a counter and the run's recorder (see the module rule)."""

    __slots__ = ("_coordinator", "_key", "_recorder", "_tally")

    def __init__(
        self,
        coordinator: HandoffCoordinator,
        key: str,
        tally: Tally,
        recorder: Recorder | None,
    ) -> None:
        self._coordinator = coordinator
        self._key = key
        self._tally = tally
        self._recorder = recorder

    @property
    def handoff_id(self) -> UUID:
        return self._coordinator.handoff_id

    @property
    def is_complete(self) -> bool:
        return self._coordinator.is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        return self._coordinator.completion

    @property
    def outstanding(self) -> tuple[IssuedHandoffAction, ...]:
        return self._coordinator.outstanding

    def start(self) -> list[IssuedHandoffAction]:
        self._tally.inputs += 1
        recorder = self._recorder
        if recorder is None:
            return self._coordinator.start()
        recorder.start(self._key)
        return self._replied(self._coordinator.start())

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        self._tally.inputs += 1
        recorder = self._recorder
        if recorder is not None:
            recorder.fact(self._key, fact)
        try:
            actions = self._coordinator.on_fact(fact)
        except HandoffError as error:
            self._refused(error)
            raise
        return actions if recorder is None else self._replied(actions)

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        self._tally.inputs += 1
        recorder = self._recorder
        if recorder is not None:
            recorder.outcome(self._key, action_id, outcome)
        try:
            actions = self._coordinator.on_action_outcome(action_id, outcome)
        except HandoffError as error:
            self._refused(error)
            raise
        return actions if recorder is None else self._replied(actions)

    def _replied(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        recorder = self._recorder
        assert recorder is not None
        coordinator = self._coordinator
        recorder.reply(self._key, actions, coordinator.is_complete, coordinator.completion)
        return actions

    def _refused(self, error: HandoffError) -> None:
        rejected = self._tally.rejected
        code = error.code.value
        rejected[code] = rejected.get(code, 0) + 1
        recorder = self._recorder
        if recorder is not None:
            coordinator = self._coordinator
            recorder.error(self._key, error, coordinator.is_complete, coordinator.completion)

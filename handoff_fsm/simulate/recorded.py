"""The coordinator as a traced run feeds it: every input and reply shown to the recorder.

Rule kept here: when a run is recorded, every input that reaches a coordinator
goes through one :class:`RecordedCoordinator`, which shows the recorder the
input before the coordinator sees it and the reply (or the refusal, re-raised:
what to do about it is the session policy's business) right after. So the trace
is exactly what the coordinator saw, including the held-back facts the session
policy applies later and the ``Failed``/``TimedOut`` inputs it makes up. Runs
that record nothing give the policy the coordinator itself.
"""

from __future__ import annotations

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


class RecordedCoordinator:
    """A coordinator behind the run's recorder (see the module rule)."""

    __slots__ = ("_coordinator", "_key", "_recorder")

    def __init__(self, coordinator: HandoffCoordinator, key: str, recorder: Recorder) -> None:
        self._coordinator = coordinator
        self._key = key
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
        self._recorder.start(self._key)
        return self._replied(self._coordinator.start())

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        self._recorder.fact(self._key, fact)
        try:
            actions = self._coordinator.on_fact(fact)
        except HandoffError as error:
            self._refused(error)
            raise
        return self._replied(actions)

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        self._recorder.outcome(self._key, action_id, outcome)
        try:
            actions = self._coordinator.on_action_outcome(action_id, outcome)
        except HandoffError as error:
            self._refused(error)
            raise
        return self._replied(actions)

    def _replied(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        coordinator = self._coordinator
        self._recorder.reply(self._key, actions, coordinator.is_complete, coordinator.completion)
        return actions

    def _refused(self, error: HandoffError) -> None:
        coordinator = self._coordinator
        self._recorder.error(self._key, error, coordinator.is_complete, coordinator.completion)

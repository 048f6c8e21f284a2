"""Two engines, one behaviour: the compiled table and the framework's interpreter agree
on every input class in every reachable state of both orders of every protocol revision
(exhaustively, via explore).

The lockstep explores the statechart engine's whole state space too (every input it is
given goes to both engines, which must answer alike and end in equal snapshots), so no
separate exploration of the statechart engine is needed."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any
from uuid import UUID

import pytest

from handoff_fsm import (
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffError,
    HandoffFact,
    HandoffOrder,
    HandoffSnapshot,
    IssuedHandoffAction,
    Revision,
)
from handoff_fsm.verify import explore

pytestmark = pytest.mark.slow  # each test explores on both engines (tests/quick.py)


class EngineMismatchError(AssertionError):
    """The two engines answered one input differently."""


class Lockstep:
    """Runs every call on a compiled and an interpreted coordinator and demands equality."""

    calls = 0

    def __init__(
        self, handoff_id: UUID, order: HandoffOrder, *, revision: Revision = Revision.SEED
    ) -> None:
        self.compiled = HandoffCoordinator(handoff_id, order, revision=revision, engine="compiled")
        self.interpreted = HandoffCoordinator(
            handoff_id, order, revision=revision, engine="statechart"
        )

    def _both(self, call: Callable[[HandoffCoordinator], list[IssuedHandoffAction]]) -> Any:
        Lockstep.calls += 1
        answers: list[tuple[Any, ...]] = []
        for coordinator in (self.compiled, self.interpreted):
            try:
                answers.append(("ok", call(coordinator)))
            except HandoffError as error:
                answers.append(
                    ("error", type(error), error.code, str(error), error.action_id, error.state)
                )
        if answers[0] != answers[1]:
            raise EngineMismatchError(f"compiled {answers[0]!r} != statechart {answers[1]!r}")
        if self.compiled.snapshot() != self.interpreted.snapshot():
            raise EngineMismatchError("the engines' snapshots differ")
        if self.compiled.state != self.interpreted.state:
            raise EngineMismatchError("the engines' states differ")
        first = answers[0]
        if first[0] == "error":
            return call(self.compiled)  # re-raise the (identical) error for the explorer
        return first[1]

    @property
    def revision(self) -> Revision:
        return self.compiled.revision

    @property
    def is_complete(self) -> bool:
        return self.compiled.is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        return self.compiled.completion

    def start(self) -> list[IssuedHandoffAction]:
        result: list[IssuedHandoffAction] = self._both(lambda c: c.start())
        return result

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        result: list[IssuedHandoffAction] = self._both(lambda c: c.on_fact(fact))
        return result

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        result: list[IssuedHandoffAction] = self._both(
            lambda c: c.on_action_outcome(action_id, outcome)
        )
        return result

    def snapshot(self) -> HandoffSnapshot:
        return self.compiled.snapshot()


@pytest.mark.parametrize("order", list(HandoffOrder))
@pytest.mark.parametrize("revision", list(Revision))
def test_engines_agree_on_the_whole_reachable_state_space(
    revision: Revision, order: HandoffOrder
) -> None:
    before = Lockstep.calls
    lockstep = explore(order, revision=revision, factory=partial(Lockstep, revision=revision))
    assert lockstep.ok, [str(v) for v in lockstep.violations]
    assert lockstep.revision is revision
    alone = explore(order, revision=revision)
    assert (lockstep.states, lockstep.transitions, lockstep.rejected, lockstep.max_depth) == (
        alone.states,
        alone.transitions,
        alone.rejected,
        alone.max_depth,
    )
    assert lockstep.coverage is not None
    assert lockstep.coverage.figures([order]) == alone.coverage.figures([order])  # type: ignore[union-attr]
    assert Lockstep.calls - before >= lockstep.transitions


def test_the_lockstep_check_detects_a_difference() -> None:
    class Diverging(Lockstep):
        def __init__(self, handoff_id: UUID, order: HandoffOrder, **kwargs: Any) -> None:
            super().__init__(handoff_id, order, **kwargs)
            self.interpreted = HandoffCoordinator(handoff_id, order, 0.5, engine="statechart")

    report = explore(HandoffOrder.SOURCE_FIRST, factory=Diverging)
    assert not report.ok


def test_the_lockstep_check_detects_engines_of_different_revisions() -> None:
    class HalfSeed(Lockstep):
        def __init__(self, handoff_id: UUID, order: HandoffOrder, **kwargs: Any) -> None:
            super().__init__(handoff_id, order, **kwargs)
            self.interpreted = HandoffCoordinator(handoff_id, order, engine="statechart")

    a976 = Revision.A976B2BF
    report = explore(
        HandoffOrder.SOURCE_FIRST, revision=a976, factory=partial(HalfSeed, revision=a976)
    )
    assert not report.ok
    violation = report.violations[0]
    assert "EngineMismatchError" in violation.message

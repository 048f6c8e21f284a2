"""A listener that raises never leaves an interpreted coordinator half-way through a step.

For every step of the chart (each (state, event) pair the compiled table records, for
both orders of every revision), a listener raises at the first, the middle and the last
callback the framework makes during that step; the coordinator must then be exactly as
before the input (same snapshot, same listeners), and giving the input again (the
listener quiet) must answer as the compiled engine does.
"""

from __future__ import annotations

from typing import Any

import pytest

from handoff_fsm import HandoffCoordinator, HandoffOrder, Revision
from handoff_fsm.io.inputs import Input, Reply, reply_of
from handoff_fsm.verify.exploration import HANDOFF_ID, explore_graph

pytestmark = pytest.mark.slow  # seconds of CPU a test (tests/quick.py)

_HOOKS = (
    "before_transition",
    "on_exit_state",
    "on_transition",
    "on_enter_state",
    "after_transition",
)


class _ListenerError(Exception):
    """What the listener raises."""


class _RaisingListener:
    """Counts every callback it gets and raises at number ``at``."""

    def __init__(self, at: int, coordinator: HandoffCoordinator) -> None:
        self.at = at
        self.calls = 0
        self.coordinator = coordinator

    def _called(self, *_args: Any, **_kwargs: Any) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise _ListenerError(f"callback {self.at}")

    before_transition = on_exit_state = on_transition = on_enter_state = after_transition = _called


def _steps(order: HandoffOrder, revision: Revision) -> list[tuple[list[Input], Input]]:
    graph = explore_graph(
        order,
        lambda handoff_id, o: HandoffCoordinator(handoff_id, o, revision=revision),
        None,
        revision,
    )
    return [(node.ops(), op) for node, op in graph.steps.values()]


def _at(path: list[Input], order: HandoffOrder, revision: Revision) -> HandoffCoordinator:
    coordinator = HandoffCoordinator(HANDOFF_ID, order, revision=revision)
    for op in path:
        reply_of(coordinator, op)
    return coordinator


@pytest.mark.parametrize("revision", list(Revision))
@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a_raising_listener_leaves_every_step_undone(
    order: HandoffOrder, revision: Revision
) -> None:
    steps = _steps(order, revision)
    assert steps
    raised = 0
    for path, op in steps:
        compiled = _at(path, order, revision)
        before = compiled.snapshot()
        expected = reply_of(compiled, op)
        quiet, reply = _interpreted(before, op, 0)
        assert reply == expected
        for at in _points(quiet.calls):
            listener, reply = _interpreted(before, op, at)
            raised += 1
            assert reply.crash is not None and "_ListenerError" in reply.crash, reply
            interpreted = listener.coordinator
            assert interpreted.snapshot() == before, (path, op, at)
            again = reply_of(interpreted, op)
            assert again == expected, (path, op, at)
            assert interpreted.snapshot() == compiled.snapshot()
            assert interpreted.chart is not None
            assert listener in interpreted.chart.active_listeners
    assert raised > len(steps)


def _interpreted(before: Any, op: Input, at: int) -> tuple[_RaisingListener, Reply]:
    """``op`` given to an interpreted coordinator restored from ``before``, whose listener
    raises at callback ``at`` (0: never)."""
    interpreted = HandoffCoordinator.restore(before, engine="statechart")
    listener = _RaisingListener(at, interpreted)
    assert interpreted.chart is not None
    interpreted.chart.add_listener(listener)  # type: ignore[no-untyped-call]
    return listener, reply_of(interpreted, op)


def _points(calls: int) -> list[int]:
    """Where the listener raises among a step's ``calls`` callbacks."""
    if calls == 0:  # refused before the framework called anyone
        return []
    return sorted({1, (calls + 1) // 2, calls})

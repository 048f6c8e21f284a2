"""Test helpers built on the explorer: model-based paths and auditing a replayed trace.

Rule kept here: nothing here is library API. ``model_paths`` turns an exploration
into the shortest input sequence to every reachable state and through every
compiled step (run against both engines by ``test_explore_paths.py``);
``audit`` judges a replayed one-coordinator trace by its replies alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from handoff_fsm import (
    HandoffCompletion,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    HandoffSnapshot,
)
from handoff_fsm.io.wire import issued_from_wire
from handoff_fsm.verify.coverage import chart_state_of
from handoff_fsm.verify.exploration import (
    HANDOFF_ID,
    explore_graph,
    leaves_of_snapshot,
    trace_lines,
)
from handoff_fsm.verify.invariants import Invariant, Observation, Op, Reply, observe, reply_of

# ---------------------------------------------------------------------- model-based paths


@dataclass(frozen=True, slots=True)
class ModelPath:
    """A shortest input sequence to one reachable state, or through one compiled step.

    ``replies`` and ``snapshot`` are what the explored model (the compiled engine)
    answered: a test replays ``ops`` into either engine and expects the same.
    """

    name: str
    order: HandoffOrder
    ops: tuple[Op, ...]
    replies: tuple[Reply, ...]
    snapshot: HandoffSnapshot
    chart_state: int
    """Index of the compiled chart state the path ends in."""
    step: tuple[int, str] | None
    """The compiled step the last input takes (``None`` for a path to a state)."""

    def trace(self) -> tuple[str, ...]:
        """The path as ``handoff-fsm replay`` lines."""
        return trace_lines(self.order, 0.0, self.ops)


def model_paths(orders: Iterable[HandoffOrder] = tuple(HandoffOrder)) -> tuple[ModelPath, ...]:
    """Shortest paths to every reachable coordinator state and through every step taken.

    One path per state an exploration of the compiled engine reaches (so every
    reachable chart state too) and one per compiled step some input takes (so
    every declared transition, see :func:`~handoff_fsm.verify.coverage.step_transitions`).
    """
    paths: list[ModelPath] = []
    for order in orders:
        graph = explore_graph(order, HandoffCoordinator, None)
        for node in graph.nodes:
            name = f"{order.value}:state{node.index}:{'+'.join(leaves_of_snapshot(node.snapshot))}"
            paths.append(_model_path(name, order, node.ops(), None))
        for key, (node, op) in sorted(graph.steps.items()):
            name = f"{order.value}:step{key[0]}:{key[1]}"
            paths.append(_model_path(name, order, [*node.ops(), op], key))
    return tuple(paths)


def _model_path(
    name: str, order: HandoffOrder, ops: list[Op], step: tuple[int, str] | None
) -> ModelPath:
    coordinator = HandoffCoordinator(HANDOFF_ID, order)
    replies = tuple(reply_of(coordinator, op) for op in ops)
    snapshot = coordinator.snapshot()
    state = chart_state_of(snapshot)
    assert state is not None
    return ModelPath(name, order, tuple(ops), replies, snapshot, state.index, step)


# ---------------------------------------------------------------------- auditing a replay


def reply_from_wire(reply: dict[str, Any]) -> Reply:
    """A parsed ``handoff-fsm replay`` reply as a :class:`~handoff_fsm.verify.invariants.Reply`."""
    completion = reply["completion"]
    common: dict[str, Any] = {
        "is_complete": reply["complete"],
        "completion": None if completion is None else HandoffCompletion(completion),
    }
    if "error" in reply:
        return Reply(error=HandoffErrorCode(reply["error"]["code"]), **common)
    return Reply(actions=tuple(issued_from_wire(a) for a in reply["actions"]), **common)


def audit(trace: Iterable[str], replies: Iterable[str]) -> list[tuple[Invariant, str]]:
    """Judge a replayed one-coordinator trace by its replies alone.

    Checks every invariant visible in the replies (not those that need the
    coordinator's state or the whole state graph); returns ``(invariant, message)``
    pairs, empty when the replies break nothing.
    """
    lines = [json.loads(line) for line in trace]
    obs = Observation(UUID(lines[0]["handoff_id"]), HandoffOrder(lines[0]["order"]))
    findings: list[tuple[Invariant, str]] = []
    for line, reply in zip(lines[1:], list(replies)[1:], strict=True):
        obs, found = observe(obs, Op.from_wire(line), reply_from_wire(json.loads(reply)))
        findings += found
    return findings

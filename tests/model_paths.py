"""Test helpers built on the explorer: model-based paths and auditing a replayed trace.

Rule kept here: nothing here is library API. ``model_paths`` turns an exploration
into the shortest input sequence to every reachable state and through every
compiled step, for each protocol revision (run against both engines by
``test_explore_paths.py``);
``audit`` judges a replayed one-coordinator trace by its replies alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any
from uuid import UUID

from handoff_fsm import (
    Engine,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    HandoffSnapshot,
    Revision,
)
from handoff_fsm.io.inputs import Input, Reply, reply_of
from handoff_fsm.io.wire import issued_from_wire
from handoff_fsm.structure.transitions import chart_state_of
from handoff_fsm.verify.exploration import (
    HANDOFF_ID,
    explore_graph,
    leaves_of_snapshot,
    trace_lines,
)
from handoff_fsm.verify.invariants import Observation, observe
from handoff_fsm.verify.rules import Invariant

# ---------------------------------------------------------------------- model-based paths


@dataclass(frozen=True, slots=True)
class ModelPath:
    """A shortest input sequence to one reachable state, or through one compiled step.

    ``replies`` and ``snapshot`` are what the explored model (the compiled engine)
    answered: a test replays ``ops`` into either engine and expects the same.
    """

    name: str
    order: HandoffOrder
    revision: Revision
    ops: tuple[Input, ...]
    replies: tuple[Reply, ...]
    snapshot: HandoffSnapshot
    chart_state: int
    """Index of the compiled chart state the path ends in."""
    step: tuple[int, str] | None
    """The compiled step the last input takes (``None`` for a path to a state)."""

    def trace(self) -> tuple[str, ...]:
        """The path as ``handoff-fsm replay`` lines."""
        return trace_lines(self.order, 0.0, self.ops, self.revision)

    def coordinator(self, engine: Engine = "compiled") -> HandoffCoordinator:
        """A fresh coordinator of the path's order and revision."""
        return HandoffCoordinator(HANDOFF_ID, self.order, revision=self.revision, engine=engine)


def model_paths(
    orders: Iterable[HandoffOrder] = tuple(HandoffOrder),
    revisions: Iterable[Revision] = tuple(Revision),
) -> tuple[ModelPath, ...]:
    """Shortest paths to every reachable coordinator state and through every step taken.

    Per revision and order: one path per state an exploration of the compiled
    engine reaches (so every reachable chart state too) and one per compiled step
    some input takes (so every declared transition the revision fires, see
    :func:`~handoff_fsm.verify.coverage.step_transitions`).
    """
    paths: list[ModelPath] = []
    orders = tuple(orders)
    for revision in revisions:
        factory = partial(HandoffCoordinator, revision=revision)
        for order in orders:
            graph = explore_graph(order, factory, None, revision)
            prefix = f"{revision.value}:{order.value}"
            for node in graph.nodes:
                name = f"{prefix}:state{node.index}:{'+'.join(leaves_of_snapshot(node.snapshot))}"
                paths.append(_model_path(name, order, revision, node.ops(), None))
            for key, (node, op) in sorted(graph.steps.items()):
                name = f"{prefix}:step{key[0]}:{key[1]}"
                paths.append(_model_path(name, order, revision, [*node.ops(), op], key))
    return tuple(paths)


def _model_path(
    name: str,
    order: HandoffOrder,
    revision: Revision,
    ops: list[Input],
    step: tuple[int, str] | None,
) -> ModelPath:
    coordinator = HandoffCoordinator(HANDOFF_ID, order, revision=revision)
    replies = tuple(reply_of(coordinator, op) for op in ops)
    snapshot = coordinator.snapshot()
    state = chart_state_of(snapshot)
    assert state is not None
    return ModelPath(name, order, revision, tuple(ops), replies, snapshot, state.index, step)


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
    new = lines[0]
    revision = Revision(new.get("revision", Revision.SEED.value))
    obs = Observation(UUID(new["handoff_id"]), HandoffOrder(new["order"]), revision)
    findings: list[tuple[Invariant, str]] = []
    for line, reply in zip(lines[1:], list(replies)[1:], strict=True):
        obs, found = observe(obs, Input.from_wire(line), reply_from_wire(json.loads(reply)))
        findings += found
    return findings

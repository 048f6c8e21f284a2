"""Every trace of ``check``'s exploration, as one tree, with what the library answered.

Rule kept here: the traces are the exploration's own (:func:`explore_graph`, the
exploration ``handoff-fsm check`` runs, of this package's coordinator): one per explored
state and input :func:`inputs_for` gives there, the state reached by its shortest input
sequence. They share their prefixes, so they are kept as the exploration's tree of
shortest paths: a trace is the path to its state, then its last input. A driver walks
the tree once, keeps what it reached at each state, and gives each state's inputs to a
copy of it, which is the same as driving every trace from the start (the library's
coordinator is checked to land in the exploration's own snapshot at every state).

For each input the library's answer is recorded as a document would see it: the chart
event the input becomes (``None``: the journal or the handoff id stops it first), whether
the library refused it and why (a refusal the chart declares, or a payload check), and
the active atomic states, chart fields and action kinds after it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, partial
from typing import Final

from handoff_fsm import HandoffCoordinator, HandoffOrder, Revision
from handoff_fsm.chart import REJECTIONS, ChartFields
from handoff_fsm.io.inputs import Input, reply_of
from handoff_fsm.structure.transitions import chart_state_of
from handoff_fsm.verify.coverage import event_of
from handoff_fsm.verify.exploration import HANDOFF_ID, explore_graph, inputs_for

_REFUSAL_CODES = frozenset(rule.code for rule in REJECTIONS.values())

COUNTS_PROPERTY: Final = "export-checked"
"""The ``record_property`` name of one line of counts a driven document reports
(tests/conftest.py lists them at the end of the run)."""


class Answer(StrEnum):
    """What the library did with an input, as a document would have to match it."""

    NO_EVENT = "no event"
    """The journal or the handoff id stopped it: the chart never saw an event."""
    REFUSED = "refused"
    """A refusal the chart declares in this state (an error code): no document takes it."""
    PAYLOAD = "payload"
    """A payload check refused it before its transition: a document names the check."""
    EVENT = "event"
    """The chart was given the event (it took a transition or ignored it)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One trace: the state it is given in (a tree node) and its last input."""

    node: int
    op: Input
    event: str | None
    answer: Answer
    leaves: frozenset[str]
    """The library's active atomic states after the input."""
    fields: ChartFields
    """The library's chart fields after the input."""
    issued: tuple[str, ...]
    """The kinds of the actions the input issued, in order."""
    child: int | None
    """The tree node this input reaches first (the next state of the trace tree), if any."""


@dataclass(frozen=True, slots=True)
class Node:
    """A state of the exploration: where its shortest path came from."""

    index: int
    parent: int | None
    via: int | None
    """The step (index into :attr:`TraceTree.steps`) whose input reaches it first."""
    leaves: frozenset[str]
    fields: ChartFields


@dataclass(frozen=True, slots=True)
class TraceTree:
    """Every trace of one exploration (one revision, one order)."""

    revision: Revision
    order: HandoffOrder
    nodes: tuple[Node, ...]
    steps: tuple[Step, ...]
    """In depth-first order of the tree: a node's steps, each followed by its child's."""
    explored_transitions: int
    """What the exploration counted: one trace per explored state and input."""
    by_node: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)
    """The steps given in each node, in order (indexes into :attr:`steps`)."""

    def counts(self) -> dict[str, int]:
        counted = {answer.value: 0 for answer in Answer}
        for step in self.steps:
            counted[step.answer.value] += 1
        return {"traces": len(self.steps), **counted}

    def walk(self, node: int = 0) -> Iterator[tuple[str, int]]:
        """``("enter", node)`` and ``("step", index)`` in depth-first order from ``node``."""
        yield ("enter", node)
        for index in self.by_node.get(node, ()):
            yield ("step", index)
            child = self.steps[index].child
            if child is not None:
                yield from self.walk(child)


def _fields(coordinator: HandoffCoordinator) -> ChartFields:
    state = chart_state_of(coordinator.snapshot())
    assert state is not None
    return state.fields


@cache
def trace_tree(revision: Revision, order: HandoffOrder) -> TraceTree:
    """The exploration ``check`` runs for ``revision`` and ``order``, as its trace tree."""
    factory = partial(HandoffCoordinator, revision=revision)
    graph = explore_graph(order, factory, None, revision)
    children = {
        (node.parent.index, node.via): node for node in graph.nodes[1:] if node.parent is not None
    }
    nodes: list[Node | None] = [None] * len(graph.nodes)
    steps: list[Step] = []
    by_node: dict[int, list[int]] = {}

    def visit(
        index: int, coordinator: HandoffCoordinator, parent: int | None, via: int | None
    ) -> None:
        explored = graph.nodes[index]
        assert coordinator.snapshot() == explored.snapshot, f"state {index} was not rebuilt"
        nodes[index] = Node(index, parent, via, frozenset(coordinator.state), _fields(coordinator))
        for op in inputs_for(explored.obs):
            after = copy.copy(coordinator)
            reply = reply_of(after, op)
            assert reply.crash is None, reply.crash
            event = event_of(explored.obs, op)
            if event is None:
                answer = Answer.NO_EVENT
            elif reply.rejected:
                answer = Answer.REFUSED if reply.error in _REFUSAL_CODES else Answer.PAYLOAD
            else:
                answer = Answer.EVENT
            child = children.get((index, op))
            step = len(steps)
            steps.append(
                Step(
                    node=index,
                    op=op,
                    event=event,
                    answer=answer,
                    leaves=frozenset(after.state),
                    fields=_fields(after),
                    issued=tuple(type(issued.action).__name__ for issued in reply.actions),
                    child=None if child is None else child.index,
                )
            )
            by_node.setdefault(index, []).append(step)
            if child is not None:
                visit(child.index, after, index, step)

    visit(0, HandoffCoordinator(HANDOFF_ID, order, revision=revision), None, None)
    assert all(node is not None for node in nodes), "a state of the exploration was not reached"
    return TraceTree(
        revision=revision,
        order=order,
        nodes=tuple(node for node in nodes if node is not None),
        steps=tuple(steps),
        explored_transitions=graph.transitions,
        by_node={node: tuple(indexes) for node, indexes in by_node.items()},
    )

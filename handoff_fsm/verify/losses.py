"""What one lost message does: for every reachable state, drop each message it waits for.

Rule kept here: the answer is computed from the explored state space, never
argued. Every state reachable with the explorer's inputs
(:func:`~handoff_fsm.verify.exploration.inputs_for`) is visited breadth-first,
as :func:`~handoff_fsm.verify.exploration.explore` does. In each state that is
not complete, the messages it *waits for* are the honest inputs that are due
(:meth:`~handoff_fsm.verify.invariants.Observation.is_honest`): the
acknowledgement of each outstanding action, and the fact an acknowledgement
made due (``SourceHeld`` after ``Submitted``, ...). Losing one of them means no
input ever delivers it again, and its :class:`Fate` is decided on the state
graph:

* :attr:`Fate.HARMLESS`: the remaining honest inputs still reach ``Complete``;
* :attr:`Fate.TIME_OUT`: they do not, but a failure fact from the caller
  (``TimedOut``, ``Failed`` or ``Canceled``: its deadline) followed by honest
  inputs does;
* :attr:`Fate.STALLS`: nothing reaches ``Complete`` any more: neither honest
  inputs nor a time-out (the handoff holds its owners forever).

States are grouped into :class:`Situation` s: the chart state, the messages
awaited there and their fates; each comes with its shortest input sequence as
a ``handoff-fsm replay`` trace, so every row can be replayed and drawn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Literal

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.io.inputs import Coordinator, Input, inputs_to, reply_of
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.verify.exploration import HANDOFF_ID, Factory, inputs_for, trace_lines
from handoff_fsm.verify.invariants import InputClass, Observation, observe


class Fate(StrEnum):
    """What losing one awaited message leads to (best first)."""

    HARMLESS = "harmless"
    """The remaining honest inputs still complete the handoff."""
    TIME_OUT = "needs a time-out"
    """Only a failure fact (the caller's time-out) and then honest inputs complete it."""
    STALLS = "never completes"
    """No input completes it any more."""


@dataclass(frozen=True, slots=True, order=True)
class Awaited:
    """A message a state waits for: an action's acknowledgement, or a fact."""

    kind: Literal["acknowledgement", "fact"]
    name: str
    """The action kind acknowledged (``CancelSource``) or the fact (``SourceHeld``)."""

    def __str__(self) -> str:
        return f"{self.name}'s acknowledgement" if self.kind == "acknowledgement" else self.name


@dataclass(frozen=True, slots=True)
class Situation:
    """States alike for this question: one chart state, what it awaits, what a loss does."""

    state: tuple[str, ...]
    """The chart's active leaf states (``()`` for a coordinator without chart snapshots)."""
    fates: tuple[tuple[Awaited, Fate], ...]
    """Each awaited message and what losing it does, in :class:`Awaited` order."""
    states: int
    """Explored coordinator states in this situation."""
    trace: tuple[str, ...]
    """The shortest input sequence reaching one of them (replay lines, ``new`` first)."""

    @property
    def worst(self) -> Fate:
        fates = list(Fate)
        return max((fate for _, fate in self.fates), key=fates.index, default=Fate.HARMLESS)


@dataclass(frozen=True, slots=True)
class LossReport:
    """:func:`lost_messages` for one order."""

    order: HandoffOrder
    revision: Revision
    states: int
    """Reachable coordinator states (snapshot plus observer memory)."""
    waiting: int
    """Of those, states that are not complete and await at least one message."""
    situations: tuple[Situation, ...]
    """In breadth-first order of their first state (so the shortest traces first)."""

    def count(self, awaited: Awaited, fate: Fate) -> int:
        """Explored states in which losing ``awaited`` has ``fate``."""
        return sum(s.states for s in self.situations if (awaited, fate) in s.fates)


# ---------------------------------------------------------------------- the state graph


@dataclass(slots=True, eq=False)
class _Node:
    index: int
    obs: Observation
    leaves: tuple[str, ...]
    complete: bool
    parent: _Node | None
    via: Input | None
    edges: list[tuple[int, tuple[str, int | str] | None, bool]] = field(default_factory=list)
    """``(target, message delivered or None, is a failure fact)`` for honest and failure inputs."""
    awaited: dict[tuple[str, int | str], Awaited] = field(default_factory=dict)

    def ops(self) -> list[Input]:
        """The shortest input sequence reaching this state."""
        return inputs_to(self)


def _message(obs: Observation, op: Input) -> tuple[tuple[str, int | str], Awaited] | None:
    """The awaited message an honest input delivers (``None`` for ``start``)."""
    if op.kind == "outcome":
        kind = obs.kind_of(op.action_id)
        assert kind is not None
        return ("ack", op.action_id), Awaited("acknowledgement", kind.__name__)
    if op.kind == "fact":
        name = type(op.fact).__name__
        return ("fact", name), Awaited("fact", name)
    return None


def _leaves(snapshot: Hashable) -> tuple[str, ...]:
    state = getattr(snapshot, "state", ())
    return tuple(state) if isinstance(state, tuple) else ()


def _state_graph(order: HandoffOrder, factory: Factory, revision: Revision) -> list[_Node]:
    def rebuilt(ops: Sequence[Input]) -> Coordinator:
        coordinator = factory(HANDOFF_ID, order)
        for op in ops:
            reply_of(coordinator, op)
        return coordinator

    first = factory(HANDOFF_ID, order)
    observation = Observation(HANDOFF_ID, order, revision)
    root = _Node(0, observation, _leaves(first.snapshot()), False, None, None)
    nodes = [root]
    index: dict[tuple[Hashable, Observation], _Node] = {(first.snapshot(), root.obs): root}
    queue = deque([(root, first)])
    while queue:
        node, coordinator = queue.popleft()
        before = coordinator.snapshot()
        for op in inputs_for(node.obs):
            reply = reply_of(coordinator, op)
            if reply.crash is not None:
                raise RuntimeError(f"the coordinator crashed on {op}: {reply.crash}")
            after = coordinator.snapshot()
            obs, _ = observe(node.obs, op, reply)
            target = index.get((after, obs))
            moved = after != before
            if target is None:
                target = _Node(len(nodes), obs, _leaves(after), coordinator.is_complete, node, op)
                nodes.append(target)
                index[(after, obs)] = target
                queue.append((target, coordinator))  # this object now belongs to the target
                moved = True
            honest = node.obs.is_honest(op)
            failure = node.obs.classify(op) is InputClass.FAILURE_FACT
            if honest or failure:
                message = _message(node.obs, op) if honest else None
                if message is not None:
                    node.awaited[message[0]] = message[1]
                node.edges.append((target.index, message[0] if message else None, failure))
            if moved:  # continue from a fresh coordinator in this node's state
                coordinator = rebuilt(node.ops())
    return nodes


def _finishing(
    nodes: list[_Node], lost: tuple[str, int | str] | None, *, rescue: bool
) -> list[bool]:
    """Which states reach a complete one without ``lost`` (and with failure facts if ``rescue``)."""
    predecessors: list[list[int]] = [[] for _ in nodes]
    for node in nodes:
        for target, message, failure in node.edges:
            if (message is None or message != lost) and (rescue or not failure):
                predecessors[target].append(node.index)
    done = [node.complete for node in nodes]
    pending = [node.index for node in nodes if node.complete]
    while pending:
        for predecessor in predecessors[pending.pop()]:
            if not done[predecessor]:
                done[predecessor] = True
                pending.append(predecessor)
    return done


def lost_messages(
    order: HandoffOrder | str,
    *,
    revision: Revision | str = Revision.SEED,
    factory: Factory | None = None,
) -> LossReport:
    """For every reachable state of a coordinator of ``revision``: what losing each awaited
    message does (see the module's docstring).

    ``factory(handoff_id, order)`` builds the coordinators (default: a
    :class:`~handoff_fsm.HandoffCoordinator` of ``revision``), as for
    :func:`~handoff_fsm.verify.exploration.explore`.
    """
    order = HandoffOrder(order)
    revision = Revision(revision)
    factory = factory or partial(HandoffCoordinator, revision=revision)
    nodes = _state_graph(order, factory, revision)
    messages = {key for node in nodes for key in node.awaited}
    honest = {key: _finishing(nodes, key, rescue=False) for key in messages}
    rescued = {key: _finishing(nodes, key, rescue=True) for key in messages}
    grouped: dict[tuple[tuple[str, ...], tuple[tuple[Awaited, Fate], ...]], list[_Node]] = {}
    for node in nodes:
        if node.complete or not node.awaited:
            continue
        fates = tuple(
            sorted(
                (
                    awaited,
                    Fate.HARMLESS
                    if honest[key][node.index]
                    else Fate.TIME_OUT
                    if rescued[key][node.index]
                    else Fate.STALLS,
                )
                for key, awaited in node.awaited.items()
            )
        )
        grouped.setdefault((node.leaves, fates), []).append(node)
    fallback = float(getattr(factory(HANDOFF_ID, order), "fallback_transfer_delay_ms", 0.0))
    situations = tuple(
        Situation(
            state=leaves,
            fates=fates,
            states=len(members),
            trace=trace_lines(order, fallback, members[0].ops(), revision),
        )
        for (leaves, fates), members in grouped.items()
    )
    return LossReport(
        order=order,
        revision=revision,
        states=len(nodes),
        waiting=sum(len(members) for members in grouped.values()),
        situations=situations,
    )

"""Exhaustive exploration: every reachable coordinator state, every input class, every invariant.

Rule kept here: the coordinator is a black box built by a factory. This module
drives it breadth-first with every input class in every state it reaches (a
state is the coordinator's snapshot together with the observer's memory, see
:mod:`handoff_fsm.verify.invariants`), judges every reply, and keeps for each
invariant the *shortest* input sequence that breaks it, written as a
``handoff-fsm replay`` trace. Nothing here reads a coordinator's private
fields; the chart is consulted only to measure coverage
(:mod:`handoff_fsm.verify.coverage`).

A coordinator in a given state is rebuilt by replaying that state's shortest
input sequence into a fresh one, so any implementation can be checked whatever
it keeps outside its snapshot; an input that leaves the state as it was lets the
same object serve the next input. A state reached by a violation is not
explored further: everything after it would only repeat the finding.

Each exploration is of one protocol revision: the coordinators are built for it and
judged by the invariants it promises (:func:`~handoff_fsm.verify.invariants.invariants_of`).
"""

from __future__ import annotations

import json
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any, Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.coordinator import Engine, HandoffCoordinator
from handoff_fsm.engines.compiled import ChartState
from handoff_fsm.errors import HandoffErrorCode, handoff_error
from handoff_fsm.io.inputs import Coordinator, Input, Reply, inputs_to, reply_of
from handoff_fsm.model import (
    Canceled,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    OutcomeKind,
    Revision,
    SourceHeld,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
    checked_revision,
)
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.structure.transitions import chart_state_of
from handoff_fsm.verify.coverage import ChartCoverage, event_of, step_taken
from handoff_fsm.verify.invariants import InputClass, Observation, observe
from handoff_fsm.verify.rules import Invariant, invariants_of

Factory = Callable[[UUID, HandoffOrder], Coordinator]
"""``factory(handoff_id, order)``: a fresh coordinator to explore (of the explored revision)."""

HANDOFF_ID: Final = UUID("00000000-0000-4000-8000-000000000001")
"""The explored coordinator's handoff."""
FOREIGN_ID: Final = UUID("00000000-0000-4000-8000-000000000002")
"""Another handoff: its facts must be refused."""
TRACE_KEY: Final = "explored"
"""The coordinator key counterexample traces use."""

VALID_TIMING: Final = HandoffTransferTiming(
    mode=TransferTimingMode.FULL_PROMPT,
    full_prompt_tokens=10,
    kv_bytes_per_token=1024,
    bandwidth_gb_s=1.0,
)
"""The representative valid timing (delay 0.01024 ms)."""
INVALID_TIMING: Final = HandoffTransferTiming(
    mode=TransferTimingMode.FULL_PROMPT,
    full_prompt_tokens=10,
    kv_bytes_per_token=1024,
    bandwidth_gb_s=-1.0,
)
"""The representative invalid timing (negative bandwidth)."""
UNSCHEDULABLE_TIMING: Final = HandoffTransferTiming(
    mode=TransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=1,
    kv_bytes_per_token=1,
    bandwidth_gb_s=1e-314,
)
"""A valid timing whose *scheduled* delay is infinite once the destination is reserved.

In ``destination_missing`` mode the delay ``StartTransfer`` carries is computed
from the destination's transferable tokens, not the prompt's: one prompt token
takes ~1.0e308 ms (finite, so the timing passes validation), the 10 tokens the
explored ``DestinationReserved`` reports overflow to infinity. The full-prompt
check does not imply a finite scheduled delay (docs/revisions.md: a976b2bf
checks it where it is scheduled).
"""

_UNIT: Final = {
    kind: HandoffActionOutcome(kind=kind) for kind in OutcomeKind if kind is not OutcomeKind.FAILED
}
_INJECTED_FAILURE: Final = HandoffActionOutcome.failed("injected failure")
_CONFLICTING_FAILURE: Final = HandoffActionOutcome.failed("conflicting failure")


def _fact_ops(handoff_id: UUID) -> tuple[Input, ...]:
    facts: list[HandoffFact] = [
        SourceHeld(handoff_id=handoff_id, transfer_timing=VALID_TIMING),
        SourceHeld(handoff_id=handoff_id, transfer_timing=INVALID_TIMING),
        DestinationReserved(handoff_id=handoff_id, transferable_prompt_tokens=10),
        TransferCompleted(handoff_id=handoff_id),
        Failed(handoff_id=handoff_id),
        TimedOut(handoff_id=handoff_id),
        Canceled(handoff_id=handoff_id),
        # Last, so the counterexamples the inputs above find stay the ones found first.
        SourceHeld(handoff_id=handoff_id, transfer_timing=UNSCHEDULABLE_TIMING),
    ]
    return tuple(Input("fact", fact=fact) for fact in facts)


_FACT_OPS: Final = (*_fact_ops(HANDOFF_ID), *_fact_ops(FOREIGN_ID))


def inputs_for(obs: Observation) -> list[Input]:
    """Every input the explorer gives in a state the observer remembers as ``obs``.

    ``start``; each fact kind (SourceHeld with a valid and an invalid timing) for
    this and for a foreign handoff, and SourceHeld with :data:`UNSCHEDULABLE_TIMING`,
    after which the DestinationReserved given schedules an infinite delay; for each
    unacknowledged action its accepted outcomes, ``Failed(..)`` and one outcome it
    cannot have; for each acknowledged one an exact duplicate and a conflicting
    outcome; an outcome for the next, not yet issued, action id.
    """
    ops = [Input.START, *_FACT_OPS]
    for action_id, kind in obs.outstanding():
        accepted = ACKNOWLEDGEMENTS[kind].accepted
        ops += [
            Input("outcome", action_id=action_id, outcome=_UNIT[k]) for k in _UNIT if k in accepted
        ]
        ops.append(Input("outcome", action_id=action_id, outcome=_INJECTED_FAILURE))
        wrong = next(k for k in _UNIT if k not in accepted)
        ops.append(Input("outcome", action_id=action_id, outcome=_UNIT[wrong]))
    for action_id, outcome in obs.outcomes:
        ops.append(Input("outcome", action_id=action_id, outcome=outcome))
        ops.append(
            Input("outcome", action_id=action_id, outcome=_conflicting(obs, action_id, outcome))
        )
    ops.append(Input("outcome", action_id=obs.last_id + 1, outcome=_UNIT[OutcomeKind.APPLIED]))
    return ops


def _conflicting(
    obs: Observation, action_id: int, outcome: HandoffActionOutcome
) -> HandoffActionOutcome:
    """Another outcome for an acknowledged action: its other accepted one, else a failure."""
    kind = obs.kind_of(action_id)
    assert kind is not None
    accepted = [k for k in _UNIT if k in ACKNOWLEDGEMENTS[kind].accepted]
    others = [k for k in accepted if k is not outcome.kind]
    if others:
        return _UNIT[others[0]]
    return _UNIT[accepted[0]] if outcome.is_failed else _CONFLICTING_FAILURE


# ---------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant, with the shortest input sequence that breaks it."""

    invariant: Invariant
    message: str
    """What went wrong, for people."""
    trace: tuple[str, ...]
    """``handoff-fsm replay`` lines (JSON text, no newline): ``new``, then the inputs.

    The last input is the one whose reply broke the invariant; for ``liveness`` and
    ``deterministic`` the trace instead ends in the state where the property fails.
    """
    state: tuple[str, ...] = ()
    """The chart's active leaf states the last input was given in, or the trace ends in
    (when the coordinator's snapshot is a ``HandoffSnapshot``)."""

    @property
    def inputs(self) -> int:
        """Length of the counterexample (the inputs after ``new``)."""
        return len(self.trace) - 1

    def jsonl(self) -> str:
        """The counterexample as the text of a trace file."""
        return "".join(f"{line}\n" for line in self.trace)

    def __str__(self) -> str:
        return f"{self.invariant.value} ({self.inputs} inputs): {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant.value,
            "message": self.message,
            "state": list(self.state),
            "trace": [json.loads(line) for line in self.trace],
        }


@dataclass(frozen=True, slots=True)
class InvariantVerdict:
    """How often an invariant was judged and how often it was broken."""

    invariant: Invariant
    checked: int
    """Transitions judged (states judged, for liveness; fresh replays, for determinism)."""
    violated: int

    @property
    def holds(self) -> bool:
        return self.violated == 0


@dataclass(frozen=True, slots=True)
class ExplorationReport:
    """The result of :func:`explore` for one order of one revision."""

    order: HandoffOrder
    states: int
    """Reachable coordinator states (snapshot + observer memory)."""
    transitions: int
    """Inputs given: one per reachable state and input class."""
    rejected: int
    """Inputs answered with a HandoffError."""
    violations: tuple[Violation, ...]
    """The shortest counterexample of each broken invariant, in :class:`Invariant` order."""
    verdicts: tuple[InvariantVerdict, ...]
    exhausted: bool
    """Every reachable state was explored (False when ``max_states`` cut it short)."""
    max_depth: int
    """Length of the longest shortest path to a state."""
    seconds: float
    coverage: ChartCoverage | None
    """What of the revision's chart was exercised (when the snapshots are ``HandoffSnapshot``s)."""
    revision: Revision = Revision.SEED
    """The protocol revision explored: its coordinators, judged by its invariants."""

    @property
    def ok(self) -> bool:
        """No invariant broken, and nothing left unexplored."""
        return self.exhausted and not self.violations

    def violation(self, invariant: Invariant | str) -> Violation | None:
        """The counterexample for ``invariant``, if it was broken."""
        return next((v for v in self.violations if v.invariant == invariant), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision.value,
            "order": self.order.value,
            "ok": self.ok,
            "states": self.states,
            "transitions": self.transitions,
            "rejected": self.rejected,
            "exhausted": self.exhausted,
            "max_depth": self.max_depth,
            "seconds": round(self.seconds, 3),
            "invariants": {
                v.invariant.value: {"checked": v.checked, "violated": v.violated}
                for v in self.verdicts
            },
            "violations": [v.to_json() for v in self.violations],
            "coverage": None if self.coverage is None else self.coverage.figures([self.order]),
        }


# ---------------------------------------------------------------------- exploration


@dataclass(slots=True, eq=False)
class _Node:
    index: int
    snapshot: Hashable
    obs: Observation
    parent: _Node | None
    via: Input | None
    depth: int
    chart_state: ChartState | None
    expanded: bool = False
    honest: list[int] = field(default_factory=list)
    """Successors through honest inputs (what liveness may rely on)."""
    failures: list[int] = field(default_factory=list)
    """Successors through failure facts (honest only where a due fact is refused for good)."""
    refused: bool = False
    """A fact made due must be rejected for its scheduled delay here (see ``refuses_due``)."""

    def ops(self) -> list[Input]:
        """The shortest input sequence reaching this state."""
        return inputs_to(self)


@dataclass(slots=True)
class _Finding:
    node: _Node
    op: Input | None
    message: str


@dataclass(slots=True)
class StateGraph:
    """Everything one exploration learned."""

    order: HandoffOrder
    fallback: float
    revision: Revision = Revision.SEED
    nodes: list[_Node] = field(default_factory=list)
    transitions: int = 0
    rejected: int = 0
    replays: int = 0
    first: dict[Invariant, _Finding] = field(default_factory=dict)
    """The first (so shortest) finding of each invariant."""
    counts: Counter[Invariant] = field(default_factory=Counter)
    steps: dict[tuple[int, str], tuple[_Node, Input]] = field(default_factory=dict)
    """Each compiled step taken, with the first (so shortest) transition taking it."""
    exhausted: bool = True
    seconds: float = 0.0

    def fail(self, invariant: Invariant, node: _Node, op: Input | None, message: str) -> None:
        if invariant not in invariants_of(self.revision):
            raise AssertionError(f"{invariant.value} is no invariant of {self.revision.value}")
        self.counts[invariant] += 1
        if invariant not in self.first:
            self.first[invariant] = _Finding(node, op, message)

    def trace(self, node: _Node, op: Input | None) -> tuple[str, ...]:
        return trace_lines(
            self.order,
            self.fallback,
            [*node.ops(), *([op] if op is not None else [])],
            self.revision,
        )


def trace_lines(
    order: HandoffOrder,
    fallback: float,
    ops: Iterable[Input],
    revision: Revision = Revision.SEED,
) -> tuple[str, ...]:
    """``ops`` as ``handoff-fsm replay`` lines, after the ``new`` line creating the coordinator.

    The ``new`` line names the revision unless it is the default ``seed``.
    """
    new: dict[str, Any] = {
        "coordinator": TRACE_KEY,
        "op": "new",
        "handoff_id": str(HANDOFF_ID),
        "order": order.value,
        "fallback_transfer_delay_ms": fallback,
    }
    if revision is not Revision.SEED:
        new["revision"] = revision.value
    return tuple(json.dumps(line) for line in [new, *(op.to_wire(TRACE_KEY) for op in ops)])


def _replayed(factory: Factory, order: HandoffOrder, ops: Sequence[Input]) -> Coordinator:
    coordinator = factory(HANDOFF_ID, order)
    for op in ops:
        reply_of(coordinator, op)
    return coordinator


def _snapshot(coordinator: Coordinator) -> Hashable:
    try:
        return coordinator.snapshot()
    except Exception as error:  # a snapshot that raises is a state of its own, not a crash
        return ("snapshot raised", type(error).__name__, str(error))


def explore_graph(
    order: HandoffOrder,
    factory: Factory,
    max_states: int | None,
    revision: Revision = Revision.SEED,
) -> StateGraph:
    began = time.perf_counter()
    first = factory(HANDOFF_ID, order)
    _check_revision(first, revision)
    graph = StateGraph(order, float(getattr(first, "fallback_transfer_delay_ms", 0.0)), revision)
    snapshot = _snapshot(first)
    root = _Node(0, snapshot, Observation(HANDOFF_ID, order, revision), None, None, 0, None)
    root.chart_state = _chart_state(snapshot, revision)
    graph.nodes.append(root)
    index: dict[tuple[Hashable, Observation], _Node] = {(snapshot, root.obs): root}
    queue = deque([root])
    spare: dict[int, Coordinator] = {0: first}  # a coordinator known to be in that state

    while queue:
        node = queue.popleft()
        for op in inputs_for(node.obs):
            coordinator = spare.pop(node.index, None)
            if coordinator is None:
                coordinator = _replayed(factory, order, node.ops())
                graph.replays += 1
                if _snapshot(coordinator) != node.snapshot:
                    message = "the same inputs led a fresh coordinator to another state"
                    graph.fail(Invariant.DETERMINISTIC, node, None, message)
                    break  # this state cannot be rebuilt: leave it unexplored
            graph.transitions += 1
            reply = reply_of(coordinator, op)
            graph.rejected += reply.rejected
            after = _snapshot(coordinator)
            obs, findings = observe(node.obs, op, reply)
            findings += _state_findings(node, op, reply, after)
            for invariant, message in findings:
                graph.fail(invariant, node, op, message)
            if node.chart_state is not None:
                step = step_taken(node.chart_state, event_of(node.obs, op), reply)
                if step is not None:
                    graph.steps.setdefault((step.source, step.event), (node, op))

            target = index.get((after, obs))
            if target is None:
                if max_states is not None and len(graph.nodes) >= max_states:
                    graph.exhausted = False
                    queue.clear()
                    break
                target = _Node(len(graph.nodes), after, obs, node, op, node.depth + 1, None)
                target.chart_state = _chart_state(after, revision)
                graph.nodes.append(target)
                index[(after, obs)] = target
                if not findings:
                    queue.append(target)
                    spare[target.index] = coordinator
            elif target is node and not findings:
                spare[node.index] = coordinator
            cls = node.obs.classify(op)
            if cls is InputClass.FAILURE_FACT:
                node.failures.append(target.index)
            elif cls is InputClass.UNSCHEDULABLE:
                node.refused = node.refused or node.obs.refuses_due(op)
            elif node.obs.is_honest(op):
                node.honest.append(target.index)
        else:
            node.expanded = True
        spare.pop(node.index, None)

    _judge_liveness(graph)
    graph.seconds = time.perf_counter() - began
    return graph


def _check_revision(coordinator: Coordinator, revision: Revision) -> None:
    """A coordinator that says which revision it follows must follow the explored one."""
    follows = getattr(coordinator, "revision", None)
    if isinstance(follows, Revision) and follows is not revision:
        raise handoff_error(
            HandoffErrorCode.INVALID_REVISION,
            f"the factory built a coordinator following revision {follows.value}, but "
            f"{revision.value} was to be explored (build it with revision={revision.value!r})",
        )


def _chart_state(snapshot: Hashable, revision: Revision) -> ChartState | None:
    """The compiled chart state of a ``HandoffSnapshot`` of the explored revision."""
    state = chart_state_of(snapshot)
    return state if state is not None and state.revision is revision else None


def _state_findings(
    node: _Node, op: Input, reply: Reply, after: Hashable
) -> list[tuple[Invariant, str]]:
    """The invariants judged on the coordinator's state rather than on its reply."""
    if after == node.snapshot or reply.crash is not None:
        return []
    if reply.rejected:
        return [
            (
                Invariant.REJECTED_INPUT_CHANGES_NOTHING,
                f"{op} was rejected ({reply.error}) but changed the coordinator's state",
            )
        ]
    cls = node.obs.classify(op)
    if node.obs.complete:
        return []
    if cls is InputClass.DUPLICATE_OUTCOME:
        return [
            (
                Invariant.DUPLICATE_OUTCOME_IDEMPOTENT,
                f"{op} repeats the accepted outcome but changed the coordinator's state",
            )
        ]
    if cls is InputClass.INVALID_TIMING and not reply.actions:
        return [
            (
                Invariant.INVALID_INPUT_REJECTED,
                f"{op} carries an invalid timing but changed the coordinator's state",
            )
        ]
    return []


def _judge_liveness(graph: StateGraph) -> None:
    """Report every explored state from which honest inputs cannot reach Complete.

    Honest inputs are :meth:`Observation.is_honest`'s; where a fact made due is
    refused for good (:meth:`Observation.refuses_due`, only in revisions that validate
    the scheduled delay), a failure fact is honest too: the environment can only give up.
    """
    nodes = graph.nodes
    predecessors: list[list[int]] = [[] for _ in nodes]
    for node in nodes:
        for successor in node.honest + (node.failures if node.refused else []):
            predecessors[successor].append(node.index)
    # A state not explored (cut off by a violation or by max_states) is not judged.
    live = [node.obs.complete or not node.expanded for node in nodes]
    pending = [node.index for node in nodes if live[node.index]]
    while pending:
        for predecessor in predecessors[pending.pop()]:
            if not live[predecessor]:
                live[predecessor] = True
                pending.append(predecessor)
    for node in nodes:  # breadth-first order: the first one has the shortest trace
        if not live[node.index]:
            outstanding = ", ".join(
                f"{kind.__name__} (id {action_id})" for action_id, kind in node.obs.outstanding()
            )
            graph.fail(
                Invariant.LIVENESS,
                node,
                None,
                "no sequence of honest inputs reaches Complete from here "
                f"(unacknowledged: {outstanding or 'nothing'})",
            )


def explore(
    order: HandoffOrder | str,
    *,
    revision: Revision | str = Revision.SEED,
    factory: Factory | None = None,
    max_states: int | None = None,
) -> ExplorationReport:
    """Explore every reachable state of ``factory(handoff_id, order)``; check every invariant.

    Breadth-first over the coordinator's snapshots (plus what an observer must
    remember), giving every input class in every state, so each violation comes
    with a shortest counterexample. ``revision`` (default ``seed``) names the
    protocol revision explored: the invariants it promises are judged, and the
    default factory is ``HandoffCoordinator(..., revision=revision)``. ``factory``
    may return any object with the coordinator's methods
    (:class:`~handoff_fsm.verify.invariants.Coordinator`) that follows that
    revision; one whose ``revision`` attribute names another is refused
    (``invalid_revision``). ``max_states`` bounds the states explored (the report
    then is not ``ok``).
    """
    order = HandoffOrder(order)
    revision = checked_revision(revision)
    if factory is None:
        factory = partial(HandoffCoordinator, revision=revision)
    graph = explore_graph(order, factory, max_states, revision)
    ranked = sorted(graph.first.items(), key=lambda item: list(Invariant).index(item[0]))
    violations = tuple(
        Violation(
            invariant,
            finding.message,
            graph.trace(finding.node, finding.op),
            leaves_of_snapshot(finding.node.snapshot),
        )
        for invariant, finding in ranked
    )
    verdicts = tuple(
        InvariantVerdict(invariant, _checked(graph, invariant), graph.counts[invariant])
        for invariant in invariants_of(revision)
    )
    coverage = None
    if graph.nodes[0].chart_state is not None:
        coverage = ChartCoverage.of_steps(
            (n.chart_state.index for n in graph.nodes if n.chart_state is not None),
            graph.steps,
            revision,
            {
                (n.chart_state.index, kind.__name__)
                for n in graph.nodes
                if n.chart_state is not None
                for _, kind in n.obs.outstanding()
            },
        )
    return ExplorationReport(
        order=order,
        states=len(graph.nodes),
        transitions=graph.transitions,
        rejected=graph.rejected,
        violations=violations,
        verdicts=verdicts,
        exhausted=graph.exhausted,
        max_depth=max(node.depth for node in graph.nodes),
        seconds=graph.seconds,
        coverage=coverage,
        revision=revision,
    )


def explored(
    order: HandoffOrder, revision: Revision, engine: Engine = "compiled"
) -> ExplorationReport:
    """This package's own coordinator of ``revision`` on ``engine``, explored for ``order``
    by :func:`explore`, once per process (the running package cannot change under it).

    The one owner of these explorations: the review's figures and its verdict
    (:func:`handoff_fsm.review.design.explorations`) and the verdict of a side judged in
    this process (:mod:`handoff_fsm.verify.verdicts`) read the same report, so a review
    or a ``diff -o`` explores each revision and order once, whoever asks first."""
    return _explored(HandoffOrder(order), checked_revision(revision), engine)


@cache
def _explored(order: HandoffOrder, revision: Revision, engine: Engine) -> ExplorationReport:
    factory = partial(HandoffCoordinator, revision=revision, engine=engine)
    return explore(order, revision=revision, factory=factory)


def _checked(graph: StateGraph, invariant: Invariant) -> int:
    if invariant is Invariant.LIVENESS:
        return sum(1 for node in graph.nodes if node.expanded)
    if invariant is Invariant.DETERMINISTIC:
        return graph.replays
    return graph.transitions


def leaves_of_snapshot(snapshot: Hashable) -> tuple[str, ...]:
    return snapshot.state if type(snapshot) is HandoffSnapshot else ()

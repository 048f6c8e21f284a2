"""Exhaustive exploration: every reachable coordinator state, every input class, every invariant.

Rule kept here: the coordinator is a black box built by a factory. This module
drives it breadth-first with every input class in every state it reaches (a
state is the coordinator's snapshot together with the observer's memory, see
:mod:`handoff_fsm.invariants`), judges every reply, and keeps for each
invariant the *shortest* input sequence that breaks it, written as a
``handoff-fsm replay`` trace. Nothing here reads a coordinator's private
fields; the chart is consulted only to measure coverage
(:mod:`handoff_fsm.chart_coverage`).

A coordinator in a given state is rebuilt by replaying that state's shortest
input sequence into a fresh one, so any implementation can be checked whatever
it keeps outside its snapshot; an input that leaves the state as it was lets the
same object serve the next input. A state reached by a violation is not
explored further: everything after it would only repeat the finding.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.chart_coverage import (
    ChartCoverage,
    chart_state_of,
    chart_transitions,
    coverage_totals,
    event_of,
    step_taken,
)
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.errors import HandoffErrorCode
from handoff_fsm.invariants import (
    START,
    STATEMENTS,
    Coordinator,
    InputClass,
    Invariant,
    Observation,
    Op,
    Reply,
    observe,
    reply_of,
)
from handoff_fsm.model import (
    Canceled,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    OutcomeKind,
    SourceHeld,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)
from handoff_fsm.runtime import ChartState, compiled_chart
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.wire import issued_from_wire

Factory = Callable[[UUID, HandoffOrder], Coordinator]
"""``factory(handoff_id, order)``: a fresh coordinator to explore."""

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

_UNIT: Final = {
    kind: HandoffActionOutcome(kind=kind) for kind in OutcomeKind if kind is not OutcomeKind.FAILED
}
_INJECTED_FAILURE: Final = HandoffActionOutcome.failed("injected failure")
_CONFLICTING_FAILURE: Final = HandoffActionOutcome.failed("conflicting failure")


def _fact_ops(handoff_id: UUID) -> tuple[Op, ...]:
    facts: list[HandoffFact] = [
        SourceHeld(handoff_id=handoff_id, transfer_timing=VALID_TIMING),
        SourceHeld(handoff_id=handoff_id, transfer_timing=INVALID_TIMING),
        DestinationReserved(handoff_id=handoff_id, transferable_prompt_tokens=10),
        TransferCompleted(handoff_id=handoff_id),
        Failed(handoff_id=handoff_id),
        TimedOut(handoff_id=handoff_id),
        Canceled(handoff_id=handoff_id),
    ]
    return tuple(Op("fact", fact=fact) for fact in facts)


_FACT_OPS: Final = (*_fact_ops(HANDOFF_ID), *_fact_ops(FOREIGN_ID))


def inputs_for(obs: Observation) -> list[Op]:
    """Every input the explorer gives in a state the observer remembers as ``obs``.

    ``start``; each fact kind (SourceHeld with a valid and an invalid timing) for
    this and for a foreign handoff; for each unacknowledged action its accepted
    outcomes, ``Failed(..)`` and one outcome it cannot have; for each acknowledged
    one an exact duplicate and a conflicting outcome; an outcome for the next,
    not yet issued, action id.
    """
    ops = [START, *_FACT_OPS]
    for action_id, kind in obs.outstanding():
        accepted = ACKNOWLEDGEMENTS[kind].accepted
        ops += [
            Op("outcome", action_id=action_id, outcome=_UNIT[k]) for k in _UNIT if k in accepted
        ]
        ops.append(Op("outcome", action_id=action_id, outcome=_INJECTED_FAILURE))
        wrong = next(k for k in _UNIT if k not in accepted)
        ops.append(Op("outcome", action_id=action_id, outcome=_UNIT[wrong]))
    for action_id, outcome in obs.outcomes:
        ops.append(Op("outcome", action_id=action_id, outcome=outcome))
        ops.append(
            Op("outcome", action_id=action_id, outcome=_conflicting(obs, action_id, outcome))
        )
    ops.append(Op("outcome", action_id=obs.last_id + 1, outcome=_UNIT[OutcomeKind.APPLIED]))
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
    """The result of :func:`explore` for one order."""

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
    """What of the chart was exercised, when the snapshots are ``HandoffSnapshot``s."""

    @property
    def ok(self) -> bool:
        """No invariant broken, and nothing left unexplored."""
        return self.exhausted and not self.violations

    def violation(self, invariant: Invariant | str) -> Violation | None:
        """The counterexample for ``invariant``, if it was broken."""
        return next((v for v in self.violations if v.invariant == invariant), None)

    def to_json(self) -> dict[str, Any]:
        return {
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
    via: Op | None
    depth: int
    chart_state: ChartState | None
    expanded: bool = False
    honest: list[int] = field(default_factory=list)
    """Successors through honest inputs (what liveness may rely on)."""

    def ops(self) -> list[Op]:
        """The shortest input sequence reaching this state."""
        ops: list[Op] = []
        node: _Node | None = self
        while node is not None and node.via is not None:
            ops.append(node.via)
            node = node.parent
        ops.reverse()
        return ops


@dataclass(slots=True)
class _Finding:
    node: _Node
    op: Op | None
    message: str


@dataclass(slots=True)
class _Graph:
    """Everything one exploration learned."""

    order: HandoffOrder
    fallback: float
    nodes: list[_Node] = field(default_factory=list)
    transitions: int = 0
    rejected: int = 0
    replays: int = 0
    first: dict[Invariant, _Finding] = field(default_factory=dict)
    """The first (so shortest) finding of each invariant."""
    counts: Counter[Invariant] = field(default_factory=Counter)
    steps: dict[tuple[int, str], tuple[_Node, Op]] = field(default_factory=dict)
    """Each compiled step taken, with the first (so shortest) transition taking it."""
    exhausted: bool = True
    seconds: float = 0.0

    def fail(self, invariant: Invariant, node: _Node, op: Op | None, message: str) -> None:
        self.counts[invariant] += 1
        if invariant not in self.first:
            self.first[invariant] = _Finding(node, op, message)

    def trace(self, node: _Node, op: Op | None) -> tuple[str, ...]:
        return _trace(self.order, self.fallback, [*node.ops(), *([op] if op is not None else [])])


def _trace(order: HandoffOrder, fallback: float, ops: Iterable[Op]) -> tuple[str, ...]:
    new = {
        "coordinator": TRACE_KEY,
        "op": "new",
        "handoff_id": str(HANDOFF_ID),
        "order": order.value,
        "fallback_transfer_delay_ms": fallback,
    }
    return tuple(json.dumps(line) for line in [new, *(op.to_wire(TRACE_KEY) for op in ops)])


def _replayed(factory: Factory, order: HandoffOrder, ops: Sequence[Op]) -> Coordinator:
    coordinator = factory(HANDOFF_ID, order)
    for op in ops:
        reply_of(coordinator, op)
    return coordinator


def _snapshot(coordinator: Coordinator) -> Hashable:
    try:
        return coordinator.snapshot()
    except Exception as error:  # a snapshot that raises is a state of its own, not a crash
        return ("snapshot raised", type(error).__name__, str(error))


def _explore(order: HandoffOrder, factory: Factory, max_states: int | None) -> _Graph:
    began = time.perf_counter()
    first = factory(HANDOFF_ID, order)
    graph = _Graph(order, float(getattr(first, "fallback_transfer_delay_ms", 0.0)))
    snapshot = _snapshot(first)
    root = _Node(0, snapshot, Observation(HANDOFF_ID, order), None, None, 0, None)
    root.chart_state = chart_state_of(snapshot)
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
                target.chart_state = chart_state_of(after)
                graph.nodes.append(target)
                index[(after, obs)] = target
                if not findings:
                    queue.append(target)
                    spare[target.index] = coordinator
            elif target is node and not findings:
                spare[node.index] = coordinator
            if node.obs.is_honest(op):
                node.honest.append(target.index)
        else:
            node.expanded = True
        spare.pop(node.index, None)

    _judge_liveness(graph)
    graph.seconds = time.perf_counter() - began
    return graph


def _state_findings(
    node: _Node, op: Op, reply: Reply, after: Hashable
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


def _judge_liveness(graph: _Graph) -> None:
    """Report every explored state from which honest inputs cannot reach Complete."""
    nodes = graph.nodes
    predecessors: list[list[int]] = [[] for _ in nodes]
    for node in nodes:
        for successor in node.honest:
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
    factory: Factory = HandoffCoordinator,
    max_states: int | None = None,
) -> ExplorationReport:
    """Explore every reachable state of ``factory(handoff_id, order)``; check every invariant.

    Breadth-first over the coordinator's snapshots (plus what an observer must
    remember), giving every input class in every state, so each violation comes
    with a shortest counterexample. ``factory`` may return any object with the
    coordinator's methods (:class:`~handoff_fsm.invariants.Coordinator`).
    ``max_states`` bounds the states explored (the report then is not ``ok``).
    """
    order = HandoffOrder(order)
    graph = _explore(order, factory, max_states)
    ranked = sorted(graph.first.items(), key=lambda item: list(Invariant).index(item[0]))
    violations = tuple(
        Violation(
            invariant,
            finding.message,
            graph.trace(finding.node, finding.op),
            _leaves(finding.node.snapshot),
        )
        for invariant, finding in ranked
    )
    verdicts = tuple(
        InvariantVerdict(invariant, _checked(graph, invariant), graph.counts[invariant])
        for invariant in Invariant
    )
    coverage = None
    if graph.nodes[0].chart_state is not None:
        coverage = ChartCoverage.of_steps(
            (n.chart_state.index for n in graph.nodes if n.chart_state is not None), graph.steps
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
    )


def _checked(graph: _Graph, invariant: Invariant) -> int:
    if invariant is Invariant.LIVENESS:
        return sum(1 for node in graph.nodes if node.expanded)
    if invariant is Invariant.DETERMINISTIC:
        return graph.replays
    return graph.transitions


def _leaves(snapshot: Hashable) -> tuple[str, ...]:
    return snapshot.state if type(snapshot) is HandoffSnapshot else ()


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
        return _trace(self.order, 0.0, self.ops)


def model_paths(orders: Iterable[HandoffOrder] = tuple(HandoffOrder)) -> tuple[ModelPath, ...]:
    """Shortest paths to every reachable coordinator state and through every step taken.

    One path per state an exploration of the compiled engine reaches (so every
    reachable chart state too) and one per compiled step some input takes (so
    every declared transition, see :func:`~handoff_fsm.chart_coverage.step_transitions`).
    """
    paths: list[ModelPath] = []
    for order in orders:
        graph = _explore(order, HandoffCoordinator, None)
        for node in graph.nodes:
            name = f"{order.value}:state{node.index}:{'+'.join(_leaves(node.snapshot))}"
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
    """A parsed ``handoff-fsm replay`` reply as a :class:`~handoff_fsm.invariants.Reply`."""
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


# ---------------------------------------------------------------------- command line


def cli_check(args: argparse.Namespace) -> int:
    """``handoff-fsm check [--order SourceFirst|DestinationFirst|both] [--engine E] [--json]``."""
    factory: Factory = partial(HandoffCoordinator, engine=args.engine)
    orders = list(HandoffOrder) if args.order == "both" else [HandoffOrder(args.order)]
    reports = [explore(order, factory=factory) for order in orders]
    ok = all(report.ok for report in reports)
    combined: ChartCoverage | None = None
    for coverage in (report.coverage for report in reports if report.coverage is not None):
        combined = coverage if combined is None else combined | coverage
    if args.json:
        result = {
            "ok": ok,
            "engine": args.engine,
            "orders": [report.to_json() for report in reports],
            "coverage": None if combined is None else combined.figures(orders),
        }
        print(json.dumps(result, indent=2))
        return 0 if ok else 1
    for report in reports:
        _print_report(report)
    if combined is not None:
        print(f"{' + '.join(o.value for o in orders)}: {_coverage_line(combined, orders)}")
        exhausted = all(report.exhausted for report in reports)
        for line in _coverage_gaps(combined, orders, exhausted=exhausted):
            print(f"  {line}")
    print("OK: every invariant holds" if ok else "FAILED: see the counterexamples above")
    return 0 if ok else 1


def _coverage_line(coverage: ChartCoverage, orders: Iterable[HandoffOrder]) -> str:
    figures = coverage.figures(orders)
    return (
        "{0[0]}/{0[1]} chart states, {1[0]}/{1[1]} compiled steps, "
        "{2[0]}/{2[1]} declared chart transitions covered"
    ).format(figures["chart_states"], figures["steps"], figures["transitions"])


def _coverage_gaps(
    coverage: ChartCoverage, orders: Iterable[HandoffOrder], *, exhausted: bool
) -> list[str]:
    totals = coverage_totals(orders)
    lines = [
        f"transition never fired: {chart_transitions()[i]}"
        for i in sorted(totals.transitions - coverage.transitions)
    ]
    why = "unreachable (no explored input takes it)" if exhausted else "not reached"
    states = compiled_chart().states
    for source, event in sorted(totals.steps - coverage.steps):
        state = states[source]
        lines.append(f"step {event} in {state.order.value} ({', '.join(state.leaves)}): {why}")
    return lines


def _print_report(report: ExplorationReport) -> None:
    write = sys.stdout.write
    write(
        f"{report.order.value}: {report.states} reachable states, {report.transitions} "
        f"transitions explored, {report.rejected} inputs rejected, {len(report.verdicts)} "
        f"invariants checked, max depth {report.max_depth}, {report.seconds:.2f} s"
        + ("" if report.exhausted else " (NOT exhausted: max_states reached)")
        + "\n"
    )
    if report.coverage is not None:
        write(f"  coverage: {_coverage_line(report.coverage, [report.order])}\n")
    width = max(len(v.invariant.value) for v in report.verdicts)
    for verdict in report.verdicts:
        status = "holds" if verdict.holds else f"VIOLATED ({verdict.violated}x)"
        write(f"  {verdict.invariant.value:<{width}}  {verdict.checked:>6} checks  {status}\n")
    for violation in report.violations:
        write(f"\n  counterexample: {violation}\n")
        write(f"    rule: {STATEMENTS[violation.invariant]}\n")
        if violation.state:
            write(f"    state: {', '.join(violation.state)}\n")
        for line in violation.trace:
            write(f"    {line}\n")
    write("\n")

"""Model-based tests: the explored model's shortest paths, replayed on both engines.

From an exhaustive exploration of the compiled engine (``model_paths``): one
case per reachable coordinator state (its shortest input sequence) and one per
compiled step some input takes (the shortest sequence ending with it), for
both orders of both protocol revisions. Each case runs on both engines and must
give the model's replies step by step, end in the model's state, break no
invariant of its revision, and take the step it was generated for. On the
statechart engine a python-statemachine listener records which declared chart
transitions actually fire; each revision's cases must fire every transition that
revision can fire, and together every declared one.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from handoff_fsm import Engine, HandoffCoordinator, HandoffOrder, Revision
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.io.inputs import reply_of
from handoff_fsm.structure.transitions import (
    FiredTransitions,
    chart_state_of,
    chart_transitions,
    fireable_transitions,
    rejection_transition,
    step_transitions,
)
from handoff_fsm.verify.coverage import ChartCoverage, coverage_totals, event_of, step_taken
from handoff_fsm.verify.exploration import HANDOFF_ID, ExplorationReport, explore
from handoff_fsm.verify.invariants import Observation, observe
from tests.model_paths import ModelPath, model_paths

PATHS = model_paths()
STEP_PATHS = [path for path in PATHS if path.step is not None]
EVERY = [(revision, order) for revision in Revision for order in HandoffOrder]


def _listen(coordinator: HandoffCoordinator) -> FiredTransitions:
    """Attach a listener to the live chart a statechart-engine coordinator runs."""
    listener = FiredTransitions()
    chart: Any = coordinator.chart
    chart.add_listener(listener)
    return listener


def _run(path: ModelPath, engine: Engine) -> set[int]:
    """Replay ``path`` on ``engine``, checking every reply; the transitions the last input fired.

    Fired transitions are observed only on the statechart engine (empty otherwise).
    """
    coordinator = path.coordinator(engine)
    listener = _listen(coordinator) if engine == "statechart" else None
    obs = Observation(HANDOFF_ID, path.order, path.revision)
    fired: set[int] = set()
    for op, expected in zip(path.ops, path.replies, strict=True):
        before = chart_state_of(coordinator.snapshot())
        assert before is not None
        if listener is not None:
            listener.fired.clear()
        reply = reply_of(coordinator, op)
        assert reply == expected, op
        event = event_of(obs, op)
        obs, findings = observe(obs, op, reply)
        assert findings == [], op
        fired = set(listener.fired) if listener is not None else set()
        if reply.error is not None and event is not None:
            rejecting = rejection_transition(before.leaves, event, reply.error)
            if rejecting is not None:
                fired.add(rejecting)
    assert coordinator.snapshot() == path.snapshot
    return fired


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_model_path(path: ModelPath, engine: Engine) -> None:
    fired = _run(path, engine)
    final = chart_state_of(path.snapshot)
    assert final is not None
    assert final.index == path.chart_state
    if path.step is None:
        return
    # The last input takes exactly the step the path was generated for ...
    coordinator = path.coordinator()
    obs = Observation(HANDOFF_ID, path.order, path.revision)
    for op in path.ops[:-1]:
        obs, _ = observe(obs, op, reply_of(coordinator, op))
    before = chart_state_of(coordinator.snapshot())
    assert before is not None
    last = path.ops[-1]
    step = step_taken(before, event_of(obs, last), reply_of(coordinator, last))
    assert step is not None
    assert (step.source, step.event) == path.step
    assert step.target == path.chart_state
    # ... and on the framework's own engine it fires the transitions the step stands for.
    if engine == "statechart":
        assert fired == step_transitions(path.revision)[path.step]


def _of(revision: Revision, order: HandoffOrder, paths: list[ModelPath]) -> list[ModelPath]:
    return [p for p in paths if p.revision is revision and p.order is order]


@cache
def _explored(revision: Revision, order: HandoffOrder) -> ExplorationReport:
    """An exploration of its own, to hold the generated paths against."""
    return explore(order, revision=revision)


@pytest.mark.slow
def test_paths_reach_every_reachable_state() -> None:
    for revision, order in EVERY:
        report = _explored(revision, order)
        state_paths = [p for p in _of(revision, order, list(PATHS)) if p.step is None]
        assert len(state_paths) == report.states
        assert len({p.ops for p in state_paths}) == report.states
        assert report.coverage is not None
        assert {p.chart_state for p in state_paths} == report.coverage.states


def test_paths_form_a_breadth_first_tree_of_shortest_paths() -> None:
    for revision, order in EVERY:
        state_paths = [p.ops for p in _of(revision, order, list(PATHS)) if p.step is None]
        lengths = [len(ops) for ops in state_paths]
        assert lengths == sorted(lengths)
        assert lengths[0] == 0
        known = set(state_paths)
        assert all(ops[:-1] in known for ops in state_paths[1:])
        # A step path is a state path and one more input.
        step_paths = [p.ops for p in _of(revision, order, STEP_PATHS)]
        assert all(ops[:-1] in known for ops in step_paths)


@pytest.mark.slow
def test_paths_take_every_step_the_exploration_takes() -> None:
    for revision, order in EVERY:
        report = _explored(revision, order)
        assert report.coverage is not None
        assert {p.step for p in _of(revision, order, STEP_PATHS)} == report.coverage.steps


def _fired(revision: Revision) -> frozenset[int]:
    """The declared transitions the revision's step paths fire on the statechart engine.

    ``test_model_path`` runs each step path on the statechart engine with a listener and
    demands that its last input fires exactly its step's transitions (as the framework
    reports them in :func:`step_transitions`), so the suite fires their union.
    """
    mapping = step_transitions(revision)
    return frozenset().union(
        *(mapping[path.step] for path in STEP_PATHS if path.revision is revision and path.step)
    )


@pytest.mark.parametrize("revision", list(Revision))
def test_generated_suite_covers_every_transition_its_revision_fires(revision: Revision) -> None:
    paths = [p for p in PATHS if p.revision is revision]
    steps = [p for p in paths if p.step is not None]
    fired = _fired(revision)
    assert fired == fireable_transitions(revision)

    coverage = ChartCoverage.of_steps(
        (p.chart_state for p in paths), (p.step for p in steps if p.step is not None), revision
    )
    figures: dict[str, Any] = coverage.figures()
    assert figures["transitions"] == [len(fired), len(fired)]
    assert figures["chart_states"] == [len(compiled_chart(revision).states)] * 2
    assert figures["uncovered_transitions"] == []
    # Every compiled step some input can take; the rest are shown unreachable by the
    # exhaustive exploration (an action_failed where nothing that may fail is outstanding).
    assert figures["steps"][0] == len(steps)
    untaken = coverage_totals(revision=revision).steps - coverage.steps
    assert {event for _, event in untaken} <= {"action_failed", "release_confirmed"}


def test_generated_suites_of_both_revisions_cover_every_declared_transition() -> None:
    fired = [_fired(revision) for revision in Revision]
    assert [len(f) for f in fired] == [30, 34]
    assert set().union(*fired) == {t.index for t in chart_transitions()}
    assert len(chart_transitions()) == 35

"""Each revision's chart: the family with that revision decided, read off its compiled table.

What the chart draws is held against what python-statemachine does: every
compiled step of the revision is sent through the framework with a listener
(:func:`handoff_fsm.verify.coverage.step_transitions`), and the declared
transitions those steps fire must be exactly the chart's transitions, no more,
no fewer. The states are those the revision's runs enter.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from pathlib import Path

import pytest

import handoff_fsm.chart
from handoff_fsm.chart import REVISION_GUARDS, HandoffChart
from handoff_fsm.engines.compiled import compile_chart, compiled_chart
from handoff_fsm.errors import ConfigurationError
from handoff_fsm.model import Revision
from handoff_fsm.render import statechart_dot
from handoff_fsm.review.tables import transition_tables_markdown
from handoff_fsm.structure import describe_chart, revision_chart, revisions
from handoff_fsm.structure.revisions import constant_guard_parts, decide
from handoff_fsm.structure.transitions import chart_transitions, step_transitions
from handoff_fsm.verify.diff.driver import DESCRIBERS, SideDriver, _plain

REVISIONS = list(Revision)


def _fired(revision: Revision) -> set[int]:
    """The declared transitions the revision's compiled steps fire, as the framework says."""
    return {index for fired in step_transitions(revision).values() for index in fired}


def _configured(revision: Revision) -> set[str]:
    return {s for state in compiled_chart(revision).states for s in state.configuration}


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_a_revisions_transitions_keep_the_numbers_of_the_declared_ones(
    revision: Revision,
) -> None:
    declared = chart_transitions()
    for edge in revision_chart(revision).edges:
        family = declared[edge.index]
        assert (edge.source, edge.target, edge.events) == (
            family.source,
            family.target,
            family.events,
        )


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_a_revisions_chart_draws_exactly_the_transitions_its_compiled_steps_fire(
    revision: Revision,
) -> None:
    chart = revision_chart(revision)
    assert {edge.index for edge in chart.edges} == _fired(revision)
    assert len({edge.index for edge in chart.edges}) == len(chart.edges)
    assert chart.revision is revision
    # Everything else about a kept transition is the family's (only its guard is decided).
    family = {edge.index: edge for edge in describe_chart().edges}
    for edge in chart.edges:
        same = family[edge.index]
        assert (edge.source, edge.target, edge.events, edge.effects, edge.validators) == (
            same.source,
            same.target,
            same.events,
            same.effects,
            same.validators,
        )


def test_the_revisions_differ_in_what_they_fire() -> None:
    # Else the test above could not tell a revision's chart from the family.
    fired = {revision: _fired(revision) for revision in Revision}
    assert fired[Revision.SEED] != fired[Revision.A976B2BF]
    assert {edge.index for edge in describe_chart().edges} == set().union(*fired.values())


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_a_revisions_chart_has_the_states_its_runs_enter(revision: Revision) -> None:
    chart = revision_chart(revision)
    ids = {state.id for state in chart.states}
    # Every state a run rests in, and every end of a transition it fires.
    ends = {
        end
        for index in _fired(revision)
        for end in (chart_transitions()[index].source, chart_transitions()[index].target)
    }
    assert _configured(revision) | ends <= ids
    # Children lists and top-level states name only states of this chart.
    assert all(set(state.children) <= ids for state in chart.states)
    assert set(chart.top_level) <= ids
    assert all(edge.source in ids and edge.target in ids for edge in chart.edges)


def test_the_seed_chart_has_no_state_only_a976b2bf_runs_enter() -> None:
    only_a976b2bf = _configured(Revision.A976B2BF) - _configured(Revision.SEED)
    assert only_a976b2bf == {"decoding", "canceling_decode"}
    seed = {state.id for state in revision_chart(Revision.SEED).states}
    assert seed.isdisjoint(only_a976b2bf)
    a976b2bf = {state.id for state in revision_chart(Revision.A976B2BF).states}
    assert only_a976b2bf <= a976b2bf
    assert a976b2bf == {state.id for state in describe_chart().states}
    dot = statechart_dot(revision_chart(Revision.SEED))
    assert "decoding" not in dot
    assert "canceling decode" not in dot


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_guard_parts_a_revision_decides_are_not_written(revision: Revision) -> None:
    constants = constant_guard_parts(HandoffChart, compiled_chart(revision))
    # Exactly the revision guards are constant: the fields by which revisions differ.
    assert constants == {name: revision in kept for name, kept in REVISION_GUARDS.items()}
    chart = revision_chart(revision)
    for edge in chart.edges:
        if edge.guard is not None:
            assert not set(edge.guard.fields) & set(REVISION_GUARDS), edge
    words = statechart_dot(chart) + transition_tables_markdown(chart)
    assert f"({Revision.A976B2BF.value})" not in words
    assert "reopens after success" not in words
    # The family writes them, with the revision in words.
    family = [edge.guard.text for edge in describe_chart().edges if edge.guard is not None]
    assert "reopens after success (a976b2bf)" in family
    assert "(a976b2bf)" in statechart_dot(describe_chart())


def test_what_is_left_of_a_guard_is_worded_again() -> None:
    def guard(revision: Revision, source: str, validators: int) -> str | None:
        edge = next(
            e
            for e in revision_chart(revision).edges
            if e.source == source and len(e.validators) == validators
        )
        return edge.guard.text if edge.guard is not None else None

    # `not (validates_scheduled_delay and In('reserved'))`: true under the seed, half
    # decided under a976b2bf, whose other transition carries the check.
    assert guard(Revision.SEED, "submitted", 1) is None
    assert guard(Revision.A976B2BF, "submitted", 1) == "not destination reserved"
    assert guard(Revision.A976B2BF, "submitted", 2) == "destination reserved"
    assert not any(
        e.source == "submitted" and len(e.validators) == 2
        for e in revision_chart(Revision.SEED).edges
    )


def _parsed(expression: str) -> ast.expr:
    return ast.parse(expression, mode="eval").body


def _left(expression: str, values: dict[str, bool]) -> str:
    """What :func:`decide` leaves of ``expression`` (it must not decide it)."""
    decided = decide(_parsed(expression), values)
    assert not isinstance(decided, bool), decided
    return ast.unparse(decided)


def test_decide_replaces_known_parts_and_simplifies() -> None:
    assert decide(_parsed("not (a and In('x'))"), {"a": False}) is True
    assert _left("not (a and In('x'))", {"a": True}) == "not In('x')"
    assert decide(_parsed("a and In('x')"), {"In('x')": False}) is False
    assert decide(_parsed("a or In('x')"), {"In('x')": True}) is True
    assert _left("a or b", {"b": False}) == "a"
    assert _left("a and In('y')", {"b": True, "In('x')": False}) == "a and In('y')"


@pytest.fixture
def guarded_chart(monkeypatch: pytest.MonkeyPatch) -> type[HandoffChart]:
    """A copy of chart.py whose transfer waits for a field the seed never sets.

    The field ``validates_scheduled_delay`` is false in every seed chart state, so under
    the seed the transfer can never start: what depends on it is unreachable.
    """
    source = Path(handoff_fsm.chart.__file__).read_text(encoding="utf-8")
    edited = source.replace(
        "transfer_idle.to(transfer_issued, cond=\"In('held') and In('reserved')\")",
        "transfer_idle.to(transfer_issued, "
        "cond=\"validates_scheduled_delay and In('held') and In('reserved')\")",
    )
    assert edited != source
    module = types.ModuleType("guarded_chart")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(edited, module.__name__, "exec"), module.__dict__)
    changed: type[HandoffChart] = module.HandoffChart
    return changed


def test_a_chart_passed_in_is_compiled_and_decided_for_the_revision(
    guarded_chart: type[HandoffChart],
) -> None:
    seed = revision_chart(Revision.SEED, guarded_chart)
    ids = {state.id for state in seed.states}
    # The transfer never starts under the seed: nothing after it is entered.
    assert {"transfer_issued", "in_flight", "transferred", "activating", "released"}.isdisjoint(ids)
    assert ids == {
        s
        for state in compile_chart(guarded_chart, Revision.SEED).states
        for s in state.configuration
    } | {"source_pending", "destination_pending", "source_untouched", "destination_untouched"}
    assert not any(edge.target == "transfer_issued" for edge in seed.edges)
    a976b2bf = revision_chart(Revision.A976B2BF, guarded_chart)
    into = next(edge for edge in a976b2bf.edges if edge.target == "transfer_issued")
    assert into.guard is not None
    assert into.guard.text == "source held and destination reserved"


def test_an_unknown_revision_is_refused() -> None:
    with pytest.raises(ConfigurationError) as raised:
        revision_chart("b0gus")
    assert raised.value.code.value == "invalid_revision"


def test_the_diff_driver_finds_this_packages_revision_chart_first() -> None:
    # `handoff-fsm diff` describes a side's chart with the first of the driver's
    # DESCRIBERS that the side's package has: for this package, `revision_chart`.
    module, name, takes_revision = DESCRIBERS[0]
    assert getattr(importlib.import_module(module), name) is revisions.revision_chart
    assert takes_revision
    assert SideDriver(revision="a976b2bf").describe()["chart"] == _plain(
        revision_chart(Revision.A976B2BF)
    )
    assert revision_chart() is revision_chart(Revision.SEED)

"""The compiled runtime is derived from the chart, mechanically and completely."""

from __future__ import annotations

import uuid

from handoff_fsm import HandoffOrder
from handoff_fsm.chart import INPUT_EVENTS, PLAIN_ISSUES, VALIDATORS, HandoffChart
from handoff_fsm.engines.compiled import compile_chart, compiled_chart
from handoff_fsm.engines.harness import effect_names
from handoff_fsm.journal import ActionJournal
from handoff_fsm.run import HandoffRun

HID = uuid.UUID(int=7)


def test_every_reachable_chart_state_is_compiled() -> None:
    compiled = compiled_chart()
    assert len(compiled.states) == 34
    assert {state.order for state in compiled.states} == set(HandoffOrder)
    for order, initial in compiled.initial.items():
        assert initial.order is order
        assert initial.leaves == ("source_idle", "destination_idle", "transfer_idle")
    # every state but the initial ones is the target of some step
    targets = {step.target for step in compiled.steps}
    initial_indexes = {state.index for state in compiled.initial.values()}
    assert targets | initial_indexes == {state.index for state in compiled.states}
    # complete states are final: nothing happens there
    for state in compiled.states:
        assert state.is_complete == (state.leaves == ("complete",))
        if state.is_complete:
            assert state.steps == {}
            assert state.completion is not None
        else:
            assert state.completion is None


def test_steps_only_name_effects_and_validators_come_first() -> None:
    names = set(effect_names())
    for step in compiled_chart().steps:
        assert step.event in INPUT_EVENTS
        assert set(step.validators) <= VALIDATORS
        assert set(step.effects) <= names - VALIDATORS
        assert step.validators or step.effects or step.target != step.source


def test_lookup_finds_each_state_by_leaves_and_fields() -> None:
    compiled = compiled_chart()
    for state in compiled.states:
        assert compiled.lookup(state.leaves, state.fields) is state
    assert compiled.lookup(("held", "reserved"), compiled.states[0].fields) is None


def test_generated_steps_document_their_code() -> None:
    state = compiled_chart().initial[HandoffOrder.SOURCE_FIRST]
    start = state.steps["start"]
    assert start.__doc__ is not None
    assert "c.issue(SubmitPrefill)  # issue_submit_prefill" in start.__doc__


def test_plain_issues_are_what_the_runs_effects_issue() -> None:
    """A generated step's ``c.issue(kind)`` is the effect it stands for: the same reply and
    journal as the run's ``issue_*`` method (which the interpreted engine calls)."""
    for name, kind in PLAIN_ISSUES.items():
        by_effect, by_kind = (
            HandoffRun(HID, HandoffOrder.SOURCE_FIRST, 0.0, ActionJournal(3)) for _ in range(2)
        )
        issued = getattr(by_effect, name)()
        assert issued == by_kind.issue(kind)
        assert type(issued.action) is kind and issued.id == 3
        assert by_effect.journal.issued == by_kind.journal.issued == {3: kind}
        assert by_effect.journal.next_id == by_kind.journal.next_id == 4


class _NoDestinationFirst(HandoffChart):
    """A changed chart: the destination-first guard never holds."""

    @property
    def destination_first(self) -> bool:
        return False


def test_changing_the_chart_changes_the_runtime() -> None:
    original = compiled_chart()
    changed = compile_chart(_NoDestinationFirst)
    start_df = original.initial[HandoffOrder.DESTINATION_FIRST].steps
    assert "start" in start_df
    assert "start" not in changed.initial[HandoffOrder.DESTINATION_FIRST].steps
    assert len(changed.states) < len(original.states)

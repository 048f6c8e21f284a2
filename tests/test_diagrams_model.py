"""The chart description is read off HandoffChart, completely and in the chart's own terms."""

from __future__ import annotations

import pytest

from handoff_fsm.chart import REJECTIONS, VALIDATORS, HandoffChart
from handoff_fsm.engines.compiled import document_order
from handoff_fsm.engines.harness import effect_names
from handoff_fsm.model import ACTION_TYPES, HandoffCompletion
from handoff_fsm.structure import EdgeKind, EventKind, StateKind, describe_chart
from handoff_fsm.structure.describe import action_of, effect_text, word_guard
from handoff_fsm.structure.transitions import chart_transitions


def test_every_state_of_the_chart_is_described_in_document_order() -> None:
    model = describe_chart()
    assert [s.id for s in model.states] == [s.id for s in document_order()]
    assert model.top_level == ("active", "cleaning_up", "decoding", "canceling_decode", "complete")
    assert model.initial == "active"


def test_parallel_states_regions_and_leaves_are_told_apart() -> None:
    model = describe_chart()
    kinds = {s.id: s.kind for s in model.states}
    assert kinds["active"] is StateKind.PARALLEL
    assert kinds["cleaning_up"] is StateKind.PARALLEL
    assert [r.id for r in model.regions] == [
        "source",
        "destination",
        "transfer",
        "source_cleanup",
        "destination_cleanup",
    ]
    assert kinds["held"] is StateKind.ATOMIC
    assert model.state("held").region == "source"
    assert model.state("canceling_destination").region == "destination_cleanup"
    assert model.state("complete").region is None


def test_edges_are_the_frameworks_declared_transitions_in_document_order() -> None:
    # Coverage and the overlay map fired transitions by index: the description's edges
    # must be the framework's declared transitions, one for one.
    declared = [t for state in document_order() for t in state.transitions if not t.initial]
    edges = describe_chart().edges
    assert chart_transitions() == edges
    assert len(edges) == len(declared)
    for edge, transition in zip(edges, declared, strict=True):
        assert (edge.source, (edge.target,)) == (
            transition.source.id,
            tuple(target.id for target in transition.targets),
        )
        assert set(edge.events) <= {str(event) for event in transition.events}


def test_entry_actions_come_from_the_issue_effects() -> None:
    model = describe_chart()
    issuing = {s.id: s.entry_actions for s in model.states if s.entry_actions}
    assert issuing == {
        "submitting": ("SubmitPrefill",),
        "releasing": ("ReleaseSource",),
        "reserving": ("ReserveDestination",),
        "activating": ("ActivateDestination",),
        "transfer_issued": ("StartTransfer",),
        "canceling_source": ("CancelSource",),
        "canceling_destination": ("CancelDestination",),
        "complete": ("Complete",),
        "decoding": ("Complete",),
        "canceling_decode": ("CancelDestination",),
    }
    assert model.state("submitting").entry_fields == ("source_engaged",)


def test_every_issue_effect_names_an_action_type() -> None:
    names = {cls.__name__ for cls in ACTION_TYPES}
    issued = [action_of(name) for name in effect_names() if name.startswith("issue_")]
    assert sorted(a for a in issued if a is not None) == sorted(names)
    assert action_of("store_transfer_timing") is None
    with pytest.raises(ValueError, match="names no action type"):
        action_of("issue_teleport")


def test_rejections_carry_their_error_codes() -> None:
    model = describe_chart()
    rejections = [e for e in model.edges if e.kind is EdgeKind.REJECTION]
    assert len(rejections) == 6
    for edge in rejections:
        assert edge.source == edge.target
        assert edge.actions == ()
        assert edge.rejection is REJECTIONS[edge.validators[0]].code
    assert {e.validators for e in model.edges if e.validators and e.rejection is None} == {
        ("validate_transfer_timing",),
        ("validate_transfer_timing", "validate_scheduled_delay"),
        ("validate_scheduled_delay",),
    }
    assert {v for e in model.edges for v in e.validators} == set(VALIDATORS)


def test_guards_are_worded_for_people() -> None:
    model = describe_chart()
    guards = {(e.source, e.target, e.events): e.guard for e in model.edges if e.guard}
    texts = {(source, target): guard.text for (source, target, _), guard in guards.items()}
    assert guards[("source_idle", "submitting", ("start",))].text == "source first"
    assert guards[("source_idle", "submitting", ())].text == (
        "destination first and destination reserved"
    )
    assert texts[("transfer_idle", "transfer_issued")] == "source held and destination reserved"
    assert texts[("reserved", "activating")] == "transferred"
    assert texts[("source_pending", "source_untouched")] == "not source engaged"
    transfer = guards[("transfer_idle", "transfer_issued", ())]
    assert transfer.states == ("held", "reserved")
    assert transfer.expression == "In('held') and In('reserved')"


def test_word_guard_parenthesises_mixed_operators_and_refuses_the_unknown() -> None:
    model = describe_chart()
    guard = word_guard("source_first and (In('held') or not source_engaged)", model)
    assert guard.text == "source first and (source held or not source engaged)"
    assert guard.fields == ("source_first", "source_engaged")
    with pytest.raises(ValueError, match="cannot put"):
        word_guard("len(x) > 2", model)


def test_done_transitions_record_the_completion() -> None:
    model = describe_chart()
    done = {e.source: e for e in model.edges if e.kind is EdgeKind.DONE}
    assert done["active"].completion is HandoffCompletion.SUCCESS
    assert done["cleaning_up"].completion is HandoffCompletion.CANCELED
    assert done["active"].events == ("done.state.active",)
    assert effect_text("mark_canceled") == "completion = Canceled"


def test_describing_another_chart_class_reads_that_class() -> None:
    class Renamed(HandoffChart):
        pass

    assert describe_chart(Renamed).name == "Renamed"
    assert describe_chart(Renamed).states == describe_chart().states


def test_every_event_says_what_raises_it() -> None:
    model = describe_chart()
    kinds = {
        e: k for edge in model.edges for e, k in zip(edge.events, edge.event_kinds, strict=True)
    }
    assert kinds["start"] is EventKind.START
    assert kinds["source_held"] is kinds["canceled"] is EventKind.FACT
    assert (
        kinds["prefill_submitted"] is kinds["source_cancel_confirmed"] is EventKind.ACKNOWLEDGEMENT
    )
    assert kinds["action_failed"] is EventKind.ACTION_FAILED
    assert kinds["done.state.active"] is EventKind.DONE
    assert all(len(edge.events) == len(edge.event_kinds) for edge in model.edges)
    inputs = {entry.event: entry for entry in model.inputs}
    assert inputs["source_held"].fact == "SourceHeld"
    assert inputs["prefill_submitted"].acknowledges == ("SubmitPrefill",)
    assert inputs["prefill_submitted"].text == "`Submitted` for `SubmitPrefill`"
    assert "CancelSource" not in inputs["action_failed"].acknowledges  # a cleanup may not fail
    assert {entry.kind for entry in model.inputs} == set(EventKind) - {EventKind.DONE}

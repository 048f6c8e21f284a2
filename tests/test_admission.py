"""Inputs that skipped validation never change a coordinator (handoff_fsm.admission).

Two halves. The shortcut that admits an input without asking pydantic admits only what
pydantic returns unchanged (checked against pydantic over generated field values, valid
and not); and in every reachable state of every revision and order, a corrupted copy of
each payload input is refused with a ``ValidationError`` before anything changes, after
which the coordinator still copies, snapshots and answers the honest input as before.
"""

from __future__ import annotations

import copy
import math
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from handoff_fsm import (
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffOrder,
    HandoffTransferTiming,
    OutcomeKind,
    Revision,
    SourceHeld,
    TransferTimingMode,
)
from handoff_fsm.admission import admitted_fact, admitted_outcome
from handoff_fsm.io.inputs import Input, reply_of
from handoff_fsm.model import U64_MAX, validated
from handoff_fsm.verify.exploration import HANDOFF_ID, explore_graph, inputs_for

_ANY = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, U64_MAX, U64_MAX + 1, -1, 10**30]),
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
    st.text(max_size=5),
    st.sampled_from(list(TransferTimingMode) + list(OutcomeKind)),
    st.sampled_from(["full_prompt", "Applied", "Failed"]),
)
_MISSING = object()
_UNCHECKED: dict[str, Any] = {}


def _unchecked(**fields: Any) -> dict[str, Any]:
    """Fields for ``model_construct`` as a plain dict: the point is that they are wrong."""
    return fields


def _fields(data: st.DataObject, names: tuple[str, ...]) -> dict[str, Any]:
    values = {name: data.draw(st.one_of(_ANY, st.just(_MISSING))) for name in names}
    return {name: value for name, value in values.items() if value is not _MISSING}


def _same_values(a: Any, b: Any) -> bool:
    """Equal, field by field, with the same types (``1 == True`` is not enough here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        return a.__dict__.keys() == b.__dict__.keys() and all(
            _same_values(a.__dict__[k], b.__dict__[k]) for k in a.__dict__
        )
    return a is b or a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _judged_alike(admitted: Any, construct: Any, cls: type[Any], data: dict[str, Any]) -> None:
    """``admitted`` (admission's answer) agrees with pydantic's verdict on ``data``."""
    try:
        expected = validated(cls, data)
    except ValidationError:
        assert isinstance(admitted, ValidationError), (data, admitted)
        return
    assert not isinstance(admitted, ValidationError), (data, admitted)
    assert _same_values(admitted, expected), (data, admitted, expected)
    if admitted is construct:  # the shortcut let it through: pydantic changes nothing
        assert _same_values(construct, expected)


def _admit(function: Any, value: Any) -> Any:
    try:
        return function(value)
    except ValidationError as error:
        return error


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.data())
def test_a_timing_is_admitted_exactly_as_pydantic_judges_it(data: st.DataObject) -> None:
    names = tuple(HandoffTransferTiming.model_fields)
    timing_fields = _fields(data, names)
    timing = HandoffTransferTiming.model_construct(**timing_fields)
    fact = SourceHeld.model_construct(handoff_id=HANDOFF_ID, transfer_timing=timing)
    plain = {"handoff_id": HANDOFF_ID, "transfer_timing": timing_fields}
    _judged_alike(_admit(admitted_fact, fact), fact, SourceHeld, plain)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_reservation_is_admitted_exactly_as_pydantic_judges_it(data: st.DataObject) -> None:
    fields = _fields(data, ("transferable_prompt_tokens",))
    fact = DestinationReserved.model_construct(handoff_id=HANDOFF_ID, **fields)
    plain = {"handoff_id": HANDOFF_ID, **fields}
    _judged_alike(_admit(admitted_fact, fact), fact, DestinationReserved, plain)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_an_outcome_is_admitted_exactly_as_pydantic_judges_it(data: st.DataObject) -> None:
    fields = _fields(data, ("kind", "reason"))
    outcome = HandoffActionOutcome.model_construct(**fields)
    _judged_alike(
        _admit(admitted_outcome, outcome), outcome, HandoffActionOutcome, dict(outcome.__dict__)
    )


@pytest.mark.slow
def test_models_nested_deeper_than_any_schema_are_refused_without_recursion() -> None:
    inner: Any = HandoffTransferTiming.model_construct(**_UNCHECKED)
    for _ in range(100_000):
        inner = SourceHeld.model_construct(handoff_id=HANDOFF_ID, transfer_timing=inner)
    with pytest.raises(ValidationError):
        admitted_fact(inner)


# ----------------------------------------------------------------- at the coordinator


def _corrupted(op: Input) -> list[tuple[str, Input]]:
    """Copies of a payload input whose fields skipped validation, each invalid."""
    fact, outcome = op.fact, op.outcome
    out: list[tuple[str, Any]] = []
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        out += [
            (
                "nested copy",
                fact.model_copy(
                    update={
                        "transfer_timing": timing.model_copy(update={"full_prompt_tokens": 10**30})
                    }
                ),
            ),
            (
                "nested bandwidth",
                SourceHeld(
                    handoff_id=fact.handoff_id,
                    transfer_timing=(timing.model_copy(update={"bandwidth_gb_s": "fast"})),
                ),
            ),
            (
                "construct mode",
                SourceHeld.model_construct(
                    handoff_id=fact.handoff_id,
                    transfer_timing=HandoffTransferTiming.model_construct(
                        **_unchecked(mode="sometimes", full_prompt_tokens=1)
                    ),
                ),
            ),
            ("no timing", SourceHeld.model_construct(**_unchecked(handoff_id=fact.handoff_id))),
        ]
    elif isinstance(fact, DestinationReserved):
        out += [
            ("copy tokens", fact.model_copy(update={"transferable_prompt_tokens": "abc"})),
            (
                "construct tokens",
                DestinationReserved.model_construct(
                    handoff_id=fact.handoff_id, transferable_prompt_tokens=-1
                ),
            ),
            ("bool tokens", fact.model_copy(update={"transferable_prompt_tokens": True})),
        ]
    if outcome is not None:
        out += [
            ("copy reason", outcome.model_copy(update={"reason": 5})),
            ("copy kind", outcome.model_copy(update={"kind": "Done"})),
            ("construct failed", HandoffActionOutcome.model_construct(kind=OutcomeKind.FAILED)),
        ]
    return [
        (
            name,
            Input(op.kind, fact=value, action_id=op.action_id)
            if op.kind == "fact"
            else Input(op.kind, action_id=op.action_id, outcome=value),
        )
        for name, value in out
    ]


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision))
@pytest.mark.parametrize("order", list(HandoffOrder))
def test_corrupted_inputs_change_nothing_in_any_state(
    order: HandoffOrder, revision: Revision
) -> None:
    graph = explore_graph(
        order,
        lambda handoff_id, o: HandoffCoordinator(handoff_id, o, revision=revision),
        None,
        revision,
    )
    tried = 0
    for node in graph.nodes[:: max(1, len(graph.nodes) // 40)]:
        coordinator = HandoffCoordinator(HANDOFF_ID, order, revision=revision)
        for step in node.ops():
            reply_of(coordinator, step)
        before = coordinator.snapshot()
        for op in _payload_inputs(node):
            honest = reply_of(copy.copy(coordinator), op)
            for name, bad in _corrupted(op):
                tried += 1
                with pytest.raises(ValidationError):
                    _give(coordinator, bad)
                assert coordinator.snapshot() == before, name
                assert copy.copy(coordinator).snapshot() == before
                assert reply_of(copy.copy(coordinator), op) == honest, name
    assert tried > 100


def _payload_inputs(node: Any) -> list[Input]:
    """The inputs the explorer gives in ``node`` that carry a payload, for this handoff."""
    return [
        op
        for op in inputs_for(node.obs)
        if (
            isinstance(op.fact, SourceHeld | DestinationReserved)
            and op.fact.handoff_id == HANDOFF_ID
        )
        or op.outcome is not None
    ]


def _give(coordinator: HandoffCoordinator, op: Input) -> None:
    if op.kind == "fact":
        assert op.fact is not None
        coordinator.on_fact(op.fact)
    else:
        assert op.outcome is not None
        coordinator.on_action_outcome(op.action_id, op.outcome)


def test_the_issue_case_tokens_abc_under_destination_missing() -> None:
    """seed, destination_missing timing, then a reservation whose tokens are "abc":
    refused in the source's held state, which stays as it was."""
    handoff_id = uuid.uuid4()
    coordinator = HandoffCoordinator(handoff_id, HandoffOrder.SOURCE_FIRST)
    submit = coordinator.start()[0]
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    timing = HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 10, 2, 1.0)
    reserve = coordinator.on_fact(SourceHeld(handoff_id=handoff_id, transfer_timing=timing))[0]
    coordinator.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    before = coordinator.snapshot()
    bad = DestinationReserved.model_construct(
        **_unchecked(handoff_id=handoff_id, transferable_prompt_tokens="abc")
    )
    with pytest.raises(ValidationError, match="transferable_prompt_tokens"):
        coordinator.on_fact(bad)
    assert coordinator.snapshot() == before
    assert coordinator.state == before.state

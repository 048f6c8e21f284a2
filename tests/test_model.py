"""Value types: validated at the edge, frozen, closed, and faithful to the reference's shapes."""

from __future__ import annotations

import ast
import copy
import math
import pickle
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

import handoff_fsm as hf
from handoff_fsm import (
    DestinationReserved,
    HandoffActionOutcome,
    HandoffTransferTiming,
    IssuedHandoffAction,
    OutcomeKind,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferTimingMode,
    model,
)
from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.model import ACTION_TYPES, OUTCOME_PREFERENCE

HID = uuid.UUID(int=7)
TIMING = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 4096, 131_072, 25.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"full_prompt_tokens": -1},
        {"full_prompt_tokens": 1.0},
        {"full_prompt_tokens": "1"},
        {"full_prompt_tokens": True},
        {"full_prompt_tokens": 2**64},
        {"kv_bytes_per_token": -5},
        {"bandwidth_gb_s": "fast"},
        {"bandwidth_gb_s": True},
        {"state_bytes": -1},
        {"mode": "half_prompt"},
        {"unknown_field": 1},
    ],
)
def test_timing_rejects_malformed_values(kwargs: dict[str, object]) -> None:
    values: dict[str, object] = {"mode": "full_prompt", "full_prompt_tokens": 1, **kwargs}
    with pytest.raises(ValidationError):
        HandoffTransferTiming(**values)


def test_timing_accepts_positional_and_keyword_forms() -> None:
    positional = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, 1024, 1)
    keywords = HandoffTransferTiming(
        mode="full_prompt", full_prompt_tokens=10, kv_bytes_per_token=1024, bandwidth_gb_s=1.0
    )
    assert positional == keywords
    assert positional.bandwidth_gb_s == 1.0 and type(positional.bandwidth_gb_s) is float
    nan = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 1, math.nan)
    assert nan.bandwidth_gb_s is not None and math.isnan(nan.bandwidth_gb_s)  # kept: rejected later


def test_facts_reject_negative_tokens_wrong_types_and_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        DestinationReserved(handoff_id=HID, transferable_prompt_tokens=-1)
    with pytest.raises(ValidationError):
        DestinationReserved(handoff_id="nope", transferable_prompt_tokens=1)
    with pytest.raises(ValidationError):
        DestinationReserved(handoff_id=HID, transferable_prompt_tokens=1, extra=2)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        SourceHeld(handoff_id=HID, transfer_timing={"mode": "full_prompt"})
    fact = SourceHeld(
        handoff_id=str(HID),
        transfer_timing={"mode": "full_prompt", "full_prompt_tokens": 3},
    )
    assert fact.handoff_id == HID
    assert fact.transfer_timing.full_prompt_tokens == 3


def test_values_are_frozen() -> None:
    fact = DestinationReserved(handoff_id=HID, transferable_prompt_tokens=1)
    with pytest.raises(ValidationError):
        fact.transferable_prompt_tokens = 2  # type: ignore[misc]


def test_outcome_constants_and_failed() -> None:
    assert HandoffActionOutcome.APPLIED.kind is OutcomeKind.APPLIED
    assert HandoffActionOutcome(kind="Applied") == HandoffActionOutcome.APPLIED
    assert HandoffActionOutcome.failed("x") == HandoffActionOutcome.failed("x")
    assert HandoffActionOutcome.failed("x") != HandoffActionOutcome.failed("y")
    assert HandoffActionOutcome.failed("x").is_failed
    assert repr(HandoffActionOutcome.NOOP) == "HandoffActionOutcome.NOOP"
    assert str(HandoffActionOutcome.failed("x")) == "Failed('x')"
    with pytest.raises(ValidationError):
        HandoffActionOutcome(kind=OutcomeKind.FAILED)  # a failure needs its reason
    with pytest.raises(ValidationError):
        HandoffActionOutcome(kind=OutcomeKind.APPLIED, reason="no")


def test_trusted_actions_equal_validated_ones() -> None:
    trusted = StartTransfer.issued_with_delay(HID, 2.5)
    validated = StartTransfer(handoff_id=HID, delay_ms=2.5)
    assert trusted == validated
    assert hash(trusted) == hash(validated)
    assert trusted.model_dump() == validated.model_dump()
    assert SubmitPrefill.issued_for(HID) == SubmitPrefill(handoff_id=HID)
    issued = IssuedHandoffAction.trusted(3, trusted)
    assert issued == IssuedHandoffAction(id=3, action=validated)
    assert issued.model_fields_set == {"id", "action"}


@pytest.mark.parametrize(
    ("trusted", "validated"),
    [
        (
            lambda: hf.SourceHeld.observed(HID, TIMING),
            lambda: hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING),
        ),
        (
            lambda: hf.DestinationReserved.observed(HID, 2**64 - 1),
            lambda: hf.DestinationReserved(handoff_id=HID, transferable_prompt_tokens=2**64 - 1),
        ),
        *(
            (partial(kind.observed, HID), partial(kind, handoff_id=HID))
            for kind in (hf.TransferCompleted, hf.Failed, hf.TimedOut, hf.Canceled)
        ),
    ],
)
def test_an_observed_fact_is_the_fact_validation_builds(
    trusted: Callable[[], hf.HandoffFact], validated: Callable[[], hf.HandoffFact]
) -> None:
    made, expected = trusted(), validated()
    assert type(made) is type(expected) and made == expected and hash(made) == hash(expected)
    assert made.model_fields_set == expected.model_fields_set
    assert made.model_dump_json() == expected.model_dump_json()
    with pytest.raises(ValidationError):  # frozen like any fact
        made.handoff_id = uuid.UUID(int=8)  # type: ignore[misc]


@pytest.mark.parametrize(
    "build",
    [
        lambda: hf.TransferCompleted.observed("not a uuid"),  # type: ignore[arg-type]
        lambda: hf.Canceled.observed(7),  # type: ignore[arg-type]
        lambda: hf.SourceHeld.observed("x", TIMING),  # type: ignore[arg-type]
        lambda: hf.SourceHeld.observed(HID, {"mode": "nope"}),  # type: ignore[arg-type]
        lambda: hf.DestinationReserved.observed(HID, -1),
        lambda: hf.DestinationReserved.observed(HID, 2**64),
        lambda: hf.DestinationReserved.observed(HID, True),
        lambda: hf.DestinationReserved.observed(HID, 2.5),  # type: ignore[arg-type]
        lambda: TIMING.for_prompt(-1),
        lambda: TIMING.for_prompt(2**64),
        lambda: TIMING.for_prompt("12"),  # type: ignore[arg-type]
    ],
)
def test_the_fast_constructors_refuse_what_the_constructor_refuses(
    build: Callable[[], object],
) -> None:
    with pytest.raises(ValidationError):
        build()


def test_the_fast_constructors_convert_what_the_constructor_converts() -> None:
    text = str(HID)
    assert hf.TransferCompleted.observed(text) == hf.TransferCompleted(handoff_id=text)  # type: ignore[arg-type]
    held = hf.SourceHeld.observed(HID, TIMING.model_dump())  # type: ignore[arg-type]
    assert held == hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING)


@pytest.mark.parametrize(
    "prototype",
    [
        HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 0, 131_072, 25.0),
        HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 7, None, 10),
        HandoffTransferTiming(mode="full_prompt", full_prompt_tokens=1, state_bytes=64),
    ],
)
@pytest.mark.parametrize("tokens", [0, 1, 4096, 2**64 - 1])
def test_a_timing_for_another_prompt_is_the_timing_validation_builds(
    prototype: HandoffTransferTiming, tokens: int
) -> None:
    before = prototype.model_dump()
    made = prototype.for_prompt(tokens)
    expected = HandoffTransferTiming(
        **{**prototype.model_dump(exclude_unset=True), "full_prompt_tokens": tokens}
    )
    assert made == expected and made.model_fields_set == expected.model_fields_set
    assert made.model_dump_json() == expected.model_dump_json()
    assert made.full_prompt_delay_ms() == expected.full_prompt_delay_ms()
    assert prototype.model_dump() == before  # the prototype is left as it was


def test_the_acknowledgement_table_has_one_home() -> None:
    """Which outcomes acknowledge an action is the action type's data; the chart reads it."""
    for kind in ACTION_TYPES:
        ack = ACKNOWLEDGEMENTS.get(kind)
        assert (ack is None) == (not kind.acknowledged_by), kind
        assert ack is None or ack.accepted is kind.acknowledged_by
        assert [o.kind for o in kind.expected_outcomes] == [
            k for k in OUTCOME_PREFERENCE if k in kind.acknowledged_by
        ]
    assert hf.Complete.acknowledged_by == frozenset() and hf.Complete.expected_outcomes == ()


def test_the_model_imports_nothing_of_the_package_but_errors() -> None:
    """The bottom of the core: no import of the chart (or anything above), anywhere in it."""
    tree = ast.parse(Path(model.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert {name for name in imported if name.startswith("handoff_fsm")} == {"handoff_fsm.errors"}


@pytest.mark.parametrize(
    "action",
    [5, "SubmitPrefill", hf.TimedOut(handoff_id=HID), {"Nope": {}}, {}],
)
def test_an_issued_action_refuses_what_is_no_action(action: object) -> None:
    with pytest.raises(ValidationError) as raised:
        IssuedHandoffAction.model_validate({"id": 1, "action": action})
    assert [error["loc"] for error in raised.value.errors()] == [("action",)]


def test_an_issued_action_reads_its_wire_form() -> None:
    tagged = {"StartTransfer": {"handoff_id": str(HID), "delay_ms": 2.5}}
    issued = IssuedHandoffAction.model_validate({"id": 4, "action": tagged})
    assert issued == IssuedHandoffAction.trusted(4, StartTransfer.issued_with_delay(HID, 2.5))
    assert IssuedHandoffAction.model_validate_json(issued.model_dump_json()) == issued


@pytest.mark.parametrize(
    "build",
    [
        lambda: TIMING,
        lambda: TIMING.for_prompt(9),
        lambda: SubmitPrefill.issued_for(HID),
        lambda: StartTransfer.issued_with_delay(HID, math.inf),
        lambda: IssuedHandoffAction.trusted(2, hf.Complete.issued_for(HID)),
        lambda: hf.SourceHeld.observed(HID, TIMING),
        lambda: hf.DestinationReserved.observed(HID, 3),
        lambda: hf.TimedOut.observed(HID),
    ],
)
@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, lambda value: pickle.loads(pickle.dumps(value))]
)
def test_values_the_library_builds_copy_and_pickle(
    build: Callable[[], BaseModel], clone: Callable[[BaseModel], BaseModel]
) -> None:
    value = build()
    made = clone(value)
    assert type(made) is type(value) and made == value and hash(made) == hash(value)
    assert made.model_fields_set == value.model_fields_set

"""The wire format: serde's external tagging, both directions, strict on input."""

from __future__ import annotations

import json
import math
import uuid

import pytest

from handoff_fsm import (
    ActivateDestination,
    Backend,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffError,
    HandoffErrorCode,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    NormalizedHandoffConformance,
    NormalizedStoredTiming,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
    expected_normalized_handoff,
)
from handoff_fsm.io.wire import (
    action_from_wire,
    action_to_wire,
    dumps,
    fact_from_wire,
    fact_to_wire,
    issued_from_wire,
    issued_to_wire,
    loads,
    outcome_from_wire,
    outcome_to_wire,
    timing_from_wire,
    timing_to_wire,
)

HID = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
TIMING = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, 1024, 1.0)


def test_facts_have_the_serde_shape() -> None:
    assert fact_to_wire(SourceHeld(handoff_id=HID, transfer_timing=TIMING)) == {
        "SourceHeld": {
            "handoff_id": str(HID),
            "transfer_timing": {
                "mode": "full_prompt",
                "full_prompt_tokens": 10,
                "kv_bytes_per_token": 1024,
                "bandwidth_gb_s": 1.0,
            },
        }
    }
    assert fact_to_wire(TransferCompleted(handoff_id=HID)) == {
        "TransferCompleted": {"handoff_id": str(HID)}
    }
    assert fact_to_wire(DestinationReserved(handoff_id=HID, transferable_prompt_tokens=3)) == {
        "DestinationReserved": {"handoff_id": str(HID), "transferable_prompt_tokens": 3}
    }


@pytest.mark.parametrize(
    "fact",
    [
        SourceHeld(handoff_id=HID, transfer_timing=TIMING),
        SourceHeld(
            handoff_id=HID,
            transfer_timing=HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 0),
        ),
        SourceHeld(
            handoff_id=HID,
            transfer_timing=HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 1, 2, 3.0, 4),
        ),
        DestinationReserved(handoff_id=HID, transferable_prompt_tokens=2**64 - 1),
        TransferCompleted(handoff_id=HID),
        Failed(handoff_id=HID),
        TimedOut(handoff_id=HID),
        Canceled(handoff_id=HID),
    ],
)
def test_facts_round_trip_through_json_text(fact: object) -> None:
    text = dumps(fact_to_wire(fact))  # type: ignore[arg-type]
    assert fact_from_wire(loads(text)) == fact


def test_state_bytes_travel_only_when_non_zero() -> None:
    plain = fact_to_wire(SourceHeld(handoff_id=HID, transfer_timing=TIMING))
    assert "state_bytes" not in plain["SourceHeld"]["transfer_timing"]
    affine = TIMING.model_copy(update={"state_bytes": 7})
    wire = fact_to_wire(SourceHeld(handoff_id=HID, transfer_timing=affine))
    assert wire["SourceHeld"]["transfer_timing"]["state_bytes"] == 7


def test_non_finite_floats_use_the_json5_literals() -> None:
    timing = TIMING.model_copy(update={"bandwidth_gb_s": math.nan})
    text = dumps(fact_to_wire(SourceHeld(handoff_id=HID, transfer_timing=timing)))
    assert '"bandwidth_gb_s": NaN' in text
    back = fact_from_wire(loads(text))
    assert isinstance(back, SourceHeld)
    assert back.transfer_timing.bandwidth_gb_s is not None
    assert math.isnan(back.transfer_timing.bandwidth_gb_s)
    assert dumps(action_to_wire(StartTransfer(handoff_id=HID, delay_ms=math.inf))).endswith(
        '"delay_ms": Infinity}}'
    )


@pytest.mark.parametrize(
    "action",
    [
        SubmitPrefill(handoff_id=HID),
        ReserveDestination(handoff_id=HID),
        StartTransfer(handoff_id=HID, delay_ms=2.5),
        ActivateDestination(handoff_id=HID),
        ReleaseSource(handoff_id=HID),
        CancelSource(handoff_id=HID),
        CancelDestination(handoff_id=HID),
        Complete(handoff_id=HID),
    ],
)
def test_actions_and_issued_actions_round_trip(action: object) -> None:
    wire = action_to_wire(action)  # type: ignore[arg-type]
    assert list(wire) == [type(action).__name__]
    assert action_from_wire(loads(dumps(wire))) == action
    issued = IssuedHandoffAction(id=3, action=action)
    assert issued_to_wire(issued) == {"id": 3, "action": wire}
    assert issued_from_wire(loads(dumps(issued_to_wire(issued)))) == issued
    # pydantic's own JSON is the wire form too
    assert json.loads(issued.model_dump_json()) == json.loads(dumps(issued_to_wire(issued)))
    assert IssuedHandoffAction.model_validate_json(issued.model_dump_json()) == issued


def test_outcomes_round_trip() -> None:
    for outcome in (
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
    ):
        assert outcome_to_wire(outcome) == outcome.kind.value
        assert outcome_from_wire(outcome.kind.value) is outcome
    failed = HandoffActionOutcome.failed("disk full")
    assert outcome_to_wire(failed) == {"Failed": "disk full"}
    assert outcome_from_wire({"Failed": "disk full"}) == failed
    assert failed.model_dump() == {"Failed": "disk full"}
    assert HandoffActionOutcome.model_validate("Noop") is not None


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (fact_from_wire, {"SourceHeld": {"handoff_id": str(HID)}}),
        (fact_from_wire, {"Exploded": {"handoff_id": str(HID)}}),
        (fact_from_wire, {"TimedOut": {"handoff_id": str(HID), "extra": 1}}),
        (fact_from_wire, {"TimedOut": {"handoff_id": "nope"}}),
        (fact_from_wire, {"TimedOut": {}, "Failed": {}}),
        (fact_from_wire, ["TimedOut"]),
        (
            fact_from_wire,
            {"DestinationReserved": {"handoff_id": str(HID), "transferable_prompt_tokens": -1}},
        ),
        (
            fact_from_wire,
            {"DestinationReserved": {"handoff_id": str(HID), "transferable_prompt_tokens": 1.0}},
        ),
        (
            fact_from_wire,
            {"DestinationReserved": {"handoff_id": str(HID), "transferable_prompt_tokens": "1"}},
        ),
        (
            fact_from_wire,
            {
                "SourceHeld": {
                    "handoff_id": str(HID),
                    "transfer_timing": {"mode": "FullPrompt", "full_prompt_tokens": 1},
                }
            },
        ),
        (outcome_from_wire, "Done"),
        (outcome_from_wire, {"Failed": 3}),
        (outcome_from_wire, {"Noop": None}),
        (action_from_wire, {"Launch": {"handoff_id": str(HID)}}),
        (issued_from_wire, {"id": -1, "action": {"Complete": {"handoff_id": str(HID)}}}),
        (issued_from_wire, {"id": 1}),
    ],
)
def test_malformed_wire_values_are_invalid_input(reader: object, value: object) -> None:
    with pytest.raises(HandoffError) as error:
        reader(value)  # type: ignore[operator]
    assert error.value.code is HandoffErrorCode.INVALID_INPUT


def test_optional_timing_fields_may_be_omitted_or_null() -> None:
    for body in (
        {"mode": "destination_missing", "full_prompt_tokens": 4},
        {
            "mode": "destination_missing",
            "full_prompt_tokens": 4,
            "kv_bytes_per_token": None,
            "bandwidth_gb_s": None,
        },
    ):
        fact = fact_from_wire({"SourceHeld": {"handoff_id": str(HID), "transfer_timing": body}})
        assert isinstance(fact, SourceHeld)
        assert fact.transfer_timing.kv_bytes_per_token is None
        assert fact.transfer_timing.bandwidth_gb_s is None
    integer_bandwidth = fact_from_wire(
        {
            "SourceHeld": {
                "handoff_id": str(HID),
                "transfer_timing": {
                    "mode": "full_prompt",
                    "full_prompt_tokens": 1,
                    "bandwidth_gb_s": 2,
                },
            }
        }
    )
    assert isinstance(integer_bandwidth, SourceHeld)
    assert integer_bandwidth.transfer_timing.bandwidth_gb_s == 2.0


def test_timings_round_trip() -> None:
    for timing in (TIMING, TIMING.model_copy(update={"state_bytes": 9, "bandwidth_gb_s": None})):
        assert timing_from_wire(loads(dumps(timing_to_wire(timing)))) == timing
    with pytest.raises(HandoffError):
        timing_from_wire({"mode": "full_prompt"})


def test_conformance_records_use_serde_field_and_variant_names() -> None:
    record = NormalizedHandoffConformance(
        engine_type=Backend.SGLANG,
        order=HandoffOrder.DESTINATION_FIRST,
        lifecycle=expected_normalized_handoff(HandoffOrder.DESTINATION_FIRST),
        source_output_tokens=1,
        destination_output_tokens=2,
        completed_requests=1,
        destination_stored=NormalizedStoredTiming(on_activation=4),
        source_drained=True,
        destination_drained=True,
        driver_drained=True,
    )
    wire = json.loads(record.model_dump_json())
    assert wire["engine_type"] == "sglang"
    assert wire["order"] == "DestinationFirst"
    assert wire["lifecycle"][:3] == ["DestinationAccepted", "DestinationReserved", "SourceHeld"]
    assert wire["destination_stored"] == {
        "before_activation": 0,
        "on_activation": 4,
        "repeated_activation_hashes_after_activation": 0,
    }
    assert NormalizedHandoffConformance.model_validate_json(record.model_dump_json()) == record

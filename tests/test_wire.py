"""The wire format: serde's external tagging, both directions, strict on input."""

from __future__ import annotations

import json
import math
import re
import struct
import uuid
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.wire import (
    action_from_wire,
    action_to_wire,
    dumps,
    f64_from_wire,
    fact_from_wire,
    fact_to_wire,
    handoff_id_from_wire,
    issued_from_wire,
    issued_to_wire,
    loads,
    outcome_from_wire,
    outcome_to_wire,
    timing_from_wire,
    timing_to_wire,
    u64_from_wire,
)
from tests.hostile import NUMBER_LITERALS, UUID_SPELLINGS

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
    assert error.value.code is TraceErrorCode.INVALID_INPUT


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


# ----------------------------------------------------------------------- one reader per scalar

_HEX = "[0-9a-fA-F]"
_HYPHENATED = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
UUID_GRAMMAR = re.compile(
    rf"{_HEX}{{32}}|{_HYPHENATED}|\{{{_HYPHENATED}\}}|urn:uuid:{_HYPHENATED}", re.ASCII
)
"""The Rust uuid crate's ``parse_str``, written out: the spelling this library promises."""


def _uuid_fields(spelling: str) -> dict[str, Callable[[], object]]:
    """Every wire field that holds a handoff id, each reading ``spelling``."""

    def from_fact(variant: str, **extra: object) -> Callable[[], object]:
        return lambda: fact_from_wire({variant: {"handoff_id": spelling, **extra}}).handoff_id

    timing = {"mode": "full_prompt", "full_prompt_tokens": 1}
    fields: dict[str, Callable[[], object]] = {
        "new.handoff_id": lambda: handoff_id_from_wire(spelling),
        "SourceHeld": from_fact("SourceHeld", transfer_timing=timing),
        "DestinationReserved": from_fact("DestinationReserved", transferable_prompt_tokens=1),
    }
    for variant in ("TransferCompleted", "Failed", "TimedOut", "Canceled"):
        fields[variant] = from_fact(variant)

    def from_action(variant: str, **extra: object) -> Callable[[], object]:
        return lambda: action_from_wire({variant: {"handoff_id": spelling, **extra}}).handoff_id

    fields["SubmitPrefill"] = from_action("SubmitPrefill")
    fields["Complete"] = from_action("Complete")
    fields["StartTransfer"] = from_action("StartTransfer", delay_ms=1.0)
    return fields


def _outcomes(readers: dict[str, Callable[[], object]]) -> dict[str, object]:
    results: dict[str, object] = {}
    for name, read in readers.items():
        try:
            results[name] = read()
        except HandoffError as error:
            results[name] = "refused" if error.code is TraceErrorCode.INVALID_INPUT else error
    return results


@pytest.mark.parametrize("spelling", UUID_SPELLINGS)
def test_every_handoff_id_field_reads_the_same_spellings(spelling: str) -> None:
    results = _outcomes(_uuid_fields(spelling))
    if UUID_GRAMMAR.fullmatch(spelling):
        expected = uuid.UUID(spelling.strip("{}").removeprefix("urn:uuid:"))
        assert set(results.values()) == {expected}, results
    else:
        assert set(results.values()) == {"refused"}, results


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="0123456789abcdefABCDEFgG-{}:urnid_+ \t\u0660\uff10\ufeff", max_size=50)
    | st.builds(
        lambda u, form: form(u),
        st.uuids(),
        st.sampled_from(
            [str, lambda u: u.hex, lambda u: "{" + str(u) + "}", lambda u: f"urn:uuid:{u}"]
        ),
    )
)
def test_handoff_id_fields_agree_with_the_uuid_crate_grammar(spelling: str) -> None:
    results = _outcomes(_uuid_fields(spelling))
    accepted = bool(UUID_GRAMMAR.fullmatch(spelling))
    assert len(set(results.values())) == 1, results
    assert (next(iter(results.values())) != "refused") == accepted


def _u64_fields(literal: str) -> dict[str, Callable[[], object]]:
    """Every wire field that holds a u64, each reading the JSON number text ``literal``."""
    value = loads(f"[{literal}]")[0]
    hid = str(HID)

    def timing(field: str) -> Callable[[], object]:
        body = {"mode": "full_prompt", "full_prompt_tokens": 1, field: value}
        return lambda: getattr(timing_from_wire(body), field)

    return {
        "action_id": lambda: u64_from_wire(value, "action_id"),
        "transferable_prompt_tokens": lambda: _reserved_tokens(
            fact_from_wire(
                {"DestinationReserved": {"handoff_id": hid, "transferable_prompt_tokens": value}}
            )
        ),
        "full_prompt_tokens": timing("full_prompt_tokens"),
        "kv_bytes_per_token": timing("kv_bytes_per_token"),
        "state_bytes": timing("state_bytes"),
        "issued id": lambda: (
            issued_from_wire({"id": value, "action": {"Complete": {"handoff_id": hid}}}).id
        ),
    }


def _reserved_tokens(fact: object) -> int:
    assert isinstance(fact, DestinationReserved)
    return fact.transferable_prompt_tokens


def _delay(action: object) -> float:
    assert isinstance(action, StartTransfer)
    return action.delay_ms


def _f64_fields(literal: str) -> dict[str, Callable[[], object]]:
    """Every wire field that holds an f64 (as input), each reading ``literal``."""
    value = loads(f"[{literal}]")[0]
    body = {"mode": "full_prompt", "full_prompt_tokens": 1, "bandwidth_gb_s": value}
    return {
        "fallback_transfer_delay_ms": lambda: f64_from_wire(value, "fallback"),
        "bandwidth_gb_s": lambda: timing_from_wire(body).bandwidth_gb_s,
        "delay_ms": lambda: _delay(
            action_from_wire({"StartTransfer": {"handoff_id": str(HID), "delay_ms": value}})
        ),
    }


def _is_json(literal: str) -> bool:
    try:
        loads(f"[{literal}]")
    except HandoffError:
        return False
    return True


JSON_NUMBERS = [literal for literal in NUMBER_LITERALS if _is_json(literal)]


@pytest.mark.parametrize("literal", JSON_NUMBERS)
def test_every_integer_field_reads_the_same_literals(literal: str) -> None:
    results = _outcomes(_u64_fields(literal))
    value = loads(f"[{literal}]")[0]
    if value is None:  # only an Option<usize> takes null
        assert results.pop("kv_bytes_per_token") is None
    if type(value) is int and 0 <= value <= 2**64 - 1:
        assert set(results.values()) == {value}, results
    else:  # includes -0 (a float, as serde_json reads it), 1.0, 1e0, 2**64, strings, null
        assert set(results.values()) == {"refused"}, results


@pytest.mark.parametrize("literal", JSON_NUMBERS)
def test_every_float_field_reads_the_same_literals(literal: str) -> None:
    results = _outcomes(_f64_fields(literal))
    value = loads(f"[{literal}]")[0]
    if value is None:  # only an Option<f64> takes null
        assert results.pop("bandwidth_gb_s") is None
    if type(value) in (int, float):
        expected = float(value)
        bits = {struct.pack("<d", r) if isinstance(r, float) else r for r in results.values()}
        assert bits == {struct.pack("<d", expected)}, results
    else:
        assert set(results.values()) == {"refused"}, results


def test_error_messages_quote_little_of_the_value() -> None:
    huge = "x" * 1_000_000
    for read in (
        lambda: handoff_id_from_wire(huge),
        lambda: u64_from_wire(huge, "action_id"),
        lambda: f64_from_wire([huge] * 1000, "fallback"),
        lambda: fact_from_wire({huge: {}}),
        lambda: fact_from_wire({"Failed": {"handoff_id": str(HID), huge: 1}}),
        lambda: outcome_from_wire(huge),
        lambda: outcome_from_wire({"Failed": [huge]}),
    ):
        with pytest.raises(HandoffError) as error:
            read()
        assert len(error.value.message) < 400

"""The JSON wire format: what the Rust types would produce with serde's defaults.

Rule kept here: one function pair per value type, ``*_to_wire`` and
``*_from_wire``, between library values and plain JSON-ready Python objects
(serde external tagging: ``{"SourceHeld": {...}}``, unit variants as strings).
Parsing is strict like serde (integers must be integers, unknown variants are
errors) and stricter in one way: unknown fields are rejected, never dropped.
Non-finite floats travel as the literals ``NaN``, ``Infinity``, ``-Infinity``.

Each scalar has one reader, whatever field it sits in: a handoff id, a u64 and
an f64 are checked by the very validators pydantic runs for the models' fields
(:data:`~handoff_fsm.model.HandoffId`, :data:`~handoff_fsm.model.U64`,
:data:`~handoff_fsm.model.F64`), so a trace line's own fields (``handoff_id`` of
``new``, ``action_id``, ``fallback_transfer_delay_ms``) accept exactly what a
fact's fields accept. Handoff ids follow the Rust ``uuid`` crate (which
pydantic-core itself uses): 32 hex digits, hyphenated 8-4-4-4-12, the hyphenated
form in braces, or after ``urn:uuid:``; hex digits in either case; nothing else
(no signs, underscores, spaces or non-ASCII digits). JSON text itself is read by
:mod:`handoff_fsm.io.jsontext`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import TypeAdapter, ValidationError

from handoff_fsm.errors import HandoffError, handoff_error, quoted
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.jsontext import dumps, loads
from handoff_fsm.model import (
    ACTIONS_BY_NAME,
    F64,
    FACT_TYPES,
    U64,
    U64_MAX,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffFact,
    HandoffTransferTiming,
    IssuedHandoffAction,
    OutcomeKind,
    SourceHeld,
    StartTransfer,
    read_handoff_id,
    validated,
)

__all__ = [
    "action_from_wire",
    "action_to_wire",
    "dumps",
    "f64_from_wire",
    "fact_from_wire",
    "fact_to_wire",
    "handoff_id_from_wire",
    "issued_from_wire",
    "issued_to_wire",
    "loads",
    "outcome_from_wire",
    "outcome_to_wire",
    "timing_from_wire",
    "timing_to_wire",
    "u64_from_wire",
]

_FACTS_BY_NAME: dict[str, type[Any]] = {cls.__name__: cls for cls in FACT_TYPES}
_UNIT_OUTCOMES: dict[str, HandoffActionOutcome] = {
    outcome.kind.value: outcome
    for outcome in (
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
    )
}


def _wire_error(message: str) -> HandoffError:
    return handoff_error(TraceErrorCode.INVALID_INPUT, message)


def _tagged(obj: Any, what: str) -> tuple[str, Any]:
    """Split serde's external tag ``{"Variant": payload}``."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise _wire_error(
            f"{what} must be an object with exactly one variant key, got {quoted(obj)}"
        )
    ((tag, payload),) = obj.items()
    return tag, payload


def _validated(cls: type[Any], payload: Any, what: str) -> Any:
    if not isinstance(payload, dict):
        raise _wire_error(f"{what} payload must be an object, got {quoted(payload)}")
    try:  # what model_validate runs, without its Python frame
        return validated(cls, payload)
    except ValidationError as error:
        raise _wire_error(f"invalid {what}: {_describe(error)}") from None


def _describe(error: ValidationError) -> str:
    """pydantic's complaints without the input (unknown keys are quoted, briefly)."""
    return "; ".join(
        f"{'.'.join(_location(p) for p in e['loc']) or 'value'}: {e['msg']}"
        for e in error.errors(include_url=False, include_input=False)
    )


def _location(part: str | int) -> str:
    return (
        part if isinstance(part, str) and part.isidentifier() and len(part) <= 40 else quoted(part)
    )


# ----------------------------------------------------------------------- scalars

_U64 = TypeAdapter(U64).validator.validate_python
_F64 = TypeAdapter(F64).validator.validate_python


def handoff_id_from_wire(value: Any, what: str = "handoff_id") -> UUID:
    """A handoff id, read exactly as every fact's ``handoff_id`` field reads it."""
    try:
        handoff_id: UUID = read_handoff_id(value)
    except ValidationError as error:
        raise _wire_error(f"{what} is not a UUID ({_reason(error)}): {quoted(value)}") from None
    return handoff_id


def u64_from_wire(value: Any, what: str) -> int:
    """An integer in ``0..2^64-1``, read exactly as every u64 field of the models reads it."""
    if type(value) is int and 0 <= value <= U64_MAX:  # all the strict validator accepts
        return value
    try:
        number: int = _U64(value)
    except ValidationError as error:
        raise _wire_error(
            f"{what} must be an integer in 0..2^64-1 ({_reason(error)}), got {quoted(value)}"
        ) from None
    return number


def f64_from_wire(value: Any, what: str) -> float:
    """A number as f64, read exactly as every float field of the models reads it."""
    try:
        number: float = _F64(value)
    except ValidationError as error:
        raise _wire_error(
            f"{what} must be a number ({_reason(error)}), got {quoted(value)}"
        ) from None
    return number


def _reason(error: ValidationError) -> str:
    return "; ".join(e["msg"] for e in error.errors(include_url=False, include_input=False))


# ----------------------------------------------------------------------- timing


def timing_to_wire(timing: HandoffTransferTiming) -> dict[str, Any]:
    """``state_bytes`` is written only when non-zero, so reference readers accept it."""
    wire: dict[str, Any] = {
        "mode": timing.mode.value,
        "full_prompt_tokens": timing.full_prompt_tokens,
        "kv_bytes_per_token": timing.kv_bytes_per_token,
        "bandwidth_gb_s": timing.bandwidth_gb_s,
    }
    if timing.state_bytes:
        wire["state_bytes"] = timing.state_bytes
    return wire


def timing_from_wire(obj: Any) -> HandoffTransferTiming:
    result: HandoffTransferTiming = _validated(HandoffTransferTiming, obj, "transfer timing")
    return result


# ----------------------------------------------------------------------- facts


def fact_to_wire(fact: HandoffFact) -> dict[str, Any]:
    body: dict[str, Any] = {"handoff_id": str(fact.handoff_id)}
    if isinstance(fact, SourceHeld):
        body["transfer_timing"] = timing_to_wire(fact.transfer_timing)
    elif isinstance(fact, DestinationReserved):
        body["transferable_prompt_tokens"] = fact.transferable_prompt_tokens
    return {type(fact).__name__: body}


def fact_from_wire(obj: Any) -> HandoffFact:
    fact: HandoffFact = _variant_from_wire(obj, "fact", _FACTS_BY_NAME)
    return fact


def _variant_from_wire(obj: Any, what: str, variants: dict[str, type[Any]]) -> Any:
    """``{"Variant": {...}}`` as the model its tag names, validated (serde's enum form)."""
    tag, payload = _tagged(obj, what)
    cls = variants.get(tag)
    if cls is None:
        raise _wire_error(
            f"unknown {what} variant {quoted(tag)} (expected one of {sorted(variants)})"
        )
    return _validated(cls, payload, tag)


# ----------------------------------------------------------------------- actions


def action_to_wire(action: HandoffAction) -> dict[str, Any]:
    body: dict[str, Any] = {"handoff_id": str(action.handoff_id)}
    if type(action) is StartTransfer:
        body["delay_ms"] = action.delay_ms
    return {type(action).__name__: body}


def action_from_wire(obj: Any) -> HandoffAction:
    action: HandoffAction = _variant_from_wire(obj, "action", ACTIONS_BY_NAME)
    return action


def issued_to_wire(issued: IssuedHandoffAction) -> dict[str, Any]:
    return {"id": issued.id, "action": action_to_wire(issued.action)}


def issued_from_wire(obj: Any) -> IssuedHandoffAction:
    if not isinstance(obj, dict) or set(obj) != {"id", "action"}:
        raise _wire_error(f"an issued action is {{'id': ..., 'action': ...}}, got {quoted(obj)}")
    try:
        return IssuedHandoffAction.model_validate(
            {"id": obj["id"], "action": action_from_wire(obj["action"])}
        )
    except ValidationError as error:
        raise _wire_error(f"invalid issued action: {_describe(error)}") from None


# ----------------------------------------------------------------------- outcomes


def outcome_to_wire(outcome: HandoffActionOutcome) -> str | dict[str, str]:
    if outcome.kind is OutcomeKind.FAILED:
        return {"Failed": outcome.reason or ""}
    return outcome.kind.value


def outcome_from_wire(obj: Any) -> HandoffActionOutcome:
    if isinstance(obj, str):
        outcome = _UNIT_OUTCOMES.get(obj)
        if outcome is None:
            raise _wire_error(
                f"unknown outcome {quoted(obj)} (expected one of {sorted(_UNIT_OUTCOMES)} "
                'or {"Failed": "<reason>"})'
            )
        return outcome
    tag, reason = _tagged(obj, "outcome")
    if tag != "Failed" or not isinstance(reason, str):
        raise _wire_error(f'a non-unit outcome is {{"Failed": "<reason>"}}, got {quoted(obj)}')
    return HandoffActionOutcome.failed(reason)

"""The JSON wire format: what the Rust types would produce with serde's defaults.

Rule kept here: one function pair per value type, ``*_to_wire`` and
``*_from_wire``, between library values and plain JSON-ready Python objects
(serde external tagging: ``{"SourceHeld": {...}}``, unit variants as strings).
Parsing is strict like serde (integers must be integers, unknown variants are
errors) and stricter in one way: unknown fields are rejected, never dropped.
Non-finite floats travel as the literals ``NaN``, ``Infinity``, ``-Infinity``
(what Python's :mod:`json` reads and writes).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error
from handoff_fsm.model import (
    ACTION_TYPES,
    FACT_TYPES,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffFact,
    HandoffTransferTiming,
    IssuedHandoffAction,
    OutcomeKind,
    SourceHeld,
    StartTransfer,
)

_FACTS_BY_NAME: dict[str, type[Any]] = {cls.__name__: cls for cls in FACT_TYPES}
_ACTIONS_BY_NAME: dict[str, type[Any]] = {cls.__name__: cls for cls in ACTION_TYPES}
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
    return handoff_error(HandoffErrorCode.INVALID_INPUT, message)


def _tagged(obj: Any, what: str) -> tuple[str, Any]:
    """Split serde's external tag ``{"Variant": payload}``."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise _wire_error(f"{what} must be an object with exactly one variant key, got {obj!r}")
    ((tag, payload),) = obj.items()
    return tag, payload


def _validated(cls: type[Any], payload: Any, what: str) -> Any:
    if not isinstance(payload, dict):
        raise _wire_error(f"{what} payload must be an object, got {payload!r}")
    try:
        return cls.model_validate(payload)
    except ValidationError as error:
        raise _wire_error(f"invalid {what}: {_describe(error)}") from None


def _describe(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in error.errors()
    )


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
    tag, payload = _tagged(obj, "fact")
    cls = _FACTS_BY_NAME.get(tag)
    if cls is None:
        raise _wire_error(
            f"unknown fact variant {tag!r} (expected one of {sorted(_FACTS_BY_NAME)})"
        )
    fact: HandoffFact = _validated(cls, payload, tag)
    return fact


# ----------------------------------------------------------------------- actions


def action_to_wire(action: HandoffAction) -> dict[str, Any]:
    body: dict[str, Any] = {"handoff_id": str(action.handoff_id)}
    if type(action) is StartTransfer:
        body["delay_ms"] = action.delay_ms
    return {type(action).__name__: body}


def action_from_wire(obj: Any) -> HandoffAction:
    tag, payload = _tagged(obj, "action")
    cls = _ACTIONS_BY_NAME.get(tag)
    if cls is None:
        raise _wire_error(
            f"unknown action variant {tag!r} (expected one of {sorted(_ACTIONS_BY_NAME)})"
        )
    action: HandoffAction = _validated(cls, payload, tag)
    return action


def issued_to_wire(issued: IssuedHandoffAction) -> dict[str, Any]:
    return {"id": issued.id, "action": action_to_wire(issued.action)}


def issued_from_wire(obj: Any) -> IssuedHandoffAction:
    if not isinstance(obj, dict) or set(obj) != {"id", "action"}:
        raise _wire_error(f"an issued action is {{'id': ..., 'action': ...}}, got {obj!r}")
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
                f"unknown outcome {obj!r} (expected one of {sorted(_UNIT_OUTCOMES)} "
                'or {"Failed": "<reason>"})'
            )
        return outcome
    tag, reason = _tagged(obj, "outcome")
    if tag != "Failed" or not isinstance(reason, str):
        raise _wire_error(f'a non-unit outcome is {{"Failed": "<reason>"}}, got {obj!r}')
    return HandoffActionOutcome.failed(reason)


# ----------------------------------------------------------------------- text


def dumps(obj: Any) -> str:
    """JSON text with non-finite floats as the ``NaN``/``Infinity``/``-Infinity`` literals."""
    return json.dumps(obj, allow_nan=True)


def loads(text: str | bytes) -> Any:
    """Parse JSON text, accepting the ``NaN``/``Infinity``/``-Infinity`` literals."""
    return json.loads(text)

"""Admission: what reaches a coordinator is what the input's own validator would have built.

Rule kept here: a coordinator trusts only validated values, and pydantic's validator of
each input class is the one judge of validity. ``model_construct`` and
``model_copy(update=...)`` build instances without asking it, so an instance of the
right class is no proof: its fields may hold anything, and a wrong type found later (in
an effect, in ``snapshot()``, in ``copy.copy``) would surface after the state moved.
:func:`admitted_fact` and :func:`admitted_outcome` run before a coordinator changes
anything and return the input itself when its fields are as the validator leaves them,
or else what the validator makes of them (an equal, validated instance, or a
``ValidationError``).

The look that lets an input through without asking pydantic is only a shortcut: each
accepts a subset of what the validator returns unchanged (exact types, the ``U64``
range), so it can refuse a valid input (pydantic is then asked, and accepts it) but
never admit an invalid one. ``tests/test_admission.py`` holds that against pydantic over
generated values. Only the facts that carry a payload the coordinator keeps are looked
at; an id-only fact is judged by its ``handoff_id``, which the coordinator compares with
its own (a wrong type there is ``foreign_handoff``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from handoff_fsm.model import (
    U64_MAX,
    DestinationReserved,
    HandoffActionOutcome,
    HandoffTransferTiming,
    OutcomeKind,
    SourceHeld,
    TransferTimingMode,
    validated,
)

_V = TypeVar("_V", bound=BaseModel)

_FAILED: Final = OutcomeKind.FAILED

PAYLOAD_FACTS: Final[tuple[type[BaseModel], ...]] = (SourceHeld, DestinationReserved)
"""The facts whose payload a coordinator keeps: the ones :func:`admitted_fact` looks at."""

_NESTING: Final = 3
"""How deep :func:`_field_values` unpacks models: deeper than any input's schema nests
models (a fact holds a timing, a timing holds none), so what lies below is refused by the
validator as it is, and a model built a hundred thousand levels deep costs no recursion."""


def _u64(value: object) -> bool:
    return type(value) is int and 0 <= value <= U64_MAX


def _timing_as_validated(timing: object) -> bool:
    if type(timing) is not HandoffTransferTiming:
        return False
    fields = timing.__dict__
    if len(fields) != 5:  # its five fields, each set by its validator
        return False
    prompt_tokens = fields.get("full_prompt_tokens")
    state_bytes = fields.get("state_bytes")
    kv_bytes = fields.get("kv_bytes_per_token")
    bandwidth = fields.get("bandwidth_gb_s")
    # _u64, spelt out: this runs for every SourceHeld a coordinator is given.
    return (
        type(fields.get("mode")) is TransferTimingMode
        and type(prompt_tokens) is int
        and 0 <= prompt_tokens <= U64_MAX
        and type(state_bytes) is int
        and 0 <= state_bytes <= U64_MAX
        and (kv_bytes is None or (type(kv_bytes) is int and 0 <= kv_bytes <= U64_MAX))
        and (bandwidth is None or type(bandwidth) is float)
    )


def _field_values(value: object, depth: int = 0) -> Any:
    """A model's fields as plain data for its validator (nested models too), or ``value``."""
    if depth < _NESTING and isinstance(value, BaseModel):
        return {name: _field_values(item, depth + 1) for name, item in value.__dict__.items()}
    return value


def _revalidated(value: _V) -> _V:
    """``value`` judged by its class's validator: a validated equal, or ``ValidationError``."""
    return validated(type(value), _field_values(value))


def admitted_source_held(fact: SourceHeld) -> SourceHeld:
    """``fact`` if its timing is as validated, else its class's validator's verdict on it."""
    if _timing_as_validated(fact.__dict__.get("transfer_timing")):
        return fact
    return _revalidated(fact)


def admitted_destination_reserved(fact: DestinationReserved) -> DestinationReserved:
    """``fact`` if its token count is as validated, else its class's validator's verdict."""
    tokens = fact.__dict__.get("transferable_prompt_tokens")
    if type(tokens) is int and 0 <= tokens <= U64_MAX:
        return fact
    return _revalidated(fact)


FACT_ADMISSIONS: Final[dict[type[BaseModel], Callable[[Any], Any]]] = {
    SourceHeld: admitted_source_held,
    DestinationReserved: admitted_destination_reserved,
}
"""The admission of each fact whose payload a coordinator keeps (:data:`PAYLOAD_FACTS`)."""


def admitted_fact(fact: _V) -> _V:
    """``fact`` if its payload is as validated, else its class's validator's verdict on it.

    For :class:`~handoff_fsm.model.SourceHeld` and
    :class:`~handoff_fsm.model.DestinationReserved` (the facts whose payload a coordinator
    keeps); any other fact is returned as it is.
    """
    admission = FACT_ADMISSIONS.get(type(fact))
    admitted: _V = fact if admission is None else admission(fact)
    return admitted


def admitted_outcome(outcome: HandoffActionOutcome) -> HandoffActionOutcome:
    """``outcome`` if its fields are as validated (a kind, and a reason exactly when it
    failed), else the validator's verdict on them."""
    fields = outcome.__dict__
    kind = fields.get("kind")
    reason = fields.get("reason", outcome)
    if (
        type(kind) is OutcomeKind
        and len(fields) == 2  # kind and reason, both set by the validator
        and (type(reason) is str if kind is _FAILED else reason is None)
    ):
        return outcome
    return _revalidated(outcome)

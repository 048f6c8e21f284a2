"""What the coordinator's own objects cost per handoff, built three ways: a yardstick only.

Rule kept here: the library builds its own actions and issued actions through
pydantic's public API (the class's validator, :data:`handoff_fsm.model._VALIDATE`),
and this module measures that choice against the two alternatives, so the benchmark
table shows what it costs on every run instead of a docstring quoting a figure:

* ``model_construct``, pydantic's public way of building a model without validating;
* writing pydantic's own slots (``object.__new__`` and ``BaseModel``'s slot
  descriptors), which the library did before it kept to the public API. That code lives
  here, in the benchmark, only to be measured; nothing in ``handoff_fsm`` does this.

Each way builds the objects one full source-first handoff issues (six actions, six
issued actions, ids 0 to 5), with the same loop and the same class look-ups as the
coordinator's effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from harness import clock
from pydantic import BaseModel

from handoff_fsm.model import (
    ActivateDestination,
    Complete,
    IssuedHandoffAction,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
)

DELAY_MS = 2.5
_Kind = type[SubmitPrefill | ReserveDestination | ActivateDestination | ReleaseSource | Complete]
_KINDS: tuple[_Kind, ...] = (
    SubmitPrefill,
    ReserveDestination,
    ActivateDestination,
    ReleaseSource,
    Complete,
)
"""A source-first handoff's actions besides ``StartTransfer`` (issued third)."""


def _check(last: Any, ids: Sequence[UUID], way: str) -> None:
    """The last object built is the one validation builds: a broken way cannot look fast."""
    action = StartTransfer(handoff_id=ids[-1], delay_ms=DELAY_MS)
    expected = IssuedHandoffAction(id=5, action=action)
    if last != expected or last.model_fields_set != expected.model_fields_set:
        raise RuntimeError(f"{way}: built {last!r}, not {expected!r}")


def library(ids: Sequence[UUID]) -> float:
    """The library's own constructors (the coordinator's effects call these)."""
    kinds = _KINDS
    start = clock()
    for handoff_id in ids:
        for action_id, kind in enumerate(kinds):
            IssuedHandoffAction.trusted(action_id, kind.issued_for(handoff_id))
        last = IssuedHandoffAction.trusted(5, StartTransfer.issued_with_delay(handoff_id, DELAY_MS))
    elapsed = clock() - start
    _check(last, ids, "library")
    return elapsed


def model_construct(ids: Sequence[UUID]) -> float:
    """The same objects by pydantic's ``model_construct`` (public, no validation)."""
    kinds = _KINDS
    start = clock()
    for handoff_id in ids:
        for action_id, kind in enumerate(kinds):
            IssuedHandoffAction.model_construct(
                id=action_id, action=kind.model_construct(handoff_id=handoff_id)
            )
        last = IssuedHandoffAction.model_construct(
            id=5, action=StartTransfer.model_construct(handoff_id=handoff_id, delay_ms=DELAY_MS)
        )
    elapsed = clock() - start
    _check(last, ids, "model_construct")
    return elapsed


_new = object.__new__
_set_dict = vars(BaseModel)["__dict__"].__set__
_set_fields_set = vars(BaseModel)["__pydantic_fields_set__"].__set__
_set_extra = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private = vars(BaseModel)["__pydantic_private__"].__set__
_ID = {"handoff_id"}
_ID_DELAY = {"handoff_id", "delay_ms"}
_ISSUED = {"id", "action"}


def _slot_written(cls: type[Any], values: dict[str, Any], fields_set: set[str]) -> Any:
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def slot_writes(ids: Sequence[UUID]) -> float:
    """The same objects by writing pydantic's slots (not public API; not in the library)."""
    kinds, built = _KINDS, _slot_written
    start = clock()
    for handoff_id in ids:
        for action_id, kind in enumerate(kinds):
            action = built(kind, {"handoff_id": handoff_id}, _ID)
            built(IssuedHandoffAction, {"id": action_id, "action": action}, _ISSUED)
        action = built(StartTransfer, {"handoff_id": handoff_id, "delay_ms": DELAY_MS}, _ID_DELAY)
        last = built(IssuedHandoffAction, {"id": 5, "action": action}, _ISSUED)
    elapsed = clock() - start
    _check(last, ids, "slot writes")
    return elapsed

"""The value types of the handoff protocol: small, frozen, validated at the edge.

Rule kept here: every value is validated by pydantic, through its public API only.
Values a *caller* builds (facts, timings, outcomes) go through the constructor;
values the *library* builds (actions, issued actions, and facts built with
``observed`` by the simulator's fake workers) go through the class's validator
(:data:`_VALIDATE`, pydantic's ``TypeAdapter(cls).validator``), the cheapest way
pydantic offers to build a model: their fields were validated already, and on a
handoff's hot path the constructor's own Python frame is a cost worth saving
(``make bench``'s "own objects" rows measure this choice against the others).
Python names mirror the Rust reference (``tests/oracle/reference/replay_handoff.rs``);
wire names live in :mod:`handoff_fsm.io.wire`.

This module also holds the transfer-delay arithmetic (:func:`transfer_delay_ms` and
its validators), in the reference's order of floating-point operations, so results
match the reference bit for bit.

This is the bottom of the protocol core: it imports :mod:`handoff_fsm.errors` and
nothing else of the package. Which outcomes acknowledge which action is plain data
of the action types (``acknowledged_by``, beside ``owner``), declared once here;
:data:`handoff_fsm.chart.ACKNOWLEDGEMENTS` reads it and adds the chart's side (the
event an acknowledgement becomes, whether a failure starts cleanup), and
``expected_outcomes`` is derived from it below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from enum import StrEnum
from functools import cache
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Final, NewType, Self, TypeVar
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    SerializationInfo,
    TypeAdapter,
    field_serializer,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticKnownError, core_schema

from handoff_fsm.errors import ErrorCode, HandoffErrorCode, handoff_error, quoted

U64_MAX = 2**64 - 1
"""Largest value of a Rust ``usize``/``u64``: counts and ids beyond it cannot cross the wire."""

U64 = Annotated[int, Field(strict=True, ge=0, le=U64_MAX)]
"""A non-negative integer that fits a Rust ``usize`` (bools and floats are refused)."""

F64 = Annotated[float, Field(strict=True)]
"""A float (ints accepted, as serde does; strings and bools refused; NaN/inf kept)."""

HandoffId = UUID
"""A handoff is named by a UUID allocated by the caller."""
read_handoff_id: Final = TypeAdapter(HandoffId).validator.validate_python
"""The one reading of a handoff id (a ``UUID`` or its string form): the one every fact's
``handoff_id`` field gets, also for a coordinator's id and a trace's."""

HandoffActionId = NewType("HandoffActionId", int)
"""Journal id of an issued action: per coordinator, from 0, strictly increasing."""


class HandoffOrder(StrEnum):
    """Which owner is engaged first: vLLM holds the source first, SGLang reserves first."""

    SOURCE_FIRST = "SourceFirst"
    DESTINATION_FIRST = "DestinationFirst"


class Revision(StrEnum):
    """Which revision of the reference protocol a coordinator follows (docs/revisions.md).

    ``SEED`` is the vendored reference with the library's improvements; ``A976B2BF`` is
    upstream aisimulate at commit a976b2bf: a terminal fact after a successful handoff
    reopens cleanup and cancels the decoding destination, and the delay actually
    scheduled is validated where it is scheduled.
    """

    SEED = "seed"
    A976B2BF = "a976b2bf"


KNOWN_VIOLATIONS: Final[Mapping[Revision, Mapping[str, str]]] = MappingProxyType(
    {
        Revision.SEED: MappingProxyType(
            {
                "cancel_stops_decode": "the vendored reference ignores a client's Canceled "
                "that arrives after Success while the destination decodes, so the decode "
                "worker keeps the KV cache and its batch slot; upstream fixed it in a976b2bf",
            }
        ),
        Revision.A976B2BF: MappingProxyType({}),
    }
)
"""What each revision is known to break, by invariant or system property name, with the
reason: a design review shows these as known, and ``review --check`` fails only on the
others (docs/diagrams-and-review.md)."""
VERDICT_LOSSES: Final = 1
"""The lost messages a written verdict (REVIEW.md, DIFF.md) judges each system property's
tolerance with, unless told otherwise (``--losses N``); the gates judge no loss."""


_Member = TypeVar("_Member", bound=StrEnum)
_ModelT = TypeVar("_ModelT", bound=BaseModel)


def checked_member(
    kind: type[_Member],
    value: object,
    code: ErrorCode,
    what: str,
    handoff_id: UUID | None = None,
) -> _Member:
    """``value`` as a member of ``kind`` (the member, or its value exactly); anything else
    is ``code``, quoting ``value`` and naming the values there are."""
    if type(value) is kind:
        return value
    names: dict[str, _Member] = _members_by_value(kind)
    member = names.get(value) if isinstance(value, str) else None
    if member is None:
        raise handoff_error(
            code,
            f"invalid {what} {quoted(value)}: expected one of {', '.join(names)}",
            handoff_id=handoff_id,
        )
    return member


@cache
def _members_by_value(kind: type[StrEnum]) -> dict[str, Any]:
    return {member.value: member for member in kind}


def checked_revision(value: object, handoff_id: UUID | None = None) -> Revision:
    """``value`` as a :class:`Revision`; anything else is ``invalid_revision``."""
    if type(value) is Revision:
        return value
    return checked_member(
        Revision, value, HandoffErrorCode.INVALID_REVISION, "protocol revision", handoff_id
    )


ORDERS: Final[dict[str, HandoffOrder]] = {order.value: order for order in HandoffOrder}
"""Each order by its wire name (``SourceFirst``): the one table every reader of an order uses."""


class TransferTimingMode(StrEnum):
    """Which prompt footprint the transfer delay is charged for."""

    FULL_PROMPT = "full_prompt"
    DESTINATION_MISSING = "destination_missing"


class Backend(StrEnum):
    """Serving engine behind a worker; it decides the handoff order (see conformance)."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


class HandoffCompletion(StrEnum):
    """How a handoff ended: ``Success`` from the active phase, ``Canceled`` after cleanup."""

    SUCCESS = "Success"
    CANCELED = "Canceled"


class OutcomeKind(StrEnum):
    """The variant of a :class:`HandoffActionOutcome`."""

    SUBMITTED = "Submitted"
    ACCEPTED = "Accepted"
    SCHEDULED = "Scheduled"
    APPLIED = "Applied"
    NOOP = "Noop"
    FAILED = "Failed"


OUTCOME_PREFERENCE: tuple[OutcomeKind, ...] = (
    OutcomeKind.SUBMITTED,
    OutcomeKind.ACCEPTED,
    OutcomeKind.SCHEDULED,
    OutcomeKind.APPLIED,
    OutcomeKind.NOOP,
)
"""The order in which :attr:`expected_outcomes <_Action.expected_outcomes>` lists the
outcomes the chart accepts for an action: ``Applied`` (it did what was asked) before
``Noop`` (there was nothing to do), so the first entry is the ordinary acknowledgement."""


class Owner(StrEnum):
    """Who performs an action: the worker (or link) it must be sent to.

    ``COORDINATOR`` owns ``Complete``, which is performed by nobody: it tells the
    caller the handoff is over and is never acknowledged.
    """

    SOURCE = "source"
    DESTINATION = "destination"
    TRANSFER = "transfer"
    COORDINATOR = "coordinator"


class _Value(BaseModel):
    """Frozen, closed value: unknown fields are an error, never silently dropped."""

    # NaN and infinities (a transfer delay can be infinite) are written as the wire
    # format's literals NaN/Infinity/-Infinity, which pydantic reads back; the default
    # would write null and lose the value.
    model_config = ConfigDict(
        frozen=True, extra="forbid", revalidate_instances="never", ser_json_inf_nan="constants"
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.__pydantic_complete__:  # a model with forward references has no validator yet
            _VALIDATE[cls] = TypeAdapter(cls).validator.validate_python


_VALIDATE: Final[dict[type[BaseModel], Callable[..., Any]]] = {}
"""Per class, ``cls(**values)`` without the constructor's Python frame: the class's
validator, as pydantic's ``TypeAdapter(cls).validator`` offers it; the result is the
instance the constructor builds. The library builds its own values with it on hot
paths (a dict, not a class attribute: attribute look-ups on a model class are slow)."""


def builder(cls: type[_ModelT]) -> Callable[[Mapping[str, Any]], _ModelT]:
    """``values -> cls(**values)`` through the class's validator, for a hot path to bind once
    (a ``ValidationError`` if invalid); ``cls`` is one of this module's value types."""
    return _VALIDATE[cls]


def validated(cls: type[_ModelT], values: Mapping[str, Any]) -> _ModelT:
    """``cls(**values)`` through the class's validator (a ``ValidationError`` if invalid);
    ``cls`` is one of this module's value types."""
    value: _ModelT = _VALIDATE[cls](values)
    return value


# --------------------------------------------------------------------------- timing


def transfer_delay_ms(
    tokens: int,
    kv_bytes_per_token: int | None,
    bandwidth_gb_s: float | None,
    state_bytes: int = 0,
) -> float | None:
    """Milliseconds to move ``tokens`` of KV cache (plus ``state_bytes``), or ``None``.

    ``None`` when the model is incomplete (no bandwidth; neither per-token bytes nor
    state bytes) or the bandwidth is ``<= 0.0``; the coordinator then uses its fallback.
    The order of operations is the reference's (``tokens * kv / (bandwidth * 1e9) *
    1000``); Python floats are IEEE-754 doubles and ``float(int)`` rounds like Rust's
    ``as f64``, so the result matches the reference's bit for bit.
    """
    if bandwidth_gb_s is None or (kv_bytes_per_token is None and state_bytes == 0):
        return None
    if bandwidth_gb_s <= 0.0:
        return None
    payload = float(tokens) * float(kv_bytes_per_token or 0)
    if state_bytes:
        payload += float(state_bytes)
    return payload / (bandwidth_gb_s * 1e9) * 1000.0


def validate_transfer_delay_ms(transfer_delay_ms: float | None) -> None:
    """Reject a delay that is negative, NaN or infinite (``None`` means "no model": fine)."""
    if transfer_delay_ms is None:
        return
    if not math.isfinite(transfer_delay_ms) or transfer_delay_ms < 0.0:
        raise handoff_error(
            HandoffErrorCode.INVALID_TRANSFER_DELAY,
            f"invalid handoff transfer delay {transfer_delay_ms!r} ms (must be finite and >= 0)",
        )


def validate_transfer_timing(transfer_timing: HandoffTransferTiming) -> None:
    """Reject a timing whose bandwidth is negative or non-finite, or whose delay is invalid."""
    bandwidth = transfer_timing.bandwidth_gb_s
    if bandwidth is not None and (not math.isfinite(bandwidth) or bandwidth < 0.0):
        raise handoff_error(
            HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH,
            f"invalid handoff transfer bandwidth {bandwidth!r} GB/s (must be finite and >= 0)",
        )
    fields = transfer_timing.__dict__  # full_prompt_delay_ms(), without its frame
    validate_transfer_delay_ms(
        transfer_delay_ms(
            fields["full_prompt_tokens"],
            fields["kv_bytes_per_token"],
            bandwidth,
            fields["state_bytes"],
        )
    )


_UNSET: Any = object()
_TIMING_FIELDS: Final = (
    "mode",
    "full_prompt_tokens",
    "kv_bytes_per_token",
    "bandwidth_gb_s",
    "state_bytes",
)


class HandoffTransferTiming(_Value):
    """Source-provided inputs for the KV transfer delay, published when the source is held.

    ``state_bytes`` is the newer upstream model's fixed per-request payload
    (``kv_bytes_per_request`` there): bytes = tokens * kv_bytes_per_token + state_bytes.
    With the default 0 every delay is bit-identical to the reference.
    """

    mode: TransferTimingMode
    full_prompt_tokens: U64
    kv_bytes_per_token: U64 | None = None
    bandwidth_gb_s: F64 | None = None
    state_bytes: U64 = 0

    def __init__(
        self,
        mode: TransferTimingMode | str = _UNSET,
        full_prompt_tokens: int = _UNSET,
        kv_bytes_per_token: int | None = _UNSET,
        bandwidth_gb_s: float | None = _UNSET,
        state_bytes: int = _UNSET,
        /,
        **fields: Any,
    ) -> None:
        # Positional arguments as in the design; keywords all arrive in `fields`, so any
        # field name pydantic passes (it calls this __init__ with a mapping's items) is a
        # field, never a clash with `self`. Only the arguments given reach pydantic, so a
        # missing required field is still reported as missing, and unknown keywords are
        # rejected, not dropped. Validated into `self` as BaseModel.__init__ does
        # (pydantic-core's `self_instance`), without its frame.
        if mode is not _UNSET:
            given = (mode, full_prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes)
            for name, value in zip(_TIMING_FIELDS, given, strict=True):
                if value is _UNSET:
                    break
                if name in fields:
                    raise TypeError(
                        f"HandoffTransferTiming() got multiple values for argument {name!r}"
                    )
                fields[name] = value
        _VALIDATE[type(self)](fields, self_instance=self)

    # pydantic calls this __init__ for every timing it validates from a mapping (a nested
    # timing in each SourceHeld read from a trace, say): a custom __init__ is opaque to it.
    # Telling it otherwise takes a private marker, which this library does not write.

    def for_prompt(self, full_prompt_tokens: int) -> HandoffTransferTiming:
        """This timing for a prompt of ``full_prompt_tokens`` tokens.

        For a source that publishes one timing per prompt (the simulator's): the fields
        this timing was given, with ``full_prompt_tokens`` replaced, validated as the
        constructor would (a bad count is refused with a ``ValidationError``).
        """
        values = {name: self.__dict__[name] for name in self.model_fields_set}
        values["full_prompt_tokens"] = full_prompt_tokens
        timing: HandoffTransferTiming = _VALIDATE[HandoffTransferTiming](values)
        return timing

    def delay_ms(self, destination_missing_tokens: int) -> float | None:
        """Transfer delay in ms for this footprint, or ``None`` without a usable model.

        ``None`` when bandwidth is missing or ``<= 0.0``, or when there are no bytes to
        charge (no ``kv_bytes_per_token`` and no ``state_bytes``). NaN bandwidth is not
        ``<= 0.0``, so it yields NaN, exactly as the reference does.
        """
        tokens = (
            self.full_prompt_tokens
            if self.mode is TransferTimingMode.FULL_PROMPT
            else destination_missing_tokens
        )
        return transfer_delay_ms(
            tokens, self.kv_bytes_per_token, self.bandwidth_gb_s, self.state_bytes
        )

    def full_prompt_delay_ms(self) -> float | None:
        """Delay for the whole prompt, whatever ``mode`` says (used to validate the timing)."""
        return transfer_delay_ms(
            self.full_prompt_tokens, self.kv_bytes_per_token, self.bandwidth_gb_s, self.state_bytes
        )


# --------------------------------------------------------------------------- facts


class _Fact(_Value):
    handoff_id: HandoffId


class _IdOnlyFact(_Fact):
    """A fact that carries nothing but the handoff it is about."""

    @classmethod
    def observed(cls, handoff_id: UUID) -> Self:
        """The fact about ``handoff_id``: ``cls(handoff_id=handoff_id)``, positionally.

        For sources that hold the id already (the simulator's fake workers, the session
        policy). Validated like any fact: pydantic checks a ``uuid.UUID`` by its type.
        """
        fact: Self = _VALIDATE[cls]({"handoff_id": handoff_id})
        return fact


class SourceHeld(_Fact):
    """The source holds the prefilled KV cache and says how long moving it takes."""

    transfer_timing: HandoffTransferTiming

    @classmethod
    def observed(cls, handoff_id: UUID, transfer_timing: HandoffTransferTiming) -> SourceHeld:
        """The fact, positionally (as :meth:`TransferCompleted.observed`); a timing model
        is taken as it is (models are never revalidated)."""
        values = {"handoff_id": handoff_id, "transfer_timing": transfer_timing}
        fact: SourceHeld = _VALIDATE[cls](values)
        return fact


class DestinationReserved(_Fact):
    """The destination reserved room; ``transferable_prompt_tokens`` are the ones it lacks."""

    transferable_prompt_tokens: U64

    @classmethod
    def observed(cls, handoff_id: UUID, transferable_prompt_tokens: int) -> DestinationReserved:
        """The fact, positionally (as :meth:`TransferCompleted.observed`)."""
        values = {
            "handoff_id": handoff_id,
            "transferable_prompt_tokens": transferable_prompt_tokens,
        }
        fact: DestinationReserved = _VALIDATE[cls](values)
        return fact


class TransferCompleted(_IdOnlyFact):
    """The KV cache arrived at the destination."""


class Failed(_IdOnlyFact):
    """Something failed outside the coordinator: the handoff must be cleaned up."""


class TimedOut(_IdOnlyFact):
    """The caller's deadline for this handoff passed: the handoff must be cleaned up."""


class Canceled(_IdOnlyFact):
    """The request was canceled: the handoff must be cleaned up."""


HandoffFact = SourceHeld | DestinationReserved | TransferCompleted | Failed | TimedOut | Canceled
"""Anything that happened at the source, destination or transfer."""

FACT_TYPES: tuple[type[_Fact], ...] = (
    SourceHeld,
    DestinationReserved,
    TransferCompleted,
    Failed,
    TimedOut,
    Canceled,
)

# --------------------------------------------------------------------------- actions


class _Action(_Value):
    handoff_id: HandoffId
    owner: ClassVar[Owner]
    """Who performs this action (see :class:`Owner`)."""
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = frozenset()
    """The outcome kinds that acknowledge this action as done: the one table of them
    (the chart's ``ACKNOWLEDGEMENTS`` reads it, see the module docstring). Empty for
    ``Complete``, which is never acknowledged. ``Failed`` is never listed: it says the
    action was not done."""
    expected_outcomes: ClassVar[tuple[HandoffActionOutcome, ...]] = ()
    """:attr:`acknowledged_by` as outcomes, the ordinary one first (by
    :data:`OUTCOME_PREFERENCE`): ``(SUBMITTED,)`` for ``SubmitPrefill``,
    ``(APPLIED, NOOP)`` for ``ReleaseSource``, ``()`` for ``Complete``."""

    @classmethod
    def issued_for(cls, handoff_id: UUID) -> Self:
        """The coordinator's own action for ``handoff_id``.

        Validated like any action (pydantic checks a UUID by its type), through the
        class's validator (see the module docstring).
        """
        action: Self = _VALIDATE[cls]({"handoff_id": handoff_id})
        return action


_DONE_OR_NOTHING_TO_DO: Final = frozenset({OutcomeKind.APPLIED, OutcomeKind.NOOP})


class SubmitPrefill(_Action):
    """Ask the source to prefill the prompt and hold its KV cache."""

    owner: ClassVar[Owner] = Owner.SOURCE
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = frozenset({OutcomeKind.SUBMITTED})


class ReserveDestination(_Action):
    """Ask the destination to reserve room for the request."""

    owner: ClassVar[Owner] = Owner.DESTINATION
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = frozenset({OutcomeKind.ACCEPTED})


class StartTransfer(_Action):
    """Start moving the KV cache; it lands ``delay_ms`` later (virtual time)."""

    owner: ClassVar[Owner] = Owner.TRANSFER
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = frozenset({OutcomeKind.SCHEDULED})

    delay_ms: F64

    @classmethod
    def issued_with_delay(cls, handoff_id: UUID, delay_ms: float) -> StartTransfer:
        """The coordinator's own transfer action (as :meth:`issued_for <_Action.issued_for>`)."""
        action: StartTransfer = _VALIDATE[cls]({"handoff_id": handoff_id, "delay_ms": delay_ms})
        return action


class ActivateDestination(_Action):
    """Make the transferred KV cache visible at the destination; decode may start."""

    owner: ClassVar[Owner] = Owner.DESTINATION
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = frozenset({OutcomeKind.APPLIED})


class ReleaseSource(_Action):
    """Free the source's copy of the KV cache after a successful handoff."""

    owner: ClassVar[Owner] = Owner.SOURCE
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = _DONE_OR_NOTHING_TO_DO


class CancelSource(_Action):
    """Cleanup: abandon the source's side of the handoff."""

    owner: ClassVar[Owner] = Owner.SOURCE
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = _DONE_OR_NOTHING_TO_DO


class CancelDestination(_Action):
    """Cleanup: abandon the destination's reservation."""

    owner: ClassVar[Owner] = Owner.DESTINATION
    acknowledged_by: ClassVar[frozenset[OutcomeKind]] = _DONE_OR_NOTHING_TO_DO


class Complete(_Action):
    """The handoff is over; ``HandoffCoordinator.completion`` says how."""

    owner: ClassVar[Owner] = Owner.COORDINATOR


HandoffAction = (
    SubmitPrefill
    | ReserveDestination
    | StartTransfer
    | ActivateDestination
    | ReleaseSource
    | CancelSource
    | CancelDestination
    | Complete
)
"""Anything the coordinator asks its environment to do."""

ACTION_TYPES: tuple[type[_Action], ...] = (
    SubmitPrefill,
    ReserveDestination,
    StartTransfer,
    ActivateDestination,
    ReleaseSource,
    CancelSource,
    CancelDestination,
    Complete,
)

ACTIONS_BY_NAME: Final[dict[str, type[_Action]]] = {cls.__name__: cls for cls in ACTION_TYPES}
"""Each action type by its name, the wire form's variant tag (``StartTransfer``)."""


_EXACT_ACTION_TYPES: Final = frozenset(ACTION_TYPES)


def _validated_action(value: Any) -> Any:
    """An action as it is; its wire form, ``{"StartTransfer": {...}}``, as the action it tags."""
    if type(value) in _EXACT_ACTION_TYPES or isinstance(value, _Action):
        return value
    if not isinstance(value, dict):
        raise PydanticKnownError("is_instance_of", {"class": "HandoffAction"})
    name = next(iter(value)) if len(value) == 1 else None
    variant = ACTIONS_BY_NAME.get(name) if isinstance(name, str) else None
    if variant is None:
        raise ValueError(
            'an action is tagged with its variant, e.g. {"StartTransfer": {...}}; '
            f"got {quoted(value)}"
        )
    return variant.model_validate(value[name])


def _action_schema(_source: Any, _handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
    # One look at the type for every kind of action: a union of the eight models would
    # try them in turn, building an error for each one that does not match, and an
    # instance check of a model class goes through ABCMeta.__instancecheck__.
    return core_schema.no_info_plain_validator_function(_validated_action)


class IssuedHandoffAction(_Value):
    """An action together with the journal id its outcome must quote.

    Its JSON form is the wire form, ``{"id": 3, "action": {"StartTransfer": {...}}}``:
    the action's variant travels as serde's external tag (the variants' fields alone
    could not tell ``SubmitPrefill`` from ``ReleaseSource``).
    """

    id: U64
    action: Annotated[HandoffAction, GetPydanticSchema(_action_schema)]

    @field_serializer("action")
    def _tag_action(self, action: HandoffAction, info: SerializationInfo) -> dict[str, Any]:
        return {type(action).__name__: action.model_dump(mode=info.mode)}

    @classmethod
    def trusted(cls, action_id: int, action: HandoffAction) -> IssuedHandoffAction:
        """The coordinator's own output (as :meth:`issued_for <_Action.issued_for>`)."""
        issued: IssuedHandoffAction = _VALIDATE[cls]({"id": action_id, "action": action})
        return issued


# --------------------------------------------------------------------------- outcomes


class HandoffActionOutcome(_Value):
    """Acknowledgement of an issued action: a unit variant, or ``Failed(reason)``.

    Use the constants ``SUBMITTED``, ``ACCEPTED``, ``SCHEDULED``, ``APPLIED``, ``NOOP``
    and :meth:`failed`; two outcomes are equal when variant and reason are equal.
    """

    kind: OutcomeKind
    reason: str | None = None

    SUBMITTED: ClassVar[HandoffActionOutcome]
    ACCEPTED: ClassVar[HandoffActionOutcome]
    SCHEDULED: ClassVar[HandoffActionOutcome]
    APPLIED: ClassVar[HandoffActionOutcome]
    NOOP: ClassVar[HandoffActionOutcome]

    @model_validator(mode="before")
    @classmethod
    def _from_wire_form(cls, data: Any) -> Any:
        # The wire form, "Applied" or {"Failed": "reason"}, is accepted as input too.
        if isinstance(data, str):
            return {"kind": data}
        if isinstance(data, dict) and set(data) == {"Failed"}:
            return {"kind": OutcomeKind.FAILED, "reason": data["Failed"]}
        return data

    @model_serializer(mode="plain")
    def _to_wire_form(self) -> str | dict[str, str]:
        return self.kind.value if self.reason is None else {"Failed": self.reason}

    @model_validator(mode="after")
    def _reason_iff_failed(self) -> Self:
        if (self.kind is OutcomeKind.FAILED) != (self.reason is not None):
            raise ValueError("a reason is given exactly when the outcome is Failed")
        return self

    @classmethod
    def failed(cls, reason: str) -> HandoffActionOutcome:
        """The action failed; ``reason`` is free text (compared for duplicate detection)."""
        return cls(kind=OutcomeKind.FAILED, reason=reason)

    @property
    def is_failed(self) -> bool:
        """True for ``Failed(..)``."""
        return self.kind is OutcomeKind.FAILED

    def __repr__(self) -> str:
        if self.reason is None:
            return f"HandoffActionOutcome.{self.kind.name}"
        return f"HandoffActionOutcome.failed({self.reason!r})"

    def __str__(self) -> str:
        return self.kind.value if self.reason is None else f"Failed({quoted(self.reason)})"


HandoffActionOutcome.SUBMITTED = HandoffActionOutcome(kind=OutcomeKind.SUBMITTED)
HandoffActionOutcome.ACCEPTED = HandoffActionOutcome(kind=OutcomeKind.ACCEPTED)
HandoffActionOutcome.SCHEDULED = HandoffActionOutcome(kind=OutcomeKind.SCHEDULED)
HandoffActionOutcome.APPLIED = HandoffActionOutcome(kind=OutcomeKind.APPLIED)
HandoffActionOutcome.NOOP = HandoffActionOutcome(kind=OutcomeKind.NOOP)

# Each action's expected outcomes: its acknowledged_by as the shared constants, in order.
for _action_type in ACTION_TYPES:
    _action_type.expected_outcomes = tuple(
        getattr(HandoffActionOutcome, kind.name)
        for kind in OUTCOME_PREFERENCE
        if kind in _action_type.acknowledged_by
    )
del _action_type


# --------------------------------------------------------------------------- conformance


class NormalizedHandoffEvent(StrEnum):
    """A lifecycle step as the endpoints observe it, independent of the engine."""

    SOURCE_HELD = "SourceHeld"
    DESTINATION_ACCEPTED = "DestinationAccepted"
    DESTINATION_RESERVED = "DestinationReserved"
    DESTINATION_ACTIVATED = "DestinationActivated"
    SOURCE_RELEASED = "SourceReleased"
    COMPLETED = "Completed"


class NormalizedStoredTiming(_Value):
    """How many stored-KV hashes the destination made visible around activation."""

    before_activation: U64 = 0
    on_activation: U64 = 0
    repeated_activation_hashes_after_activation: U64 = 0


BACKEND_ORDERS: dict[Revision, dict[Backend, HandoffOrder]] = {
    Revision.SEED: {
        Backend.VLLM: HandoffOrder.SOURCE_FIRST,
        Backend.SGLANG: HandoffOrder.DESTINATION_FIRST,
    },
    Revision.A976B2BF: {
        Backend.VLLM: HandoffOrder.SOURCE_FIRST,
        Backend.SGLANG: HandoffOrder.DESTINATION_FIRST,
        Backend.TRTLLM: HandoffOrder.SOURCE_FIRST,
    },
}
"""Per revision, the handoff order each supported backend uses.

Under ``seed`` TRT-LLM has none (``unsupported_backend``); a976b2bf handles it like vLLM."""

ENGINE_ORDER: dict[Backend, HandoffOrder] = BACKEND_ORDERS[Revision.SEED]
"""The seed's backend orders (the reference's names)."""

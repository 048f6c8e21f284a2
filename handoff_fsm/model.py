"""The value types of the handoff protocol: small, frozen, validated at the edge.

Rule kept here: values a *caller* builds (facts, timings, outcomes) are validated
by pydantic on construction; values the *library* builds (actions, issued
actions) go through a trusted constructor, because their fields come from
values that were already validated and re-validating them would dominate the
cost of a handoff; so do facts built with ``observed`` from values of the exact
types (a ``UUID``, a timing model, an int in u64), which the simulator's fake
workers hold. Python names mirror the Rust reference
(``tests/oracle/reference/replay_handoff.rs``); wire names live in
:mod:`handoff_fsm.io.wire`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, ClassVar, Final, NewType, Self, TypeVar
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    field_serializer,
    model_serializer,
    model_validator,
)

from handoff_fsm.errors import HandoffErrorCode, handoff_error, quoted
from handoff_fsm.timing import transfer_delay_ms

U64_MAX = 2**64 - 1
"""Largest value of a Rust ``usize``/``u64``: counts and ids beyond it cannot cross the wire."""

U64 = Annotated[int, Field(strict=True, ge=0, le=U64_MAX)]
"""A non-negative integer that fits a Rust ``usize`` (bools and floats are refused)."""

F64 = Annotated[float, Field(strict=True)]
"""A float (ints accepted, as serde does; strings and bools refused; NaN/inf kept)."""

HandoffId = UUID
"""A handoff is named by a UUID allocated by the caller."""

HandoffActionId = NewType("HandoffActionId", int)
"""Journal id of an issued action: per coordinator, from 0, strictly increasing."""


class HandoffOrder(StrEnum):
    """Which owner is engaged first: vLLM holds the source first, SGLang reserves first."""

    SOURCE_FIRST = "SourceFirst"
    DESTINATION_FIRST = "DestinationFirst"


class Revision(StrEnum):
    """Which revision of the reference protocol a coordinator follows (README, "Revisions").

    ``SEED`` is the vendored reference with the library's improvements; ``A976B2BF`` is
    upstream aisimulate at commit a976b2bf: a terminal fact after a successful handoff
    reopens cleanup and cancels the decoding destination, and the delay actually
    scheduled is validated where it is scheduled.
    """

    SEED = "seed"
    A976B2BF = "a976b2bf"


def checked_revision(value: object, handoff_id: UUID | None = None) -> Revision:
    """``value`` as a :class:`Revision`; anything else is ``invalid_revision``."""
    if type(value) is Revision:
        return value
    revision = _REVISIONS.get(value) if isinstance(value, str) else None
    if revision is None:
        shown = repr(value) if len(repr(value)) <= 80 else f"{repr(value)[:77]}..."
        raise handoff_error(
            HandoffErrorCode.INVALID_REVISION,
            f"invalid protocol revision {shown}: expected one of {', '.join(_REVISIONS)}",
            handoff_id=handoff_id,
        )
    return revision


_REVISIONS: dict[str, Revision] = {revision.value: revision for revision in Revision}


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


_ModelT = TypeVar("_ModelT", bound=BaseModel)
_new = object.__new__
# BaseModel's own slot descriptors, set directly: the same effect as object.__setattr__
# (which a frozen model needs), without looking each name up along the class's MRO.
_set_dict = vars(BaseModel)["__dict__"].__set__
_set_fields_set = vars(BaseModel)["__pydantic_fields_set__"].__set__
_set_extra = vars(BaseModel)["__pydantic_extra__"].__set__
_set_private = vars(BaseModel)["__pydantic_private__"].__set__


def _trusted(cls: type[_ModelT], values: dict[str, Any], fields_set: set[str]) -> _ModelT:
    """Build a model from already-valid values without running validation.

    Equivalent to what pydantic's own ``model_construct`` produces, at a fraction of
    its cost. ``fields_set`` is shared per class and never mutated (models are frozen).
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, fields_set)
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


# --------------------------------------------------------------------------- timing

_UNSET: Any = object()


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
        **unknown: Any,
    ) -> None:
        # Positional arguments as in the design. Only the arguments given reach pydantic,
        # so a missing required field is still reported as missing, and unknown keywords
        # are rejected, not dropped.
        given = {
            "mode": mode,
            "full_prompt_tokens": full_prompt_tokens,
            "kv_bytes_per_token": kv_bytes_per_token,
            "bandwidth_gb_s": bandwidth_gb_s,
            "state_bytes": state_bytes,
        }
        super().__init__(**{k: v for k, v in given.items() if v is not _UNSET}, **unknown)

    # This __init__ only maps positional arguments to fields, so pydantic may validate
    # without it: a fact holding a timing is read at a third of the cost (without the
    # marker, pydantic-core calls __init__ for every nested timing it validates).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def for_prompt(self, full_prompt_tokens: int) -> HandoffTransferTiming:
        """This timing for a prompt of ``full_prompt_tokens`` tokens.

        A source that publishes one timing per prompt (the simulator's) validates its
        timing once: every other field was validated with this one, so a token count
        that is an exact int in u64 needs no pydantic. Anything else is validated (and
        refused with a ``ValidationError``) as the constructor would.
        """
        values = self.__dict__.copy()
        values["full_prompt_tokens"] = full_prompt_tokens
        if type(full_prompt_tokens) is not int or not 0 <= full_prompt_tokens <= U64_MAX:
            return HandoffTransferTiming.model_validate(values)
        fields_set = self.__pydantic_fields_set__
        if "full_prompt_tokens" not in fields_set:
            fields_set = {*fields_set, "full_prompt_tokens"}
        return _trusted(HandoffTransferTiming, values, fields_set)

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


_ID_FIELDS: Final = {"handoff_id"}
_HELD_FIELDS: Final = {"handoff_id", "transfer_timing"}
_RESERVED_FIELDS: Final = {"handoff_id", "transferable_prompt_tokens"}


class _IdOnlyFact(_Fact):
    """A fact that carries nothing but the handoff it is about."""

    @classmethod
    def observed(cls, handoff_id: UUID) -> Self:
        """The fact about ``handoff_id``, without pydantic when it is a ``uuid.UUID``.

        For sources that hold the id already (the simulator's fake workers): on their
        hot path, validating it again would double the fact's cost. The fact is equal to
        the validated one; anything but a UUID is validated as the constructor would.
        """
        if type(handoff_id) is not UUID:
            return cls(handoff_id=handoff_id)
        return _trusted(cls, {"handoff_id": handoff_id}, _ID_FIELDS)


class SourceHeld(_Fact):
    """The source holds the prefilled KV cache and says how long moving it takes."""

    transfer_timing: HandoffTransferTiming

    @classmethod
    def observed(cls, handoff_id: UUID, transfer_timing: HandoffTransferTiming) -> SourceHeld:
        """The fact, without pydantic for a UUID and a timing model (as
        :meth:`TransferCompleted.observed`)."""
        if type(handoff_id) is not UUID or type(transfer_timing) is not HandoffTransferTiming:
            return cls(handoff_id=handoff_id, transfer_timing=transfer_timing)
        values = {"handoff_id": handoff_id, "transfer_timing": transfer_timing}
        return _trusted(cls, values, _HELD_FIELDS)


class DestinationReserved(_Fact):
    """The destination reserved room; ``transferable_prompt_tokens`` are the ones it lacks."""

    transferable_prompt_tokens: U64

    @classmethod
    def observed(cls, handoff_id: UUID, transferable_prompt_tokens: int) -> DestinationReserved:
        """The fact, without pydantic for a UUID and an exact int in u64 (as
        :meth:`TransferCompleted.observed`)."""
        values = {
            "handoff_id": handoff_id,
            "transferable_prompt_tokens": transferable_prompt_tokens,
        }
        if (
            type(handoff_id) is not UUID
            or type(transferable_prompt_tokens) is not int
            or not 0 <= transferable_prompt_tokens <= U64_MAX
        ):
            return cls.model_validate(values)
        return _trusted(cls, values, _RESERVED_FIELDS)


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


class _ExpectedOutcomes:
    """``Action.expected_outcomes``: read from the chart's ``ACKNOWLEDGEMENTS`` on first use.

    The chart is the one table of which outcome acknowledges which action; this
    descriptor only orders its entries by :data:`OUTCOME_PREFERENCE`. It works on
    the class (``SubmitPrefill.expected_outcomes``) and on instances alike.
    """

    _cache: ClassVar[dict[type, tuple[HandoffActionOutcome, ...]]] = {}

    def __get__(self, obj: object, owner: type) -> tuple[HandoffActionOutcome, ...]:
        cached = self._cache.get(owner)
        if cached is None:
            # The chart imports this module for its vocabulary, so it is read lazily.
            from handoff_fsm.chart import ACKNOWLEDGEMENTS  # noqa: PLC0415

            ack = ACKNOWLEDGEMENTS.get(owner)
            accepted = ack.accepted if ack is not None else frozenset()
            cached = self._cache[owner] = tuple(
                getattr(HandoffActionOutcome, kind.name)  # the shared constants
                for kind in OUTCOME_PREFERENCE
                if kind in accepted
            )
        return cached


class _Action(_Value):
    handoff_id: HandoffId
    _fields: ClassVar[set[str]] = {"handoff_id"}
    owner: ClassVar[Owner]
    """Who performs this action (see :class:`Owner`)."""
    expected_outcomes: ClassVar[_ExpectedOutcomes] = _ExpectedOutcomes()
    """The outcomes that acknowledge this action as done, the ordinary one first
    (``(SUBMITTED,)`` for ``SubmitPrefill``, ``(APPLIED, NOOP)`` for ``ReleaseSource``,
    ``()`` for ``Complete``, which is never acknowledged). ``Failed(..)`` is not listed:
    it says the action was not done."""

    @classmethod
    def issued_for(cls, handoff_id: UUID) -> Self:
        """Trusted constructor for the coordinator's own actions (no validation)."""
        return _trusted(cls, {"handoff_id": handoff_id}, cls._fields)


class SubmitPrefill(_Action):
    """Ask the source to prefill the prompt and hold its KV cache."""

    owner: ClassVar[Owner] = Owner.SOURCE


class ReserveDestination(_Action):
    """Ask the destination to reserve room for the request."""

    owner: ClassVar[Owner] = Owner.DESTINATION


class StartTransfer(_Action):
    """Start moving the KV cache; it lands ``delay_ms`` later (virtual time)."""

    owner: ClassVar[Owner] = Owner.TRANSFER

    delay_ms: F64
    _fields: ClassVar[set[str]] = {"handoff_id", "delay_ms"}

    @classmethod
    def issued_with_delay(cls, handoff_id: UUID, delay_ms: float) -> StartTransfer:
        """Trusted constructor for the coordinator's own transfer action."""
        return _trusted(cls, {"handoff_id": handoff_id, "delay_ms": delay_ms}, cls._fields)


class ActivateDestination(_Action):
    """Make the transferred KV cache visible at the destination; decode may start."""

    owner: ClassVar[Owner] = Owner.DESTINATION


class ReleaseSource(_Action):
    """Free the source's copy of the KV cache after a successful handoff."""

    owner: ClassVar[Owner] = Owner.SOURCE


class CancelSource(_Action):
    """Cleanup: abandon the source's side of the handoff."""

    owner: ClassVar[Owner] = Owner.SOURCE


class CancelDestination(_Action):
    """Cleanup: abandon the destination's reservation."""

    owner: ClassVar[Owner] = Owner.DESTINATION


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

_ISSUED_FIELDS = {"id", "action"}
_ACTIONS_BY_NAME: dict[str, type[_Action]] = {cls.__name__: cls for cls in ACTION_TYPES}


class IssuedHandoffAction(_Value):
    """An action together with the journal id its outcome must quote.

    Its JSON form is the wire form, ``{"id": 3, "action": {"StartTransfer": {...}}}``:
    the action's variant travels as serde's external tag (the variants' fields alone
    could not tell ``SubmitPrefill`` from ``ReleaseSource``).
    """

    id: U64
    action: HandoffAction

    @model_validator(mode="before")
    @classmethod
    def _untag_action(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("action"), dict):
            return data
        tagged = data["action"]
        name = next(iter(tagged)) if len(tagged) == 1 else None
        variant = _ACTIONS_BY_NAME.get(name) if isinstance(name, str) else None
        if variant is None:
            raise ValueError(
                'an action is tagged with its variant, e.g. {"StartTransfer": {...}}; '
                f"got {quoted(tagged)}"
            )
        return {**data, "action": variant.model_validate(tagged[name])}

    @field_serializer("action")
    def _tag_action(self, action: HandoffAction, info: SerializationInfo) -> dict[str, Any]:
        return {type(action).__name__: action.model_dump(mode=info.mode)}

    @classmethod
    def trusted(cls, action_id: int, action: HandoffAction) -> IssuedHandoffAction:
        """Trusted constructor for the coordinator's own output (no validation)."""
        return _trusted(cls, {"id": action_id, "action": action}, _ISSUED_FIELDS)


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

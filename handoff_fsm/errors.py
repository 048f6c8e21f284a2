"""Every error the library raises on purpose, each with a stable code.

Rule kept here: a code names *what* was wrong, the subclass says *whose* input it
was (a fact, an action outcome, configuration, a conformance record), and the
attributes carry the context a caller would otherwise parse out of the message.
Malformed values are pydantic's business (``ValidationError``). A message quotes
input only through :func:`quoted`, so no input, however large or deeply nested, is
ever echoed back whole.

This module knows only the protocol's own codes (:class:`HandoffErrorCode`). A layer
above it that refuses input of its own (trace replay's :mod:`handoff_fsm.io.errors`,
the behavioural diff's :mod:`handoff_fsm.verify.diff.errors`) declares its codes and
its subclass where it lives and registers them here (:func:`register_codes`), so
:func:`handoff_error` builds the right subclass for every code and
:func:`error_codes` lists them all. Every error survives ``pickle``, ``copy`` and
``deepcopy`` with its class, code, message and attributes (it crosses processes).
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uuid import UUID


class HandoffErrorCode(StrEnum):
    """Stable machine-readable reason for a :class:`HandoffError`."""

    # A fact was rejected.
    FOREIGN_HANDOFF = "foreign_handoff"
    SOURCE_HELD_BEFORE_SUBMIT = "source_held_before_submit"
    DESTINATION_RESERVED_BEFORE_ACCEPT = "destination_reserved_before_accept"
    TRANSFER_COMPLETED_BEFORE_SCHEDULED = "transfer_completed_before_scheduled"
    INVALID_TRANSFER_BANDWIDTH = "invalid_transfer_bandwidth"
    INVALID_TRANSFER_DELAY = "invalid_transfer_delay"
    # An action outcome was rejected.
    UNKNOWN_ACTION = "unknown_action"
    CONFLICTING_OUTCOME = "conflicting_outcome"
    CLEANUP_ACTION_FAILED = "cleanup_action_failed"
    INVALID_OUTCOME = "invalid_outcome"
    # Configuration of a coordinator.
    INVALID_HANDOFF_ID = "invalid_handoff_id"
    INVALID_ORDER = "invalid_order"
    INVALID_REVISION = "invalid_revision"
    INVALID_ENGINE = "invalid_engine"
    INVALID_FALLBACK = "invalid_fallback"
    INVALID_SNAPSHOT = "invalid_snapshot"
    # Configuration of a session (handoff_fsm.policy, handoff_fsm.aio).
    INVALID_SESSION_OPTION = "invalid_session_option"
    # Conformance records (NormalizedHandoffConformance.validate).
    UNSUPPORTED_BACKEND = "unsupported_backend"
    CONFORMANCE_ORDER_MISMATCH = "conformance_order_mismatch"
    CONFORMANCE_LIFECYCLE_MISMATCH = "conformance_lifecycle_mismatch"
    CONFORMANCE_COUNTS_MISMATCH = "conformance_counts_mismatch"
    CONFORMANCE_KV_VISIBILITY = "conformance_kv_visibility"
    CONFORMANCE_NOT_DRAINED = "conformance_not_drained"


ErrorCode = StrEnum
"""A code of any layer: :class:`HandoffErrorCode` or one a layer registered."""


class HandoffError(ValueError):
    """Base of every deliberate error; ``code`` is the contract, the message is for people.

    ``handoff_id``, ``action_id`` and ``state`` (the active leaf states of the
    coordinator when the input was rejected) are filled in where they apply.
    """

    code: ErrorCode
    handoff_id: UUID | None
    action_id: int | None
    state: tuple[str, ...] | None

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        handoff_id: UUID | None = None,
        action_id: int | None = None,
        state: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.handoff_id = handoff_id
        self.action_id = action_id
        self.state = state

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.value!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its class, code and message, then every attribute set since."""
        return (_rebuild, (type(self), self.code, self.message), dict(vars(self)))


def _rebuild(cls: type[HandoffError], code: ErrorCode, message: str) -> HandoffError:
    return cls(code, message)


class FactError(HandoffError):
    """A fact arrived for another handoff, out of order, or with invalid timing."""


class OutcomeError(HandoffError):
    """An action outcome named an unknown action, contradicted itself, or did not fit."""


class ConfigurationError(HandoffError):
    """A coordinator was configured or restored with values it cannot run with."""


class ConformanceError(HandoffError):
    """A normalized handoff record does not match what the reference expects."""


_ERROR_CLASS: dict[ErrorCode, type[HandoffError]] = {
    **dict.fromkeys(
        (
            HandoffErrorCode.FOREIGN_HANDOFF,
            HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT,
            HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT,
            HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED,
            HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH,
            HandoffErrorCode.INVALID_TRANSFER_DELAY,
        ),
        FactError,
    ),
    **dict.fromkeys(
        (
            HandoffErrorCode.UNKNOWN_ACTION,
            HandoffErrorCode.CONFLICTING_OUTCOME,
            HandoffErrorCode.CLEANUP_ACTION_FAILED,
            HandoffErrorCode.INVALID_OUTCOME,
        ),
        OutcomeError,
    ),
    **dict.fromkeys(
        (
            HandoffErrorCode.INVALID_HANDOFF_ID,
            HandoffErrorCode.INVALID_ORDER,
            HandoffErrorCode.INVALID_REVISION,
            HandoffErrorCode.INVALID_ENGINE,
            HandoffErrorCode.INVALID_FALLBACK,
            HandoffErrorCode.INVALID_SNAPSHOT,
            HandoffErrorCode.INVALID_SESSION_OPTION,
        ),
        ConfigurationError,
    ),
    **dict.fromkeys(
        (
            HandoffErrorCode.UNSUPPORTED_BACKEND,
            HandoffErrorCode.CONFORMANCE_ORDER_MISMATCH,
            HandoffErrorCode.CONFORMANCE_LIFECYCLE_MISMATCH,
            HandoffErrorCode.CONFORMANCE_COUNTS_MISMATCH,
            HandoffErrorCode.CONFORMANCE_KV_VISIBILITY,
            HandoffErrorCode.CONFORMANCE_NOT_DRAINED,
        ),
        ConformanceError,
    ),
}


_BY_VALUE: dict[str, ErrorCode] = {code.value: code for code in HandoffErrorCode}


def register_codes(codes: type[StrEnum], family: type[HandoffError]) -> None:
    """Make every code of ``codes`` (a layer's own) raise as ``family``.

    Called once by the module that declares them; a code whose value another layer
    already uses is refused (a reply names a code by its value alone).
    """
    for code in codes:
        known = _BY_VALUE.get(code.value)
        if known is not None and known is not code:
            raise ValueError(f"error code {code.value!r} is already {type(known).__name__}'s")
        _BY_VALUE[code.value] = code
        _ERROR_CLASS[code] = family


def error_codes() -> tuple[ErrorCode, ...]:
    """Every code known so far: the protocol's first, then each layer's by the layer's
    module name, each in its declaration order.

    Not in registration order: that is the order the layers happened to be imported in,
    and a table written from this list must not change with it."""
    codes = list(_BY_VALUE.values())
    position = {code: index for index, code in enumerate(codes)}
    return tuple(
        sorted(
            codes,
            key=lambda code: (
                type(code) is not HandoffErrorCode,
                type(code).__module__,
                type(code).__qualname__,
                position[code],
            ),
        )
    )


def error_code(value: str) -> ErrorCode | None:
    """The code whose value is ``value`` (as a reply writes it), if one is registered."""
    return _BY_VALUE.get(value)


def handoff_error(
    code: ErrorCode,
    message: str,
    *,
    handoff_id: UUID | None = None,
    action_id: int | None = None,
    state: tuple[str, ...] | None = None,
) -> HandoffError:
    """Build the error of the subclass that owns ``code`` (one place decides the family)."""
    return _ERROR_CLASS[code](
        code, message, handoff_id=handoff_id, action_id=action_id, state=state
    )


QUOTE_LIMIT = 80
"""Most characters a message spends on one quoted input value."""


class _BoundedRepr(reprlib.Repr):
    """``reprlib``, plus integers too long for ``repr`` (Python refuses > 4300 digits)."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4 * self.maxlong:  # more digits than would be shown anyway
            return f"<{'negative ' if x < 0 else ''}integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _BoundedRepr()
_REPR.maxlevel = 2
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = QUOTE_LIMIT
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 4


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, at most about ``limit`` characters.

    Messages name the offending input so a reader can find it, but a reply must
    not grow with the input: a megabyte string or a value nested a thousand
    levels deep is shown by its start, with ``...`` where it was cut. Work is
    bounded too (strings are cut before ``repr``, containers shown two levels deep).
    """
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


LIST_LIMIT = 8
"""Most items a message lists before it says how many more there are."""


def listed(items: Sequence[object], limit: int = LIST_LIMIT) -> str:
    """``a, b, c`` for an error message: the first ``limit`` items and how many more.

    For a list that comes from the input (a lifecycle, ids): its length must not set
    the message's. Each item is shown by ``str`` (an enum member by its value), bounded
    as :func:`quoted` bounds a value.
    """
    shown = [_shown(item) for item in items[:limit]]
    rest = len(items) - len(shown)
    return ", ".join(shown) + (f", ... ({rest:,} more)" if rest > 0 else "")


def _shown(item: object) -> str:
    if isinstance(item, StrEnum):
        item = item.value
    return item if isinstance(item, str) and len(item) <= QUOTE_LIMIT else quoted(item)

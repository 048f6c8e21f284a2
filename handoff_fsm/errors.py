"""Every error the library raises on purpose, each with a stable code.

Rule kept here: a code names *what* was wrong, the subclass says *whose* input it
was (a fact, an action outcome, configuration, a conformance record, a trace
line), and the attributes carry the context a caller would otherwise parse out
of the message. Malformed values are pydantic's business (``ValidationError``).
A message quotes input only through :func:`quoted`, so no input, however large
or deeply nested, is ever echoed back whole.
"""

from __future__ import annotations

import reprlib
from enum import StrEnum
from typing import TYPE_CHECKING

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
    # Trace replay.
    INVALID_INPUT = "invalid_input"
    DUPLICATE_COORDINATOR = "duplicate_coordinator"
    UNKNOWN_COORDINATOR = "unknown_coordinator"
    FORGOTTEN_COORDINATOR = "forgotten_coordinator"
    LINE_TOO_LONG = "line_too_long"
    INVALID_TIME = "invalid_time"
    TIME_WENT_BACKWARDS = "time_went_backwards"
    # Behavioural diff (handoff-fsm diff).
    UNKNOWN_DIFF_SIDE = "unknown_diff_side"
    DIFF_SIDE_FAILED = "diff_side_failed"
    DIFF_TOO_LARGE = "diff_too_large"


class HandoffError(ValueError):
    """Base of every deliberate error; ``code`` is the contract, the message is for people.

    ``handoff_id``, ``action_id`` and ``state`` (the active leaf states of the
    coordinator when the input was rejected) are filled in where they apply.
    """

    code: HandoffErrorCode
    handoff_id: UUID | None
    action_id: int | None
    state: tuple[str, ...] | None

    def __init__(
        self,
        code: HandoffErrorCode,
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


class FactError(HandoffError):
    """A fact arrived for another handoff, out of order, or with invalid timing."""


class OutcomeError(HandoffError):
    """An action outcome named an unknown action, contradicted itself, or did not fit."""


class ConfigurationError(HandoffError):
    """A coordinator was configured or restored with values it cannot run with."""


class ConformanceError(HandoffError):
    """A normalized handoff record does not match what the reference expects."""


class TraceError(HandoffError):
    """Input could not be read (malformed JSON or wire value) or addresses no coordinator."""


class DiffError(HandoffError):
    """A behavioural diff could not run: a side names nothing loadable, or misbehaves."""


_ERROR_CLASS: dict[HandoffErrorCode, type[HandoffError]] = {
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
    **dict.fromkeys(
        (
            HandoffErrorCode.INVALID_INPUT,
            HandoffErrorCode.DUPLICATE_COORDINATOR,
            HandoffErrorCode.UNKNOWN_COORDINATOR,
            HandoffErrorCode.FORGOTTEN_COORDINATOR,
            HandoffErrorCode.LINE_TOO_LONG,
            HandoffErrorCode.INVALID_TIME,
            HandoffErrorCode.TIME_WENT_BACKWARDS,
        ),
        TraceError,
    ),
    **dict.fromkeys(
        (
            HandoffErrorCode.UNKNOWN_DIFF_SIDE,
            HandoffErrorCode.DIFF_SIDE_FAILED,
            HandoffErrorCode.DIFF_TOO_LARGE,
        ),
        DiffError,
    ),
}


def handoff_error(
    code: HandoffErrorCode,
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

"""Trace replay's own refusals: a line that cannot be read or names no coordinator.

Rule kept here: these codes belong to the wire format and trace replay, so they live
with them, not with the protocol's (:mod:`handoff_fsm.errors`); this module declares
them and registers them there (:func:`~handoff_fsm.errors.register_codes`), so
:func:`~handoff_fsm.errors.handoff_error` raises each as a :class:`TraceError`.
"""

from __future__ import annotations

from enum import StrEnum

from handoff_fsm.errors import HandoffError, register_codes


class TraceErrorCode(StrEnum):
    """Why a trace line was refused before (or instead of) reaching a coordinator."""

    INVALID_INPUT = "invalid_input"
    DUPLICATE_COORDINATOR = "duplicate_coordinator"
    UNKNOWN_COORDINATOR = "unknown_coordinator"
    FORGOTTEN_COORDINATOR = "forgotten_coordinator"
    LINE_TOO_LONG = "line_too_long"
    INVALID_TIME = "invalid_time"
    TIME_WENT_BACKWARDS = "time_went_backwards"


class TraceError(HandoffError):
    """Input could not be read (malformed JSON or wire value) or addresses no coordinator."""


register_codes(TraceErrorCode, TraceError)

"""What a session accepts: its settings and the arguments of its calls, checked first.

Rule kept here: a :class:`~handoff_fsm.policy.SessionPolicy` (and the
:class:`~handoff_fsm.aio.HandoffSession` on it) refuses what it cannot use with one
coded error, ``invalid_session_option`` (a :class:`~handoff_fsm.ConfigurationError`),
and refuses it before anything changes, so a refused call leaves the policy and its
coordinator as they were and can simply be retried. A setting is a duration (a finite
number, ``None`` to disable its rule) or a retry count (an int >= 0); a call's own
arguments are a time (a finite number, in the settings' unit), a reason (text), a
send number (an int >= 0) and a timer (due by the time given). What the coordinator
takes (a fact, an action id, an outcome) keeps the coordinator's rule: the wrong type
is a ``TypeError``, raised before any change too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Final, Protocol

from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error, quoted
from handoff_fsm.model import HandoffActionOutcome


def bad_option(message: str) -> HandoffError:
    """A session setting or call argument it cannot use: a coded error, like a
    coordinator's own settings."""
    return handoff_error(HandoffErrorCode.INVALID_SESSION_OPTION, message)


def checked_duration(name: str, value: object, *, zero: bool) -> float | None:
    """A setting's duration as a float (``None`` stays ``None``); ``zero``: 0 is allowed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_option(f"{name} must be a number or None, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0.0 or (seconds == 0.0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise bad_option(f"{name} must be finite and {bound}, got {quoted(value)}")
    return seconds


def checked_count(name: str, value: object) -> int:
    """An int >= 0 (a retry count, a send number); a bool is not one."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_option(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise bad_option(f"{name} must be >= 0, got {quoted(value)}")
    return int(value)


def checked_time(value: object, name: str = "now") -> float:
    """A time as a float: a finite int or float (not a bool, not an int beyond any float).

    Times are compared and summed with durations (``now + deadline``), so anything
    else would fail later, or arm a timer that never comes due.
    """
    if type(value) is float and value - value == 0.0:  # the common case: a finite float
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_option(f"{name} must be a finite number, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise bad_option(f"{name} must be a finite number, got {quoted(value)}")
    return number


def checked_reason(value: object) -> str:
    """Why a send counts as lost: text, as ``HandoffActionOutcome.failed`` takes it."""
    if not isinstance(value, str):
        raise bad_option(f"reason must be a str, not {type(value).__name__}")
    return str.__str__(value)  # a str subclass as the plain str it is


def checked_send(value: object) -> int | None:
    """Which send of an action (0 for the first), or ``None`` for "the latest"."""
    return None if value is None else checked_count("send", value)


def check_acknowledgement(action_id: object, outcome: object) -> None:
    """The coordinator's own type checks of ``on_action_outcome``, for an acknowledgement
    the policy answers itself (one it ignores): the same ``TypeError`` either way."""
    if type(action_id) is not int:
        raise TypeError(f"action_id must be an int, not {type(action_id).__name__}")
    if type(outcome) is not HandoffActionOutcome:
        raise TypeError(f"outcome must be a HandoffActionOutcome, not {type(outcome).__name__}")


Durations = tuple[float | None, float | None, float | None, int]
"""Checked settings: deadline, acknowledgement timeout, cleanup timeout (by default the
acknowledgement timeout), cleanup retries."""


@lru_cache(maxsize=64, typed=True)  # a runtime builds many policies with the same settings
def _settings(
    deadline: object, ack_timeout: object, cleanup_ack_timeout: object, cleanup_retries: object
) -> Durations:
    retries = checked_count("cleanup_retries", cleanup_retries)
    ack = checked_duration("ack_timeout", ack_timeout, zero=False)
    cleanup = checked_duration("cleanup_ack_timeout", cleanup_ack_timeout, zero=False)
    cleanup = ack if cleanup is None else cleanup
    return (checked_duration("deadline", deadline, zero=True), ack, cleanup, retries)


def checked_settings(
    deadline: object, ack_timeout: object, cleanup_ack_timeout: object, cleanup_retries: object
) -> Durations:
    """A policy's settings, checked (once per distinct settings: the check is cached)."""
    options = (deadline, ack_timeout, cleanup_ack_timeout, cleanup_retries)
    try:
        return _settings(*options)
    except TypeError:  # an unhashable option: checked without the cache, then refused
        return _settings.__wrapped__(*options)


_COORDINATOR_TYPES: set[type] = set()
"""Classes already found to have every member a policy needs of its coordinator."""
_CHECKED_TYPES_KEPT: Final = 64


def check_coordinator(coordinator: object, members: Sequence[str]) -> None:
    """``coordinator``'s class has every one of ``members`` (looked up once per class)."""
    kind = type(coordinator)
    if kind in _COORDINATOR_TYPES:
        return
    missing = [name for name in members if not hasattr(kind, name)]
    if missing:
        raise bad_option(
            f"coordinator must be a HandoffCoordinator, got {kind.__name__} "
            f"(without {', '.join(missing)})"
        )
    if len(_COORDINATOR_TYPES) >= _CHECKED_TYPES_KEPT:
        _COORDINATOR_TYPES.clear()  # classes made at run time: keep none alive for long
    _COORDINATOR_TYPES.add(kind)


class _Timer(Protocol):
    """What :func:`check_timer` reads of a :class:`~handoff_fsm.policy.SessionTimer`."""

    @property
    def when(self) -> object: ...
    @property
    def action_id(self) -> object: ...
    @property
    def send(self) -> object: ...


def check_timer(timer: _Timer, now: object) -> float:
    """``now`` as a checked time at which ``timer``, a well-formed timer, is due.

    A timer expired early would act on a deadline or a timeout that has not passed
    (a deadline due at 2.0, expired at 0.0, would time the handoff out at once).
    """
    when = checked_time(timer.when, "timer.when")
    if timer.action_id is not None:
        checked_count("timer.action_id", timer.action_id)
    checked_count("timer.send", timer.send)
    at = checked_time(now)
    if at < when:
        raise bad_option(
            f"the timer due at {when!r} cannot expire at {at!r}, before it is due "
            "(pass its own when, or later)"
        )
    return at

"""The time a trace line may carry (``"at_ms"``), and the one rule it keeps: it never goes back.

Rule kept here: a trace file has one clock, shared by all its coordinators. A
line's ``at_ms`` is read by the one float reader
(:func:`~handoff_fsm.io.wire.f64_from_wire`: anything but a JSON number is
``invalid_input``, a number beyond f64 is infinite), must be finite and ``>= 0``
(else ``invalid_time``; ``-0`` is ``-0.0``, which is ``>= 0`` as for every other
non-negative float of the wire format, and is kept as ``0.0``), and must not be
less than the clock (else ``time_went_backwards``). The clock is the time of the
last line whose time was *accepted*: a line refused for any reason before its time
was checked, or for its time, leaves it where it was, so one bad line cannot drag
the clock back or push it ahead for the lines after it. Lines without ``at_ms``
leave it alone too.

Times never change what a coordinator does: replay answers a timed line exactly
as it answers the same line without ``at_ms``.
"""

from __future__ import annotations

import math
from typing import Any

from handoff_fsm.errors import handoff_error
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.wire import f64_from_wire

TIME_KEY = "at_ms"
"""The optional key of every trace line that carries its time (milliseconds)."""


def _shown(value: float) -> str:
    """A time as the wire format writes it (``Infinity``, ``NaN``, ``12.5``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


class TraceClock:
    """The last accepted time of a trace file and the line that carried it (see the module rule)."""

    __slots__ = ("at_ms", "line")

    def __init__(self) -> None:
        self.at_ms: float | None = None
        """The last accepted time (``None`` before the first)."""
        self.line: int | None = None
        """The line that carried it."""

    def advance(self, value: Any, line: int) -> float:
        """Read line ``line``'s ``at_ms`` ``value``; accept it as the clock or raise a coded error.

        Raises ``invalid_input`` (not a number), ``invalid_time`` (negative, NaN or
        infinite) or ``time_went_backwards`` (less than the clock); the clock is then
        unchanged.
        """
        at_ms = f64_from_wire(value, TIME_KEY)  # invalid_input (replay adds "line N:")
        if not math.isfinite(at_ms) or at_ms < 0.0:
            raise handoff_error(
                TraceErrorCode.INVALID_TIME,
                f"line {line}: at_ms must be finite and >= 0, got {_shown(at_ms)}; "
                "the line is skipped",
            )
        if self.at_ms is not None and at_ms < self.at_ms:
            raise handoff_error(
                TraceErrorCode.TIME_WENT_BACKWARDS,
                f"line {line}: at_ms {_shown(at_ms)} is before {_shown(self.at_ms)}, the time "
                f"of line {self.line} (times never decrease within a trace); the line is skipped",
            )
        at_ms += 0.0  # -0.0 becomes 0.0
        self.at_ms = at_ms
        self.line = line
        return at_ms

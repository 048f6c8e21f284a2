"""Every SessionPolicy call is atomic: a refused call raises and changes nothing.

Each public input method is called with bad arguments from policies in every phase
(fresh, waiting for an acknowledgement, holding a premature fact, cleaning up, given
up, complete). The call must raise a coded ``invalid_session_option`` (for the
arguments the policy owns: times, reasons, send numbers, timers, and a timer that is
not due yet) or the coordinator's own ``TypeError`` (a fact, action id or outcome of
the wrong type), and leave the policy exactly as it was: the same result, inputs and
coordinator snapshot, and the same replies to the same inputs afterwards as an
untouched twin.
"""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Callable
from typing import Any

import pytest

import handoff_fsm as hf
from handoff_fsm import HandoffActionOutcome, HandoffCoordinator, HandoffOrder
from handoff_fsm.policy import SessionPolicy, SessionResult, SessionStep, SessionTimer

HID = uuid.UUID(int=7)
SUBMITTED = HandoffActionOutcome.SUBMITTED
ACCEPTED = HandoffActionOutcome.ACCEPTED
APPLIED = HandoffActionOutcome.APPLIED
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 100, 1024, 1.0)
SETTINGS: dict[str, Any] = {"deadline": 50.0, "ack_timeout": 5.0, "cleanup_retries": 1}


def held() -> hf.SourceHeld:
    return hf.SourceHeld(handoff_id=HID, transfer_timing=TIMING)


def fresh() -> SessionPolicy:
    return SessionPolicy(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST), **SETTINGS)


def waiting() -> SessionPolicy:
    """Started at 0: SubmitPrefill #0 awaits its acknowledgement (timer at 5.0)."""
    p = fresh()
    p.start(0.0)
    return p


def holding() -> SessionPolicy:
    """Started, with a premature SourceHeld held back."""
    p = waiting()
    p.fact(held(), 1.0)
    assert p.result.buffered == (held(),)
    return p


def cleaning_up() -> SessionPolicy:
    """Source held, destination accepted, then Failed: both cancels outstanding."""
    p = waiting()
    p.outcome(0, SUBMITTED, 1.0)
    p.fact(held(), 1.0)
    p.outcome(1, ACCEPTED, 1.0)
    p.fact(hf.Failed(handoff_id=HID), 2.0)
    assert len(p.coordinator.outstanding) == 2
    return p


def given_up() -> SessionPolicy:
    """Every cleanup abandoned: the session is over, the coordinator is not."""
    p = cleaning_up()
    for issued in p.coordinator.outstanding:
        p.lost(issued.id, "reset", 3.0)
        p.lost(issued.id, "reset", 3.0)
    assert p.finished and not p.coordinator.is_complete
    return p


def complete() -> SessionPolicy:
    p = fresh()
    p.fact(hf.Canceled(handoff_id=HID), 0.0)
    assert p.coordinator.is_complete
    return p


PHASES: dict[str, Callable[[], SessionPolicy]] = {
    "fresh": fresh,
    "waiting": waiting,
    "holding": holding,
    "cleaning-up": cleaning_up,
    "given-up": given_up,
    "complete": complete,
}

NOT_TIMES: list[Any] = [None, math.nan, math.inf, -math.inf, "1.0", True, 10**400, [1.0]]

CODED = hf.HandoffError


class Bad:
    """One refused call: ``policy.<method>(*args, **kwargs)`` raises ``error``."""

    def __init__(self, error: type[Exception], method: str, *args: object, **kwargs: object):
        self.error, self.method, self.args, self.kwargs = error, method, args, kwargs

    def __repr__(self) -> str:
        shown = [_short(a) for a in self.args] + [
            f"{k}={_short(v)}" for k, v in self.kwargs.items()
        ]
        return f"{self.method}({', '.join(shown)})"

    def __call__(self, p: SessionPolicy) -> object:
        method: Callable[..., object] = getattr(p, self.method)
        return method(*self.args, **self.kwargs)


def _short(value: object) -> str:
    if type(value) is SessionTimer:
        return f"timer({value.when}, {value.action_id!r}, {value.send!r})"
    if isinstance(value, hf.HandoffFact | HandoffActionOutcome):
        return str(value) if isinstance(value, HandoffActionOutcome) else type(value).__name__
    text = repr(value)
    return text if len(text) <= 12 else f"{type(value).__name__}..."


CANCELED = hf.Canceled(handoff_id=HID)
ISSUED = fresh().start(0.0).actions[0]  # SubmitPrefill #0, as a runtime performs it
BAD_CALLS: list[Bad] = [
    *[Bad(CODED, "start", t) for t in NOT_TIMES],
    *[Bad(CODED, "fact", CANCELED, t) for t in NOT_TIMES],
    Bad(TypeError, "fact", "Canceled", 1.0),
    *[Bad(CODED, "outcome", 0, SUBMITTED, t) for t in NOT_TIMES],
    Bad(TypeError, "outcome", "0", SUBMITTED, 1.0),
    Bad(TypeError, "outcome", True, SUBMITTED, 1.0),
    Bad(TypeError, "outcome", 0, "Submitted", 1.0),
    *[Bad(CODED, "lost", 0, "reset", t) for t in NOT_TIMES],
    Bad(CODED, "lost", 0, ConnectionError("reset"), 1.0),
    Bad(CODED, "lost", 0, None, 1.0),
    Bad(TypeError, "lost", "0", "reset", 1.0),
    Bad(CODED, "lost", 0, "reset", 1.0, send=-1),
    Bad(CODED, "lost", 0, "reset", 1.0, send="0"),
    Bad(CODED, "lost", 0, "reset", 1.0, send=True),
    *[Bad(CODED, "expire", SessionTimer(5.0, 0), t) for t in NOT_TIMES],
    Bad(CODED, "expire", SessionTimer(50.0, None), 0.0),  # the deadline, before it is due
    Bad(CODED, "expire", SessionTimer(5.0, 0), 4.999),  # an acknowledgement timer, early
    Bad(CODED, "expire", (5.0, 0, 0), 6.0),  # not a timer
    Bad(CODED, "expire", SessionTimer(math.nan, None), 60.0),
    Bad(CODED, "expire", SessionTimer(5.0, "0"), 6.0),  # type: ignore[arg-type]
    Bad(CODED, "expire", SessionTimer(5.0, 0, -1), 6.0),
    Bad(CODED, "expire", SessionTimer(5.0, 0, 1.0), 6.0),  # type: ignore[arg-type]
    Bad(TypeError, "executor_error", 0, "answered None", 1.0),
    Bad(CODED, "executor_error", ISSUED, None, 1.0),
    *[Bad(CODED, "executor_error", ISSUED, "answered None", t) for t in NOT_TIMES],
    Bad(CODED, "executor_error", ISSUED, "answered None", 1.0, send=-1),
]


def _comparable(result: SessionResult) -> dict[str, object]:
    """A result with each refusal as (input, class, code, message): errors compare by identity."""
    fields: dict[str, object] = {
        name: getattr(result, name) for name in SessionResult.__dataclass_fields__
    }
    fields["rejected"] = [
        (r.input, type(r.error), r.error.code, r.error.message) for r in result.rejected
    ]
    return fields


def observed(p: SessionPolicy) -> tuple[object, ...]:
    coordinator = p.coordinator
    assert isinstance(coordinator, HandoffCoordinator)
    rest = _comparable(p.result)
    return (coordinator.snapshot(), p.inputs, p.finished, p.completion, p.quiet, rest)


def continuation(p: SessionPolicy) -> list[SessionStep]:
    """The same good inputs for every phase, then every timer they set, at its due time."""
    steps = [
        p.start(10.0),
        p.fact(held(), 10.0),
        p.outcome(0, SUBMITTED, 11.0),
        p.lost(1, "reset", 12.0),
    ]
    timers = sorted(timer for step in steps for timer in step.timers)
    while timers:
        timer = timers.pop(0)
        step = p.expire(timer, timer.when)
        steps.append(step)
        timers = sorted(timers + list(step.timers))
    return steps


@pytest.mark.parametrize("phase", list(PHASES))
@pytest.mark.parametrize("call", BAD_CALLS, ids=repr)
def test_a_refused_call_changes_nothing(phase: str, call: Bad) -> None:
    p = PHASES[phase]()
    twin = copy.deepcopy(p)
    before = observed(p)

    with pytest.raises(call.error) as raised:
        call(p)

    if isinstance(raised.value, hf.HandoffError):
        assert type(raised.value) is hf.ConfigurationError
        assert raised.value.code is hf.HandoffErrorCode.INVALID_SESSION_OPTION
    assert observed(p) == before
    assert continuation(p) == continuation(twin)
    assert observed(p) == observed(twin)


class Breaking(HandoffCoordinator):
    """A coordinator that raises something other than a coded refusal while ``broken``
    (a bug, a MemoryError, a KeyboardInterrupt), before changing anything."""

    broken = False

    def start(self) -> list[hf.IssuedHandoffAction]:
        self._maybe_break()
        return super().start()

    def on_fact(self, fact: hf.HandoffFact) -> list[hf.IssuedHandoffAction]:
        self._maybe_break()
        return super().on_fact(fact)

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[hf.IssuedHandoffAction]:
        self._maybe_break()
        return super().on_action_outcome(action_id, outcome)

    def _maybe_break(self) -> None:
        if self.broken:
            raise RuntimeError("the coordinator broke")


BREAKING_CALLS: dict[str, Callable[[SessionPolicy], object]] = {
    "start": lambda p: p.start(0.0),
    "fact": lambda p: p.fact(held(), 1.0),
    "outcome": lambda p: p.outcome(0, SUBMITTED, 1.0),
    "lost (feeds Failed)": lambda p: p.lost(0, "reset", 1.0),
    "executor_error (feeds Failed)": lambda p: p.executor_error(ISSUED, "answered None", 1.0),
    "expire the ack timer (feeds Failed)": lambda p: p.expire(SessionTimer(5.0, 0), 5.0),
    "expire the deadline (feeds TimedOut)": lambda p: p.expire(SessionTimer(50.0, None), 50.0),
}


@pytest.mark.parametrize("call", list(BREAKING_CALLS))
def test_a_call_the_coordinator_breaks_in_changes_nothing_in_the_policy(call: str) -> None:
    coordinator = Breaking(HID, HandoffOrder.SOURCE_FIRST)
    p = SessionPolicy(coordinator, **SETTINGS)
    if call != "start":
        p.start(0.0)
    twin = SessionPolicy(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST), **SETTINGS)
    if call != "start":
        twin.start(0.0)
    before = observed(p)

    coordinator.broken = True
    with pytest.raises(RuntimeError, match="the coordinator broke"):
        BREAKING_CALLS[call](p)
    coordinator.broken = False

    assert observed(p) == before == observed(twin)
    assert continuation(p) == continuation(twin)
    assert observed(p) == observed(twin)


def test_a_retried_start_after_a_refused_one_arms_the_deadline() -> None:
    p = fresh()
    with pytest.raises(hf.ConfigurationError, match="now must be a finite number"):
        p.start(None)  # type: ignore[arg-type]
    assert p.start(0.0).timers == (SessionTimer(50.0, None), SessionTimer(5.0, 0, 0))


def test_a_lost_call_with_an_exception_for_reason_leaves_the_action_to_its_acknowledgement() -> (
    None
):
    p = waiting()
    with pytest.raises(hf.ConfigurationError, match="reason must be a str"):
        p.lost(0, ConnectionError("reset"), 1.0)  # type: ignore[arg-type]
    assert p.result.failed == () and p.quiet
    p.outcome(0, SUBMITTED, 2.0)  # the real acknowledgement still counts
    assert [type(i.action).__name__ for i in p.fact(held(), 3.0).actions] == ["ReserveDestination"]


def test_a_deadline_expired_before_it_is_due_is_refused() -> None:
    p = waiting()
    deadline = SessionTimer(50.0, None)
    with pytest.raises(hf.ConfigurationError, match="before it is due") as raised:
        p.expire(deadline, 0.0)
    assert raised.value.code is hf.HandoffErrorCode.INVALID_SESSION_OPTION
    assert not p.timed_out and p.coordinator.outstanding[0].id == 0
    assert [type(i.action).__name__ for i in p.expire(deadline, 50.0).actions] == ["CancelSource"]
    assert p.timed_out


def test_a_timer_is_due_at_its_own_time_however_it_was_summed() -> None:
    """0.1 + 0.2 is 0.30000000000000004: passing the timer's own ``when`` always works."""
    p = SessionPolicy(HandoffCoordinator(HID, HandoffOrder.SOURCE_FIRST), ack_timeout=0.2)
    p.start(0.0)
    p.outcome(0, SUBMITTED, 0.0)
    (timer,) = p.fact(held(), 0.1).timers  # ReserveDestination's, due at 0.1 + 0.2
    assert timer.when == 0.1 + 0.2 != 0.3
    with pytest.raises(hf.ConfigurationError, match="before it is due"):
        p.expire(timer, 0.3)
    assert [type(i.action).__name__ for i in p.expire(timer, timer.when).actions] == [
        "CancelSource",
        "CancelDestination",
    ]

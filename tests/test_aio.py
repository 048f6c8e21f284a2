"""The asyncio session against fake workers: orders, premature facts, lost acks, deadline,
failing sends, cancellation, many sessions at once. No test asserts a wall-clock time;
timeouts are short so that the suite stays fast."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar, TypeVarTuple, Unpack
from uuid import UUID

import pytest

import handoff_fsm as hf
from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffOrder,
    IssuedHandoffAction,
    Owner,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.aio import HandoffSession
from handoff_fsm.policy import SessionPolicy, SessionStep, SessionTimer
from tests.virtual_loop import VirtualTimeLoop, run_virtual

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 64, 1024, 100.0)
HOLDING = {"prefilling", "held", "accepted", "reserved"}


def run(main: Callable[[], Coroutine[Any, Any, T]], *, virtual: bool = True) -> T:
    """Run ``main`` in a fresh loop (on virtual time unless told otherwise) and check
    that it left no task behind."""

    async def checked() -> T:
        value = await main()
        assert asyncio.all_tasks() == {asyncio.current_task()}, asyncio.all_tasks()
        return value

    return run_virtual(checked) if virtual else asyncio.run(checked())


@dataclass
class Script:
    """How the fake workers treat one handoff."""

    premature_held: bool = False
    """Report SourceHeld before acknowledging SubmitPrefill."""
    stall_prefill: bool = False
    """Accept the prompt, never finish it."""
    raises: dict[type[HandoffAction], int] = field(default_factory=dict)
    """How many sends of each kind raise before anything is done."""
    hangs: dict[type[HandoffAction], int] = field(default_factory=dict)
    """How many sends of each kind are done but never acknowledged."""
    fails: set[type[HandoffAction]] = field(default_factory=set)
    """Work actions answered with Failed(reason)."""
    drops: dict[type[HandoffAction], int] = field(default_factory=dict)
    """How many sends of each kind raise CancelledError by themselves (a dropped
    connection cancels the future the send waits on); the session cancels nothing."""
    delay_s: float = 0.0
    """How long before a fact is reported (0: on the next loop iteration)."""


class Workers:
    """A fake source, destination and transfer that track what they hold per handoff."""

    def __init__(self) -> None:
        self.sessions: dict[UUID, HandoffSession] = {}
        self.scripts: dict[UUID, Script] = {}
        self.source: dict[UUID, str] = {}
        self.destination: dict[UUID, str] = {}
        self.sends: list[tuple[UUID, str]] = []
        self.cancelled_sends: list[tuple[UUID, str]] = []

    def session(
        self,
        order: HandoffOrder = HandoffOrder.SOURCE_FIRST,
        script: Script | None = None,
        handoff_id: UUID | None = None,
        **settings: Any,
    ) -> HandoffSession:
        handoff_id = handoff_id or uuid.uuid4()
        session = HandoffSession(HandoffCoordinator(handoff_id, order), self, **settings)
        self.sessions[handoff_id] = session
        self.scripts[handoff_id] = script or Script()
        return session

    def kinds(self, handoff_id: UUID) -> list[str]:
        return [kind for hid, kind in self.sends if hid == handoff_id]

    def leaks(self, handoff_id: UUID, completion: HandoffCompletion) -> list[str]:
        """Owners still holding after the handoff ended (an activated destination is the
        request's only after a success)."""
        leaks = [f"source {state}" for state in [self.source.get(handoff_id)] if state in HOLDING]
        destination = self.destination.get(handoff_id)
        if destination in HOLDING or (
            destination == "activated" and completion is not HandoffCompletion.SUCCESS
        ):
            leaks.append(f"destination {destination}")
        return leaks

    def _later(self, handoff_id: UUID, callback: Callable[[], None]) -> None:
        delay = self.scripts[handoff_id].delay_s
        asyncio.get_running_loop().call_later(delay, callback)

    async def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome:
        action = issued.action
        hid, kind = action.handoff_id, type(action)
        script = self.scripts[hid]
        self.sends.append((hid, kind.__name__))
        if script.drops.get(kind, 0) > 0:
            script.drops[kind] -= 1
            reply = asyncio.get_running_loop().create_future()
            reply.cancel()  # the connection went away: its reply will never come
            await reply
        try:
            if script.raises.get(kind, 0) > 0:
                script.raises[kind] -= 1
                raise ConnectionError(f"{kind.__name__} did not get through")
            if kind in script.fails:
                return HandoffActionOutcome.failed(f"{kind.__name__} refused")
            outcome = self._do(issued, script)
            if script.hangs.get(kind, 0) > 0:
                script.hangs[kind] -= 1
                await asyncio.Event().wait()  # done, but the acknowledgement never comes
            return outcome
        except asyncio.CancelledError:
            self.cancelled_sends.append((hid, kind.__name__))
            raise

    def _do(self, issued: IssuedHandoffAction, script: Script) -> HandoffActionOutcome:
        """The worker's side effect; returns the acknowledgement."""
        action = issued.action
        hid = action.handoff_id
        session = self.sessions[hid]
        if isinstance(action, SubmitPrefill):
            self.source[hid] = "prefilling"
            if script.premature_held:
                self.source[hid] = "held"
                session.report(hf.SourceHeld(handoff_id=hid, transfer_timing=TIMING))
            elif not script.stall_prefill:
                self._later(hid, lambda: self._prefilled(hid))
            return HandoffActionOutcome.SUBMITTED
        if isinstance(action, ReserveDestination):
            self.destination[hid] = "accepted"
            self._later(hid, lambda: self._reserved(hid))
            return HandoffActionOutcome.ACCEPTED
        if isinstance(action, StartTransfer):
            self._later(hid, lambda: self._transferred(hid))
            return HandoffActionOutcome.SCHEDULED
        if isinstance(action, ActivateDestination):
            self.destination[hid] = "activated"
            return HandoffActionOutcome.APPLIED
        if isinstance(action, ReleaseSource | CancelSource):
            state = self.source.get(hid)
            self.source[hid] = "released" if isinstance(action, ReleaseSource) else "canceled"
            return HandoffActionOutcome.APPLIED if state in HOLDING else HandoffActionOutcome.NOOP
        assert isinstance(action, CancelDestination)
        state = self.destination.get(hid)
        self.destination[hid] = "canceled"
        holding = state in HOLDING or state == "activated"
        return HandoffActionOutcome.APPLIED if holding else HandoffActionOutcome.NOOP

    def _prefilled(self, hid: UUID) -> None:
        if self.source.get(hid) == "prefilling":
            self.source[hid] = "held"
            self.sessions[hid].report(hf.SourceHeld(handoff_id=hid, transfer_timing=TIMING))

    def _reserved(self, hid: UUID) -> None:
        if self.destination.get(hid) == "accepted":
            self.destination[hid] = "reserved"
            fact = hf.DestinationReserved(handoff_id=hid, transferable_prompt_tokens=64)
            self.sessions[hid].report(fact)

    def _transferred(self, hid: UUID) -> None:
        if self.destination.get(hid) == "reserved":
            self.sessions[hid].report(hf.TransferCompleted(handoff_id=hid))


def handoff_id_of(session: HandoffSession) -> UUID:
    return session.policy.coordinator.handoff_id


SUCCESS_SENDS = {
    HandoffOrder.SOURCE_FIRST: [
        "SubmitPrefill",
        "ReserveDestination",
        "StartTransfer",
        "ActivateDestination",
        "ReleaseSource",
    ],
    HandoffOrder.DESTINATION_FIRST: [
        "ReserveDestination",
        "SubmitPrefill",
        "StartTransfer",
        "ActivateDestination",
        "ReleaseSource",
    ],
}


# --------------------------------------------------------------------- success


@pytest.mark.parametrize("virtual", [True, False], ids=["virtual-time", "real-time"])
@pytest.mark.parametrize("order", list(HandoffOrder))
def test_a_handoff_succeeds_in_either_order(order: HandoffOrder, virtual: bool) -> None:
    workers = Workers()
    session = workers.session(order, deadline_s=5.0, ack_timeout_s=5.0)
    hid = handoff_id_of(session)

    completion = run(session.run, virtual=virtual)

    assert completion is HandoffCompletion.SUCCESS
    assert workers.kinds(hid) == SUCCESS_SENDS[order]
    assert workers.source[hid] == "released" and workers.destination[hid] == "activated"
    assert session.result.clean and not session.result.timed_out
    assert session.policy.coordinator.is_complete
    assert workers.leaks(hid, completion) == []


def test_a_premature_source_held_waits_for_the_submission_acknowledgement() -> None:
    workers = Workers()
    session = workers.session(script=Script(premature_held=True))

    completion = run(session.run)

    assert completion is HandoffCompletion.SUCCESS
    result = session.result
    assert result.held_back == 1 and result.unapplied == () and result.rejected == ()


def test_facts_reported_by_slow_workers_arrive_long_after_their_acknowledgements() -> None:
    workers = Workers()
    session = workers.session(script=Script(delay_s=0.01))
    assert run(session.run) is HandoffCompletion.SUCCESS


# --------------------------------------------------------------------- lost acknowledgements


def test_a_lost_cancel_acknowledgement_is_re_sent() -> None:
    workers = Workers()
    script = Script(hangs={CancelSource: 1}, fails={StartTransfer})
    session = workers.session(script=script, ack_timeout_s=0.02)
    hid = handoff_id_of(session)

    completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    assert workers.kinds(hid).count("CancelSource") == 2
    assert (hid, "CancelSource") in workers.cancelled_sends  # the hung send was stopped
    result = session.result
    assert result.resends == 1 and result.abandoned == ()
    assert session.policy.coordinator.is_complete
    assert workers.leaks(hid, completion) == []


def test_a_cancel_never_acknowledged_is_abandoned_after_the_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    workers = Workers()
    script = Script(hangs={CancelDestination: 99}, fails={StartTransfer})
    session = workers.session(script=script, ack_timeout_s=0.01, cancel_retries=2)
    hid = handoff_id_of(session)

    with caplog.at_level(logging.WARNING, logger="handoff_fsm.aio"):
        completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    assert workers.kinds(hid).count("CancelDestination") == 3
    result = session.result
    (abandoned,) = result.abandoned
    assert type(abandoned.issued.action) is CancelDestination and abandoned.sends == 3
    assert result.unconfirmed_owners == (Owner.DESTINATION,)
    assert not session.policy.coordinator.is_complete
    assert "cleanup abandoned" in caplog.text and "destination may still hold" in caplog.text


def test_a_work_action_whose_acknowledgement_times_out_fails_the_handoff() -> None:
    workers = Workers()
    session = workers.session(script=Script(hangs={ReserveDestination: 1}), ack_timeout_s=0.02)
    hid = handoff_id_of(session)

    completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    (failed,) = session.result.failed
    assert type(failed.issued.action) is ReserveDestination
    assert failed.reason == "no acknowledgement 0.02 after it was sent"
    assert (hid, "ReserveDestination") in workers.cancelled_sends
    assert workers.leaks(hid, completion) == []


# --------------------------------------------------------------------- deadline


def test_the_deadline_times_out_a_stalled_handoff_and_cleans_up() -> None:
    workers = Workers()
    session = workers.session(script=Script(stall_prefill=True), deadline_s=0.03)
    hid = handoff_id_of(session)

    completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    assert session.result.timed_out
    assert workers.kinds(hid) == ["SubmitPrefill", "CancelSource"]
    assert workers.source[hid] == "canceled"


class _EarlyLoop(VirtualTimeLoop):
    """Runs each ``call_at`` callback a microsecond early, as asyncio may (it runs every
    callback due within its clock's resolution)."""

    def call_at(
        self,
        when: float,
        callback: Callable[[Unpack[Ts]], object],
        *args: *Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        return super().call_at(when - 1e-6, callback, *args, context=context)


def test_timers_that_fire_marginally_early_are_expired_at_their_due_time() -> None:
    workers = Workers()
    script = Script(stall_prefill=True, hangs={CancelSource: 1})
    session = workers.session(script=script, deadline_s=0.03, ack_timeout_s=0.01)
    hid = handoff_id_of(session)

    with asyncio.Runner(loop_factory=_EarlyLoop) as runner:
        completion = runner.run(session.run())

    assert completion is HandoffCompletion.CANCELED
    result = session.result
    assert result.timed_out and result.resends == 1  # the deadline and a cancel's timer
    assert workers.kinds(hid) == ["SubmitPrefill", "CancelSource", "CancelSource"]


# --------------------------------------------------------------------- perform raising


def test_a_work_perform_that_raises_gets_failed_with_the_reason() -> None:
    workers = Workers()
    script = Script(raises={ReserveDestination: 1})
    session = workers.session(script=script)
    hid = handoff_id_of(session)

    completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    (failed,) = session.result.failed
    assert failed.reason == "perform raised ConnectionError: ReserveDestination did not get through"
    assert workers.kinds(hid) == [
        "SubmitPrefill",
        "ReserveDestination",
        "CancelSource",
        "CancelDestination",
    ]
    assert workers.leaks(hid, completion) == []


def test_a_cleanup_perform_that_raises_is_retried() -> None:
    workers = Workers()
    script = Script(raises={CancelSource: 2}, fails={ActivateDestination})
    session = workers.session(script=script)
    hid = handoff_id_of(session)

    assert run(session.run) is HandoffCompletion.CANCELED
    assert workers.kinds(hid).count("CancelSource") == 3
    assert session.result.resends == 2
    assert workers.source[hid] == "canceled"


def test_a_perform_returning_no_outcome_is_an_executor_error_and_a_lost_ack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Confused(Workers):
        async def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome:
            if isinstance(issued.action, SubmitPrefill):
                return "Submitted"  # type: ignore[return-value]
            return await super().perform(issued)

    workers = Confused()
    session = workers.session()
    with caplog.at_level(logging.ERROR, logger="handoff_fsm.aio"):
        assert run(session.run) is HandoffCompletion.CANCELED
    reason = "perform returned 'Submitted', not a HandoffActionOutcome"
    result = session.result
    (error,) = result.executor_errors
    assert type(error.issued.action) is SubmitPrefill and error.send == 0
    assert error.reason == reason
    assert result.failed[0].reason == reason  # and the acknowledgement counts as lost
    assert not result.clean
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert reason in record.getMessage() and "SubmitPrefill" in record.getMessage()


def test_a_perform_raising_cancelled_error_by_itself_is_a_lost_acknowledgement() -> None:
    workers = Workers()
    session = workers.session(script=Script(drops={ReserveDestination: 1}))
    hid = handoff_id_of(session)

    completion = run(session.run)

    assert completion is HandoffCompletion.CANCELED
    (failed,) = session.result.failed
    assert type(failed.issued.action) is ReserveDestination
    assert failed.reason == "perform raised CancelledError (the session did not cancel it)"
    assert workers.kinds(hid) == [
        "SubmitPrefill",
        "ReserveDestination",
        "CancelSource",
        "CancelDestination",
    ]
    assert workers.leaks(hid, completion) == []


def test_a_cleanup_perform_raising_cancelled_error_is_retried_then_abandoned() -> None:
    workers = Workers()
    script = Script(drops={CancelSource: 99}, fails={ReserveDestination})
    session = workers.session(script=script, cancel_retries=2)
    hid = handoff_id_of(session)

    assert run(session.run) is HandoffCompletion.CANCELED
    assert workers.kinds(hid).count("CancelSource") == 3
    (abandoned,) = session.result.abandoned
    assert type(abandoned.issued.action) is CancelSource and abandoned.sends == 3
    assert session.result.resends == 2


def test_wait_for_ends_run_when_every_cleanup_send_is_dropped() -> None:
    """``asyncio.wait_for`` cancels run() once: it must end (here the cleanup can only be
    abandoned), raising, with no task or timer left."""
    workers = Workers()
    script = Script(stall_prefill=True, drops={CancelSource: 99})
    session = workers.session(script=script, cancel_retries=1)  # no timeout at all
    hid = handoff_id_of(session)

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(session.run(), 0.05)

    run(main)
    assert workers.kinds(hid) == ["SubmitPrefill", "CancelSource", "CancelSource"]
    assert session.result.unconfirmed_owners == (Owner.SOURCE,) and session.finished


# --------------------------------------------------------------------- cancelling run()


def test_cancelling_run_cancels_the_handoff_and_still_cleans_up() -> None:
    workers = Workers()
    session = workers.session(script=Script(stall_prefill=True))
    hid = handoff_id_of(session)

    async def main() -> None:
        task = asyncio.create_task(session.run())
        while "SubmitPrefill" not in workers.kinds(hid):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    assert workers.kinds(hid) == ["SubmitPrefill", "CancelSource"]
    assert workers.source[hid] == "canceled"
    coordinator = session.policy.coordinator
    assert coordinator.is_complete and coordinator.completion is HandoffCompletion.CANCELED


def test_cancelling_run_is_bounded_by_the_timeouts_when_cleanup_hangs() -> None:
    workers = Workers()
    script = Script(stall_prefill=True, hangs={CancelSource: 99})
    session = workers.session(script=script, ack_timeout_s=0.01, cancel_retries=1)
    hid = handoff_id_of(session)

    async def main() -> None:
        task = asyncio.create_task(session.run())
        while "SubmitPrefill" not in workers.kinds(hid):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    assert workers.kinds(hid).count("CancelSource") == 2
    assert session.result.unconfirmed_owners == (Owner.SOURCE,)


def test_cancelling_run_twice_stops_at_once_and_keeps_the_rest_for_the_next_run() -> None:
    workers = Workers()
    script = Script(stall_prefill=True, hangs={CancelSource: 1})
    session = workers.session(script=script)  # no timeout: cleanup would wait forever
    hid = handoff_id_of(session)

    async def main() -> None:
        task = asyncio.create_task(session.run())
        while "CancelSource" not in workers.kinds(hid):
            if "SubmitPrefill" in workers.kinds(hid) and not task.cancelling():
                task.cancel()
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    assert (hid, "CancelSource") in workers.cancelled_sends
    assert not session.finished  # the cancel's acknowledgement never came
    # The send cut short counts as lost: the next run sends the cancel again.
    assert run(session.run) is HandoffCompletion.CANCELED
    assert workers.kinds(hid) == ["SubmitPrefill", "CancelSource", "CancelSource"]
    assert session.result.resends == 1 and session.finished


def test_a_handoff_reopened_after_success_is_driven_by_the_next_run() -> None:
    workers = Workers()
    hid = uuid.uuid4()
    coordinator = HandoffCoordinator(hid, HandoffOrder.SOURCE_FIRST, revision="a976b2bf")
    session = HandoffSession(coordinator, workers, ack_timeout_s=0.05)
    workers.sessions[hid] = session
    workers.scripts[hid] = Script(hangs={CancelDestination: 1})

    assert run(session.run) is HandoffCompletion.SUCCESS
    assert coordinator.state == ("decoding",)
    session.report(hf.Canceled(handoff_id=hid))  # the request is canceled while decoding
    assert not session.finished and workers.kinds(hid)[-1] == "ReleaseSource"  # nothing ran

    assert run(session.run) is HandoffCompletion.CANCELED
    assert workers.kinds(hid)[-2:] == ["CancelDestination", "CancelDestination"]
    assert workers.destination[hid] == "canceled"
    with pytest.raises(RuntimeError, match="finished"):
        run(session.run)


def test_run_cannot_run_twice_at_once() -> None:
    session = Workers().session(script=Script(stall_prefill=True))

    async def main() -> None:
        first = asyncio.create_task(session.run())
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="already running"):
            await session.run()
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first

    run(main)


# --------------------------------------------------------------------- reporting


def test_a_fact_reported_before_run_is_applied_first() -> None:
    workers = Workers()
    session = workers.session()
    hid = handoff_id_of(session)
    session.report(hf.Canceled(handoff_id=hid))  # the request was canceled before it started

    assert run(session.run) is HandoffCompletion.CANCELED
    assert workers.kinds(hid) == []  # nothing was ever engaged


def test_refused_reports_are_recorded_not_raised() -> None:
    workers = Workers()
    session = workers.session()
    foreign = hf.Failed(handoff_id=uuid.UUID(int=99))
    session.report(foreign)

    assert run(session.run) is HandoffCompletion.SUCCESS
    (rejection,) = session.result.rejected
    assert rejection.input == foreign
    assert rejection.error.code is hf.HandoffErrorCode.FOREIGN_HANDOFF
    with pytest.raises(TypeError, match="HandoffFact"):
        session.report("Failed")  # type: ignore[arg-type]


def test_a_report_after_the_end_changes_nothing() -> None:
    workers = Workers()
    session = workers.session()
    hid = handoff_id_of(session)
    assert run(session.run) is HandoffCompletion.SUCCESS
    session.report(hf.Failed(handoff_id=hid))
    assert session.policy.coordinator.completion is HandoffCompletion.SUCCESS
    assert session.result.clean


def test_a_session_runs_once() -> None:
    workers = Workers()
    session = workers.session()
    run(session.run)
    with pytest.raises(RuntimeError, match="runs once"):
        run(session.run)


def test_an_error_of_the_session_itself_surfaces_from_run() -> None:
    class Broken(Workers):
        async def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome:
            raise KeyboardInterrupt  # not an Exception: not a lost acknowledgement

    session = Broken().session()
    with pytest.raises(KeyboardInterrupt):
        run(session.run)


def test_an_error_in_a_timer_surfaces_from_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: SessionPolicy, timer: SessionTimer, now: float) -> SessionStep:
        raise RuntimeError("the policy broke")

    monkeypatch.setattr(SessionPolicy, "expire", broken)
    session = Workers().session(script=Script(stall_prefill=True), deadline_s=0.01)
    with pytest.raises(RuntimeError, match="the policy broke"):
        run(session.run)


# --------------------------------------------------------------------- many sessions


def random_script(rng: random.Random) -> Script:
    """Faults for one handoff; lost cleanup sends stay below the retries (3)."""
    work: list[type[HandoffAction]] = [
        SubmitPrefill,
        ReserveDestination,
        StartTransfer,
        ActivateDestination,
        ReleaseSource,
    ]
    script = Script(delay_s=rng.choice([0.0, 0.0, 0.001, 0.005]))
    draw = rng.random()
    if draw < 0.1:
        script.premature_held = True
    elif draw < 0.15:
        script.stall_prefill = True
    for kind in work:
        fault = rng.random()
        if fault < 0.03:
            script.raises[kind] = 1
        elif fault < 0.06:
            script.hangs[kind] = 1
        elif fault < 0.09:
            script.fails.add(kind)
    cleanup: list[type[HandoffAction]] = [CancelSource, CancelDestination]
    for kind in cleanup:
        lost = rng.choice([0, 0, 0, 1, 2])
        if rng.random() < 0.5:
            script.raises[kind] = lost
        else:
            script.hangs[kind] = lost
    return script


def test_a_thousand_concurrent_sessions_with_random_faults_leak_nothing() -> None:
    rng = random.Random(12)
    workers = Workers()
    sessions = [
        workers.session(
            rng.choice(list(HandoffOrder)),
            random_script(rng),
            handoff_id=uuid.UUID(int=i + 1),
            deadline_s=0.5,
            ack_timeout_s=0.05,
            cancel_retries=3,
        )
        for i in range(1000)
    ]
    external: dict[UUID, type[hf.Failed] | type[hf.Canceled]] = {
        handoff_id_of(s): hf.Failed if rng.random() < 0.5 else hf.Canceled
        for s in sessions
        if rng.random() < 0.05
    }

    async def main() -> list[HandoffCompletion]:
        loop = asyncio.get_running_loop()
        for hid, fact in external.items():
            report = workers.sessions[hid].report
            loop.call_later(rng.random() * 0.05, report, fact(handoff_id=hid))
        return await asyncio.gather(*(session.run() for session in sessions))

    completions = run(main)

    leaks = [
        (handoff_id_of(s), leak)
        for s, completion in zip(sessions, completions, strict=True)
        for leak in workers.leaks(handoff_id_of(s), completion)
    ]
    assert leaks == []
    results = [s.result for s in sessions]
    assert all(r.finished and r.abandoned == () for r in results)
    assert all(s.policy.coordinator.is_complete for s in sessions)
    assert sum(c is HandoffCompletion.SUCCESS for c in completions) > 500
    assert sum(c is HandoffCompletion.CANCELED for c in completions) > 100
    # every fault class was exercised
    assert sum(r.timed_out for r in results) > 0
    assert sum(r.resends for r in results) > 0
    assert sum(len(r.failed) for r in results) > 0
    assert sum(r.held_back for r in results) > 0


# --------------------------------------------------------------------- packaging


@pytest.mark.slow
def test_importing_the_package_does_not_load_the_asyncio_runtime() -> None:
    code = "import sys, handoff_fsm; print('handoff_fsm.aio' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


class _Idle:
    async def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome:
        return issued.action.expected_outcomes[0]


class _Blocking:
    """``perform`` is a plain method: it would answer without ever letting the loop run."""

    def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome:
        return issued.action.expected_outcomes[0]


class _Wrapped:
    """``perform`` returns a coroutine but is no coroutine function: refused all the same."""

    def __init__(self) -> None:
        self.perform = lambda issued: _Idle().perform(issued)


@pytest.mark.parametrize(
    ("arguments", "options", "message"),
    [
        ((None, _Idle()), {}, "coordinator must be a HandoffCoordinator"),
        (("h1", _Idle()), {}, "coordinator must be a HandoffCoordinator"),
        ((hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), object()), {}, "executor must"),
        (
            (hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), _Blocking()),
            {},
            r"executor\.perform must be a coroutine function \(async def\), got _Blocking's",
        ),
        (
            (hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), _Wrapped()),
            {},
            "executor.perform must be a coroutine function",
        ),
        (
            (hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), _Idle()),
            {"deadline_s": -1},
            "deadline",
        ),
        (
            (hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), _Idle()),
            {"ack_timeout_s": float("nan")},
            "ack_timeout",
        ),
        (
            (hf.HandoffCoordinator(uuid.uuid4(), "SourceFirst"), _Idle()),
            {"cancel_retries": 1.5},
            "cleanup_retries",
        ),
    ],
)
def test_an_unusable_session_is_a_coded_configuration_error(
    arguments: tuple[Any, Any], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(hf.ConfigurationError, match=message) as raised:
        HandoffSession(*arguments, **options)
    assert raised.value.code is hf.HandoffErrorCode.INVALID_SESSION_OPTION

"""The asyncio runtime: one handoff driven against real workers, in one event loop.

Rule kept here: this module does the I/O and keeps the time, nothing else.
Every decision is taken by the :class:`~handoff_fsm.policy.SessionPolicy`
(deadline, acknowledgement timeouts, cleanup retries, premature facts) and the
coordinator behind it; this module performs the actions they return, each in
its own task, sets the timers they ask for with ``loop.call_at``, and feeds
back what happens. It owns every task and timer it creates, and when
:meth:`HandoffSession.run` returns (or raises) none of them is left.

Every send that ends is an acknowledgement or a lost one: an exception from
``perform``, a ``CancelledError`` the session did not cause (told apart by the send
task's ``cancelling()``), and an answer that is not an outcome (also an executor error,
logged) all lose that send's acknowledgement, which the policy's bounded rules then
handle. So an executor that fails never makes :meth:`HandoffSession.run` wait for ever;
only a send that never ends is waited for, as long as the acknowledgement timeout allows.

Time is the loop's: ``loop.time()``, except for an expired timer. asyncio runs a
``call_at`` callback once ``time()`` plus the clock's resolution reaches its time, so it
may run marginally early, and the policy refuses a timer expired before it is due: the
session passes ``max(loop.time(), timer.when)``, the loop's own judgement that it is due.

Imported on its own (``from handoff_fsm.aio import HandoffSession``):
``import handoff_fsm`` does not load it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from functools import partial
from typing import Literal, Protocol

from handoff_fsm.errors import HandoffErrorCode, handoff_error, quoted
from handoff_fsm.model import (
    FACT_TYPES,
    Canceled,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
    Owner,
)
from handoff_fsm.policy import Coordinated, SessionPolicy, SessionResult, SessionStep, SessionTimer

__all__ = ["ActionExecutor", "HandoffSession"]

_log = logging.getLogger(__name__)
_FACTS = frozenset(FACT_TYPES)
_COORDINATOR = Owner.COORDINATOR


class ActionExecutor(Protocol):
    """Performs actions on the workers: sends the request and returns its acknowledgement.

    ``perform`` is a coroutine function (``async def``; anything else is refused when
    the session is made), called once per send, concurrently with other actions. It
    must let the session's ``asyncio.CancelledError`` propagate (the session cancels a
    send whose acknowledgement timed out, and every send still running when it ends).
    An exception, including a ``CancelledError`` the session did not cause (a dropped
    connection's cancelled future), means the acknowledgement is lost; so does an
    answer that is not a ``HandoffActionOutcome``, which is also an executor error
    (logged at error level, in :attr:`SessionResult.executor_errors
    <handoff_fsm.policy.SessionResult.executor_errors>`). Dispatch on
    ``issued.action.owner``; ``issued.action.expected_outcomes[0]`` is the ordinary
    acknowledgement.
    """

    async def perform(self, issued: IssuedHandoffAction) -> HandoffActionOutcome: ...


def _is_coroutine_function(perform: object) -> bool:
    """``perform`` (callable) is an ``async def`` function or method, a partial of one,
    or an object whose class's ``__call__`` is one."""
    return inspect.iscoroutinefunction(perform) or inspect.iscoroutinefunction(
        type(perform).__call__
    )


class HandoffSession:
    """Runs one handoff: performs its actions, applies reported facts, enforces the policy.

    ``deadline_s`` (from :meth:`run`'s start) feeds ``TimedOut``; an action not
    acknowledged ``ack_timeout_s`` after it was sent, or whose ``perform`` raised,
    has lost its acknowledgement: a cleanup action is sent again (at most
    ``cancel_retries`` times, then abandoned and reported), any other action gets
    ``HandoffActionOutcome.failed(reason)``. ``None`` disables a timeout.
    """

    __slots__ = (
        "_early",
        "_executor",
        "_failure",
        "_loop",
        "_over",
        "_pending",
        "_phase",
        "_policy",
        "_sends",
        "_tasks",
        "_timers",
    )

    def __init__(
        self,
        coordinator: Coordinated,
        executor: ActionExecutor,
        *,
        deadline_s: float | None = None,
        ack_timeout_s: float | None = None,
        cancel_retries: int = 3,
    ) -> None:
        self._policy = SessionPolicy(
            coordinator,
            deadline=deadline_s,
            ack_timeout=ack_timeout_s,
            cleanup_retries=cancel_retries,
        )
        perform = getattr(executor, "perform", None)
        if not callable(perform):
            raise handoff_error(
                HandoffErrorCode.INVALID_SESSION_OPTION,
                f"executor must have an async perform(issued) method, got "
                f"{type(executor).__name__}",
            )
        if not _is_coroutine_function(perform):  # run() would await what it returns
            raise handoff_error(
                HandoffErrorCode.INVALID_SESSION_OPTION,
                "executor.perform must be a coroutine function (async def), got "
                f"{type(executor).__name__}'s, a {type(perform).__name__}",
            )
        self._executor = executor
        self._phase: Literal["new", "running", "ended"] = "new"
        self._early: list[HandoffFact] = []
        """Facts reported before :meth:`run`: applied, in order, before the handoff starts."""
        self._pending: list[SessionStep] = []
        """Steps that came between two runs (a reopened handoff): the next run performs them."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._over: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._tasks: dict[tuple[int, int], asyncio.Task[None]] = {}
        """Sends in flight, by (action id, send number)."""
        self._sends: dict[int, int] = {}
        self._timers: dict[SessionTimer, asyncio.TimerHandle] = {}

    # ------------------------------------------------------------------ public API

    @property
    def policy(self) -> SessionPolicy:
        return self._policy

    @property
    def finished(self) -> bool:
        """The handoff is over (see :attr:`SessionPolicy.finished`); ``run()`` returns then."""
        return self._policy.finished

    @property
    def result(self) -> SessionResult:
        """Everything the session gave up on, refused or ignored (see :class:`SessionResult`)."""
        return self._policy.result

    def report(self, fact: HandoffFact) -> None:
        """A worker observed ``fact``; call from any task or loop callback, also before :meth:`run`.

        The fact is applied at once (before :meth:`run`: when it starts, before the
        handoff does). A fact the coordinator refuses is recorded in
        :attr:`result` (``rejected``), never raised here: the reporter cannot know
        the handoff's state. After :meth:`run` returned, a fact can only reopen the
        handoff (revision a976b2bf: a terminal fact during decoding cancels the
        destination): then :attr:`finished` is false again and the next :meth:`run`
        performs what it issued. From another thread, use ``loop.call_soon_threadsafe``.
        """
        if type(fact) not in _FACTS:
            raise TypeError(f"report() takes a HandoffFact, not {type(fact).__name__}")
        if self._phase == "new":
            self._early.append(fact)
            return
        loop = self._loop
        assert loop is not None
        self._apply(self._policy.fact(fact, loop.time()))

    async def run(self) -> HandoffCompletion:
        """Drive the handoff to its end and return how it completed.

        Cancelling the task running this cancels the handoff: ``Canceled`` is fed,
        cleanup actions are still performed (bounded by the timeouts), then
        ``CancelledError`` propagates. Once the handoff is :attr:`finished`, ``run()``
        may only be called again if it reopened (see :meth:`report`).
        """
        if self._phase == "running":
            raise RuntimeError("this HandoffSession is already running")
        policy = self._policy
        if self._phase == "ended" and policy.finished:
            raise RuntimeError("this HandoffSession's handoff is finished; a session runs once")
        first = self._phase == "new"
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._over = asyncio.Event()
        self._failure = None
        self._phase = "running"
        early, self._early = self._early, []
        pending, self._pending = self._pending, []
        try:
            for fact in early:
                self._apply(policy.fact(fact, loop.time()))
            for step in pending:
                self._apply(step)
            if first:
                self._apply(policy.start(loop.time()))
            try:
                await self._until_over()
            except asyncio.CancelledError:
                if self._failure is None and not policy.finished:
                    handoff_id = policy.coordinator.handoff_id
                    self._apply(policy.fact(Canceled(handoff_id=handoff_id), loop.time()))
                    await self._until_over()
                raise
        finally:
            self._phase = "ended"
            await self._stop()
        if self._failure is not None:
            raise self._failure
        completion = policy.completion
        assert completion is not None  # policy.finished
        result = policy.result
        if result.abandoned:
            _log.warning(
                "handoff %s: cleanup abandoned after every retry, %s may still hold: %s",
                policy.coordinator.handoff_id,
                ", ".join(owner.value for owner in result.unconfirmed_owners),
                "; ".join(action.reason for action in result.abandoned),
            )
        return completion

    # ------------------------------------------------------------------ machinery

    async def _until_over(self) -> None:
        over = self._over
        assert over is not None
        if not self._policy.finished and self._failure is None:
            await over.wait()
        if self._failure is not None:
            raise self._failure

    def _apply(self, step: SessionStep) -> None:
        """Perform a step's actions and set its timers (keep them for the next run between
        runs); notice the end."""
        actions, timers = step
        if self._phase == "ended" and (actions or timers):
            self._pending.append(step)
        elif self._phase == "running":
            for issued in actions:
                if issued.action.owner is not _COORDINATOR:  # Complete is not performed
                    self._launch(issued)
            loop = self._loop
            assert loop is not None
            for timer in timers:
                self._timers[timer] = loop.call_at(timer.when, self._expire, timer)
        if self._policy.finished and self._over is not None:
            self._over.set()

    def _launch(self, issued: IssuedHandoffAction) -> None:
        loop = self._loop
        assert loop is not None
        send = self._sends.get(issued.id, 0)
        self._sends[issued.id] = send + 1
        key = (issued.id, send)
        task = loop.create_task(
            self._perform(issued, send),
            name=f"{type(issued.action).__name__} (action {issued.id}, send {send})",
        )
        self._tasks[key] = task
        task.add_done_callback(partial(self._sent, key))

    async def _perform(self, issued: IssuedHandoffAction, send: int) -> None:
        policy = self._policy
        loop = self._loop
        assert loop is not None
        try:
            outcome = await self._executor.perform(issued)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the session stopped this send (a timeout, or run() ending)
            # Nobody cancelled this task: the executor let a CancelledError of its own
            # escape (say a dropped connection's cancelled future). Lost, like any error.
            reason = "perform raised CancelledError (the session did not cancel it)"
            step = policy.lost(issued.id, reason, loop.time(), send=send)
        except Exception as error:
            reason = f"perform raised {type(error).__name__}: {error}"
            step = policy.lost(issued.id, reason, loop.time(), send=send)
        else:
            if type(outcome) is HandoffActionOutcome:
                step = policy.outcome(issued.id, outcome, loop.time())
            else:
                reason = f"perform returned {quoted(outcome)}, not a HandoffActionOutcome"
                _log.error(
                    "handoff %s: the executor broke its contract on %s (action %d, send %d): "
                    "%s; its acknowledgement counts as lost",
                    policy.coordinator.handoff_id,
                    type(issued.action).__name__,
                    issued.id,
                    send,
                    reason,
                )
                step = policy.executor_error(issued, reason, loop.time(), send=send)
        self._apply(step)

    def _sent(self, key: tuple[int, int], task: asyncio.Task[None]) -> None:
        """A send finished: forget it; an error of the session's own surfaces from run()."""
        self._tasks.pop(key, None)
        if not task.cancelled() and task.exception() is not None:
            self._stop_on(task.exception())

    def _expire(self, timer: SessionTimer) -> None:
        """A timer came due (a loop callback: an error ends run() with it, not a log line)."""
        try:
            self._timers.pop(timer, None)
            if timer.action_id is not None:
                late = self._tasks.get((timer.action_id, timer.send))
                if late is not None:
                    late.cancel()  # that send's acknowledgement is lost: stop waiting for it
            loop = self._loop
            assert loop is not None
            # Possibly marginally early (see the module's docstring): due by the loop's clock.
            self._apply(self._policy.expire(timer, max(loop.time(), timer.when)))
        except Exception as error:
            self._stop_on(error)

    def _stop_on(self, error: BaseException | None) -> None:
        if self._failure is None and error is not None:
            self._failure = error
        if self._over is not None:
            self._over.set()

    async def _stop(self) -> None:
        """Cancel every timer and send still pending, and wait until the sends are gone.

        If the handoff is not finished (a run cancelled twice), nothing is dropped: the
        timers not yet due and the sends cut short (as lost acknowledgements) are kept
        for the next :meth:`run`.
        """
        policy = self._policy
        loop = self._loop
        assert loop is not None
        unfinished = not policy.finished
        for handle in self._timers.values():
            handle.cancel()
        if unfinished and self._timers:
            self._pending.append(SessionStep((), tuple(self._timers)))
        self._timers.clear()
        cut: dict[tuple[int, int], None] = {}  # sends cut short, in order, once each
        interrupted = False
        while True:
            tasks = []
            for key, task in self._tasks.items():
                if not task.done():
                    tasks.append(task)
                    cut[key] = None
                elif not task.cancelled() and task.exception() is not None:
                    self._stop_on(task.exception())  # its done-callback may still be queued
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            try:
                await asyncio.wait(tasks)
            except asyncio.CancelledError:
                interrupted = True  # finish stopping first: no task may outlive run()
        if unfinished:
            for action_id, send in cut:
                reason = "the session stopped before its acknowledgement came"
                self._apply(policy.lost(action_id, reason, loop.time(), send=send))
        if interrupted:
            raise asyncio.CancelledError

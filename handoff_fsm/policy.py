"""The session policy: what a runtime adds around a coordinator to drive real handoffs.

(The values it hands out live in :mod:`handoff_fsm.session_values` and are importable
from here too.)

Rule kept here: the coordinator decides the protocol; this object decides only
what the protocol leaves to whoever runs it, and it does so without I/O: time
is an argument (any unit, as long as every value uses the same), and every
call returns a :class:`SessionStep` naming the actions to perform and the
timers to set. Both runtimes share it: the virtual-time simulator
(:mod:`handoff_fsm.simulate`) and the asyncio session (:mod:`handoff_fsm.aio`).

The rules, each a consequence of real workers being remote and fallible:

* **deadline**: a handoff not complete ``deadline`` after :meth:`SessionPolicy.start`
  gets a ``TimedOut`` fact (the coordinator ignores it once cleanup began).
* **acknowledgement timeout**: a work action (``SubmitPrefill`` ... ``ReleaseSource``)
  not acknowledged ``ack_timeout`` after it was sent, whose sending failed
  (:meth:`SessionPolicy.lost`), or whose acknowledgement the coordinator refused, is
  fed to the coordinator as
  ``Failed(reason)``, which starts cleanup; a later acknowledgement of it is
  ignored (the coordinator already has its outcome).
* **bounded cleanup retry**: a cleanup action (``CancelSource``/``CancelDestination``,
  which the protocol forbids to fail) whose acknowledgement is lost (or refused) is sent again,
  at most ``cleanup_retries`` times; then it is *abandoned*: reported in
  :attr:`SessionResult.abandoned`, with its owner in
  :attr:`SessionResult.unconfirmed_owners`. Once every unconfirmed cleanup action is
  abandoned the session is over (``Canceled``), though the coordinator never
  completed: nothing else could complete it.
* **premature facts**: a fact the chart rejects as premature (``SourceHeld``
  before the ``SubmitPrefill`` acknowledgement, ``DestinationReserved`` before
  ``Accepted``, ``TransferCompleted`` before ``Scheduled``) while its publisher
  still owes that acknowledgement is held back, then applied, in arrival order,
  after the next acknowledgement the coordinator accepts. Facts still held when
  cleanup begins are reported in :attr:`SessionResult.unapplied`.
* **first answer stands**: an action can be answered more than once (a network
  duplicate, a cleanup action sent again), and a real worker answers each copy from
  what it holds when it arrives (``Applied``, then ``Noop`` for a cancel of what the
  first copy freed). The coordinator keeps the first answer and refuses a different
  later one as conflicting, changing nothing; the policy keeps that later answer in
  :attr:`SessionResult.ignored`, with why, and not as a rejection.

Nothing is dropped silently: every input the coordinator refused and the policy
could not handle, every input ignored, and every mistake of a runtime's executor
(:meth:`SessionPolicy.executor_error`), is in :attr:`SessionPolicy.result`.

Every call is atomic: its arguments are checked before anything changes
(:mod:`handoff_fsm.policy_checks`: a time that is not a finite number, a reason that
is not text, a timer not yet due, is ``invalid_session_option``), and the policy
records what an input did only once the coordinator accepted it or refused it with a
coded error, so a call that raises leaves the policy and its coordinator as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache, partial
from typing import Final, NamedTuple, Protocol
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS, REJECTIONS
from handoff_fsm.errors import ErrorCode, HandoffError, HandoffErrorCode
from handoff_fsm.model import (
    ACTION_TYPES,
    FACT_TYPES,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
    Owner,
    SourceHeld,
    TimedOut,
    TransferCompleted,
)
from handoff_fsm.policy_checks import (
    bad_option,
    check_acknowledgement,
    check_coordinator,
    check_timer,
    checked_reason,
    checked_send,
    checked_settings,
    checked_time,
)

# Re-exported (the redundant alias is PEP 484's explicit re-export): callers and
# runtimes import a session's values from the policy that makes them.
from handoff_fsm.session_values import NOTHING as NOTHING  # noqa: PLC0414
from handoff_fsm.session_values import ExecutorError as ExecutorError  # noqa: PLC0414
from handoff_fsm.session_values import Ignored as Ignored  # noqa: PLC0414
from handoff_fsm.session_values import Rejection as Rejection  # noqa: PLC0414
from handoff_fsm.session_values import SessionInput as SessionInput  # noqa: PLC0414
from handoff_fsm.session_values import SessionResult as SessionResult  # noqa: PLC0414
from handoff_fsm.session_values import SessionStep as SessionStep  # noqa: PLC0414
from handoff_fsm.session_values import SessionTimer as SessionTimer  # noqa: PLC0414
from handoff_fsm.session_values import UnacknowledgedAction as UnacknowledgedAction  # noqa: PLC0414

PREMATURE: Final[frozenset[HandoffErrorCode]] = frozenset(r.code for r in REJECTIONS.values())
"""The chart's codes for a fact that came before the acknowledgement it depends on."""

PUBLISHER: Final[dict[type, Owner]] = {
    SourceHeld: Owner.SOURCE,
    DestinationReserved: Owner.DESTINATION,
    TransferCompleted: Owner.TRANSFER,
}
"""Who reports each fact that can be premature: the fact waits for that owner's
outstanding acknowledgement (e.g. ``SourceHeld`` for ``SubmitPrefill``'s)."""

CLEANUP_ACTIONS: Final[frozenset[type[HandoffAction]]] = frozenset(
    kind for kind, ack in ACKNOWLEDGEMENTS.items() if not ack.may_fail
)
"""Actions that must not fail (the chart's cleanup actions): lost ones are re-sent."""

_UNACKNOWLEDGED: Final = frozenset(kind for kind in ACTION_TYPES if kind not in ACKNOWLEDGEMENTS)
"""``Complete``: issued when the handoff is over, never acknowledged."""


class Coordinated(Protocol):
    """What the policy needs of a coordinator (:class:`~handoff_fsm.HandoffCoordinator`)."""

    @property
    def handoff_id(self) -> UUID: ...
    @property
    def is_complete(self) -> bool: ...
    @property
    def completion(self) -> HandoffCompletion | None: ...
    @property
    def outstanding(self) -> tuple[IssuedHandoffAction, ...]: ...
    def start(self) -> list[IssuedHandoffAction]: ...
    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]: ...
    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]: ...


_COORDINATED: Final = (
    "handoff_id",
    "is_complete",
    "completion",
    "outstanding",
    "start",
    "on_fact",
    "on_action_outcome",
)
"""The members of :class:`Coordinated`, checked when a policy is made."""


_timer: Callable[[tuple[float, int | None, int]], SessionTimer] = partial(
    tuple.__new__, SessionTimer
)
"""``SessionTimer(when, action_id, send)`` without the Python-level ``__new__``."""

_step: Callable[[tuple[Sequence[IssuedHandoffAction], tuple[SessionTimer, ...]]], SessionStep] = (
    partial(tuple.__new__, SessionStep)
)
"""``SessionStep(actions, timers)`` without the Python-level ``__new__`` (the hot path)."""


class _Spec(NamedTuple):
    """How the policy treats one action kind (for one configuration)."""

    timeout: float | None
    cleanup: bool
    ends_active: bool
    """Issuing it means the active phase is over (cleanup began, or the handoff completed)."""


@cache
def _specs(ack_timeout: float | None, cleanup_timeout: float | None) -> dict[type, _Spec]:
    """Per action kind, what to track; kinds needing nothing are absent (the fast path)."""
    specs: dict[type, _Spec] = {}
    for kind in ACTION_TYPES:
        if kind in CLEANUP_ACTIONS:
            specs[kind] = _Spec(cleanup_timeout, cleanup=True, ends_active=True)
        elif kind in _UNACKNOWLEDGED:
            specs[kind] = _Spec(None, cleanup=False, ends_active=True)
        elif ack_timeout is not None:
            specs[kind] = _Spec(ack_timeout, cleanup=False, ends_active=False)
    return specs


class _Awaited:
    """An issued action the policy times or may re-send, and how often it was sent."""

    __slots__ = ("issued", "sends")

    def __init__(self, issued: IssuedHandoffAction) -> None:
        self.issued = issued
        self.sends = 1


@dataclass(slots=True)
class _Log:
    """The rare things, kept out of the policy's own slots until one happens."""

    timed_out: bool = False
    resends: int = 0
    held_back: int = 0
    failed: list[UnacknowledgedAction] = field(default_factory=list)
    abandoned: list[UnacknowledgedAction] = field(default_factory=list)
    unapplied: list[HandoffFact] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    executor_errors: list[ExecutorError] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    refusals: dict[ErrorCode, int] = field(default_factory=dict)
    given_up: set[int] = field(default_factory=set)
    """Ids of the actions in ``failed`` and ``abandoned``: their outcomes are ignored."""


_Settings = tuple[float | None, float | None, int, dict[type, _Spec]]
_Decisive = tuple[
    tuple[bool, bool, bool],
    tuple[tuple[IssuedHandoffAction, int], ...],
    tuple[HandoffFact, ...],
    frozenset[int],
    tuple[IssuedHandoffAction, ...],
]


class PolicySnapshot(NamedTuple):
    """A policy's own state, exactly (its coordinator's is the coordinator's snapshot).

    :meth:`SessionPolicy.restore` continues from it as the policy it was taken from
    would. ``decisive`` is all that later decisions and :attr:`SessionResult.abandoned`
    read: (started, ending, gave up), each awaited action with its sends, the held-back
    facts, the actions given up on and the abandoned ones; equal for policies that
    decide alike whatever their tallies (a model checker's state key).
    """

    settings: _Settings
    decisive: _Decisive
    log: _Log | None
    """A copy of the rare things (``None`` before any)."""
    inputs: int


def _log_copy(log: _Log) -> _Log:
    """``log`` with lists, dict and set of its own (what a snapshot keeps and restores)."""
    return replace(log, **{name: getattr(log, name).copy() for name in _LOG_CONTAINERS})


_LOG_CONTAINERS: Final = tuple(f.name for f in fields(_Log) if f.default_factory is not MISSING)


def _checked_settings(
    deadline: float | None,
    ack_timeout: float | None,
    cleanup_ack_timeout: float | None,
    cleanup_retries: int,
) -> _Settings:
    """The checked settings of a policy: (deadline, cleanup timeout, retries, specs)."""
    deadline, ack, cleanup, retries = checked_settings(
        deadline, ack_timeout, cleanup_ack_timeout, cleanup_retries
    )
    return (deadline, cleanup, retries, _specs(ack, cleanup))


_new_policy = object.__new__


class SessionPolicy:
    """Deadline, acknowledgement timeouts, cleanup retries and premature facts for one handoff.

    ``deadline`` and ``ack_timeout`` are durations in the unit of the ``now``
    values passed in; ``cleanup_ack_timeout`` (default: ``ack_timeout``) is how
    long a cleanup action waits before it is sent again, ``cleanup_retries`` how
    many times. ``None`` disables a rule. Feed every input through the policy,
    never to the coordinator directly.
    """

    __slots__ = (
        "_awaiting",
        "_buffer",
        "_cleanup_retries",
        "_cleanup_timeout",
        "_coordinator",
        "_deadline",
        "_ending",
        "_gave_up",
        "_log",
        "_specs",
        "_started",
        "inputs",
    )

    def __init__(
        self,
        coordinator: Coordinated,
        *,
        deadline: float | None = None,
        ack_timeout: float | None = None,
        cleanup_ack_timeout: float | None = None,
        cleanup_retries: int = 3,
    ) -> None:
        settings = _checked_settings(deadline, ack_timeout, cleanup_ack_timeout, cleanup_retries)
        self._bind(coordinator, settings)

    @classmethod
    def factory(
        cls,
        *,
        deadline: float | None = None,
        ack_timeout: float | None = None,
        cleanup_ack_timeout: float | None = None,
        cleanup_retries: int = 3,
    ) -> Callable[[Coordinated], SessionPolicy]:
        """Make policies with these settings for many coordinators, checking them once.

        ``factory(**settings)(coordinator)`` is ``SessionPolicy(coordinator, **settings)``;
        a runtime that starts thousands of handoffs (the simulator) saves the checks.
        """
        settings = _checked_settings(deadline, ack_timeout, cleanup_ack_timeout, cleanup_retries)

        def policy(coordinator: Coordinated) -> SessionPolicy:
            made = _new_policy(cls)
            made._bind(coordinator, settings)
            return made

        return policy

    def _bind(self, coordinator: Coordinated, settings: _Settings) -> None:
        """Start with nothing awaited, held back or logged, for ``coordinator``."""
        check_coordinator(coordinator, _COORDINATED)
        self._coordinator = coordinator
        (self._deadline, self._cleanup_timeout, self._cleanup_retries, self._specs) = settings
        self._awaiting: dict[int, _Awaited] | None = None
        self._buffer: list[HandoffFact] | None = None
        self._log: _Log | None = None
        self._started = False
        self._ending = False
        self._gave_up = False
        self.inputs = 0
        """Inputs fed to the coordinator so far (see :attr:`SessionResult.inputs`)."""

    def snapshot(self) -> PolicySnapshot:
        """This policy's own state, exactly: :meth:`restore` continues from it identically."""
        log = self._log
        decisive: _Decisive = (
            (self._started, self._ending, self._gave_up),
            tuple((entry.issued, entry.sends) for entry in (self._awaiting or {}).values()),
            tuple(self._buffer or ()),
            frozenset(log.given_up) if log is not None else frozenset(),
            tuple(action.issued for action in log.abandoned) if log is not None else (),
        )
        settings = (self._deadline, self._cleanup_timeout, self._cleanup_retries, self._specs)
        return PolicySnapshot(settings, decisive, log and _log_copy(log), self.inputs)

    @classmethod
    def restore(cls, coordinator: Coordinated, snapshot: PolicySnapshot) -> SessionPolicy:
        """The policy ``snapshot`` was taken of, driving ``coordinator``, which must be in
        the state the policy's coordinator was in then (its snapshot restored, say)."""
        policy = _new_policy(cls)
        policy._bind(coordinator, snapshot.settings)
        flags, entries, buffer, _, _ = snapshot.decisive
        policy._started, policy._ending, policy._gave_up = flags
        if entries:
            policy._awaiting = {}
            for issued, sends in entries:
                policy._awaiting[issued.id] = entry = _Awaited(issued)
                entry.sends = sends
        policy._buffer = list(buffer) or None
        policy._log = snapshot.log and _log_copy(snapshot.log)
        policy.inputs = snapshot.inputs
        return policy

    # ------------------------------------------------------------------ state

    @property
    def coordinator(self) -> Coordinated:
        return self._coordinator

    @property
    def finished(self) -> bool:
        """The coordinator completed, or the session gave up on its cleanup.

        Revision a976b2bf can reopen a completed handoff (a terminal fact while the
        destination decodes issues ``CancelDestination``): the same rules then apply
        to that cleanup, and ``finished`` is false until it ends.
        """
        return self._gave_up or self._coordinator.is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        """The coordinator's completion; ``Canceled`` if the session gave up on cleanup."""
        if self._gave_up:
            return HandoffCompletion.CANCELED
        return self._coordinator.completion

    @property
    def quiet(self) -> bool:
        """Nothing but the ordinary happened: no timeout, re-send, give-up, held-back,
        refused or ignored input (the :attr:`result` has nothing to add)."""
        return self._log is None and self._buffer is None

    @property
    def refusals(self) -> dict[ErrorCode, int]:
        """The coordinator's refusals so far, by code (see :attr:`SessionResult.refusals`)."""
        return {} if self._log is None else dict(self._log.refusals)

    @property
    def timed_out(self) -> bool:
        return self._log is not None and self._log.timed_out

    @property
    def resends(self) -> int:
        return 0 if self._log is None else self._log.resends

    @property
    def result(self) -> SessionResult:
        log = self._log or _Log()
        return SessionResult(
            completion=self.completion,
            finished=self.finished,
            timed_out=log.timed_out,
            resends=log.resends,
            failed=tuple(log.failed),
            abandoned=tuple(log.abandoned),
            buffered=tuple(self._buffer or ()),
            held_back=log.held_back,
            unapplied=tuple(log.unapplied),
            rejected=tuple(log.rejected),
            executor_errors=tuple(log.executor_errors),
            refusals=dict(log.refusals),
            inputs=self.inputs,
            ignored=tuple(log.ignored),
        )

    # ------------------------------------------------------------------ inputs
    #
    # Each method checks its arguments first, then calls the coordinator, and records
    # what happened only after it returned or refused with a coded error: a call that
    # raises changes nothing (see the module's docstring).

    def start(self, now: float) -> SessionStep:
        """Start the handoff at ``now``; arms the deadline (the first time only)."""
        if type(now) is not float or now - now != 0.0:
            now = checked_time(now)
        if self._gave_up:
            return NOTHING
        coordinator = self._coordinator
        deadline = None if self._started or coordinator.is_complete else self._deadline
        actions = coordinator.start()
        self._started = True
        self.inputs += 1
        timers = () if deadline is None else (_timer((now + deadline, None, 0)),)
        return self._issued(actions, now, timers)

    def fact(self, fact: HandoffFact, now: float) -> SessionStep:
        """A fact was reported at ``now``: apply it, or hold it back if it is premature."""
        if type(now) is not float or now - now != 0.0:
            now = checked_time(now)
        if self._gave_up:
            if type(fact) not in _FACT_TYPES:  # otherwise the coordinator says so
                raise TypeError(f"fact() takes a HandoffFact, not {type(fact).__name__}")
            self._note().ignored.append(Ignored(fact, GAVE_UP))
            return NOTHING
        try:
            actions = self._coordinator.on_fact(fact)
        except HandoffError as error:
            self.inputs += 1
            self._refused(error)
            if error.code in PREMATURE and self._publisher_owes(fact):
                if self._buffer is None:
                    self._buffer = []
                self._buffer.append(fact)
                self._note().held_back += 1
                return NOTHING
            self._note().rejected.append(Rejection(fact, error))
            return NOTHING
        self.inputs += 1
        if not actions:
            return NOTHING
        specs = self._specs
        for issued in actions:  # what _issued does first, inlined: this is the hot path
            if type(issued.action) in specs:
                return self._issued(actions, now)
        return _step((actions, ()))

    def outcome(self, action_id: int, outcome: HandoffActionOutcome, now: float) -> SessionStep:
        """The acknowledgement of ``action_id`` arrived at ``now``."""
        if type(now) is not float or now - now != 0.0:
            now = checked_time(now)
        log = self._log
        if log is not None:
            check_acknowledgement(action_id, outcome)  # an ignored one is checked here too
            if self._gave_up or action_id in log.given_up:
                why = GAVE_UP if self._gave_up else f"the session stopped waiting for #{action_id}"
                log.ignored.append(Ignored((action_id, outcome), why))
                return NOTHING
        try:
            actions = self._coordinator.on_action_outcome(action_id, outcome)
        except HandoffError as error:
            self.inputs += 1
            self._refused(error)
            if error.code is HandoffErrorCode.UNKNOWN_ACTION and self._before_reopen(action_id):
                # a976b2bf: a late answer to an action issued before the handoff completed
                # (a duplicate, say) reaches the reopened cleanup, whose journal starts
                # afresh; the completed handoff took it silently, so does the session.
                why = f"#{action_id} was issued before the handoff completed and reopened"
                self._note().ignored.append(Ignored((action_id, outcome), why))
                return NOTHING
            if self._answers_a_repeat(error):
                why = f"#{action_id} was answered already; this answers a repeated delivery"
                self._note().ignored.append(Ignored((action_id, outcome), why))
                return NOTHING
            # A refused acknowledgement (say Failed for a cancel) acknowledges nothing:
            # if the action still awaits one, this send counts as lost.
            self._note().rejected.append(Rejection((action_id, outcome), error))
            return self.lost(action_id, f"its acknowledgement {outcome} was refused: {error}", now)
        self.inputs += 1
        awaiting = self._awaiting
        if awaiting is not None and awaiting.pop(action_id, None) is not None and log is not None:
            self._check_given_up(log)
        if self._buffer is not None:
            return self._apply_held_back(actions, now)
        if not actions:
            return NOTHING
        specs = self._specs
        for issued in actions:  # what _issued does first, inlined: this is the hot path
            if type(issued.action) in specs:
                return self._issued(actions, now)
        return _step((actions, ()))

    def lost(
        self, action_id: int, reason: str, now: float, *, send: int | None = None
    ) -> SessionStep:
        """Sending ``action_id`` failed (its acknowledgement will never come).

        ``send`` names which send failed (see :attr:`SessionTimer.send`); a failure
        of an earlier send, while a later one is in flight, changes nothing.
        """
        if type(action_id) is not int:
            raise TypeError(f"action_id must be an int, not {type(action_id).__name__}")
        reason = checked_reason(reason)
        now = checked_time(now)
        send = checked_send(send)
        if self._gave_up or self._coordinator.is_complete:
            return NOTHING
        awaiting = self._awaiting
        entry = awaiting.get(action_id) if awaiting is not None else None
        if entry is not None:
            if send is not None and send != entry.sends - 1:
                return NOTHING
            return self._lose(entry, reason, now)
        for issued in self._coordinator.outstanding:  # an untimed work action
            if issued.id == action_id:
                return self._fail(issued, 1, reason, now)
        return NOTHING  # acknowledged meanwhile, given up already, or never issued

    def executor_error(
        self, issued: IssuedHandoffAction, reason: str, now: float, *, send: int | None = None
    ) -> SessionStep:
        """A runtime's executor broke its contract on a send of ``issued`` (it answered
        something that is not an outcome).

        Recorded in :attr:`SessionResult.executor_errors`, whatever the session's
        state; the send's acknowledgement is lost, as for :meth:`lost`.
        """
        if type(issued) is not IssuedHandoffAction:
            raise TypeError(f"issued must be an IssuedHandoffAction, not {type(issued).__name__}")
        reason = checked_reason(reason)
        send = checked_send(send)
        step = self.lost(issued.id, reason, now, send=send)
        self._note().executor_errors.append(ExecutorError(issued, send, reason))
        return step

    def expire(self, timer: SessionTimer, now: float) -> SessionStep:
        """A timer the policy asked for came due (stale timers are ignored).

        ``now`` before ``timer.when`` is refused: the timer is not due yet.
        """
        if not isinstance(timer, SessionTimer):
            raise bad_option(f"timer must be a SessionTimer, not {type(timer).__name__}")
        now = check_timer(timer, now)
        if self._gave_up or self._coordinator.is_complete:
            return NOTHING
        if timer.action_id is None:
            if self._coordinator.completion is not None:
                return NOTHING  # it completed in time (a976b2bf may have reopened it since)
            step = self.fact(TimedOut.observed(self._coordinator.handoff_id), now)
            self._note().timed_out = True
            return step
        awaiting = self._awaiting
        entry = awaiting.get(timer.action_id) if awaiting is not None else None
        if entry is None or timer.send != entry.sends - 1:
            return NOTHING  # acknowledged, or a later send is being timed
        spec = self._specs[type(entry.issued.action)]
        return self._lose(entry, f"no acknowledgement {spec.timeout:g} after it was sent", now)

    # ------------------------------------------------------------------ rules

    def _issued(
        self,
        actions: Sequence[IssuedHandoffAction],
        now: float,
        timers: tuple[SessionTimer, ...] = (),
    ) -> SessionStep:
        """Track what the coordinator issued; the step that performs it."""
        if not actions:
            return SessionStep((), timers) if timers else NOTHING
        specs = self._specs
        for issued in actions:
            if type(issued.action) in specs:
                break
        else:  # nothing to track: the common case
            return _step((actions, timers))
        extra: list[SessionTimer] | None = None
        for issued in actions:
            spec = specs.get(type(issued.action))
            if spec is None:
                continue
            if spec.ends_active and not self._ending:
                self._ending = True
                if self._buffer is not None:
                    self._note().unapplied.extend(self._buffer)
                    self._buffer = None
            if spec.timeout is not None or spec.cleanup:
                if self._awaiting is None:
                    self._awaiting = {}
                self._awaiting[issued.id] = _Awaited(issued)
                if spec.timeout is not None:
                    if extra is None:
                        extra = []
                    extra.append(SessionTimer(now + spec.timeout, issued.id))
        if extra is not None:
            timers = (*timers, *extra)
        return _step((actions, timers))

    def _apply_held_back(self, actions: Sequence[IssuedHandoffAction], now: float) -> SessionStep:
        """After an accepted acknowledgement: apply the held-back facts, in arrival order."""
        step = self._issued(actions, now)
        held, self._buffer = self._buffer or [], None
        performed = list(step.actions)
        timers = list(step.timers)
        coordinator = self._coordinator
        for index, fact in enumerate(held):
            if self._ending:
                self._note().unapplied.extend(held[index:])
                break
            self.inputs += 1
            try:
                more = coordinator.on_fact(fact)
            except HandoffError as error:
                self._refused(error)
                if error.code in PREMATURE and self._publisher_owes(fact):
                    if self._buffer is None:
                        self._buffer = []
                    self._buffer.append(fact)  # still early: keeps its place
                else:
                    self._note().rejected.append(Rejection(fact, error))
                continue
            applied = self._issued(more, now)
            performed += applied.actions
            timers += applied.timers
        return SessionStep(performed, tuple(timers)) if performed or timers else NOTHING

    def _publisher_owes(self, fact: HandoffFact) -> bool:
        """The fact's publisher has an outstanding action: the acknowledgement it waits for."""
        publisher = PUBLISHER.get(type(fact))
        return publisher is not None and any(
            issued.action.owner is publisher for issued in self._coordinator.outstanding
        )

    def _lose(self, entry: _Awaited, reason: str, now: float) -> SessionStep:
        """The latest send of ``entry`` is lost: re-send a cleanup action, fail a work action."""
        issued = entry.issued
        awaiting = self._awaiting
        assert awaiting is not None  # entry came from it
        if type(issued.action) not in CLEANUP_ACTIONS:
            step = self._fail(issued, entry.sends, reason, now)
            del awaiting[issued.id]
            return step
        log = self._note()
        if entry.sends <= self._cleanup_retries:
            entry.sends += 1
            log.resends += 1
            timeout = self._cleanup_timeout
            timers = (
                ()
                if timeout is None
                else (SessionTimer(now + timeout, issued.id, entry.sends - 1),)
            )
            return SessionStep((issued,), timers)
        del awaiting[issued.id]
        log.abandoned.append(UnacknowledgedAction(issued, entry.sends, reason))
        log.given_up.add(issued.id)
        self._check_given_up(log)
        return NOTHING

    def _fail(
        self, issued: IssuedHandoffAction, sends: int, reason: str, now: float
    ) -> SessionStep:
        """Feed a lost work action's acknowledgement as ``Failed(reason)``: cleanup begins."""
        outcome = HandoffActionOutcome.failed(reason)
        refusal: HandoffError | None = None
        try:
            actions = self._coordinator.on_action_outcome(issued.id, outcome)
        except HandoffError as error:  # only a coordinator that broke its contract
            refusal = error
        log = self._note()
        log.failed.append(UnacknowledgedAction(issued, sends, reason))
        log.given_up.add(issued.id)
        self.inputs += 1
        if refusal is not None:
            self._refused(refusal)
            log.rejected.append(Rejection((issued.id, outcome), refusal))
            return NOTHING
        return self._issued(actions, now)

    def _check_given_up(self, log: _Log) -> None:
        """The session is over once every unconfirmed cleanup action was abandoned."""
        if not log.abandoned:
            return
        awaiting = self._awaiting or {}
        if not any(type(e.issued.action) in CLEANUP_ACTIONS for e in awaiting.values()):
            self._gave_up = True

    def _answers_a_repeat(self, error: HandoffError) -> bool:
        """The refused answer is for an action the coordinator holds another answer for:
        the answer to a repeated delivery (a network duplicate, or a cleanup action sent
        again), which a worker gives from what it holds when the copy arrives. The first
        answer stands (docs/driving.md): the coordinator changed nothing, and the later
        one is kept in :attr:`SessionResult.ignored`, not as a rejection."""
        return error.code is HandoffErrorCode.CONFLICTING_OUTCOME

    def _before_reopen(self, action_id: int) -> bool:
        """The coordinator completed and reopened its cleanup (a976b2bf, after Success),
        and ``action_id`` was issued before it reopened (its ids count on)."""
        coordinator = self._coordinator
        if coordinator.completion is None or coordinator.is_complete:
            return False
        return any(action_id < issued.id for issued in coordinator.outstanding)

    def _refused(self, error: HandoffError) -> None:
        refusals = self._note().refusals
        refusals[error.code] = refusals.get(error.code, 0) + 1

    def _note(self) -> _Log:
        log = self._log
        if log is None:
            log = self._log = _Log()
        return log


_FACT_TYPES: Final = frozenset(FACT_TYPES)
GAVE_UP: Final = "the session had given up on its cleanup"
"""Why an input after the session gave up was not applied."""

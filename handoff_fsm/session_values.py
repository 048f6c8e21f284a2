"""The values a session policy hands out: what to do now, timers, and what a session did.

Rule kept here: these are plain, frozen records with no behaviour of their own, so the
runtimes (the simulator, the asyncio session), the system check and a caller's own
runtime read them without knowing the policy's machinery. The policy
(:mod:`handoff_fsm.policy`) is their one producer and re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from handoff_fsm.errors import ErrorCode, HandoffError
from handoff_fsm.model import (
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
    Owner,
)

SessionInput = HandoffFact | tuple[int, HandoffActionOutcome]
"""What a session is given: a fact, or ``(action_id, outcome)``."""


class SessionTimer(NamedTuple):
    """Call :meth:`SessionPolicy.expire` with this timer at ``when`` or later (pass
    ``when`` itself: an earlier time is refused, and a sum such as ``0.1 + 0.2`` is not
    ``0.3``).

    A timer the policy no longer needs is ignored when it expires, so runtimes
    never have to cancel one (they may, to free it early).
    """

    when: float
    action_id: int | None
    """The action whose acknowledgement it waits for; ``None`` for the deadline."""
    send: int = 0
    """Which send of that action it guards: 0 for the first, 1 for the first re-send..."""

    @property
    def is_deadline(self) -> bool:
        return self.action_id is None


class SessionStep(NamedTuple):
    """What to do now: perform ``actions`` (in order, each may be a re-send) and set ``timers``.

    ``Complete`` (owned by :attr:`Owner.COORDINATOR <handoff_fsm.Owner.COORDINATOR>`) is
    among the actions when the handoff ends: it is not performed, it says so.
    """

    actions: Sequence[IssuedHandoffAction] = ()
    timers: tuple[SessionTimer, ...] = ()


NOTHING: Final = SessionStep()


@dataclass(frozen=True, slots=True)
class UnacknowledgedAction:
    """An action whose acknowledgement the session stopped waiting for."""

    issued: IssuedHandoffAction
    sends: int
    """How many times it was sent."""
    reason: str
    """Why the last send counts as lost (a timeout, or what sending it raised)."""

    @property
    def owner(self) -> Owner:
        return self.issued.action.owner


@dataclass(frozen=True, slots=True)
class Rejection:
    """An input the coordinator refused that the policy could not handle (e.g. a foreign fact)."""

    input: SessionInput
    error: HandoffError


@dataclass(frozen=True, slots=True)
class Ignored:
    """An input the policy did not apply, and why: nothing given to a session is dropped
    from its record."""

    input: SessionInput
    reason: str


@dataclass(frozen=True, slots=True)
class ExecutorError:
    """A send a runtime's executor got wrong: it answered something that is not an outcome.

    A bug of the executor, not a fault of the worker, so it is kept apart from the
    lost acknowledgements it also counts as (the send's acknowledgement never came).
    """

    issued: IssuedHandoffAction
    send: int | None
    """Which send (see :attr:`SessionTimer.send`); ``None`` when the runtime did not say."""
    reason: str
    """What was wrong, quoting the answer (bounded)."""


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What a session did besides what the coordinator shows: every give-up, every refusal."""

    completion: HandoffCompletion | None
    """``Success``, ``Canceled`` (also when cleanup was abandoned), ``None`` while running."""
    finished: bool
    timed_out: bool
    """The deadline passed and ``TimedOut`` was fed."""
    resends: int
    """Cleanup actions sent again because their acknowledgement was lost."""
    failed: tuple[UnacknowledgedAction, ...]
    """Work actions whose acknowledgement was lost: each was fed as ``Failed(reason)``."""
    abandoned: tuple[UnacknowledgedAction, ...]
    """Cleanup actions still unacknowledged after every retry: their owner may still hold."""
    buffered: tuple[HandoffFact, ...]
    """Premature facts held back right now, waiting for their acknowledgement."""
    held_back: int
    """How many facts were ever held back as premature (applied or not)."""
    unapplied: tuple[HandoffFact, ...]
    """Premature facts never applied: cleanup began before their acknowledgement came."""
    rejected: tuple[Rejection, ...]
    """Inputs the coordinator refused (other than premature facts, which are held back)."""
    executor_errors: tuple[ExecutorError, ...]
    """Sends whose executor broke its contract (:meth:`SessionPolicy.executor_error`)."""
    refusals: dict[ErrorCode, int]
    """Every refusal of the coordinator by code, held-back facts included (each try)."""
    inputs: int
    """Inputs fed to the coordinator: start, facts (each try of a held-back one), outcomes,
    and the ``TimedOut``/``Failed`` the policy made up; not the ignored ones."""
    ignored: tuple[Ignored, ...]
    """Inputs the policy did not apply, each with why: acknowledgements of actions the
    session had already given up on, and any input after the session gave up; a later
    answer to an action already answered otherwise (the answer to a repeated delivery, a
    duplicate or a re-send: the first answer stands); and acknowledgements a reopened
    cleanup (a976b2bf) refused as unknown, of actions issued before the handoff completed
    (late answers the completed handoff would have taken silently)."""

    @property
    def unconfirmed_owners(self) -> tuple[Owner, ...]:
        """Owners whose cleanup was never confirmed: the ones that may leak."""
        return tuple(dict.fromkeys(action.owner for action in self.abandoned))

    @property
    def clean(self) -> bool:
        """Finished with every owner's cleanup confirmed, nothing refused or left over, and
        no executor error."""
        return (
            self.finished
            and not self.abandoned
            and not self.buffered
            and not self.unapplied
            and not self.rejected
            and not self.executor_errors
        )

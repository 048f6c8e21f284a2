"""The handoff protocol's invariants, judged by an observer that sees only the wire.

Rule kept here: every invariant is stated about what an external observer of one
coordinator sees (the inputs it was given, the actions it issued, the errors it
raised, and what ``is_complete`` / ``completion`` said), never about a
coordinator's private fields, so the same rules judge any implementation. The
observer's memory is an :class:`Observation`, a small immutable value that the
explorer keeps per state; :func:`observe` advances it by one input and its reply
and reports every rule the reply broke. Rules that need the coordinator's state
(a rejected input changes nothing) and the liveness rule (which needs the whole
state graph) are judged by :mod:`handoff_fsm.verify.exploration`, with the names listed here.

Each protocol revision promises its own set of invariants, stated as data in
:data:`~handoff_fsm.verify.rules.RULES` (name, statement, revisions), and what a
revision does differently is read from its
:data:`~handoff_fsm.verify.rules.PROMISES`, never from the chart, so the chart
cannot vouch for itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.errors import HandoffError
from handoff_fsm.io.inputs import Input, Reply
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    OutcomeKind,
    ReleaseSource,
    ReserveDestination,
    Revision,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
    validate_transfer_timing,
)
from handoff_fsm.verify.rules import PROMISES, Invariant, Promises

# ---------------------------------------------------------------------- the observer


class InputClass(StrEnum):
    """What an input means to the protocol, given what the observer saw before it."""

    START = "start"
    PROGRESS_FACT = "progress fact"
    """SourceHeld (valid timing), DestinationReserved or TransferCompleted of this handoff."""
    FAILURE_FACT = "failure fact"
    """Failed, TimedOut or Canceled of this handoff."""
    FOREIGN_FACT = "foreign fact"
    INVALID_TIMING = "invalid timing"
    UNSCHEDULABLE = "unschedulable"
    """A progress fact that would start the transfer with a delay not finite and >= 0,
    in a revision that validates the scheduled delay."""
    OUTCOME = "outcome"
    """An accepted outcome for an issued, unacknowledged action."""
    FAILED_OUTCOME = "failed outcome"
    """``Failed(..)`` for an unacknowledged action that may fail."""
    IMPOSSIBLE_OUTCOME = "impossible outcome"
    """An outcome the unacknowledged action cannot have (or a failed cleanup action)."""
    DUPLICATE_OUTCOME = "duplicate outcome"
    CONFLICTING_OUTCOME = "conflicting outcome"
    UNKNOWN_ACTION = "unknown action"


MUST_REJECT_WHILE_RUNNING: Final = frozenset(
    {
        InputClass.IMPOSSIBLE_OUTCOME,
        InputClass.CONFLICTING_OUTCOME,
        InputClass.UNKNOWN_ACTION,
        InputClass.UNSCHEDULABLE,
    }
)
"""Input classes a running coordinator must reject (after Complete they are ignored)."""

INVALID: Final = MUST_REJECT_WHILE_RUNNING | {InputClass.FOREIGN_FACT, InputClass.INVALID_TIMING}
"""Inputs the protocol forbids: they may never issue actions or change a coordinator."""

_PROGRESS = (SubmitPrefill, ReserveDestination, StartTransfer, ActivateDestination, ReleaseSource)
_FAILURE_FACTS = (Failed, TimedOut, Canceled)


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything an observer of one coordinator remembers; hashable (part of a state key).

    It stops changing once Complete was issued (later inputs must issue nothing,
    which needs no more memory than ``complete``), except where the revision lets a
    terminal fact after Success reopen cleanup.
    """

    handoff_id: UUID
    order: HandoffOrder
    revision: Revision = Revision.SEED
    """The revision whose promises (:data:`PROMISES`) the coordinator is held to."""
    started: bool = False
    issued: tuple[tuple[int, type], ...] = ()
    """Every issued action as ``(id, action type)``, in issue order (Complete included)."""
    outcomes: tuple[tuple[int, HandoffActionOutcome], ...] = ()
    """Accepted outcomes, by action id."""
    held: bool = False
    """The source reported held (a valid SourceHeld was not rejected) before cleanup."""
    reserved: bool = False
    transferred: bool = False
    timing: HandoffTransferTiming | None = None
    """The timing the source reported held with (what the scheduled delay is made of),
    remembered only where the revision validates the scheduled delay."""
    tokens: int | None = None
    """The transferable tokens the destination reported reserved with (likewise)."""
    cleanup: bool = False
    """A failure, time-out, cancel or failed action was reported (and not rejected)."""
    complete: bool = False
    """The last Complete issued is not followed by a reopened cleanup's CancelDestination."""
    completion: HandoffCompletion | None = None
    """The completion of the last Complete issued."""
    reopened: bool = False
    """A terminal fact after Success reopened cleanup (revisions that promise it)."""
    last_id: int = -1
    """The highest action id issued so far."""

    @property
    def promises(self) -> Promises:
        return PROMISES[self.revision]

    # -- derived views (tiny tuples: loops are cheaper than indexes) -------------

    def kind_of(self, action_id: int) -> type | None:
        for issued_id, kind in self.issued:
            if issued_id == action_id:
                return kind
        return None

    def outcome_of(self, action_id: int) -> HandoffActionOutcome | None:
        for acked_id, outcome in self.outcomes:
            if acked_id == action_id:
                return outcome
        return None

    def count(self, kind: type) -> int:
        return sum(1 for _, issued in self.issued if issued is kind)

    def acknowledged(self, kind: type, *accepted: OutcomeKind) -> bool:
        """Some action of ``kind`` got an accepted outcome (one of ``accepted`` if given)."""
        wanted = frozenset(accepted) or ACKNOWLEDGEMENTS[kind].accepted
        return any(
            issued is kind and outcome.kind in wanted
            for action_id, outcome in self.outcomes
            for issued_id, issued in self.issued
            if issued_id == action_id
        )

    def outstanding(self) -> Iterator[tuple[int, type]]:
        """Issued actions that can be acknowledged and were not (in issue order)."""
        acked = {action_id for action_id, _ in self.outcomes}
        for action_id, kind in self.issued:
            if kind in ACKNOWLEDGEMENTS and action_id not in acked:
                yield action_id, kind

    def forgotten(self, action_id: int) -> bool:
        """While a reopened cleanup runs: ``action_id`` was issued before the first Complete.

        The journal was cleared by that Complete, so its outcome is for an unknown action.
        """
        if not self.reopened or self.complete:
            return False
        first = next(i for i, kind in self.issued if kind is Complete)
        return action_id < first

    def scheduled_delay_ms(self, fact: HandoffFact) -> float | None:
        """The delay StartTransfer would carry if ``fact`` starts the transfer now, else None.

        ``fact`` starts it when it is the first SourceHeld (DestinationReserved) while
        the destination reported reserved (the source held) and nothing was canceled.
        ``None`` also when the timing has no usable model (the fallback, always valid).
        """
        if self.cleanup:
            return None
        if isinstance(fact, SourceHeld) and not self.held and self.tokens is not None:
            return fact.transfer_timing.delay_ms(self.tokens)
        if isinstance(fact, DestinationReserved) and not self.reserved and self.timing is not None:
            return self.timing.delay_ms(fact.transferable_prompt_tokens)
        return None

    # -- what an input means -----------------------------------------------------

    def classify(self, op: Input) -> InputClass:
        if op.kind == "start":
            return InputClass.START
        if op.kind == "fact":
            fact = op.fact
            assert fact is not None
            if fact.handoff_id != self.handoff_id:
                return InputClass.FOREIGN_FACT
            if isinstance(fact, SourceHeld) and not _valid_timing(fact):
                return InputClass.INVALID_TIMING
            if isinstance(fact, _FAILURE_FACTS):
                return InputClass.FAILURE_FACT
            if self.promises.validates_scheduled_delay and not _valid_delay(
                self.scheduled_delay_ms(fact)
            ):
                return InputClass.UNSCHEDULABLE
            return InputClass.PROGRESS_FACT
        outcome = op.outcome
        assert outcome is not None
        kind = self.kind_of(op.action_id)
        if kind is None or kind not in ACKNOWLEDGEMENTS or self.forgotten(op.action_id):
            return InputClass.UNKNOWN_ACTION
        previous = self.outcome_of(op.action_id)
        if previous is not None:
            return (
                InputClass.DUPLICATE_OUTCOME
                if previous == outcome
                else InputClass.CONFLICTING_OUTCOME
            )
        ack = ACKNOWLEDGEMENTS[kind]
        if outcome.kind in ack.accepted:
            return InputClass.OUTCOME
        if outcome.is_failed and ack.may_fail:
            return InputClass.FAILED_OUTCOME
        return InputClass.IMPOSSIBLE_OUTCOME

    def is_due(self, fact: HandoffFact | None) -> bool:
        """``fact`` is the one an acknowledgement made due and not reported yet.

        SourceHeld after Submitted, DestinationReserved after Accepted,
        TransferCompleted after Scheduled (whatever the fact carries).
        """
        if isinstance(fact, SourceHeld):
            return not self.held and self.acknowledged(SubmitPrefill)
        if isinstance(fact, DestinationReserved):
            return not self.reserved and self.acknowledged(ReserveDestination)
        if isinstance(fact, TransferCompleted):
            return not self.transferred and self.acknowledged(StartTransfer)
        return False

    def is_honest(self, op: Input) -> bool:
        """What a correct environment may send now: the inputs liveness may rely on.

        ``start``; an accepted outcome for an unacknowledged action; and the fact an
        acknowledgement made due (SourceHeld after Submitted, DestinationReserved
        after Accepted, TransferCompleted after Scheduled), once.
        """
        cls = self.classify(op)
        if cls is InputClass.START:
            return not self.started
        if cls is InputClass.OUTCOME:
            return True
        return cls is InputClass.PROGRESS_FACT and self.is_due(op.fact)

    def refuses_due(self, op: Input) -> bool:
        """``op`` is a fact made due that must be rejected for its scheduled delay, for good.

        Where the environment's only truthful report is refused, liveness lets it end the
        handoff with a failure, time-out or cancel (the revision's liveness rule).
        """
        return self.classify(op) is InputClass.UNSCHEDULABLE and self.is_due(op.fact)


def _valid_timing(fact: SourceHeld) -> bool:
    try:
        validate_transfer_timing(fact.transfer_timing)
    except HandoffError:
        return False
    return True


def _valid_delay(delay_ms: float | None) -> bool:
    """``None`` (no model: the fallback, validated at construction) or finite and >= 0."""
    return delay_ms is None or (math.isfinite(delay_ms) and delay_ms >= 0.0)


@dataclass(slots=True)
class _Judge:
    """Collects the findings of one step."""

    findings: list[tuple[Invariant, str]] = field(default_factory=list)

    def fail(self, invariant: Invariant, message: str) -> None:
        self.findings.append((invariant, message))


def observe(
    before: Observation, op: Input, reply: Reply
) -> tuple[Observation, list[tuple[Invariant, str]]]:
    """The observation after ``op`` got ``reply``, and every invariant the reply broke."""
    judge = _Judge()
    cls = before.classify(op)
    if reply.crash is not None:
        judge.fail(Invariant.INPUTS_HANDLED, f"{op} {reply.crash}")
        return before, judge.findings
    if reply.rejected:
        if cls is InputClass.DUPLICATE_OUTCOME and not before.complete:
            judge.fail(
                Invariant.DUPLICATE_OUTCOME_IDEMPOTENT,
                f"{op} repeats the accepted outcome but was rejected ({reply.error})",
            )
        _check_completion(judge, before, reply)
        return before, judge.findings

    if cls in INVALID and (not before.complete or cls is InputClass.FOREIGN_FACT):
        if cls is not InputClass.INVALID_TIMING:
            judge.fail(
                Invariant.INVALID_INPUT_REJECTED, f"{op} ({cls.value}) was accepted, not rejected"
            )
        elif reply.actions:
            judge.fail(
                Invariant.INVALID_INPUT_REJECTED,
                f"{op} carries invalid timing but issued {_names(reply.actions)}",
            )
    if cls is InputClass.DUPLICATE_OUTCOME and reply.actions:
        judge.fail(
            Invariant.DUPLICATE_OUTCOME_IDEMPOTENT,
            f"{op} repeats the accepted outcome but issued {_names(reply.actions)}",
        )

    if before.complete:
        after = _reopened(before) if _reopens(before, cls) else before
    else:
        after = _learn(before, op, cls)
    for issued in reply.actions:
        after = _check_action(judge, after, issued, reply)
    if (
        after.reopened
        and not before.reopened
        and not any(type(issued.action) is CancelDestination for issued in reply.actions)
    ):
        judge.fail(
            Invariant.REOPENS_AFTER_SUCCESS,
            f"{op} after Success issued no CancelDestination: the decoding destination "
            "is never canceled",
        )
    _check_completion(judge, after, reply)
    return after, judge.findings


def _reopens(obs: Observation, cls: InputClass) -> bool:
    """A terminal fact after Success, in a revision where it reopens cleanup."""
    return (
        cls is InputClass.FAILURE_FACT
        and obs.promises.reopens_after_success
        and obs.completion is HandoffCompletion.SUCCESS
        and not obs.reopened
    )


def _reopened(obs: Observation) -> Observation:
    """Cleanup reopened after Success: still complete until its CancelDestination is issued."""
    return replace(obs, reopened=True, cleanup=True)


def _learn(obs: Observation, op: Input, cls: InputClass) -> Observation:
    """What an accepted input tells the observer (only while the handoff runs)."""
    if cls is InputClass.START:
        return obs if obs.started else replace(obs, started=True)
    if cls is InputClass.FAILURE_FACT:
        return obs if obs.cleanup else replace(obs, cleanup=True)
    if cls in (InputClass.PROGRESS_FACT, InputClass.UNSCHEDULABLE):
        # An unschedulable fact accepted anyway (already a finding) is followed as applied.
        if obs.cleanup:
            return obs
        fact = op.fact
        remember = obs.promises.validates_scheduled_delay
        if isinstance(fact, SourceHeld):
            if obs.held:
                return obs
            return replace(obs, held=True, timing=fact.transfer_timing if remember else None)
        if isinstance(fact, DestinationReserved):
            if obs.reserved:
                return obs
            tokens = fact.transferable_prompt_tokens if remember else None
            return replace(obs, reserved=True, tokens=tokens)
        assert isinstance(fact, TransferCompleted)
        return obs if obs.transferred else replace(obs, transferred=True)
    if op.outcome is None:  # a foreign fact or an invalid timing: nothing to learn
        return obs
    if cls in (InputClass.OUTCOME, InputClass.FAILED_OUTCOME):
        return replace(
            obs,
            outcomes=tuple(sorted((*obs.outcomes, (op.action_id, op.outcome)), key=_first)),
            cleanup=obs.cleanup or cls is InputClass.FAILED_OUTCOME,
        )
    # An invalid outcome the coordinator accepted anyway (already a finding) is not
    # recorded; if it reported a failure, a cleanup that follows is no further news.
    if op.outcome.is_failed and not obs.cleanup:
        return replace(obs, cleanup=True)
    return obs


def _check_action(
    judge: _Judge, obs: Observation, issued: IssuedHandoffAction, reply: Reply
) -> Observation:
    """Judge one issued action against everything seen before it; return the new memory."""
    action = issued.action
    kind = type(action)
    name = f"{kind.__name__} (id {issued.id})"
    reopening = (
        kind is CancelDestination
        and obs.reopened
        and obs.complete
        and obs.completion is HandoffCompletion.SUCCESS
    )
    if issued.id <= obs.last_id:
        judge.fail(
            Invariant.ACTION_IDS_INCREASING,
            f"issued {name} after action id {obs.last_id}: ids must strictly increase",
        )
    if action.handoff_id != obs.handoff_id:
        judge.fail(
            Invariant.OWN_HANDOFF, f"issued {name} for handoff {action.handoff_id}, not its own"
        )
    if obs.reopened and kind is CancelSource:
        judge.fail(
            Invariant.REOPENS_AFTER_SUCCESS,
            f"issued {name} in the cleanup reopened after Success: the source was released",
        )
    elif reopening:
        # The reopened cleanup's cancel: the one action allowed after the Success Complete.
        problem = _lifecycle_problem(obs, kind)
        if problem is not None:
            judge.fail(Invariant.LIFECYCLE_ORDER, f"issued {name} {problem}")
    elif obs.complete:
        # One finding: whether it would have been allowed before Complete is moot.
        judge.fail(Invariant.COMPLETE_ONCE, f"issued {name} after Complete")
    elif obs.cleanup and kind in _PROGRESS:
        # One finding: when the preconditions held is moot once cleanup has begun.
        judge.fail(Invariant.CANCELED_ONLY_THROUGH_CLEANUP, f"issued {name} after cleanup started")
    elif kind is StartTransfer:
        if obs.count(StartTransfer):
            judge.fail(Invariant.TRANSFER_ONCE_WHEN_READY, f"issued {name} a second time")
        missing = [
            what
            for what, seen in (("source held", obs.held), ("destination reserved", obs.reserved))
            if not seen
        ]
        if missing:
            judge.fail(
                Invariant.TRANSFER_ONCE_WHEN_READY,
                f"issued {name} before {' and '.join(missing)} was reported",
            )
    elif kind is Complete:
        _check_complete(judge, obs, name, reply.completion)
    else:
        problem = _lifecycle_problem(obs, kind)
        if problem is not None:
            judge.fail(Invariant.LIFECYCLE_ORDER, f"issued {name} {problem}")
    completes = kind is Complete and not obs.complete
    return replace(
        obs,
        issued=(*obs.issued, (issued.id, kind)),
        last_id=max(obs.last_id, issued.id),
        complete=(obs.complete and not reopening) or kind is Complete,
        completion=reply.completion if completes else obs.completion,
    )


def _lifecycle_problem(obs: Observation, kind: type) -> str | None:
    """Why issuing a non-transfer, non-Complete action now breaks the protocol, if it does."""
    if obs.count(kind):
        return "a second time"
    source_first = obs.order is HandoffOrder.SOURCE_FIRST
    if kind is SubmitPrefill:
        if source_first and not obs.started:
            return "before start"
        if not source_first and not obs.reserved:
            return "(destination first) before the destination reported reserved"
    elif kind is ReserveDestination:
        if not source_first and not obs.started:
            return "before start"
        if source_first and not obs.held:
            return "(source first) before the source reported held"
    elif kind is ActivateDestination:
        if not obs.transferred:
            return "before the transfer was reported completed"
    elif kind is ReleaseSource:
        if not obs.acknowledged(ActivateDestination):
            return "before the destination's activation was applied"
    elif kind is CancelSource or kind is CancelDestination:
        engaging = SubmitPrefill if kind is CancelSource else ReserveDestination
        if not obs.cleanup:
            return "outside cleanup"
        if not obs.count(engaging):
            return f"though no {engaging.__name__} was ever issued"
    return None


def _check_complete(
    judge: _Judge, obs: Observation, name: str, completion: HandoffCompletion | None
) -> None:
    if completion is None:
        judge.fail(Invariant.COMPLETION_CONSISTENT, f"issued {name} but completion is None")
        return
    success = completion is HandoffCompletion.SUCCESS
    unsettled = []
    if obs.count(SubmitPrefill) and not (
        obs.acknowledged(ReleaseSource) or obs.acknowledged(CancelSource)
    ):
        unsettled.append("the source (no ReleaseSource or CancelSource acknowledged)")
    if obs.count(ReserveDestination) and not (
        obs.acknowledged(CancelDestination)
        or (success and obs.acknowledged(ActivateDestination, OutcomeKind.APPLIED))
    ):
        unsettled.append(
            "the destination (no CancelDestination acknowledged"
            + (", no ActivateDestination applied)" if success else ")")
        )
    if unsettled:
        judge.fail(
            Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
            f"issued {name} ({completion.value}) while {' and '.join(unsettled)} was engaged",
        )
    if success:
        missing = [
            what
            for what, ok in (
                ("ActivateDestination applied", obs.acknowledged(ActivateDestination)),
                ("ReleaseSource acknowledged", obs.acknowledged(ReleaseSource)),
                ("one transfer started", obs.count(StartTransfer) == 1),
            )
            if not ok
        ]
        if missing:
            judge.fail(
                Invariant.SUCCESS_AFTER_RELEASE,
                f"issued {name} (Success) without {', '.join(missing)}",
            )
        if obs.cleanup:
            judge.fail(
                Invariant.CANCELED_ONLY_THROUGH_CLEANUP,
                f"issued {name} (Success) after cleanup started",
            )
    elif not obs.cleanup:
        judge.fail(
            Invariant.CANCELED_ONLY_THROUGH_CLEANUP,
            f"issued {name} (Canceled) though no failure, time-out or cancel was reported",
        )


def _check_completion(judge: _Judge, obs: Observation, reply: Reply) -> None:
    if reply.is_complete != obs.complete:
        if obs.complete:
            state = "Complete was issued"
        elif obs.reopened:
            state = "the reopened cleanup's CancelDestination was issued"
        else:
            state = "Complete was never issued"
        judge.fail(
            Invariant.COMPLETION_CONSISTENT, f"is_complete is {reply.is_complete} but {state}"
        )
    elif reply.completion is not obs.completion:
        if obs.complete:
            when = f"after Complete ({obs.completion}) was issued"
        elif obs.reopened:
            when = f"while the reopened cleanup runs (it stays {obs.completion} until then)"
        else:
            when = "before Complete was issued"
        judge.fail(Invariant.COMPLETION_CONSISTENT, f"completion is {reply.completion} {when}")


def _first(pair: tuple[int, HandoffActionOutcome]) -> int:
    return pair[0]


def _names(actions: tuple[IssuedHandoffAction, ...]) -> str:
    return ", ".join(f"{type(a.action).__name__} (id {a.id})" for a in actions)

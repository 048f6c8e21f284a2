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
:data:`RULES` (name, statement, revisions). What a revision does differently is
read from :data:`PROMISES`, written here from the revision's description
(README, "Protocol revisions"), never from the chart, so the chart cannot vouch
for itself.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, Literal, Protocol
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.errors import HandoffError, HandoffErrorCode
from handoff_fsm.io.wire import fact_from_wire, fact_to_wire, outcome_from_wire, outcome_to_wire
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
)
from handoff_fsm.timing import validate_transfer_timing


class Invariant(StrEnum):
    """Stable names of the checked properties (used in reports, tests and the CLI)."""

    INPUTS_HANDLED = "inputs_handled"
    DETERMINISTIC = "deterministic"
    COMPLETE_ONCE = "complete_once"
    ACTION_IDS_INCREASING = "action_ids_increasing"
    OWN_HANDOFF = "own_handoff"
    COMPLETION_CONSISTENT = "completion_consistent"
    OWNERS_SETTLED_BEFORE_COMPLETE = "owners_settled_before_complete"
    SUCCESS_AFTER_RELEASE = "success_after_release"
    CANCELED_ONLY_THROUGH_CLEANUP = "canceled_only_through_cleanup"
    TRANSFER_ONCE_WHEN_READY = "transfer_once_when_ready"
    LIFECYCLE_ORDER = "lifecycle_order"
    REJECTED_INPUT_CHANGES_NOTHING = "rejected_input_changes_nothing"
    INVALID_INPUT_REJECTED = "invalid_input_rejected"
    DUPLICATE_OUTCOME_IDEMPOTENT = "duplicate_outcome_idempotent"
    REOPENS_AFTER_SUCCESS = "reopens_after_success"
    LIVENESS = "liveness"


@dataclass(frozen=True, slots=True)
class Promises:
    """What a protocol revision does differently from the seed, as the observer expects it."""

    reopens_after_success: bool = False
    """After Success, a terminal fact cancels the decoding destination and completes again."""
    validates_scheduled_delay: bool = False
    """A fact that would start the transfer with a delay not finite and >= 0 is rejected."""


PROMISES: Final[dict[Revision, Promises]] = {
    Revision.SEED: Promises(),
    Revision.A976B2BF: Promises(reopens_after_success=True, validates_scheduled_delay=True),
}
"""Per revision, the behaviour the observer holds it to (README, "Protocol revisions")."""

SEED: Final = frozenset({Revision.SEED})
A976B2BF: Final = frozenset({Revision.A976B2BF})
EVERY_REVISION: Final = frozenset(Revision)


@dataclass(frozen=True, slots=True)
class Rule:
    """One invariant as a revision states it: its name, what it promises, where it holds."""

    invariant: Invariant
    statement: str
    revisions: frozenset[Revision]


RULES: Final[tuple[Rule, ...]] = (
    Rule(
        Invariant.INPUTS_HANDLED,
        "every input returns a list of issued actions or raises a HandoffError; nothing "
        "else escapes",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.DETERMINISTIC,
        "the same inputs, given to a fresh coordinator, always lead to the same state (what "
        "makes a counterexample replayable)",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.COMPLETE_ONCE,
        "Complete is issued at most once, last in its reply, and nothing is issued after it",
        SEED,
    ),
    Rule(
        Invariant.COMPLETE_ONCE,
        "Complete is last in its reply and nothing is issued after it, with one exception: "
        "after Success a terminal fact reopens cleanup (reopens_after_success), which a "
        "second Complete (Canceled) ends, and nothing is issued after that one; so Complete "
        "is issued at most twice, the second time only after a reopen",
        A976B2BF,
    ),
    Rule(
        Invariant.ACTION_IDS_INCREASING,
        "action ids are unique and strictly increasing",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.OWN_HANDOFF,
        "every issued action names the coordinator's own handoff",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.COMPLETION_CONSISTENT,
        "is_complete turns true exactly when Complete is issued, and completion is Success "
        "or Canceled from then on (None before)",
        SEED,
    ),
    Rule(
        Invariant.COMPLETION_CONSISTENT,
        "is_complete turns true exactly when a Complete is issued and false only when the "
        "reopened cleanup's CancelDestination is issued, until the second Complete; "
        "completion is None before the first Complete and that of the last Complete after "
        "it (Success while the reopened cleanup runs)",
        A976B2BF,
    ),
    Rule(
        Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
        "every owner engaged (prefill submitted, destination reserved) is released or "
        "canceled, with an acknowledged outcome, before Complete (on Success the "
        "destination's applied activation is its hand-over)",
        SEED,
    ),
    Rule(
        Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
        "every owner engaged (prefill submitted, destination reserved) is released or "
        "canceled, with an acknowledged outcome, before each Complete: on Success the "
        "destination's applied activation is its hand-over; before the Complete that ends a "
        "reopened cleanup, the destination's CancelDestination is acknowledged",
        A976B2BF,
    ),
    Rule(
        Invariant.SUCCESS_AFTER_RELEASE,
        "Success only after ActivateDestination was Applied, ReleaseSource acknowledged and "
        "exactly one transfer started",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.CANCELED_ONLY_THROUGH_CLEANUP,
        "Canceled only after a failure, time-out, cancel or failed action started cleanup, "
        "Success never after one, and once cleanup started only cancels and Complete are "
        "issued",
        SEED,
    ),
    Rule(
        Invariant.CANCELED_ONLY_THROUGH_CLEANUP,
        "Canceled only after a failure, time-out, cancel or failed action started cleanup, "
        "or a terminal fact after Success reopened it; Success never after one, and once "
        "cleanup started (or reopened) only cancels and Complete are issued",
        A976B2BF,
    ),
    Rule(
        Invariant.TRANSFER_ONCE_WHEN_READY,
        "StartTransfer only once the source reported held and the destination reported "
        "reserved, and at most once",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.LIFECYCLE_ORDER,
        "every other action only when the protocol allows it, at most once: the order's "
        "first owner on start, the second once the first is ready, activation after the "
        "transfer completed, release after activation applied, cancels in cleanup for "
        "engaged owners",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.REJECTED_INPUT_CHANGES_NOTHING,
        "an input rejected with a HandoffError leaves the coordinator exactly as it was",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.INVALID_INPUT_REJECTED,
        "a fact for another handoff is rejected; while running, an outcome for an unknown "
        "action, one its action cannot have, a failed cleanup or one contradicting an "
        "accepted outcome is rejected; a SourceHeld with invalid timing is never applied",
        SEED,
    ),
    Rule(
        Invariant.INVALID_INPUT_REJECTED,
        "a fact for another handoff is rejected; while running, an outcome for an unknown "
        "action, one its action cannot have, a failed cleanup or one contradicting an "
        "accepted outcome is rejected; a SourceHeld with invalid timing is never applied; "
        "a SourceHeld or DestinationReserved that would start the transfer with a delay "
        "(the one StartTransfer carries) that is not finite and >= 0 is rejected; while a "
        "reopened cleanup runs, an outcome for an action issued before the first Complete "
        "is for an unknown action",
        A976B2BF,
    ),
    Rule(
        Invariant.DUPLICATE_OUTCOME_IDEMPOTENT,
        "an exact duplicate of an accepted outcome is answered with no actions and changes nothing",
        EVERY_REVISION,
    ),
    Rule(
        Invariant.REOPENS_AFTER_SUCCESS,
        "after Success, a Failed, TimedOut or Canceled fact reopens cleanup: its reply "
        "issues CancelDestination (the decoding destination) and never CancelSource (the "
        "source was released)",
        A976B2BF,
    ),
    Rule(
        Invariant.LIVENESS,
        "from every reachable state some sequence of honest inputs (acknowledgements with an "
        "accepted outcome, and the facts they make due) reaches Complete",
        SEED,
    ),
    Rule(
        Invariant.LIVENESS,
        "from every reachable state some sequence of honest inputs (acknowledgements with an "
        "accepted outcome, and the facts they make due) reaches Complete, a reopened cleanup "
        "too; where a fact made due would start the transfer with a delay that is not finite "
        "(so it is rejected, for good), a failure, time-out or cancel is the honest answer",
        A976B2BF,
    ),
)
"""Every invariant as each revision promises it (printed by ``handoff-fsm check``).

An invariant whose meaning changes has one rule per meaning; the seed's statements
are those of the protocol before revisions existed."""


def invariants_of(revision: Revision) -> tuple[Invariant, ...]:
    """The invariants ``revision`` promises, in :class:`Invariant` order."""
    promised = {rule.invariant for rule in RULES if revision in rule.revisions}
    return tuple(invariant for invariant in Invariant if invariant in promised)


def statement(invariant: Invariant, revision: Revision) -> str:
    """What ``invariant`` promises under ``revision`` (``KeyError`` if it does not apply)."""
    for rule in RULES:
        if rule.invariant is invariant and revision in rule.revisions:
            return rule.statement
    raise KeyError(f"{invariant.value} is not an invariant of {revision.value}")


STATEMENTS_BY_REVISION: Final[dict[Revision, dict[Invariant, str]]] = {
    revision: {invariant: statement(invariant, revision) for invariant in invariants_of(revision)}
    for revision in Revision
}
"""Per revision, what each of its invariants promises, in words."""

STATEMENTS: Final[dict[Invariant, str]] = STATEMENTS_BY_REVISION[Revision.SEED]
"""What each invariant of the default revision (the seed) promises, in words."""

JUDGED_BY: Final[dict[Invariant, str]] = {
    Invariant.INPUTS_HANDLED: "the explorer, on every reply: a list of issued actions or a "
    "HandoffError; anything else escaping is caught and reported",
    Invariant.DETERMINISTIC: "the explorer rebuilds states by replaying their shortest input "
    "sequence into a fresh coordinator; its snapshot must equal the state's",
    Invariant.COMPLETE_ONCE: "the observer, on every issued action: nothing after Complete",
    Invariant.ACTION_IDS_INCREASING: "the observer, on every issued action, against the "
    "highest id it saw",
    Invariant.OWN_HANDOFF: "the observer, on every issued action",
    Invariant.COMPLETION_CONSISTENT: "the observer, on every reply: is_complete and "
    "completion against the Complete it saw issued",
    Invariant.OWNERS_SETTLED_BEFORE_COMPLETE: "the observer, on Complete: the outcomes it saw "
    "for every owner that was engaged",
    Invariant.SUCCESS_AFTER_RELEASE: "the observer, on Complete with Success: the outcomes "
    "and transfers it saw",
    Invariant.CANCELED_ONLY_THROUGH_CLEANUP: "the observer, on every issued action and on "
    "Complete, against the failures it saw",
    Invariant.TRANSFER_ONCE_WHEN_READY: "the observer, on StartTransfer: the facts it saw "
    "accepted before",
    Invariant.LIFECYCLE_ORDER: "the observer, on every other issued action: the inputs and "
    "actions it saw before",
    Invariant.REJECTED_INPUT_CHANGES_NOTHING: "the explorer: the snapshot before and after "
    "every rejected input",
    Invariant.INVALID_INPUT_REJECTED: "the observer classifies every input (an invalid one "
    "accepted is a finding); the explorer checks an invalid timing changed no snapshot",
    Invariant.DUPLICATE_OUTCOME_IDEMPOTENT: "the observer (not rejected, no actions) and the "
    "explorer (the same snapshot) on every exact duplicate",
    Invariant.REOPENS_AFTER_SUCCESS: "the observer, on every failure fact after Success and "
    "every action of the cleanup it reopens",
    Invariant.LIVENESS: "the explorer, on the whole state graph: a backward search from the "
    "complete states over honest inputs must reach every explored state",
}
"""Which part of ``handoff-fsm check`` judges each invariant, and on what (the design review)."""


# ---------------------------------------------------------------------- inputs and replies

OpKind = Literal["start", "fact", "outcome"]


@dataclass(frozen=True, slots=True)
class Op:
    """One input to a coordinator: ``start()``, ``on_fact(fact)`` or ``on_action_outcome``."""

    kind: OpKind
    fact: HandoffFact | None = None
    action_id: int = -1
    outcome: HandoffActionOutcome | None = None

    def to_wire(self, key: str) -> dict[str, Any]:
        """The trace line (``handoff-fsm replay`` format) giving this input to ``key``."""
        if self.kind == "start":
            return {"coordinator": key, "op": "start"}
        if self.kind == "fact":
            assert self.fact is not None
            return {"coordinator": key, "op": "fact", "fact": fact_to_wire(self.fact)}
        assert self.outcome is not None
        return {
            "coordinator": key,
            "op": "outcome",
            "action_id": self.action_id,
            "outcome": outcome_to_wire(self.outcome),
        }

    @classmethod
    def from_wire(cls, line: dict[str, Any]) -> Op:
        """The input of a trace line whose ``op`` is ``start``, ``fact`` or ``outcome``."""
        op = line["op"]
        if op == "start":
            return START
        if op == "fact":
            return cls("fact", fact=fact_from_wire(line["fact"]))
        if op == "outcome":
            return cls(
                "outcome", action_id=line["action_id"], outcome=outcome_from_wire(line["outcome"])
            )
        raise ValueError(f"not an input line: {line!r}")

    def __str__(self) -> str:
        if self.kind == "start":
            return "start()"
        if self.kind == "fact":
            assert self.fact is not None
            return f"on_fact({_fact_text(self.fact)})"
        return f"on_action_outcome({self.action_id}, {self.outcome})"


START: Final = Op("start")


def _fact_text(fact: HandoffFact) -> str:
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        detail = f"bandwidth {timing.bandwidth_gb_s} GB/s"
    elif isinstance(fact, DestinationReserved):
        detail = f"{fact.transferable_prompt_tokens} tokens"
    else:
        detail = ""
    return f"{type(fact).__name__}({', '.join(filter(None, [str(fact.handoff_id), detail]))})"


@dataclass(frozen=True, slots=True)
class Reply:
    """What one input got back: actions, or an error code, or something that escaped."""

    actions: tuple[IssuedHandoffAction, ...] = ()
    error: HandoffErrorCode | None = None
    """Set when the input was rejected with a :class:`HandoffError`."""
    crash: str | None = None
    """Set when something other than a list of actions or a HandoffError came out."""
    is_complete: bool = False
    completion: HandoffCompletion | None = None

    @property
    def rejected(self) -> bool:
        return self.error is not None


class Coordinator(Protocol):
    """What the observer and the explorer need of an implementation.

    ``HandoffCoordinator`` has it all; any object with these members can be checked.
    """

    @property
    def is_complete(self) -> bool: ...
    @property
    def completion(self) -> HandoffCompletion | None: ...
    def start(self) -> list[IssuedHandoffAction]: ...
    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]: ...
    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]: ...
    def snapshot(self) -> Hashable:
        """The complete state: hashable, and equal exactly for equal states."""
        ...


def reply_of(coordinator: Coordinator, op: Op) -> Reply:
    """Give ``op`` to ``coordinator`` and capture its reply (never raises)."""
    try:
        if op.kind == "start":
            result = coordinator.start()
        elif op.kind == "fact":
            assert op.fact is not None
            result = coordinator.on_fact(op.fact)
        else:
            assert op.outcome is not None
            result = coordinator.on_action_outcome(op.action_id, op.outcome)
    except HandoffError as error:
        return Reply(
            error=error.code,
            is_complete=coordinator.is_complete,
            completion=coordinator.completion,
        )
    except Exception as error:  # reported, not hidden: it is a finding (inputs_handled)
        return Reply(crash=f"raised {type(error).__name__}: {error}")
    if type(result) is not list or not all(type(a) is IssuedHandoffAction for a in result):
        return Reply(crash=f"returned {result!r} instead of a list of issued actions")
    return Reply(
        actions=tuple(result),
        is_complete=coordinator.is_complete,
        completion=coordinator.completion,
    )


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

    def classify(self, op: Op) -> InputClass:
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

    def is_honest(self, op: Op) -> bool:
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

    def refuses_due(self, op: Op) -> bool:
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
    before: Observation, op: Op, reply: Reply
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


def _learn(obs: Observation, op: Op, cls: InputClass) -> Observation:
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

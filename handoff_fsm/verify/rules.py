"""The protocol's invariants as data: their names, statements, and who promises which.

Rule kept here: what each revision promises is written down here, from the
revision's description (the docs' "Protocol revisions"), never read from the chart,
so the chart cannot vouch for itself. :data:`RULES` names every invariant with its
statement and the revisions that promise it; :data:`PROMISES` says what a revision
does differently; :data:`JUDGED_BY` says which part of ``handoff-fsm check`` judges
each one. The observer that judges them is :mod:`handoff_fsm.verify.invariants`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from handoff_fsm.model import Revision


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
"""Per revision, the behaviour the observer holds it to (docs/revisions.md)."""

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

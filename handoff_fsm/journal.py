"""The action journal: the ledger of issued actions and their outcomes, beside the chart.

Rule kept here: the journal answers "is this outcome acceptable, and which chart
event does it become?" and records it only once it is accepted (the reference
records first and validates after, which can wedge a handoff; see "Improvements
over the reference" in docs/coordinator.md). It never decides control flow: that is
the chart's job. Ids increase strictly for the life of a coordinator, also across :meth:`clear`.
"""

from __future__ import annotations

from typing import Final

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED
from handoff_fsm.errors import HandoffErrorCode, handoff_error, quoted
from handoff_fsm.model import (
    HandoffAction,
    HandoffActionOutcome,
    IssuedHandoffAction,
    OutcomeKind,
)

_FAILED = OutcomeKind.FAILED

SHARED_ACCEPTANCES: Final[dict[tuple[type[HandoffAction], int], str]] = {
    (kind, id(getattr(HandoffActionOutcome, accepted.name))): ack.event
    for kind, ack in ACKNOWLEDGEMENTS.items()
    for accepted in ack.accepted
}
"""(action kind, identity of a shared outcome constant) -> the event :meth:`ActionJournal.
acknowledge` turns that outcome into, for the constants (``HandoffActionOutcome.APPLIED``
...) that acknowledge that kind: the verdict decided once. The constants live as long as
the class, so their identities name them; a caller's equal outcome is judged in full."""


class ActionJournal:
    """Ids, issued action kinds and recorded outcomes of one coordinator.

    Only the *kind* of each issued action is kept (a shared class, not the action):
    that is all an outcome is judged by, and it keeps a live coordinator small. The
    coordinator can rebuild the actions themselves for a snapshot.
    """

    __slots__ = ("issued", "next_id", "outcomes")

    def __init__(self, next_id: int = 0) -> None:
        self.next_id = next_id
        self.issued: dict[int, type[HandoffAction]] = {}
        self.outcomes: dict[int, HandoffActionOutcome] = {}

    def allot(self, kind: type[HandoffAction]) -> int:
        """The next id, for an action of ``kind`` issued now, its kind remembered until
        the handoff completes: the one place ids are given out (a coordinator's hot path
        builds the action itself, once it has its id)."""
        action_id = self.next_id
        self.next_id = action_id + 1
        self.issued[action_id] = kind
        return action_id

    def issue(self, action: HandoffAction) -> IssuedHandoffAction:
        """Give ``action`` the next id (:meth:`allot`)."""
        return IssuedHandoffAction.trusted(self.allot(type(action)), action)

    def acknowledge(self, action_id: int, outcome: HandoffActionOutcome) -> str | None:
        """Judge ``outcome`` for ``action_id``; record it and return its chart event.

        Returns ``None`` for an exact duplicate (idempotent). Raises, recording
        nothing, for an unknown id, a conflicting duplicate, an outcome the action
        cannot have, or a failed cleanup action.
        """
        kind = self.issued.get(action_id)
        if kind is None:
            outcomes = self.outcomes
            outstanding = [i for i in sorted(self.issued) if i not in outcomes]
            raise handoff_error(
                HandoffErrorCode.UNKNOWN_ACTION,
                f"unknown handoff action {quoted(action_id)} "
                f"(outstanding ids: {quoted(outstanding)})",
                action_id=action_id,
            )
        previous = self.outcomes.get(action_id)
        if previous is not None:
            if previous is outcome or previous == outcome:
                return None
            raise handoff_error(
                HandoffErrorCode.CONFLICTING_OUTCOME,
                f"conflicting outcome for handoff action {action_id} "
                f"({kind.__name__}): {outcome} after {previous}",
                action_id=action_id,
            )
        ack = ACKNOWLEDGEMENTS[kind]
        outcome_kind = outcome.kind
        if outcome_kind is _FAILED:
            if not ack.may_fail:
                raise handoff_error(
                    HandoffErrorCode.CLEANUP_ACTION_FAILED,
                    f"handoff cleanup action {action_id} ({kind.__name__}) "
                    f"failed: {quoted(outcome.reason)}",
                    action_id=action_id,
                )
            event = ACTION_FAILED
        elif outcome_kind in ack.accepted:
            event = ack.event
        else:
            expected = " or ".join(sorted(k.value for k in ack.accepted))
            if ack.may_fail:
                expected += " or Failed(..)"
            raise handoff_error(
                HandoffErrorCode.INVALID_OUTCOME,
                f"invalid handoff action outcome {outcome} for action {action_id} "
                f"({kind.__name__}); expected {expected}",
                action_id=action_id,
            )
        self.outcomes[action_id] = outcome
        return event

    def awaiting(self) -> list[tuple[int, type[HandoffAction]]]:
        """Issued actions with no accepted outcome yet, as (id, kind), in issue order."""
        outcomes = self.outcomes
        return sorted((i, kind) for i, kind in self.issued.items() if i not in outcomes)

    def clear(self) -> None:
        """Forget issued actions and outcomes (on completion); ids keep counting."""
        self.issued = {}
        self.outcomes = {}

"""The floor: the hand-written coordinator, returning the library's own value types.

Rule kept here: this is :mod:`handwritten`'s coordinator, line for line, except that
its facts, outcomes, timings, actions and issued actions are the library's public types
(``handoff_fsm``), each action and issued action built through its public constructor
(``StartTransfer(handoff_id=..., delay_ms=...)``, ``IssuedHandoffAction(id=..., action=...)``).
So the library against this one measures what the library's own machinery costs, and this
one against :mod:`handwritten` what the value types cost: ``make bench``'s floor rows.
Nothing here checks more than the hand-written port does, and it dispatches on
``type(x) is C`` where the port has ``isinstance``: an instance check of a pydantic model
class runs Python code (its metaclass's ``__instancecheck__``), and the floor must not be
slowed by what a careful hand-written coordinator would avoid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from uuid import UUID

from handwritten import HandoffError, validate_transfer_delay_ms

from handoff_fsm import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    Complete,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    OutcomeKind,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferCompleted,
)


class CoordinatorMode(Enum):
    ACTIVE = "Active"
    CLEANING_UP = "CleaningUp"
    COMPLETE = "Complete"


_SUBMITTED = (HandoffActionOutcome.SUBMITTED,)
_ACCEPTED = (HandoffActionOutcome.ACCEPTED,)
_SCHEDULED = (HandoffActionOutcome.SCHEDULED,)
_APPLIED = (HandoffActionOutcome.APPLIED,)
_APPLIED_OR_NOOP = (HandoffActionOutcome.APPLIED, HandoffActionOutcome.NOOP)


def require_outcome(
    outcome: HandoffActionOutcome, allowed: tuple[HandoffActionOutcome, ...]
) -> None:
    if outcome not in allowed:
        raise HandoffError(f"invalid handoff action outcome {outcome}")


def validate_transfer_timing(timing: HandoffTransferTiming) -> None:
    """:func:`handwritten.validate_transfer_timing`, on the library's timing."""
    bandwidth = timing.bandwidth_gb_s
    if bandwidth is not None and (not math.isfinite(bandwidth) or bandwidth < 0.0):
        raise HandoffError(f"invalid handoff transfer bandwidth {bandwidth}")
    validate_transfer_delay_ms(timing.full_prompt_delay_ms())


# ----------------------------------------------------------------------------- progress


@dataclass(slots=True)
class ActionJournal:
    started: bool = False
    next_id: int = 0
    issued: dict[int, HandoffAction] = field(default_factory=dict)
    outcomes: dict[int, HandoffActionOutcome] = field(default_factory=dict)


@dataclass(slots=True)
class SourceProgress:
    submit_issued: bool = False
    submitted: bool = False
    held: bool = False
    transfer_timing: HandoffTransferTiming | None = None
    release_issued: bool = False
    cancel_issued: bool = False
    cleanup_done: bool = False


@dataclass(slots=True)
class DestinationProgress:
    reserve_issued: bool = False
    accepted: bool = False
    reserved: bool = False
    transferable_prompt_tokens: int | None = None
    activation_issued: bool = False
    activation_applied: bool = False
    cancel_issued: bool = False
    cleanup_done: bool = False


@dataclass(slots=True)
class TransferProgress:
    issued: bool = False
    scheduled: bool = False
    completed: bool = False


# ----------------------------------------------------------------------------- coordinator


class HandoffCoordinator:
    """The hand-written coordinator, returning the library's value types."""

    __slots__ = (
        "actions",
        "completion",
        "destination",
        "fallback_transfer_delay_ms",
        "handoff_id",
        "mode",
        "order",
        "source",
        "transfer",
    )

    def __init__(
        self, handoff_id: UUID, order: HandoffOrder, fallback_transfer_delay_ms: float = 0.0
    ) -> None:
        if not math.isfinite(fallback_transfer_delay_ms) or fallback_transfer_delay_ms < 0.0:
            raise HandoffError(f"invalid fallback transfer delay {fallback_transfer_delay_ms}")
        self.handoff_id = handoff_id
        self.order = order
        self.mode = CoordinatorMode.ACTIVE
        self.actions = ActionJournal()
        self.source = SourceProgress()
        self.destination = DestinationProgress()
        self.transfer = TransferProgress()
        self.completion: HandoffCompletion | None = None
        self.fallback_transfer_delay_ms = fallback_transfer_delay_ms

    @property
    def is_complete(self) -> bool:
        return self.mode is CoordinatorMode.COMPLETE

    def start(self) -> list[IssuedHandoffAction]:
        if self.actions.started:
            return []
        self.actions.started = True
        if self.order is HandoffOrder.SOURCE_FIRST:
            return [self._issue_submit_prefill()]
        return [self._issue_reserve_destination()]

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        if fact.handoff_id != self.handoff_id:
            raise HandoffError("fact belongs to a different handoff")
        if self.mode is not CoordinatorMode.ACTIVE:
            return []
        if type(fact) is SourceHeld:
            source = self.source
            if source.held:
                return []
            if not source.submitted:
                raise HandoffError("source held before prefill submission was acknowledged")
            validate_transfer_timing(fact.transfer_timing)
            source.held = True
            source.transfer_timing = fact.transfer_timing
            return self._advance_active()
        if type(fact) is DestinationReserved:
            destination = self.destination
            if destination.reserved:
                return []
            if not destination.accepted:
                raise HandoffError("destination reserved before ownership was accepted")
            destination.reserved = True
            destination.transferable_prompt_tokens = fact.transferable_prompt_tokens
            return self._advance_active()
        if type(fact) is TransferCompleted:
            transfer = self.transfer
            if transfer.completed:
                return []
            if not transfer.scheduled:
                raise HandoffError("transfer completed before it was scheduled")
            transfer.completed = True
            return self._advance_active()
        return self._begin_cleanup()  # Failed, TimedOut, Canceled

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        if self.mode is CoordinatorMode.COMPLETE:
            return []
        journal = self.actions
        action = journal.issued.get(action_id)
        if action is None:
            raise HandoffError(f"unknown handoff action {action_id}")
        previous = journal.outcomes.get(action_id)
        if previous is not None:
            if previous != outcome:
                raise HandoffError(f"conflicting outcome for handoff action {action_id}")
            return []
        journal.outcomes[action_id] = outcome

        if outcome.kind is OutcomeKind.FAILED:
            if type(action) in (CancelSource, CancelDestination):
                raise HandoffError(f"handoff cleanup action {action_id} failed")
            return self._begin_cleanup()

        if type(action) is SubmitPrefill:
            require_outcome(outcome, _SUBMITTED)
            self.source.submitted = True
        elif type(action) is ReserveDestination:
            require_outcome(outcome, _ACCEPTED)
            self.destination.accepted = True
        elif type(action) is StartTransfer:
            require_outcome(outcome, _SCHEDULED)
            self.transfer.scheduled = True
        elif type(action) is ActivateDestination:
            require_outcome(outcome, _APPLIED)
            self.destination.activation_applied = True
        elif type(action) in (ReleaseSource, CancelSource):
            require_outcome(outcome, _APPLIED_OR_NOOP)
            self.source.cleanup_done = True
        elif type(action) is CancelDestination:
            require_outcome(outcome, _APPLIED_OR_NOOP)
            self.destination.cleanup_done = True
        else:  # Complete
            return []

        if self.mode is CoordinatorMode.ACTIVE:
            return self._advance_active()
        return self._advance_cleanup()  # CLEANING_UP (COMPLETE returned above)

    def _advance_active(self) -> list[IssuedHandoffAction]:
        source = self.source
        destination = self.destination
        transfer = self.transfer
        if (
            self.order is HandoffOrder.SOURCE_FIRST
            and source.held
            and not destination.reserve_issued
        ):
            return [self._issue_reserve_destination()]
        if (
            self.order is HandoffOrder.DESTINATION_FIRST
            and destination.reserved
            and not source.submit_issued
        ):
            return [self._issue_submit_prefill()]
        if source.held and destination.reserved and not transfer.issued:
            transfer.issued = True
            timing = source.transfer_timing
            tokens = destination.transferable_prompt_tokens
            assert timing is not None, "held source must retain transfer timing"
            assert tokens is not None, "reserved destination must report its footprint"
            delay_ms = timing.delay_ms(tokens)
            if delay_ms is None:
                delay_ms = self.fallback_transfer_delay_ms
            return [self._issue(StartTransfer(handoff_id=self.handoff_id, delay_ms=delay_ms))]
        if transfer.completed and not destination.activation_issued:
            destination.activation_issued = True
            return [self._issue(ActivateDestination(handoff_id=self.handoff_id))]
        if destination.activation_applied and not source.release_issued:
            source.release_issued = True
            return [self._issue(ReleaseSource(handoff_id=self.handoff_id))]
        if source.cleanup_done:
            return [self._complete()]
        return []

    def _begin_cleanup(self) -> list[IssuedHandoffAction]:
        if self.mode is CoordinatorMode.COMPLETE:
            return []
        self.mode = CoordinatorMode.CLEANING_UP
        return self._advance_cleanup()

    def _advance_cleanup(self) -> list[IssuedHandoffAction]:
        source = self.source
        destination = self.destination
        actions = []
        if source.submit_issued and not source.cancel_issued and not source.cleanup_done:
            source.cancel_issued = True
            actions.append(self._issue(CancelSource(handoff_id=self.handoff_id)))
        if (
            destination.reserve_issued
            and not destination.cancel_issued
            and not destination.cleanup_done
        ):
            destination.cancel_issued = True
            actions.append(self._issue(CancelDestination(handoff_id=self.handoff_id)))
        if (
            not actions
            and (not source.submit_issued or source.cleanup_done)
            and (not destination.reserve_issued or destination.cleanup_done)
        ):
            actions.append(self._complete())
        return actions

    def _issue_submit_prefill(self) -> IssuedHandoffAction:
        self.source.submit_issued = True
        return self._issue(SubmitPrefill(handoff_id=self.handoff_id))

    def _issue_reserve_destination(self) -> IssuedHandoffAction:
        self.destination.reserve_issued = True
        return self._issue(ReserveDestination(handoff_id=self.handoff_id))

    def _complete(self) -> IssuedHandoffAction:
        self.completion = (
            HandoffCompletion.CANCELED
            if self.mode is CoordinatorMode.CLEANING_UP
            else HandoffCompletion.SUCCESS
        )
        self.mode = CoordinatorMode.COMPLETE
        issued = self._issue(Complete(handoff_id=self.handoff_id))
        self.actions.issued.clear()
        self.actions.outcomes.clear()
        return issued

    def _issue(self, action: HandoffAction) -> IssuedHandoffAction:
        journal = self.actions
        action_id = journal.next_id
        journal.next_id = action_id + 1
        journal.issued[action_id] = action
        return IssuedHandoffAction(id=action_id, action=action)

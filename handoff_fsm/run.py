"""HandoffRun: one handoff's mutable state, and the chart's effects on it.

Rule kept here: this is the object the chart acts on. It implements
:class:`~handoff_fsm.chart.HandoffEffects` (validators that may raise before
anything changes, then plain, replayable effects) and holds everything those
effects read or write: the chart state, the journal, the stored payloads. The
engines' steps receive a run, never the public coordinator, so no chart effect is
reachable from :class:`~handoff_fsm.HandoffCoordinator`'s API. Nothing here
decides control flow: the chart does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple
from uuid import UUID

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error
from handoff_fsm.journal import ActionJournal
from handoff_fsm.model import (
    ACTION_TYPES,
    ActivateDestination,
    CancelDestination,
    CancelSource,
    Complete,
    DestinationReserved,
    HandoffAction,
    HandoffActionOutcome,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferTimingMode,
    builder,
    transfer_delay_ms,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)

if TYPE_CHECKING:
    from handoff_fsm.engines.state import EngineState

_BUILD: Final[dict[type[Any], Callable[[Mapping[str, Any]], Any]]] = {
    kind: builder(kind) for kind in ACTION_TYPES
}
_ISSUED: Final = builder(IssuedHandoffAction)
_START_TRANSFER: Final = builder(StartTransfer)
_COMPLETE: Final = builder(Complete)

TimingInputs = tuple[bool, int, int | None, float | None, int]
"""(full-prompt mode?, full_prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes).

The held source's timing, unpacked: a live handoff should not keep a model alive."""


class RunCheckpoint(NamedTuple):
    """A run's changeable part at one moment (see :meth:`HandoffRun.checkpoint`)."""

    next_id: int
    issued: dict[int, type[HandoffAction]]
    outcomes: dict[int, HandoffActionOutcome]
    timing: TimingInputs | None
    tokens: int | None


class HandoffRun:
    """The state of one handoff and the effects the chart performs on it."""

    __slots__ = ("fallback", "handoff_id", "journal", "order", "state", "timing", "tokens")

    handoff_id: UUID
    order: HandoffOrder
    fallback: float
    journal: ActionJournal
    state: EngineState
    timing: TimingInputs | None
    tokens: int | None

    def __init__(  # noqa: PLR0917 - the run's fields, in order
        self,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback: float,
        journal: ActionJournal,
        timing: TimingInputs | None = None,
        tokens: int | None = None,
    ) -> None:
        self.handoff_id = handoff_id
        self.order = order
        self.fallback = fallback
        self.journal = journal
        self.timing = timing
        self.tokens = tokens
        # ``state`` is set by the engine that runs this handoff.

    # ------------------------------------------------------------------ validators

    def validate_transfer_timing(self, fact: SourceHeld) -> None:
        try:
            validate_transfer_timing(fact.transfer_timing)
        except HandoffError as error:
            raise self.with_context(error) from None

    def validate_scheduled_delay(self, fact: SourceHeld | DestinationReserved) -> None:
        """a976b2bf: the delay ``StartTransfer`` is about to carry must be finite and >= 0.

        ``fact`` completes the pair (held source, reserved destination) that starts the
        transfer; the delay is computed as :meth:`transfer_delay_ms` would with it stored.
        """
        timing: TimingInputs | None
        if isinstance(fact, SourceHeld):
            timing, tokens = timing_inputs(fact.transfer_timing), self.tokens
        else:
            timing, tokens = self.timing, fact.transferable_prompt_tokens
        delay = scheduled_delay_ms(timing, tokens, self.fallback)
        try:
            validate_transfer_delay_ms(delay)
        except HandoffError as error:
            raise self.with_context(error) from None

    def reject_source_held_before_submit(self) -> None:
        self._reject("reject_source_held_before_submit")

    def reject_destination_reserved_before_accept(self) -> None:
        self._reject("reject_destination_reserved_before_accept")

    def reject_transfer_completed_before_scheduled(self) -> None:
        self._reject("reject_transfer_completed_before_scheduled")

    # ------------------------------------------------------------------ payloads

    def store_transfer_timing(self, fact: SourceHeld) -> None:
        self.timing = timing_inputs(fact.transfer_timing)

    def store_transferable_tokens(self, fact: DestinationReserved) -> None:
        self.tokens = fact.transferable_prompt_tokens

    # ------------------------------------------------------------------ actions

    def issue(self, kind: type[HandoffAction]) -> IssuedHandoffAction:
        """Issue the action of ``kind`` (one of :data:`~handoff_fsm.chart.PLAIN_ISSUES`'
        kinds, which carry only the handoff id): the next id, the kind remembered.

        The compiled engine's steps call this directly with the kind their chart state
        decided; both values are built by their class's validator (see
        :mod:`handoff_fsm.model`)."""
        action = _BUILD[kind]({"handoff_id": self.handoff_id})
        return _ISSUED({"id": self.journal.allot(kind), "action": action})

    def issue_submit_prefill(self) -> IssuedHandoffAction:
        return self.issue(SubmitPrefill)

    def issue_reserve_destination(self) -> IssuedHandoffAction:
        return self.issue(ReserveDestination)

    def issue_start_transfer(self) -> IssuedHandoffAction:
        values = {"handoff_id": self.handoff_id, "delay_ms": self.transfer_delay_ms()}
        action = _START_TRANSFER(values)
        return _ISSUED({"id": self.journal.allot(StartTransfer), "action": action})

    def issue_activate_destination(self) -> IssuedHandoffAction:
        return self.issue(ActivateDestination)

    def issue_release_source(self) -> IssuedHandoffAction:
        return self.issue(ReleaseSource)

    def issue_cancel_source(self) -> IssuedHandoffAction:
        return self.issue(CancelSource)

    def issue_cancel_destination(self) -> IssuedHandoffAction:
        return self.issue(CancelDestination)

    def issue_complete(self) -> IssuedHandoffAction:
        action = _COMPLETE({"handoff_id": self.handoff_id})
        journal = self.journal
        issued = _ISSUED({"id": journal.allot(Complete), "action": action})
        journal.clear()
        return issued

    # ------------------------------------------------------------------ derived values

    def transfer_delay_ms(self) -> float:
        """The delay of this handoff's ``StartTransfer``."""
        return scheduled_delay_ms(self.timing, self.tokens, self.fallback)

    def rebuild(self, kind: type[HandoffAction]) -> HandoffAction:
        """The action of this kind this handoff issues (actions are a function of its data)."""
        if kind is StartTransfer:
            return StartTransfer.issued_with_delay(self.handoff_id, self.transfer_delay_ms())
        return kind.issued_for(self.handoff_id)

    def timing_model(self) -> HandoffTransferTiming | None:
        """The stored timing as the value the source published (``None`` before it was held)."""
        if self.timing is None:
            return None
        full_prompt, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes = self.timing
        mode = (
            TransferTimingMode.FULL_PROMPT
            if full_prompt
            else TransferTimingMode.DESTINATION_MISSING
        )
        return HandoffTransferTiming(
            mode, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes
        )

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self) -> RunCheckpoint:
        """What the effects may change (journal, stored payloads), for :meth:`rollback`.

        The interpreted engine takes one before each step: the framework runs code it
        does not own (listeners) between effects, and a step must be all or nothing."""
        journal = self.journal
        return RunCheckpoint(
            journal.next_id, dict(journal.issued), dict(journal.outcomes), self.timing, self.tokens
        )

    def replica(self) -> HandoffRun:
        """An independent run in the same state, sharing only immutable values (the ids,
        the stored payloads, the engine state when it is a compiled table's entry; the
        caller sets :attr:`state` for an engine whose state is live)."""
        journal = self.journal
        copy = HandoffRun(
            self.handoff_id, self.order, self.fallback, ActionJournal(journal.next_id)
        )
        copy.journal.issued = dict(journal.issued)
        copy.journal.outcomes = dict(journal.outcomes)
        copy.timing, copy.tokens, copy.state = self.timing, self.tokens, self.state
        return copy

    def rollback(self, checkpoint: object) -> None:
        assert isinstance(checkpoint, RunCheckpoint)
        journal = self.journal
        journal.next_id = checkpoint.next_id
        journal.issued = checkpoint.issued
        journal.outcomes = checkpoint.outcomes
        self.timing = checkpoint.timing
        self.tokens = checkpoint.tokens

    # ------------------------------------------------------------------ errors

    def _reject(self, validator: str) -> None:
        rejection = REJECTIONS[validator]
        raise self.error(
            rejection.code, f"{rejection.message} (state: {', '.join(self.state.leaves)})"
        )

    def error(self, code: HandoffErrorCode, message: str) -> HandoffError:
        return handoff_error(code, message, handoff_id=self.handoff_id, state=self.state.leaves)

    def with_context(self, error: HandoffError) -> HandoffError:
        error.handoff_id = self.handoff_id
        error.state = self.state.leaves
        return error


def scheduled_delay_ms(timing: TimingInputs | None, tokens: int | None, fallback: float) -> float:
    """The reference's ``delay_ms(transferable tokens).unwrap_or(fallback)``."""
    if timing is None or tokens is None:  # excluded by the chart and by restore()
        raise AssertionError("transfer started without timing or transferable tokens")
    full_prompt, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes = timing
    delay = transfer_delay_ms(
        prompt_tokens if full_prompt else tokens,
        kv_bytes_per_token,
        bandwidth_gb_s,
        state_bytes,
    )
    return fallback if delay is None else delay


def timing_inputs(timing: HandoffTransferTiming) -> TimingInputs:
    return (
        timing.mode is TransferTimingMode.FULL_PROMPT,
        timing.full_prompt_tokens,
        timing.kv_bytes_per_token,
        timing.bandwidth_gb_s,
        timing.state_bytes,
    )

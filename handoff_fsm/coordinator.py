"""HandoffCoordinator: the public facade over the chart and the journal.

Rule kept here: every public call either returns the actions the chart issued,
or raises and leaves the coordinator exactly as it was. All checks (types,
handoff id, journal, validators) run before the first change; effects never
fail. This module knows nothing of I/O, clocks or threads, and decides no
control flow: the chart does (through the compiled table, or the framework's
interpreter with ``engine="statechart"``).
"""

from __future__ import annotations

import math
from typing import Literal
from uuid import UUID

from pydantic import TypeAdapter

from handoff_fsm.chart import (
    ACKNOWLEDGEMENTS,
    FACT_EVENTS,
    REJECTIONS,
    START,
    HandoffChart,
)
from handoff_fsm.engines.compiled import ChartState, compiled_chart
from handoff_fsm.engines.statechart import LiveChartState, live_state
from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error
from handoff_fsm.journal import ActionJournal
from handoff_fsm.model import (
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
    ReleaseSource,
    ReserveDestination,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TransferTimingMode,
)
from handoff_fsm.snapshot import HandoffSnapshot, RecordedOutcome
from handoff_fsm.timing import transfer_delay_ms, validate_transfer_timing

Engine = Literal["compiled", "statechart"]

_UUID = TypeAdapter(UUID)
_ORDER = TypeAdapter(HandoffOrder)
_FLOAT = TypeAdapter(float, config={"strict": True})
_FACT_EVENT: dict[type, str] = dict(FACT_EVENTS)
_REJECTION_MESSAGES = {
    "reject_source_held_before_submit": "source held before prefill submission was acknowledged",
    "reject_destination_reserved_before_accept": (
        "destination reserved before ownership was accepted"
    ),
    "reject_transfer_completed_before_scheduled": "transfer completed before it was scheduled",
}


class HandoffCoordinator:
    """Coordinates one prefill-to-decode handoff: facts and outcomes in, actions out.

    ``engine="compiled"`` (default) runs the table compiled from the chart;
    ``engine="statechart"`` runs python-statemachine's interpreter on the same
    chart (slow; for debugging and live diagrams). Both behave identically.
    """

    __slots__ = ("_fallback", "_handoff_id", "_journal", "_order", "_state", "_timing", "_tokens")

    _handoff_id: UUID
    _order: HandoffOrder
    _fallback: float
    _journal: ActionJournal
    _state: ChartState | LiveChartState
    _timing: _TimingInputs | None
    """The held source's timing, unpacked: a live coordinator should not keep a model alive."""
    _tokens: int | None

    def __init__(
        self,
        handoff_id: UUID | str,
        order: HandoffOrder | str,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        engine: Engine = "compiled",
    ) -> None:
        self._handoff_id = (
            handoff_id if type(handoff_id) is UUID else _UUID.validate_python(handoff_id)
        )
        self._order = order if type(order) is HandoffOrder else _ORDER.validate_python(order)
        self._fallback = _checked_fallback(fallback_transfer_delay_ms, self._handoff_id)
        self._journal = ActionJournal()
        self._timing = None
        self._tokens = None
        initial = _initial_state(self._order)
        self._state = initial if engine == "compiled" else live_state(self, engine, initial)

    # ------------------------------------------------------------------ public API

    @property
    def handoff_id(self) -> UUID:
        return self._handoff_id

    @property
    def order(self) -> HandoffOrder:
        return self._order

    @property
    def fallback_transfer_delay_ms(self) -> float:
        return self._fallback

    @property
    def engine(self) -> Engine:
        return "compiled" if type(self._state) is ChartState else "statechart"

    @property
    def chart(self) -> HandoffChart | None:
        """The live python-statemachine chart with ``engine="statechart"`` (``None`` otherwise).

        For debugging: attach listeners (``chart.add_listener``) or draw the live
        configuration. Sending it events directly bypasses the coordinator's checks.
        """
        state = self._state
        return state.chart if isinstance(state, LiveChartState) else None

    @property
    def is_complete(self) -> bool:
        """True once ``Complete`` was issued; every later input is answered with no actions."""
        return self._state.is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        """``Success``, ``Canceled``, or ``None`` while the handoff is still running."""
        return self._state.completion

    @property
    def state(self) -> tuple[str, ...]:
        """The chart's active atomic states, e.g. ``("held", "accepted", "transfer_idle")``."""
        return self._state.leaves

    def start(self) -> list[IssuedHandoffAction]:
        """Engage the first owner (by order). A second ``start`` issues nothing."""
        step = self._state.steps.get(START)
        return step(self, None) if step is not None else []

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """Apply a fact; returns the actions it causes (possibly none)."""
        event = _FACT_EVENT.get(type(fact))
        if event is None:
            raise TypeError(
                "on_fact() takes a HandoffFact (SourceHeld, DestinationReserved, "
                f"TransferCompleted, Failed, TimedOut, Canceled), not {type(fact).__name__}"
            )
        handoff_id = fact.handoff_id
        if handoff_id is not self._handoff_id and handoff_id != self._handoff_id:
            raise self._error(
                HandoffErrorCode.FOREIGN_HANDOFF,
                f"fact belongs to a different handoff: {type(fact).__name__} for "
                f"{handoff_id}, this coordinator is {self._handoff_id}",
            )
        step = self._state.steps.get(event)
        return step(self, fact) if step is not None else []

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """Apply the outcome of an issued action; duplicates are no-ops, contradictions errors."""
        if type(action_id) is not int:
            raise TypeError(f"action_id must be an int, not {type(action_id).__name__}")
        if type(outcome) is not HandoffActionOutcome:
            raise TypeError(f"outcome must be a HandoffActionOutcome, not {type(outcome).__name__}")
        state = self._state
        if state.is_complete:
            return []  # late acknowledgements after completion are ignored
        try:
            event = self._journal.acknowledge(action_id, outcome)
        except HandoffError as error:
            raise self._with_context(error) from None
        if event is None:
            return []  # an exact duplicate
        step = state.steps.get(event)
        return step(self, None) if step is not None else []

    def snapshot(self) -> HandoffSnapshot:
        """Everything needed to continue this handoff later (see :meth:`restore`)."""
        journal = self._journal
        fields = self._state.fields
        return HandoffSnapshot(
            handoff_id=self._handoff_id,
            order=self._order,
            fallback_transfer_delay_ms=self._fallback,
            state=self._state.leaves,
            source_engaged=fields.source_engaged,
            destination_engaged=fields.destination_engaged,
            completion=fields.completion,
            transfer_timing=None if self._timing is None else _timing_model(self._timing),
            transferable_prompt_tokens=self._tokens,
            next_action_id=journal.next_id,
            issued=tuple(
                IssuedHandoffAction.trusted(i, self._rebuild(kind))
                for i, kind in sorted(journal.issued.items())
            ),
            outcomes=tuple(
                RecordedOutcome(action_id=i, outcome=o) for i, o in sorted(journal.outcomes.items())
            ),
        )

    @classmethod
    def restore(
        cls, snapshot: HandoffSnapshot, *, engine: Engine = "compiled"
    ) -> HandoffCoordinator:
        """A coordinator that continues exactly where ``snapshot`` was taken."""
        if type(snapshot) is not HandoffSnapshot:
            raise TypeError(f"restore() takes a HandoffSnapshot, not {type(snapshot).__name__}")
        chart_state = _check_snapshot(snapshot)
        self = cls.__new__(cls)
        self._handoff_id = snapshot.handoff_id
        self._order = snapshot.order
        self._fallback = snapshot.fallback_transfer_delay_ms
        self._journal = ActionJournal(snapshot.next_action_id)
        self._journal.issued = {issued.id: type(issued.action) for issued in snapshot.issued}
        self._journal.outcomes = {rec.action_id: rec.outcome for rec in snapshot.outcomes}
        timing = snapshot.transfer_timing
        self._timing = None if timing is None else _timing_inputs(timing)
        self._tokens = snapshot.transferable_prompt_tokens
        for issued in snapshot.issued:
            if issued.action != self._rebuild(type(issued.action)):
                raise handoff_error(
                    HandoffErrorCode.INVALID_SNAPSHOT,
                    f"invalid snapshot: action {issued.id} ({issued.action!r}) is not the "
                    "action this handoff issues there",
                    handoff_id=snapshot.handoff_id,
                    state=snapshot.state,
                )
        self._state = chart_state if engine == "compiled" else live_state(self, engine, chart_state)
        return self

    def __repr__(self) -> str:
        return (
            f"HandoffCoordinator({self._handoff_id}, {self._order.value}, "
            f"state={list(self.state)}, completion={self.completion})"
        )

    # ------------------------------------------------------------------ chart effects
    # The chart (chart.HandoffEffects) calls these; none of them may fail except the
    # validators, which run before anything changes.

    def validate_transfer_timing(self, fact: SourceHeld) -> None:
        try:
            validate_transfer_timing(fact.transfer_timing)
        except HandoffError as error:
            raise self._with_context(error) from None

    def reject_source_held_before_submit(self) -> None:
        self._reject("reject_source_held_before_submit")

    def reject_destination_reserved_before_accept(self) -> None:
        self._reject("reject_destination_reserved_before_accept")

    def reject_transfer_completed_before_scheduled(self) -> None:
        self._reject("reject_transfer_completed_before_scheduled")

    def store_transfer_timing(self, fact: SourceHeld) -> None:
        self._timing = _timing_inputs(fact.transfer_timing)

    def store_transferable_tokens(self, fact: DestinationReserved) -> None:
        self._tokens = fact.transferable_prompt_tokens

    def issue_submit_prefill(self) -> IssuedHandoffAction:
        return self._journal.issue(SubmitPrefill.issued_for(self._handoff_id))

    def issue_reserve_destination(self) -> IssuedHandoffAction:
        return self._journal.issue(ReserveDestination.issued_for(self._handoff_id))

    def issue_start_transfer(self) -> IssuedHandoffAction:
        return self._journal.issue(
            StartTransfer.issued_with_delay(self._handoff_id, self._transfer_delay_ms())
        )

    def _transfer_delay_ms(self) -> float:
        """The reference's ``delay_ms(transferable tokens).unwrap_or(fallback)``."""
        timing = self._timing
        tokens = self._tokens
        if timing is None or tokens is None:  # excluded by the chart and by restore()
            raise AssertionError("transfer started without timing or transferable tokens")
        full_prompt, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes = timing
        delay = transfer_delay_ms(
            prompt_tokens if full_prompt else tokens,
            kv_bytes_per_token,
            bandwidth_gb_s,
            state_bytes,
        )
        return self._fallback if delay is None else delay

    def _rebuild(self, kind: type[HandoffAction]) -> HandoffAction:
        """The action of this kind this handoff issued (actions are a function of its data)."""
        if kind is StartTransfer:
            return StartTransfer.issued_with_delay(self._handoff_id, self._transfer_delay_ms())
        return kind.issued_for(self._handoff_id)

    def issue_activate_destination(self) -> IssuedHandoffAction:
        return self._journal.issue(ActivateDestination.issued_for(self._handoff_id))

    def issue_release_source(self) -> IssuedHandoffAction:
        return self._journal.issue(ReleaseSource.issued_for(self._handoff_id))

    def issue_cancel_source(self) -> IssuedHandoffAction:
        return self._journal.issue(CancelSource.issued_for(self._handoff_id))

    def issue_cancel_destination(self) -> IssuedHandoffAction:
        return self._journal.issue(CancelDestination.issued_for(self._handoff_id))

    def issue_complete(self) -> IssuedHandoffAction:
        issued = self._journal.issue(Complete.issued_for(self._handoff_id))
        self._journal.clear()
        return issued

    # ------------------------------------------------------------------ errors

    def _reject(self, validator: str) -> None:
        raise self._error(
            REJECTIONS[validator],
            f"{_REJECTION_MESSAGES[validator]} (state: {', '.join(self.state)})",
        )

    def _error(self, code: HandoffErrorCode, message: str) -> HandoffError:
        return handoff_error(code, message, handoff_id=self._handoff_id, state=self.state)

    def _with_context(self, error: HandoffError) -> HandoffError:
        error.handoff_id = self._handoff_id
        error.state = self.state
        return error


# ---------------------------------------------------------------------- helpers

_TimingInputs = tuple[bool, int, int | None, float | None, int]
"""(full-prompt mode?, full_prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes)."""


def _timing_inputs(timing: HandoffTransferTiming) -> _TimingInputs:
    return (
        timing.mode is TransferTimingMode.FULL_PROMPT,
        timing.full_prompt_tokens,
        timing.kv_bytes_per_token,
        timing.bandwidth_gb_s,
        timing.state_bytes,
    )


def _timing_model(inputs: _TimingInputs) -> HandoffTransferTiming:
    full_prompt, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes = inputs
    mode = TransferTimingMode.FULL_PROMPT if full_prompt else TransferTimingMode.DESTINATION_MISSING
    return HandoffTransferTiming(
        mode, prompt_tokens, kv_bytes_per_token, bandwidth_gb_s, state_bytes
    )


def _checked_fallback(value: object, handoff_id: UUID) -> float:
    """Improvement over the reference: an unusable fallback fails at construction."""
    number = value if type(value) is float else _FLOAT.validate_python(value)
    if not math.isfinite(number) or number < 0.0:
        raise handoff_error(
            HandoffErrorCode.INVALID_FALLBACK,
            f"invalid fallback transfer delay {number!r} ms (must be finite and >= 0)",
            handoff_id=handoff_id,
        )
    return number


_INITIAL: dict[HandoffOrder, ChartState] = {}


def _initial_state(order: HandoffOrder) -> ChartState:
    state = _INITIAL.get(order)
    if state is None:
        _INITIAL.update(compiled_chart().initial)
        state = _INITIAL[order]
    return state


def _check_snapshot(snapshot: HandoffSnapshot) -> ChartState:
    """The chart state a snapshot continues from; raises ``invalid_snapshot`` if it cannot."""

    def invalid(reason: str) -> HandoffError:
        return handoff_error(
            HandoffErrorCode.INVALID_SNAPSHOT,
            f"invalid snapshot: {reason}",
            handoff_id=snapshot.handoff_id,
            state=snapshot.state,
        )

    fields = snapshot.chart_fields()
    chart_state = compiled_chart().lookup(snapshot.state, fields)
    if chart_state is None:
        raise invalid(f"{list(snapshot.state)} with {fields} is not a reachable chart state")
    fallback = snapshot.fallback_transfer_delay_ms
    if not math.isfinite(fallback) or fallback < 0.0:
        raise invalid(f"fallback transfer delay {fallback!r} ms is not finite and >= 0")
    leaves = set(snapshot.state)
    if leaves & {"held", "releasing", "released"} and snapshot.transfer_timing is None:
        raise invalid("the source is held but no transfer timing is recorded")
    if leaves & {"reserved", "activating", "activated"} and (
        snapshot.transferable_prompt_tokens is None
    ):
        raise invalid("the destination is reserved but no transferable tokens are recorded")
    issued = {}
    for entry in snapshot.issued:
        if entry.id >= snapshot.next_action_id or entry.id in issued:
            raise invalid(f"action id {entry.id} is duplicated or not below next_action_id")
        if entry.action.handoff_id != snapshot.handoff_id:
            raise invalid(f"action {entry.id} belongs to handoff {entry.action.handoff_id}")
        if type(entry.action) not in ACKNOWLEDGEMENTS:
            raise invalid(f"action {entry.id} ({type(entry.action).__name__}) cannot be pending")
        issued[entry.id] = entry.action
    seen = set()
    for record in snapshot.outcomes:
        action = issued.get(record.action_id)
        if action is None or record.action_id in seen:
            raise invalid(f"outcome for unknown or repeated action {record.action_id}")
        ack = ACKNOWLEDGEMENTS[type(action)]
        acceptable = (
            ack.may_fail if record.outcome.is_failed else record.outcome.kind in ack.accepted
        )
        if not acceptable:
            raise invalid(f"outcome {record.outcome} cannot acknowledge {type(action).__name__}")
        seen.add(record.action_id)
    return chart_state

"""Scripted lifecycles: a real :class:`HandoffCoordinator` driven step by step, every message kept.

Rule kept here: a lifecycle diagram shows what the coordinator *did*, never
what someone believes it does. A :class:`Scenario` is only the environment's
side (start it, deliver this outcome, report this fact, lose this
acknowledgement); the action ids, delays, states and completion in the
recorded :class:`Lifecycle` all come from running the coordinator.

Who talks to whom is read off the chart too: an action goes to the owner
whose region issues it (``SubmitPrefill`` is entered in the ``source``
region, so it goes to the Source); a fact comes from the owner whose region
handles its event, or from the Caller when the chart handles it at the top
level (``Failed``, ``TimedOut``, ``Canceled``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cache
from typing import Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED, FACT_EVENTS, START
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.diagrams.model import ChartModel, EdgeKind, describe_chart
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    DestinationReserved,
    Failed,
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
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)

HANDOFF_ID: Final = UUID("6f1c2a4e-0000-4000-8000-000000000001")
"""The handoff every scripted lifecycle runs (fixed, so the diagrams are reproducible)."""


class Participant(StrEnum):
    """The lifelines of a lifecycle diagram, left to right."""

    CALLER = "Caller"
    COORDINATOR = "Coordinator"
    SOURCE = "Source"
    DESTINATION = "Destination"
    TRANSFER = "Transfer"


PARTICIPANTS: Final = tuple(Participant)


# ------------------------------------------------------------------ the script


@dataclass(frozen=True, slots=True)
class Start:
    """The caller calls ``start()``."""


@dataclass(frozen=True, slots=True)
class Report:
    """A fact happens (its owner, or the caller, reports it)."""

    fact: HandoffFact


@dataclass(frozen=True, slots=True)
class Ack:
    """The owner acknowledges the latest issued action of this kind with ``outcome``."""

    action: type[HandoffAction]
    outcome: HandoffActionOutcome


@dataclass(frozen=True, slots=True)
class Lose:
    """The owner sends ``outcome`` for the latest action of this kind; it never arrives."""

    action: type[HandoffAction]
    outcome: HandoffActionOutcome


ScriptStep = Start | Report | Ack | Lose


@dataclass(frozen=True, slots=True)
class Scenario:
    """One environment script; :func:`run_scenario` plays it against a real coordinator."""

    name: str
    """File stem of its diagrams (``lifecycle_<name>``)."""
    title: str
    order: HandoffOrder
    steps: tuple[ScriptStep, ...]
    summary: str
    fallback_transfer_delay_ms: float = 0.0


# ------------------------------------------------------------------ the record


class MessageKind(StrEnum):
    CALL = "call"
    """Caller -> Coordinator: ``start()``."""
    FACT = "fact"
    ACTION = "action"
    """Coordinator -> owner (or Caller, for ``Complete``): an issued action."""
    OUTCOME = "outcome"
    LOST = "lost"
    """An acknowledgement that never reached the coordinator."""
    STATE = "state"
    """Not a message: the coordinator's state after an input (drawn as a note)."""


@dataclass(frozen=True, slots=True)
class Message:
    sender: Participant
    receiver: Participant
    kind: MessageKind
    text: str
    event: str | None = None
    """For inputs: the chart event it became (``None`` when the chart ignored it)."""
    action: str | None = None
    """For issued actions: the action's type name (``SubmitPrefill``)."""


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """What running a :class:`Scenario` produced."""

    scenario: Scenario
    messages: tuple[Message, ...]
    completion: HandoffCompletion | None
    final_state: tuple[str, ...]
    issued: tuple[IssuedHandoffAction, ...]


# ------------------------------------------------------------------ owners, from the chart


def _owner_of_region(region: str | None) -> Participant:
    if region is None:
        return Participant.CALLER
    for participant in (Participant.SOURCE, Participant.DESTINATION, Participant.TRANSFER):
        if region.startswith(participant.value.lower()):
            return participant
    raise ValueError(f"region {region!r} belongs to no participant")


def action_owner(action: type[HandoffAction], model: ChartModel | None = None) -> Participant:
    """Who receives ``action``: the owner of the region whose state issues it on entry."""
    model = model or describe_chart()
    for state in model.states:
        if action.__name__ in state.entry_actions:
            return _owner_of_region(state.region)
    raise ValueError(f"no state of the chart issues {action.__name__}")


def fact_sender(fact: type[HandoffFact], model: ChartModel | None = None) -> Participant:
    """Who reports ``fact``: the owner of the region that handles its event, else the Caller."""
    model = model or describe_chart()
    event = FACT_EVENTS[fact]
    regions = {
        edge.region for edge in model.edges if event in edge.events and edge.kind is EdgeKind.EVENT
    }
    if len(regions) != 1:
        raise ValueError(f"event {event!r} is handled in {len(regions)} regions: {regions}")
    return _owner_of_region(regions.pop())


# ------------------------------------------------------------------ words


def _number(value: float) -> str:
    return repr(value) if value != int(value) else str(int(value))


def fact_text(fact: HandoffFact) -> str:
    """A fact as a message label, with the payload that matters to the handoff."""
    name = type(fact).__name__
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        parts = [timing.mode.value, f"{timing.full_prompt_tokens} tokens"]
        if timing.kv_bytes_per_token is not None:
            parts.append(f"{timing.kv_bytes_per_token} B/token")
        if timing.bandwidth_gb_s is not None:
            parts.append(f"{_number(timing.bandwidth_gb_s)} GB/s")
        return f"{name}({', '.join(parts)})"
    if isinstance(fact, DestinationReserved):
        return f"{name}({fact.transferable_prompt_tokens} transferable tokens)"
    return name


def action_text(issued: IssuedHandoffAction, completion: HandoffCompletion | None) -> str:
    action = issued.action
    text = f"#{issued.id} {type(action).__name__}"
    if isinstance(action, StartTransfer):
        text += f"(delay_ms={_number(action.delay_ms)})"
    if completion is not None and type(action).__name__ == "Complete":
        text += f" ({completion.value})"
    return text


# ------------------------------------------------------------------ running


def _with_event(message: Message, event: str) -> Message:
    return replace(message, event=event)


class ScriptError(RuntimeError):
    """The script does not fit what the coordinator did (e.g. no such action was issued)."""


def run_scenario(scenario: Scenario) -> Lifecycle:
    """Play ``scenario`` against a real coordinator and record every message."""
    model = describe_chart()
    coordinator = HandoffCoordinator(
        HANDOFF_ID, scenario.order, scenario.fallback_transfer_delay_ms
    )
    messages: list[Message] = []
    issued: list[IssuedHandoffAction] = []
    latest: dict[type, IssuedHandoffAction] = {}

    def record_actions(actions: list[IssuedHandoffAction]) -> None:
        for action in actions:
            issued.append(action)
            latest[type(action.action)] = action
            kind = type(action.action)
            receiver = (
                Participant.CALLER if kind not in ACKNOWLEDGEMENTS else action_owner(kind, model)
            )
            messages.append(
                Message(
                    Participant.COORDINATOR,
                    receiver,
                    MessageKind.ACTION,
                    action_text(action, coordinator.completion),
                    action=kind.__name__,
                )
            )

    def record_state(before: tuple[str, ...], complete_before: bool) -> None:
        if coordinator.state != before or coordinator.is_complete != complete_before:
            messages.append(
                Message(
                    Participant.COORDINATOR,
                    Participant.COORDINATOR,
                    MessageKind.STATE,
                    ", ".join(coordinator.state),
                )
            )

    for step in scenario.steps:
        before, complete_before = coordinator.state, coordinator.is_complete
        if isinstance(step, Start):
            actions = coordinator.start()
            moved = bool(actions) or coordinator.state != before
            messages.append(
                Message(
                    Participant.CALLER,
                    Participant.COORDINATOR,
                    MessageKind.CALL,
                    "start()",
                    START if moved else None,
                )
            )
            record_actions(actions)
        elif isinstance(step, Report):
            sender = fact_sender(type(step.fact), model)
            index = len(messages)
            messages.append(
                Message(sender, Participant.COORDINATOR, MessageKind.FACT, fact_text(step.fact))
            )
            actions = coordinator.on_fact(step.fact)
            if coordinator.state != before or actions:
                messages[index] = _with_event(messages[index], FACT_EVENTS[type(step.fact)])
            record_actions(actions)
        else:
            target = latest.get(step.action)
            if target is None:
                raise ScriptError(f"{scenario.name}: no {step.action.__name__} was issued")
            owner = action_owner(step.action, model)
            text = f"#{target.id} {step.outcome}"
            if isinstance(step, Lose):
                messages.append(
                    Message(owner, Participant.COORDINATOR, MessageKind.LOST, f"{text} (lost)")
                )
                continue
            index = len(messages)
            messages.append(Message(owner, Participant.COORDINATOR, MessageKind.OUTCOME, text))
            actions = coordinator.on_action_outcome(target.id, step.outcome)
            if coordinator.state != before or actions:
                event = (
                    ACTION_FAILED if step.outcome.is_failed else ACKNOWLEDGEMENTS[step.action].event
                )
                messages[index] = _with_event(messages[index], event)
            elif complete_before:
                messages[index] = replace(messages[index], text=f"{text} (late, ignored)")
            record_actions(actions)
        record_state(before, complete_before)
    return Lifecycle(
        scenario=scenario,
        messages=tuple(messages),
        completion=coordinator.completion,
        final_state=coordinator.state,
        issued=tuple(issued),
    )


# ------------------------------------------------------------------ the five lifecycles

_TIMING = HandoffTransferTiming(
    mode=TransferTimingMode.FULL_PROMPT,
    full_prompt_tokens=2048,
    kv_bytes_per_token=65536,
    bandwidth_gb_s=10.0,
)
"""vLLM-like: the whole prompt's KV cache moves (2048 tokens x 64 KiB at 10 GB/s)."""

_MISSING_TIMING = HandoffTransferTiming(
    mode=TransferTimingMode.DESTINATION_MISSING,
    full_prompt_tokens=2048,
    kv_bytes_per_token=65536,
    bandwidth_gb_s=10.0,
)
"""SGLang-like: only the tokens the destination lacks move."""

_OK = HandoffActionOutcome
_HELD = Report(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=_TIMING))
_RESERVED = Report(DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=2048))
_TRANSFERRED = Report(TransferCompleted(handoff_id=HANDOFF_ID))
_TIMED_OUT = Report(TimedOut(handoff_id=HANDOFF_ID))

_SOURCE_FIRST_UNTIL_SCHEDULED: tuple[ScriptStep, ...] = (
    Start(),
    Ack(SubmitPrefill, _OK.SUBMITTED),
    _HELD,
    Ack(ReserveDestination, _OK.ACCEPTED),
    _RESERVED,
    Ack(StartTransfer, _OK.SCHEDULED),
)

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        name="source_first_success",
        title="SourceFirst success (vLLM)",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(
            *_SOURCE_FIRST_UNTIL_SCHEDULED,
            _TRANSFERRED,
            Ack(ActivateDestination, _OK.APPLIED),
            Ack(ReleaseSource, _OK.APPLIED),
        ),
        summary="The source is held first; the destination is reserved once the source is "
        "held; the whole prompt's KV cache moves; activation releases the source.",
    ),
    Scenario(
        name="destination_first_success",
        title="DestinationFirst success (SGLang)",
        order=HandoffOrder.DESTINATION_FIRST,
        steps=(
            Start(),
            Ack(ReserveDestination, _OK.ACCEPTED),
            Report(DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=512)),
            Ack(SubmitPrefill, _OK.SUBMITTED),
            Report(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=_MISSING_TIMING)),
            Ack(StartTransfer, _OK.SCHEDULED),
            _TRANSFERRED,
            Ack(ActivateDestination, _OK.APPLIED),
            Ack(ReleaseSource, _OK.NOOP),
        ),
        summary="The destination is reserved first and reports the 512 tokens it lacks; the "
        "prefill is submitted once it is reserved; only the missing tokens move.",
    ),
    Scenario(
        name="failure_before_first_ack",
        title="Failure before the first acknowledgement",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(
            Start(),
            Report(Failed(handoff_id=HANDOFF_ID)),
            Ack(CancelSource, _OK.APPLIED),
            Ack(SubmitPrefill, _OK.SUBMITTED),
        ),
        summary="A failure arrives while the prefill submission is unacknowledged: only the "
        "engaged source is canceled; the late acknowledgement after completion is ignored.",
    ),
    Scenario(
        name="timeout_after_transfer_scheduled",
        title="Time-out after the transfer is scheduled",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(
            *_SOURCE_FIRST_UNTIL_SCHEDULED,
            _TIMED_OUT,
            Ack(CancelSource, _OK.APPLIED),
            Ack(CancelDestination, _OK.APPLIED),
        ),
        summary="The deadline passes while the KV cache is in flight: both engaged owners are "
        "canceled and the handoff completes as Canceled once both confirm.",
    ),
    Scenario(
        name="lost_release_ack",
        title="Lost release acknowledgement",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(
            *_SOURCE_FIRST_UNTIL_SCHEDULED,
            _TRANSFERRED,
            Ack(ActivateDestination, _OK.APPLIED),
            Lose(ReleaseSource, _OK.APPLIED),
            _TIMED_OUT,
            Ack(CancelDestination, _OK.APPLIED),
            Ack(CancelSource, _OK.NOOP),
        ),
        summary="The source's release acknowledgement is lost, so the handoff cannot complete "
        "as Success; the caller's time-out cancels both owners (the source answers Noop: it "
        "was already released) and the handoff completes as Canceled.",
    ),
)
"""The lifecycles every review shows, in order."""


@cache
def lifecycles() -> tuple[Lifecycle, ...]:
    """Every scenario of :data:`SCENARIOS`, run once per process."""
    return tuple(run_scenario(scenario) for scenario in SCENARIOS)

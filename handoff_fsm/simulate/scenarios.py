"""Scripted lifecycles: each scenario is an environment script that becomes a trace, then a drawing.

Rule kept here: a lifecycle diagram shows what the coordinator *did*, never
what someone believes it does, and every lifecycle is drawn the one way
(:func:`~handoff_fsm.io.lifecycle.trace_lifecycle`). A :class:`Scenario`
is only the environment's side (start it, report this fact, acknowledge the
latest action of this kind with this outcome); :func:`scenario_trace` plays
it against a real coordinator only to learn the action ids its
acknowledgements must quote, and writes the inputs as a ``handoff-fsm
replay`` trace. The diagram is then drawn from that trace, exactly as
``handoff-fsm lifecycle`` draws any trace, so the committed traces
(``diagrams/lifecycle_<name>.jsonl``) reproduce the committed figures.

A message the environment loses is simply absent from the trace: the drawing
shows the action as never acknowledged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Final
from uuid import UUID

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.errors import HandoffError
from handoff_fsm.io.inputs import Input
from handoff_fsm.io.lifecycle import Lifecycle, trace_lifecycle
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    DestinationReserved,
    Failed,
    HandoffAction,
    HandoffActionOutcome,
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


ScriptStep = Start | Report | Ack


@dataclass(frozen=True, slots=True)
class Scenario:
    """One environment script; :func:`scenario_trace` turns it into a trace."""

    name: str
    """File stem of its diagrams and trace (``lifecycle_<name>``); the trace's coordinator key."""
    title: str
    order: HandoffOrder
    steps: tuple[ScriptStep, ...]
    summary: str
    fallback_transfer_delay_ms: float = 0.0


class ScriptError(RuntimeError):
    """The script does not fit what the coordinator did (e.g. no such action was issued)."""


def scenario_trace(scenario: Scenario) -> tuple[str, ...]:
    """The scenario as ``handoff-fsm replay`` lines (``new``, then one line per step).

    A real coordinator runs alongside to learn which id each acknowledgement
    quotes; an input it rejects stays in the trace (the drawing shows the rejection).
    """
    key = scenario.name
    coordinator = HandoffCoordinator(
        HANDOFF_ID, scenario.order, scenario.fallback_transfer_delay_ms
    )
    lines = [
        {
            "coordinator": key,
            "op": "new",
            "handoff_id": str(HANDOFF_ID),
            "order": scenario.order.value,
            "fallback_transfer_delay_ms": scenario.fallback_transfer_delay_ms,
        }
    ]
    latest: dict[type, IssuedHandoffAction] = {}
    for step in scenario.steps:
        if isinstance(step, Start):
            op = Input.START
        elif isinstance(step, Report):
            op = Input("fact", fact=step.fact)
        else:
            target = latest.get(step.action)
            if target is None:
                raise ScriptError(f"{scenario.name}: no {step.action.__name__} was issued")
            op = Input("outcome", action_id=target.id, outcome=step.outcome)
        lines.append(op.to_wire(key))
        try:
            if op.kind == "start":
                actions = coordinator.start()
            elif op.fact is not None:
                actions = coordinator.on_fact(op.fact)
            else:
                assert op.outcome is not None
                actions = coordinator.on_action_outcome(op.action_id, op.outcome)
        except HandoffError:
            actions = []
        latest.update({type(action.action): action for action in actions})
    return tuple(json.dumps(line) for line in lines)


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """A scenario, its trace, and the lifecycle drawn from that trace."""

    scenario: Scenario
    trace: tuple[str, ...]
    lifecycle: Lifecycle


def run_scenario(scenario: Scenario) -> ScenarioRun:
    """Write the scenario's trace and draw its lifecycle from it (the one drawing path)."""
    trace = scenario_trace(scenario)
    return ScenarioRun(scenario, trace, trace_lifecycle(trace, title=scenario.title))


# ------------------------------------------------------------------ the lifecycles

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
            # The source's Applied for ReleaseSource is lost: no line carries it.
            _TIMED_OUT,
            Ack(CancelDestination, _OK.APPLIED),
            Ack(CancelSource, _OK.NOOP),
        ),
        summary="The source's release acknowledgement is lost, so the handoff cannot complete "
        "as Success; the caller's time-out cancels both owners (the source answers Noop: it "
        "was already released) and the handoff completes as Canceled.",
    ),
    Scenario(
        name="reservation_failed",
        title="Reservation fails: an action answered Failed(..)",
        order=HandoffOrder.SOURCE_FIRST,
        steps=(
            Start(),
            Ack(SubmitPrefill, _OK.SUBMITTED),
            _HELD,
            Ack(ReserveDestination, _OK.failed("no free KV blocks")),
            Ack(CancelSource, _OK.APPLIED),
            Ack(CancelDestination, _OK.NOOP),
        ),
        summary="The destination answers the reservation with `Failed(..)` (it has no free KV "
        "blocks): the failed outcome starts cleanup like a failure fact, and both engaged "
        "owners are canceled (the destination answers Noop: it reserved nothing).",
    ),
    Scenario(
        name="destination_first_failure",
        title="DestinationFirst failure after a rejected SourceHeld",
        order=HandoffOrder.DESTINATION_FIRST,
        steps=(
            Start(),
            Ack(ReserveDestination, _OK.ACCEPTED),
            Report(DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=512)),
            Report(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=_MISSING_TIMING)),
            Ack(SubmitPrefill, _OK.SUBMITTED),
            Report(Failed(handoff_id=HANDOFF_ID)),
            Ack(CancelDestination, _OK.APPLIED),
            Ack(CancelSource, _OK.APPLIED),
        ),
        summary="The destination is engaged first; the source's `SourceHeld` overtakes its "
        "`Submitted` acknowledgement and is rejected (`source_held_before_submit`, nothing "
        "changes); then the source fails and the caller reports `Failed`: both engaged owners "
        "are canceled and the handoff completes as Canceled.",
    ),
)
"""The lifecycles every review shows, in order."""


@cache
def scenario_runs() -> tuple[ScenarioRun, ...]:
    """Every scenario of :data:`SCENARIOS`, traced and drawn once per process."""
    return tuple(run_scenario(scenario) for scenario in SCENARIOS)

"""A coordinator's lifecycle, read from a trace: the messages a sequence diagram shows.

Rule kept here: every lifecycle diagram, the committed ones included, is
drawn from a trace by :func:`trace_lifecycle` and nothing else. The trace is
replayed (:func:`~handoff_fsm.io.follow.follow`), and each line of the
followed coordinator becomes, in order: its input (start, a fact, an
outcome), the coordinator's answer (the actions it issued, or a rejection
with its code and message), and a note with the chart state when it changed.
The action ids, delays, states, rejections and the completion are what
replay produced; only the words are made here.

Who talks to whom is read off the chart: an action goes to the owner whose
region issues it (``SubmitPrefill`` is entered in the ``source`` region, so it
goes to the Source); a fact comes from the owner whose region handles its
event, or from the Caller when the chart handles it at the top level
(``Failed``, ``TimedOut``, ``Canceled``); an outcome comes from the owner of
the action it acknowledges.

Three things the trace does not say are derived, and marked as derived: an
action no line ever acknowledges is drawn as a crossed acknowledgement from
its owner ("never acknowledged"), just before the input that ended the phase
in which it was awaited (or at the end); an input that changed nothing is
marked "ignored" ("late" after completion); and a fact the chart turned down as
premature (``source_held_before_submit``, ...) that a later line delivers again and
the coordinator then applies was *held back*, as the session policy holds a fact
back until the acknowledgement it depends on comes (:mod:`handoff_fsm.policy`,
whose ``handoff-fsm simulate --trace`` traces record exactly that: the refused fact,
then the acknowledgement, then the same fact again): its reply is drawn as held
back, not as a rejection, and the later line as that fact applied.

Words are for a picture: a delay is rounded (``delay 13.4218 ms``), and
:attr:`Lifecycle.steps` keeps every step's exact values (``delay_ms=13.421772800000001``)
for a table beside it. Error messages and failure reasons are kept whole (up to
:data:`TEXT_LIMIT` characters, which only a hostile trace reaches); a drawing wraps
them, never cuts them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final
from uuid import UUID

from handoff_fsm.chart import ACKNOWLEDGEMENTS, FACT_EVENTS
from handoff_fsm.io.follow import MAX_STEPS, FollowedRun, FollowedStep, TraceLine, follow
from handoff_fsm.model import (
    Complete,
    DestinationReserved,
    HandoffAction,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
    SourceHeld,
    StartTransfer,
)
from handoff_fsm.policy import PREMATURE
from handoff_fsm.structure.describe import ChartModel, EdgeKind, describe_chart

TEXT_LIMIT: Final = 400
"""Characters of a message's free text (error messages, failure reasons) kept; only a
hostile trace has more (the rest is …)."""
DELAY_DECIMALS: Final = 4
"""Decimals of a delay in a picture (``13.4218 ms``); :attr:`Lifecycle.steps` has it exact."""


class Participant(StrEnum):
    """The lifelines of a lifecycle diagram, left to right."""

    CALLER = "Caller"
    COORDINATOR = "Coordinator"
    SOURCE = "Source"
    DESTINATION = "Destination"
    TRANSFER = "Transfer"


PARTICIPANTS: Final = tuple(Participant)


class MessageKind(StrEnum):
    CALL = "call"
    """Caller -> Coordinator: ``start()`` (or a line that is no input, e.g. a second ``new``)."""
    FACT = "fact"
    OUTCOME = "outcome"
    ACTION = "action"
    """Coordinator -> owner (or Caller, for ``Complete``): an issued action."""
    REJECTED = "rejected"
    """Coordinator -> the input's sender: the input was rejected (code and message)."""
    HELD = "held"
    """Coordinator -> the fact's sender: the fact came too early and was held back; a later
    line delivers it again and it is applied (see the module's rule)."""
    MISSING = "missing"
    """Derived: an acknowledgement the trace never delivers (drawn crossed, from the owner)."""
    STATE = "state"
    """Not a message: the coordinator's state after an input (a note on its lifeline)."""
    END = "end"
    """Not a message: how the run ended (a note across every lifeline)."""


INPUTS: Final = frozenset({MessageKind.CALL, MessageKind.FACT, MessageKind.OUTCOME})


@dataclass(frozen=True, slots=True)
class StepTime:
    """When an input arrived (the trace line's ``at_ms``) and how long after the previous one."""

    at_ms: float
    since_ms: float | None

    @property
    def text(self) -> str:
        """``t=12.5 ms (+2.5 ms)``; the first timed input has no ``(+…)``."""
        since = f" ({self.since_text} ms)" if self.since_ms is not None else ""
        return f"t={self.at_text} ms{since}"

    @property
    def at_text(self) -> str:
        """The time in ms, without unit: ``12.5``."""
        return ms_text(self.at_ms)

    @property
    def since_text(self) -> str:
        """The time since the previous input in ms, without unit: ``+2.5`` (empty: none)."""
        return f"+{ms_text(self.since_ms)}" if self.since_ms is not None else ""


@dataclass(frozen=True, slots=True)
class Message:
    sender: Participant
    receiver: Participant
    kind: MessageKind
    text: str
    event: str | None = None
    """For inputs: the chart event it became (``None`` when it changed nothing)."""
    action: str | None = None
    """For issued actions: the action's type name (``SubmitPrefill``)."""
    time: StepTime | None = None
    """For inputs of a timed trace: when it arrived."""
    line: int | None = None
    """For inputs: the trace line."""


@dataclass(frozen=True, slots=True)
class StepRow:
    """One input of the run with its exact values: a row of the table beside a picture."""

    number: int
    line: int
    at_ms: float | None
    input: str
    reply: str
    """The actions exactly as issued (``delay_ms=13.421772800000001``), the error, or
    ``held back``."""
    state: str
    """The chart's active leaf states after it."""


@dataclass(frozen=True, slots=True)
class Lifecycle:
    """One coordinator's run as messages, ready for :mod:`~handoff_fsm.render.sequence`."""

    coordinator: str
    title: str
    subtitle: str
    """One line: order, handoff, inputs and how it ended (drawn under the title)."""
    order: HandoffOrder
    handoff_id: UUID
    messages: tuple[Message, ...]
    completion: HandoffCompletion | None
    final_state: tuple[str, ...]
    issued: tuple[IssuedHandoffAction, ...]
    steps: tuple[StepRow, ...] = ()
    """Every drawn input with its exact values, in order."""

    @property
    def timed(self) -> bool:
        return any(message.time is not None for message in self.messages)


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


def _receiver(action: type[HandoffAction], model: ChartModel) -> Participant:
    return action_owner(action, model) if action in ACKNOWLEDGEMENTS else Participant.CALLER


# ------------------------------------------------------------------ words


def ms_text(value: float) -> str:
    """Milliseconds as the diagrams write them: at most three decimals, no trailing zeros."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _number(value: float) -> str:
    return repr(value) if not math.isfinite(value) or value != int(value) else str(int(value))


def delay_text(value: float) -> str:
    """A delay as a picture shows it: :data:`DELAY_DECIMALS` decimals, no trailing zeros
    (``13.4218``); a delay that would round to 0 keeps four significant digits."""
    if not math.isfinite(value):
        return repr(value)
    shown = f"{value:.{DELAY_DECIMALS}f}".rstrip("0").rstrip(".")
    if shown in ("0", "-0") and value != 0:
        return f"{value:.4g}"
    return shown


def clip(value: str, limit: int = TEXT_LIMIT) -> str:
    """``value`` on one line, at most ``limit`` characters: cut at a word, with an ellipsis."""
    flat = " ".join(value.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def fact_text(fact: HandoffFact, handoff_id: UUID | None = None) -> str:
    """A fact as a message label, with the payload that matters to the handoff.

    A fact naming another handoff than ``handoff_id`` says so.
    """
    name = type(fact).__name__
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        parts = [timing.mode.value, f"{timing.full_prompt_tokens} tokens"]
        if timing.kv_bytes_per_token is not None:
            parts.append(f"{timing.kv_bytes_per_token} B/token")
        if timing.bandwidth_gb_s is not None:
            parts.append(f"{_number(timing.bandwidth_gb_s)} GB/s")
        if timing.state_bytes:
            parts.append(f"+{timing.state_bytes} B state")
        text = f"{name}({', '.join(parts)})"
    elif isinstance(fact, DestinationReserved):
        text = f"{name}({fact.transferable_prompt_tokens} transferable tokens)"
    else:
        text = name
    if handoff_id is not None and fact.handoff_id != handoff_id:
        text += f" for handoff {fact.handoff_id}"
    return text


def action_text(
    issued: IssuedHandoffAction, completion: HandoffCompletion | None, *, rounded: bool = False
) -> str:
    """An issued action in words: ``#2 StartTransfer(delay_ms=13.421772800000001)``, or with
    ``rounded`` as a picture shows it, ``#2 StartTransfer(delay 13.4218 ms)``."""
    action = issued.action
    text = f"#{issued.id} {type(action).__name__}"
    if isinstance(action, StartTransfer):
        if rounded:
            text += f"(delay {delay_text(action.delay_ms)} ms)"
        else:
            text += f"(delay_ms={_number(action.delay_ms)})"
    if completion is not None and isinstance(action, Complete):
        text += f" ({completion.value})"
    return text


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


# ------------------------------------------------------------------ building


def held_back(run: FollowedRun) -> dict[int, int]:
    """The facts ``run`` shows held back: step number of the refusal -> that of the line
    that later applied the same fact (see the module's rule)."""
    held: dict[int, int] = {}
    for index, step in enumerate(run.steps):
        fact = step.input.fact if step.input is not None else None
        if fact is None or step.error is None or step.error[0] not in PREMATURE:
            continue
        applied = next(
            (
                later.number
                for later in run.steps[index + 1 :]
                if later.input is not None
                and later.input.fact == fact
                and later.error is None
                and later.number not in held.values()
            ),
            None,
        )
        if applied is not None:
            held[step.number] = applied
    return held


@dataclass(slots=True)
class _Builder:
    run: FollowedRun
    model: ChartModel
    messages: list[Message]
    kinds: dict[int, type[HandoffAction]]
    last_at: float | None
    held: dict[int, int]
    rows: list[StepRow]

    def input_message(self, step: FollowedStep) -> Message:
        op = step.input
        time = None
        if step.at_ms is not None:
            since = step.at_ms - self.last_at if self.last_at is not None else None
            time = StepTime(step.at_ms, since)
            self.last_at = step.at_ms
        if op is None:
            what = "new (again)" if step.op == "new" else f"{clip(step.op, 24)!r} (unreadable)"
            sender, kind, text = Participant.CALLER, MessageKind.CALL, f"line {step.line}: {what}"
        elif op.kind == "start":
            sender, kind, text = Participant.CALLER, MessageKind.CALL, "start()"
        elif op.kind == "fact":
            assert op.fact is not None
            sender = fact_sender(type(op.fact), self.model)
            kind, text = MessageKind.FACT, fact_text(op.fact, self.run.handoff_id)
        else:
            assert op.outcome is not None
            action = self.kinds.get(op.action_id)
            sender = action_owner(action, self.model) if action is not None else Participant.CALLER
            kind, text = MessageKind.OUTCOME, clip(f"#{op.action_id} {op.outcome}", TEXT_LIMIT)
        ignored = step.error is None and not step.changed and not step.actions
        applied = step.number in self.held.values()
        marks = [
            mark
            for mark, on in (
                ("held back, applied now", applied),
                ("late", step.late),
                ("ignored", ignored),
            )
            if on
        ]
        if marks:
            text += f" ({', '.join(marks)})"
        event = step.event if step.changed or step.actions else None
        return Message(sender, Participant.COORDINATOR, kind, text, event, None, time, step.line)

    def step(self, step: FollowedStep) -> None:
        message = self.input_message(step)
        self.messages.append(message)
        reply = ", ".join(action_text(issued, step.completion) for issued in step.actions)
        if step.error is not None and step.number in self.held:
            code, text = step.error
            reply = f"held back ({code.value}: {text}), applied at step {self.held[step.number]}"
            self.messages.append(
                Message(
                    Participant.COORDINATOR,
                    message.sender,
                    MessageKind.HELD,
                    f"held back: too early ({code.value}), applied later",
                )
            )
        elif step.error is not None:
            code, text = step.error
            reply = f"✗ {code.value}: {text}"
            self.messages.append(
                Message(
                    Participant.COORDINATOR,
                    message.sender,
                    MessageKind.REJECTED,
                    clip(reply, TEXT_LIMIT),
                )
            )
        for issued in step.actions:
            kind = type(issued.action)
            self.kinds[issued.id] = kind
            self.messages.append(
                Message(
                    Participant.COORDINATOR,
                    _receiver(kind, self.model),
                    MessageKind.ACTION,
                    action_text(issued, step.completion, rounded=True),
                    action=kind.__name__,
                )
            )
        self.rows.append(
            StepRow(
                number=step.number,
                line=step.line,
                at_ms=step.at_ms,
                input=message.text,
                reply=reply or "nothing issued",
                state=", ".join(step.after.leaves),
            )
        )
        if step.after.leaves != step.before.leaves:
            self.messages.append(
                Message(
                    Participant.COORDINATOR,
                    Participant.COORDINATOR,
                    MessageKind.STATE,
                    ", ".join(step.after.leaves),
                )
            )


def _phase(leaves: tuple[str, ...], model: ChartModel) -> str:
    """The top-level state the leaves are in (``active``, ``cleaning_up``, ``complete``)."""
    state = model.state(leaves[0])
    while state.parent is not None:
        state = model.state(state.parent)
    return state.id


def _missing(run: FollowedRun, model: ChartModel) -> dict[int | None, list[Message]]:
    """Acknowledgements no line delivers, keyed by the step they are drawn before.

    The key is the number of the first step after the action was issued that ended
    the phase it was issued in (a time-out ending ``active``), or ``None``: the end.
    Nothing is derived when lines were omitted (the acknowledgement may be among them).
    """
    if run.omitted:
        return {}
    acknowledged = {
        step.input.action_id
        for step in run.steps
        if step.input is not None and step.input.kind == "outcome" and step.error is None
    }
    placed: dict[int | None, list[Message]] = {}
    for index, step in enumerate(run.steps):
        for issued in step.actions:
            kind = type(issued.action)
            if kind not in ACKNOWLEDGEMENTS or issued.id in acknowledged:
                continue
            phase = _phase(step.after.leaves, model)
            where = next(
                (
                    later.number
                    for later in run.steps[index + 1 :]
                    if _phase(later.before.leaves, model) == phase
                    and _phase(later.after.leaves, model) != phase
                ),
                None,
            )
            placed.setdefault(where, []).append(
                Message(
                    action_owner(kind, model),
                    Participant.COORDINATOR,
                    MessageKind.MISSING,
                    f"#{issued.id} {kind.__name__}: never acknowledged",
                )
            )
    return placed


def _ending(run: FollowedRun, held: int) -> str:
    """How the run ended; ``held`` of its refused inputs were facts held back, not rejected."""
    inputs = _count(run.inputs, "input")
    refused = run.rejected - held
    rejected = f", {refused} rejected" if refused else ", none rejected"
    if held:
        rejected += f", {held} held back"
    omitted = f" ({_count(run.omitted, 'later input')} not drawn)" if run.omitted else ""
    if run.completion is not None:
        duration = run.duration_ms
        took = f", in {ms_text(duration)} ms" if duration is not None else ""
        return f"{run.completion.value} after {inputs}{rejected}{took}{omitted}"
    return f"not complete after {inputs}{rejected}{omitted}: {', '.join(run.final_state)}"


def _revision_text(run: FollowedRun) -> str:
    """`` (revision a976b2bf)`` for a revision other than the default one; else nothing."""
    return "" if run.revision is Revision.SEED else f" (revision {run.revision.value})"


def lifecycle_of(run: FollowedRun, *, title: str | None = None) -> Lifecycle:
    """The messages of a followed run, in the order a sequence diagram shows them."""
    model = describe_chart()
    held = held_back(run)
    builder = _Builder(run, model, [], {}, run.new_at_ms, held, [])
    missing = _missing(run, model)
    for step in run.steps:
        builder.messages += missing.get(step.number, [])
        builder.step(step)
    builder.messages += missing.get(None, [])
    ending = _ending(run, len(held))
    builder.messages.append(
        Message(Participant.CALLER, Participant.TRANSFER, MessageKind.END, ending)
    )
    return Lifecycle(
        coordinator=run.coordinator,
        title=clip(title if title is not None else f"Lifecycle of {run.coordinator}", 100),
        subtitle=f"{run.order.value} handoff {run.handoff_id}{_revision_text(run)} · {ending}",
        order=run.order,
        handoff_id=run.handoff_id,
        messages=tuple(builder.messages),
        completion=run.completion,
        final_state=run.final_state,
        issued=run.issued,
        steps=tuple(builder.rows),
    )


def trace_lifecycle(
    lines: Iterable[TraceLine],
    coordinator: str | None = None,
    *,
    title: str | None = None,
    revision: Revision | str = Revision.SEED,
    max_steps: int = MAX_STEPS,
) -> Lifecycle:
    """THE way to a lifecycle: follow ``coordinator`` through the trace and word its run.

    ``coordinator`` defaults to the first one the trace creates; ``title`` to
    "Lifecycle of <coordinator>"; ``revision`` is that of ``new`` lines naming none.
    Raises :class:`~handoff_fsm.errors.TraceError` (``unknown_coordinator``) when the
    trace creates no such coordinator.
    """
    run = follow(lines, coordinator, revision=revision, max_steps=max_steps)
    return lifecycle_of(run, title=title)

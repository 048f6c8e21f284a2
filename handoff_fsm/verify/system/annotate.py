"""A counterexample's lifecycle: its trace drawn the one way, with the world's steps marked.

Rule kept here: the coordinator's part of the drawing is exactly what
:func:`~handoff_fsm.io.lifecycle.trace_lifecycle` makes of the counterexample's trace
(what ``handoff-fsm lifecycle`` draws of it); this module only adds, between the trace's
inputs and in the order they happened, what the trace cannot say: a message the network
lost (a crossed arrow), a note for what a worker, the client, the network or a policy
timer did, and an arrow for each action the policy sent again.
"""

from __future__ import annotations

from dataclasses import replace

from handoff_fsm.io.lifecycle import (
    INPUTS,
    Lifecycle,
    Message,
    MessageKind,
    Participant,
    clip,
    trace_lifecycle,
)
from handoff_fsm.verify.system.properties import Counterexample, Mark

_KINDS = {"note": MessageKind.STATE, "lost": MessageKind.MISSING, "action": MessageKind.ACTION}


def system_lifecycle(example: Counterexample, *, title: str | None = None) -> Lifecycle:
    """The lifecycle of ``example``'s trace, with its world steps marked where they happened."""
    drawn = trace_lifecycle(example.trace, title=title)
    head: list[Message] = []
    inputs: list[list[Message]] = []
    end: list[Message] = []
    for message in drawn.messages:
        if message.kind is MessageKind.END:
            end.append(message)
        elif message.kind in INPUTS and message.line is not None:
            inputs.append([message])
        else:
            (inputs[-1] if inputs else head).append(message)
    messages = [*head, *(inputs[0] if inputs else [])]  # the session's start()
    taken = 1
    for step, fed in zip(example.world, example.fed, strict=True):
        messages += [_message(mark) for mark in step.marks]
        for segment in inputs[taken : taken + fed]:
            messages += segment
        taken += fed
    for segment in inputs[taken:]:  # none: every input belongs to a step
        messages += segment
    messages += end
    steps = len(example.world)
    subtitle = f"{drawn.subtitle} · {steps} world step{'' if steps == 1 else 's'}"
    return replace(drawn, messages=tuple(messages), subtitle=subtitle)


def _message(mark: Mark) -> Message:
    return Message(
        Participant(mark.sender), Participant(mark.receiver), _KINDS[mark.kind], clip(mark.text)
    )

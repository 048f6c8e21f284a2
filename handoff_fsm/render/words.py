"""The words a chart's pictures write: one wording for every drawing of a chart.

Rule kept here: a transition's label and a state's rows are made here, and only
here, from the description's own words (:mod:`handoff_fsm.structure.describe`:
:func:`~handoff_fsm.structure.describe.effect_text`,
:func:`~handoff_fsm.structure.describe.field_text`, a guard's text, and which
input raises each event, :attr:`~handoff_fsm.structure.describe.Edge.event_kinds`),
so the family chart, a revision's chart, the Mermaid chart and the structural
diff say the same thing the same way (``completion = Success``, never ``mark
success``). The functions take the parts as plain values, because a diff's side
may be a chart another version of the package described (plain JSON, its event
kinds possibly unknown here).

Each row says what kind of row it is (:class:`RowKind`): the drawings style a row by
its kind and the legend explains each kind a picture uses. The kind of an event
row tells facts (``fact source_held``: something happened at an owner) from
acknowledgements (``ack prefill_submitted: Submitted``: the outcome of the action
the state issued), the caller's ``start()`` and the chart's own ``done.state``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from handoff_fsm.structure.describe import (
    Edge,
    EventKind,
    StateNode,
    effect_text,
    field_text,
    input_events,
)


class RowKind(StrEnum):
    """What a line of a label says; each kind is drawn one way and explained once."""

    START = "start"
    """``start()``: the caller starts the handoff."""
    FACT = "fact"
    """``fact source_held``: an owner reports something that happened."""
    ACKNOWLEDGEMENT = "acknowledgement"
    """``ack prefill_submitted: Submitted``: the accepted outcome of an issued action."""
    DONE = "done"
    """``done.state.active``: raised by the chart when every region is final."""
    GUARD = "guard"
    """``[source first]``: the condition the transition waits for."""
    CHECK = "check"
    """``check transfer timing``: a validator the input must pass first."""
    EFFECT = "effect"
    """``/ completion = Success``: what taking the transition records."""
    ENTRY_ACTION = "entry action"
    """``entry / SubmitPrefill``: the action issued on entering a state."""
    ENTRY_FIELD = "entry field"
    """``entry / source engaged``: what entering a state records."""
    REJECTION = "rejection"
    """``fact source_held / ✗ code``: the input is rejected in that state."""


EVENT_ROWS: Final = frozenset({RowKind.START, RowKind.FACT, RowKind.ACKNOWLEDGEMENT, RowKind.DONE})
"""The kinds of row that name what makes a transition happen."""

_KINDS: Final = {
    EventKind.START: RowKind.START,
    EventKind.FACT: RowKind.FACT,
    EventKind.ACKNOWLEDGEMENT: RowKind.ACKNOWLEDGEMENT,
    EventKind.ACTION_FAILED: RowKind.ACKNOWLEDGEMENT,
    EventKind.DONE: RowKind.DONE,
}
_PREFIX: Final = {
    RowKind.FACT: ("fact", "facts"),
    RowKind.ACKNOWLEDGEMENT: ("ack", "acks"),
}
FAILED_OUTCOME: Final = "Failed(..)"
"""How the outcome an ``action_failed`` acknowledgement carries is written."""
WIDTH: Final = 22
"""Characters per line of a label: a label wraps instead of widening the picture."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of words (before wrapping) and what kind of line it is."""

    kind: RowKind
    text: str


def _event_kind(event: str, given: EventKind | str | None) -> EventKind | None:
    """``given`` when it is a kind this package knows, else the kind its own chart gives."""
    if given is not None:
        try:
            return EventKind(given)
        except ValueError:
            pass
    for known in input_events():
        if known.event == event:
            return known.kind
    return EventKind.DONE if event.startswith("done.state.") else None


def _outcomes(events: Iterable[str]) -> list[str]:
    """The outcomes that raise these acknowledgement events, each once, in order."""
    out: list[str] = []
    known = {event.event: event for event in input_events()}
    for event in events:
        described = known.get(event)
        if described is None:
            continue
        words = described.outcomes or (
            (FAILED_OUTCOME,) if described.kind is EventKind.ACTION_FAILED else ()
        )
        out += [word for word in words if word not in out]
    return out


def event_rows(
    events: Sequence[str], kinds: Sequence[EventKind | str | None] | None = None
) -> list[Row]:
    """What makes a transition happen, one row per kind of input, in the events' order.

    ``kinds`` are :attr:`~handoff_fsm.structure.describe.Edge.event_kinds` (for a chart
    described elsewhere: their values, or ``None`` where not known).
    """
    given = list(kinds) if kinds is not None else [None] * len(events)
    groups: list[tuple[RowKind | None, list[str]]] = []
    for event, kind in zip(events, given, strict=True):
        known = _event_kind(event, kind)
        row = _KINDS[known] if known is not None else None
        if groups and groups[-1][0] is row:
            groups[-1][1].append(event)
        else:
            groups.append((row, [event]))
    rows: list[Row] = []
    for index, (row, names) in enumerate(groups):
        joined = " | ".join(names)
        lead = "or " if index else ""
        if row is RowKind.START:
            rows.append(Row(row, lead + "start()"))
        elif row in _PREFIX:
            one, many = _PREFIX[row]
            words = f"{lead}{one if len(names) == 1 else many}\u00a0{joined}"
            if row is RowKind.ACKNOWLEDGEMENT:
                outcomes = _outcomes(names)
                if outcomes:
                    words += ": " + " | ".join(outcomes)
            rows.append(Row(row, words))
        else:  # done.state, or an event this package does not know: its name
            rows.append(Row(row or RowKind.FACT, lead + joined))
    return rows


def transition_rows(
    *,
    events: Sequence[str],
    kinds: Sequence[EventKind | str | None] | None,
    guard: str | None,
    validators: Iterable[str],
    effects: Iterable[str],
) -> list[Row]:
    """A transition's label, row by row: what raises it, ``[guard]``, checks, ``/ effects``."""
    rows = event_rows(events, kinds)
    if guard is not None:
        rows.append(Row(RowKind.GUARD, f"[{guard}]"))
    rows += [Row(RowKind.CHECK, check_text(name)) for name in validators]
    rows += [Row(RowKind.EFFECT, f"/ {effect_text(name)}") for name in effects]
    return rows


def edge_rows(edge: Edge) -> list[Row]:
    """:func:`transition_rows` of a described transition."""
    return transition_rows(
        events=edge.events,
        kinds=edge.event_kinds,
        guard=edge.guard.text if edge.guard is not None else None,
        validators=edge.validators,
        effects=edge.effects,
    )


def check_text(validator: str) -> str:
    """``validate_transfer_timing`` -> ``check transfer timing``."""
    return f"check {validator.removeprefix('validate_').replace('_', ' ')}"


def rejection_rows(
    events: Sequence[str], kinds: Sequence[EventKind | str | None] | None, code: str
) -> list[Row]:
    """A state's row for an input it rejects: what the input is, then ``✗ code``."""
    said = " / ".join(row.text for row in event_rows(events, kinds))
    return [Row(RowKind.REJECTION, f"{said} /"), Row(RowKind.REJECTION, f"\u00a0\u00a0✗ {code}")]


def edge_rejection_rows(edge: Edge) -> list[Row]:
    """:func:`rejection_rows` of a described rejecting transition."""
    return rejection_rows(edge.events, edge.event_kinds, str(edge.rejection))


def entry_rows(actions: Iterable[str], fields: Iterable[str]) -> list[Row]:
    """What entering a state does: the actions it issues, then the fields it records."""
    rows = [Row(RowKind.ENTRY_ACTION, f"entry / {action}") for action in actions]
    rows += [Row(RowKind.ENTRY_FIELD, f"entry / {field_text(name)}") for name in fields]
    return rows


def state_entry_rows(state: StateNode) -> list[Row]:
    """:func:`entry_rows` of a described state."""
    return entry_rows(state.entry_actions, state.entry_fields)


_WRAPPED: Final = EVENT_ROWS | {RowKind.GUARD}
"""Rows long enough to wrap; the others are one line each."""


def wrapped(row: Row, width: int = WIDTH) -> list[str]:
    """A row as the lines a picture draws: a guard broken after each ``and``, events
    wrapped at ``width`` characters (never inside a word, nor after a ``|`` or between
    ``fact``/``ack`` and the event), every other row on one line."""
    if row.kind not in _WRAPPED:
        return [row.text]
    if row.kind is not RowKind.GUARD:
        # A line breaks before an event's ``|``, never after it.
        words = row.text.replace(" | ", " |\u00a0")
        return textwrap.wrap(words, width=width, break_long_words=False) or [""]
    parts = row.text.removeprefix("[").removesuffix("]").split(" and ")
    lines = [
        line
        for index, part in enumerate(parts)
        for line in textwrap.wrap(
            part + (" and" if index < len(parts) - 1 else ""), width=width, break_long_words=False
        )
    ]
    lines[0] = "[" + lines[0]  # the brackets do not count towards the width
    lines[-1] += "]"
    return lines


def row_lines(rows: Iterable[Row], width: int = WIDTH) -> list[tuple[RowKind, str]]:
    """Every row wrapped (:func:`wrapped`), each line with its row's kind."""
    return [(row.kind, line) for row in rows for line in wrapped(row, width)]

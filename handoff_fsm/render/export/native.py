"""The chart in python-statemachine's own declarative format, as JSON and as YAML.

Rule kept here: both files are one mapping (:func:`native_document`), in the vocabulary
``statemachine.io.load`` accepts (python-statemachine 3.2: ``states`` keyed by id,
``initial``/``final``/``parallel`` flags, ``enter`` actions, ``transitions`` with
``event``/``target``/``cond``/``on``, a ``datamodel`` of expressions), with expressions the
restricted evaluator of ``load(..., trusted=False)`` takes: ``In('x')``, ``not``, ``and``,
the data model's names, literals and ``+``. The format allows no unknown key, so what it
cannot run is said once, in the document's ``description``; the YAML file repeats it as
comments beside the states and transitions they concern, and spells every string in
double quotes where a YAML 1.1 reader could take it for something else (``on``, ``no``).
Both are deterministic: same chart, same bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from handoff_fsm.render.export.document import (
    ISSUED,
    Assignment,
    ExportChart,
    ExportState,
    ExportTransition,
    python_guard,
)
from handoff_fsm.render.export.words import (
    header,
    input_lines,
    notes,
    python_value,
    rejection_text,
    setting_lines,
    title,
    unrun_text,
    where_lines,
)

_OWN_NOTES: Final = (
    "Format: python-statemachine's native statechart format (statemachine.io.load); "
    "expressions are Python, read by its restricted evaluator. The data model of a "
    "loaded class is initialized with its first instance only (python-statemachine "
    "3.2): load the document once per machine.",
)


def _assign(assignment: Assignment) -> dict[str, Any]:
    return {"assign": {"location": assignment.name, "expr": python_value(assignment.value)}}


def _issue(kind: str) -> dict[str, Any]:
    return {"assign": {"location": ISSUED, "expr": f"{ISSUED} + [{kind!r}]"}}


def _transition(transition: ExportTransition) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if transition.events:
        out["event"] = " ".join(transition.events)
    out["target"] = transition.target
    if transition.guard is not None:
        out["cond"] = python_guard(transition.guard)
    if transition.assignments:
        out["on"] = [_assign(a) for a in transition.assignments]
    return out


def _state(state: ExportState, initial: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if initial:
        out["initial"] = True
    if state.final:
        out["final"] = True
    if state.parallel:
        out["parallel"] = True
    enter = [_assign(a) for a in state.sets] + [_issue(kind) for kind in state.issues]
    if enter:
        out["enter"] = enter
    if state.transitions:
        out["transitions"] = [_transition(t) for t in state.transitions]
    if state.children:
        out["states"] = {
            child.id: _state(child, child.id == state.initial) for child in state.children
        }
    return out


def description(chart: ExportChart, fmt: str) -> str:
    """The document's ``description``: its header and everything it does not run."""
    lines = [header(chart, fmt), f"{title(chart)}.", "", "Not run by this document:"]
    lines += [f"- {note}" for note in notes(chart, _OWN_NOTES)]
    lines += ["", "Where:"] + [f"- {line}" for line in where_lines(chart)]
    lines += ["", "Settings (set before the first event):"]
    lines += [f"- {line}" for line in setting_lines(chart)]
    lines += ["", "Inputs and the events they become:"]
    lines += [f"- {line}" for line in input_lines(chart)]
    return "\n".join(lines)


def native_document(chart: ExportChart, fmt: str = "json") -> dict[str, Any]:
    """The chart as python-statemachine's native mapping (what its JSON and YAML hold)."""
    return {
        "name": chart.name,
        "description": description(chart, fmt),
        "datamodel": {datum.name: python_value(datum.initial) for datum in chart.data},
        "states": {state.id: _state(state, state.id == chart.initial) for state in chart.states},
    }


def chart_json(chart: ExportChart) -> str:
    """The document as JSON (``statemachine.io.load(path)`` for a ``.json`` file)."""
    return json.dumps(native_document(chart, "json"), indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------- YAML

_PLAIN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_YAML11_WORDS: Final = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})
_INDENT: Final = "  "


def _scalar(value: object) -> str:
    """A YAML scalar every YAML reader reads back as this value."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _YAML11_WORDS:
        return text
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def chart_yaml(chart: ExportChart) -> str:
    """The document as YAML, with the notes as comments where they apply."""
    document = native_document(chart, "yaml")
    out = [f"# {header(chart, 'yaml')}", f"# {title(chart)}.", "#", "# Not run by this document:"]
    for note in notes(chart, _OWN_NOTES):
        out += _comment_block(note, "#   ", "# - ")
    out += ["#", "# Settings (set before the first event):"]
    out += [f"# - {line}" for line in setting_lines(chart)]
    out += ["#", "# Inputs and the events they become:"]
    out += [f"# - {line}" for line in input_lines(chart)]
    out += [f"name: {_scalar(document['name'])}"]
    out.append("description: |-")
    out += [f"{_INDENT}{line}" if line else "" for line in document["description"].split("\n")]
    out.append("datamodel:")
    out += [f"{_INDENT}{name}: {_scalar(expr)}" for name, expr in document["datamodel"].items()]
    out.append("states:")
    states = {state.id: state for state in chart.walk()}
    for state_id, body in document["states"].items():
        _yaml_state(state_id, body, states, 1, out)
    return "\n".join(out) + "\n"


def _comment_block(text: str, indent: str, first: str) -> list[str]:
    """``text`` as comment lines of at most 96 characters."""
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > 92:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return [first + lines[0], *(indent + rest for rest in lines[1:])]


def _yaml_state(
    state_id: str, body: dict[str, Any], states: dict[str, ExportState], depth: int, out: list[str]
) -> None:
    pad = _INDENT * depth
    state = states[state_id]
    if state.rejections:
        out.append(f"{pad}# {rejection_text(state)}: not run (no transition here)")
    out.append(f"{pad}{_scalar(state_id)}:")
    inner = pad + _INDENT
    for key in ("initial", "final", "parallel"):
        if key in body:
            out.append(f"{inner}{key}: {_scalar(body[key])}")
    if "enter" in body:
        out.append(f"{inner}enter:")
        out += [_yaml_action(action, inner + _INDENT) for action in body["enter"]]
    if "transitions" in body:
        out.append(f"{inner}transitions:")
        for transition, data in zip(state.transitions, body["transitions"], strict=True):
            unrun = unrun_text(transition)
            if unrun:
                out.append(f"{inner}{_INDENT}# {unrun}: not run")
            first = True
            for key, value in data.items():
                lead = f"{inner}{_INDENT}- " if first else f"{inner}{_INDENT}  "
                first = False
                if key == "on":
                    out.append(f"{lead}{_scalar(key)}:")
                    out += [_yaml_action(a, inner + _INDENT * 3) for a in value]
                else:
                    out.append(f"{lead}{_scalar(key)}: {_scalar(value)}")
    if "states" in body:
        out.append(f"{inner}states:")
        for child_id, child in body["states"].items():
            _yaml_state(child_id, child, states, depth + 2, out)


def _yaml_action(action: dict[str, Any], pad: str) -> str:
    (kind, fields) = next(iter(action.items()))
    inside = ", ".join(f"{_scalar(key)}: {_scalar(value)}" for key, value in fields.items())
    return f"{pad}- {kind}: {{{inside}}}"

"""The chart as a W3C SCXML document that python-statemachine's ``statemachine.io.load`` runs.

Rule kept here: the document is SCXML 1.0 (``<scxml>``, ``<state>``, ``<parallel>``,
``<final>``, ``<transition event= cond= target=>``, ``<datamodel>``/``<data>``,
``<onentry>``/``<assign>``) in the subset python-statemachine 3.2's SCXML reader reads,
and its expressions are the Python its restricted evaluator takes (``datamodel="python"``,
a platform-defined value the standard allows: ``not``, ``and``, ``In('x')``, ``True``,
``issued + ['SubmitPrefill']``). An ECMAScript SCXML processor would read the structure
and stop at those expressions; that is named in the document's opening comment, with
everything else it does not run, and each refusal and payload check is a comment where it
applies. Written element by element, escaped by :mod:`xml.sax.saxutils`: same chart,
same bytes.
"""

from __future__ import annotations

from typing import Final
from xml.sax.saxutils import quoteattr

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
)

NAMESPACE: Final = "http://www.w3.org/2005/07/scxml"
_INDENT: Final = "  "
_OWN_NOTES: Final = (
    'Format: SCXML 1.0 with datamodel="python": conditions and values are Python, as '
    "python-statemachine's restricted evaluator reads them (statemachine.io.load, "
    "trusted=False); an ECMAScript processor would not read them. The data model of a "
    "loaded class is initialized with its first instance only (python-statemachine 3.2): "
    "load the document once per machine.",
)


def comment(text: str) -> str:
    """``text`` as an XML comment (which may not hold ``--``)."""
    safe = text
    while "--" in safe:
        safe = safe.replace("--", "- -")
    if safe.endswith("-"):
        safe += " "
    return f"<!-- {safe} -->"


def _assign(assignment: Assignment, pad: str) -> str:
    location = quoteattr(assignment.name)
    return f"{pad}<assign location={location} expr={quoteattr(python_value(assignment.value))}/>"


def _issue(kind: str, pad: str) -> str:
    """The entry that records an action issued: ``issued + ['SubmitPrefill']``."""
    expr = quoteattr(f"{ISSUED} + [{kind!r}]")
    return f"{pad}<assign location={quoteattr(ISSUED)} expr={expr}/>"


def _transition(transition: ExportTransition, pad: str, out: list[str]) -> None:
    unrun = unrun_text(transition)
    if unrun:
        out.append(f"{pad}{comment(unrun + ': not run')}")
    attributes = []
    if transition.events:
        attributes.append(f"event={quoteattr(' '.join(transition.events))}")
    if transition.guard is not None:
        attributes.append(f"cond={quoteattr(python_guard(transition.guard))}")
    attributes.append(f"target={quoteattr(transition.target)}")
    opening = f"{pad}<transition {' '.join(attributes)}"
    if not transition.assignments:
        out.append(f"{opening}/>")
        return
    out.append(f"{opening}>")
    out += [_assign(a, pad + _INDENT) for a in transition.assignments]
    out.append(f"{pad}</transition>")


def _state(state: ExportState, depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    inner = pad + _INDENT
    tag = "parallel" if state.parallel else "final" if state.final else "state"
    attributes = f"id={quoteattr(state.id)}"
    if state.initial is not None:
        attributes += f" initial={quoteattr(state.initial)}"
    body: list[str] = []
    if state.rejections:
        body.append(f"{inner}{comment(rejection_text(state) + ': not run (no transition here)')}")
    if state.sets or state.issues:
        body.append(f"{inner}<onentry>")
        body += [_assign(a, inner + _INDENT) for a in state.sets]
        body += [_issue(kind, inner + _INDENT) for kind in state.issues]
        body.append(f"{inner}</onentry>")
    for transition in state.transitions:
        _transition(transition, inner, body)
    for child in state.children:
        _state(child, depth + 1, body)
    if not body:
        out.append(f"{pad}<{tag} {attributes}/>")
        return
    out.append(f"{pad}<{tag} {attributes}>")
    out += body
    out.append(f"{pad}</{tag}>")


def chart_scxml(chart: ExportChart) -> str:
    """The document (``statemachine.io.load(path)`` for a ``.scxml`` file)."""
    opening = [
        header(chart, "scxml", dashes=False),
        f"{title(chart)}.",
        "",
        "Not run by this document:",
    ]
    opening += [f"- {note}" for note in notes(chart, _OWN_NOTES)]
    opening += ["", "Settings (set before the first event):"]
    opening += [f"- {line}" for line in setting_lines(chart)]
    opening += ["", "Inputs and the events they become:"]
    opening += [f"- {line}" for line in input_lines(chart)]
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    out += comment("\n     ".join(opening).replace("\n     \n", "\n\n")).split("\n")
    out.append(
        f'<scxml xmlns={quoteattr(NAMESPACE)} version="1.0" name={quoteattr(chart.name)} '
        f'initial={quoteattr(chart.initial)} datamodel="python">'
    )
    out.append(f"{_INDENT}<datamodel>")
    for datum in chart.data:
        out.append(f"{_INDENT * 2}{comment(f'{datum.name}: {datum.text}')}")
        expr = quoteattr(python_value(datum.initial))
        out.append(f"{_INDENT * 2}<data id={quoteattr(datum.name)} expr={expr}/>")
    out.append(f"{_INDENT}</datamodel>")
    for state in chart.states:
        _state(state, 1, out)
    out.append("</scxml>")
    return "\n".join(out) + "\n"

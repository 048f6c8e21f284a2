"""The chart as an XState v5 machine config (JSON), for ``createMachine`` and Stately's editor.

Rule kept here: the config is data only, in XState v5's vocabulary: ``type: "parallel"``
and ``type: "final"`` states under the chart's ids (each state's ``id`` is its key, so a
target is ``#<id>``), ``initial``, ``on`` (one entry per event, the chart's order kept
among transitions on the same event), ``always`` for eventless transitions, ``onDone``
for ``done.state.<id>``, ``context`` for the data model, and guards and actions as
named objects (``{"type": ..., "params": ...}``). A config holds no code, so what a guard
means and what an action does is in its ``params``, in a vocabulary small enough for a
few lines of a host program to implement (``docs/elsewhere.md`` has them, the tests run
them with the real ``xstate`` package):

* a guard's ``type`` is its python-statemachine expression and its ``params`` the same
  condition as a tree: ``{"stateIn": "#held"}`` (XState's ``stateIn``), ``{"context":
  "source_engaged"}`` (that context flag is true), ``{"not": ...}``, ``{"and": [...]}``,
  ``{"or": [...]}``;
* an action is ``{"type": "set", "params": {name: value}}`` (assign to the context) or
  ``{"type": "issue", "params": {"action": "SubmitPrefill"}}`` (the chart issues that
  action; the tests' host appends it to ``issued``).

What XState cannot run is said in the machine's ``description`` and, as data, in
``meta``; each refusal and payload check is also in the ``description`` and ``meta`` of
its state or transition, where Stately's editor shows it.
"""

from __future__ import annotations

import json
from typing import Any, Final

from handoff_fsm.render.export.document import (
    ISSUED,
    AllOf,
    AnyOf,
    Assignment,
    ExportChart,
    ExportState,
    ExportTransition,
    InState,
    Named,
    Not,
    Term,
    python_guard,
)
from handoff_fsm.render.export.words import (
    header,
    input_lines,
    notes,
    rejection_text,
    setting_lines,
    title,
    unrun_text,
    where_lines,
)
from handoff_fsm.structure.describe import EdgeKind

SET: Final = "set"
"""The action that assigns its params to the context."""
ISSUE: Final = "issue"
"""The action that stands for issuing an action of the protocol (its kind in params)."""
META_KEY: Final = "handoff-fsm"
"""Where this package's notes go in a ``meta`` object."""

_OWN_NOTES: Final = (
    "Format: an XState v5 machine config, data only. Guards and actions are named, "
    "with their meaning in params ({stateIn}, {context}, not, and, or; set, issue): "
    "createMachine needs their implementations (a few lines; see the handoff-fsm docs, "
    '"Using the chart elsewhere"). done.state.<id> is onDone, eventless transitions '
    "are always. Set the parameters in context before creating the actor.",
)


def guard_params(term: Term) -> Any:
    """A guard as its ``params`` tree (the module's vocabulary)."""
    if isinstance(term, InState):
        return {"stateIn": f"#{term.state}"}
    if isinstance(term, Named):
        return {"context": term.name}
    if isinstance(term, Not):
        return {"not": guard_params(term.term)}
    key = "and" if isinstance(term, AllOf) else "or"
    assert isinstance(term, AllOf | AnyOf)
    return {key: [guard_params(part) for part in term.terms]}


def _set(assignments: tuple[Assignment, ...]) -> list[dict[str, Any]]:
    return [{"type": SET, "params": {a.name: a.value}} for a in assignments]


def _transition(transition: ExportTransition) -> dict[str, Any]:
    out: dict[str, Any] = {"target": f"#{transition.target}"}
    if transition.guard is not None:
        out["guard"] = {
            "type": python_guard(transition.guard),
            "params": guard_params(transition.guard),
        }
    if transition.assignments:
        out["actions"] = _set(transition.assignments)
    unrun = unrun_text(transition)
    if unrun:
        out["description"] = f"Not run: {unrun}."
        out["meta"] = {
            META_KEY: {"validators": list(transition.validators), "stores": list(transition.stores)}
        }
    return out


def _state(state: ExportState) -> dict[str, Any]:
    out: dict[str, Any] = {"id": state.id}
    if state.parallel:
        out["type"] = "parallel"
    elif state.final:
        out["type"] = "final"
    if state.initial is not None:
        out["initial"] = state.initial
    if state.rejections:
        out["description"] = f"Not run: {rejection_text(state)} (no transition here)."
        out["meta"] = {META_KEY: {"refuses": {r.event: r.code for r in state.rejections}}}
    entry = _set(state.sets) + [
        {"type": ISSUE, "params": {"action": kind}} for kind in state.issues
    ]
    if entry:
        out["entry"] = entry
    on: dict[str, list[dict[str, Any]]] = {}
    always: list[dict[str, Any]] = []
    done: list[dict[str, Any]] = []
    for transition in state.transitions:
        written = _transition(transition)
        if transition.kind is EdgeKind.EVENTLESS:
            always.append(written)
        elif transition.kind is EdgeKind.DONE:
            if transition.events != (f"done.state.{state.id}",):
                raise ValueError(f"{transition.text}: onDone is only for the state's own regions")
            done.append(written)
        else:
            for event in transition.events:
                on.setdefault(event, []).append(written)
    if on:
        out["on"] = on
    if always:
        out["always"] = always
    if done:
        out["onDone"] = done
    if state.children:
        out["states"] = {child.id: _state(child) for child in state.children}
    return out


def xstate_config(chart: ExportChart) -> dict[str, Any]:
    """The machine config (what ``createMachine`` takes, with the implementations)."""
    description = [header(chart, "xstate"), f"{title(chart)}.", "", "Not run by this config:"]
    description += [f"- {note}" for note in notes(chart, _OWN_NOTES)]
    description += ["", "Settings (set in context before the first event):"]
    description += [f"- {line}" for line in setting_lines(chart, json.dumps)]
    description += ["", "Inputs and the events they become:"]
    description += [f"- {line}" for line in input_lines(chart)]
    return {
        "id": chart.name,
        "description": "\n".join(description),
        "context": {datum.name: datum.initial for datum in chart.data},
        "initial": chart.initial,
        "meta": {
            META_KEY: {
                "generated": header(chart, "xstate"),
                "notRun": list(notes(chart, _OWN_NOTES)),
                "where": where_lines(chart),
                "settings": dict(chart.settings()),
                "inputs": {row.event: row.text for row in chart.inputs},
                "issuedIn": ISSUED,
            }
        },
        "states": {state.id: _state(state) for state in chart.states},
    }


def chart_xstate(chart: ExportChart) -> str:
    """The machine config as JSON text."""
    return json.dumps(xstate_config(chart), indent=2, ensure_ascii=False) + "\n"

"""The chart as an exported document sees it: one model every format is written from.

Rule kept here: an exported document says what the chart as data
(:class:`~handoff_fsm.structure.describe.ChartModel` and its named conditions,
:func:`~handoff_fsm.structure.conditions.chart_conditions`) says, and nothing is read
anywhere else. Each writer (SCXML, python-statemachine's JSON and YAML, XState) only
decides how it is spelled. What a document keeps:

* every state, with its regions (parallel states), initial children, final states and
  the cleanup regions, under the chart's own ids;
* every transition that can change the configuration, in the chart's order (which
  decides between two that are enabled together), with its events (none: eventless;
  ``done.state.<id>``: a parallel state's regions all finished) and its guard as a
  tree of ``In(...)`` and named conditions;
* a small data model: the named conditions (a *parameter*, set before the first
  event, when the order or the revision decides it; else a flag the chart's entries set),
  the completion the transitions record, and ``issued``, the kinds of the actions the
  entries issue, in order.

What the formats cannot run is *named*, never dropped: the inputs the chart refuses with
an error code in a state (:attr:`ExportState.rejections`; a document has no transition
for them, so it does not take them), the checks of an input's payload before a
transition is taken (:attr:`ExportTransition.validators`), the payloads the chart stores
and the actions' own fields, the journal that turns outcomes into events, and how each
input becomes an event (:attr:`ExportChart.inputs`). :func:`not_expressed` words them
for every format.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Final

from handoff_fsm.chart import HandoffChart
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.structure.conditions import Condition, chart_conditions
from handoff_fsm.structure.describe import ChartModel, Edge, EdgeKind, StateKind, StateNode

COMPLETION: Final = "completion"
"""The data model's completion: ``None`` until a transition records one."""
ISSUED: Final = "issued"
"""The data model's list of the kinds of the actions issued, in the order they were issued."""

JSONValue = bool | str | None | list[str]


# ---------------------------------------------------------------------- guards as trees


@dataclass(frozen=True, slots=True)
class InState:
    """``In('state')``: the state is active."""

    state: str


@dataclass(frozen=True, slots=True)
class Named:
    """A named condition of the data model is true."""

    name: str


@dataclass(frozen=True, slots=True)
class Not:
    term: Term


@dataclass(frozen=True, slots=True)
class AllOf:
    terms: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    terms: tuple[Term, ...]


Term = InState | Named | Not | AllOf | AnyOf
"""A guard: ``In(...)`` and named conditions under ``not``, ``and`` and ``or``."""


def guard_term(expression: str) -> Term:
    """A guard expression (python-statemachine's grammar) as a :data:`Term`."""
    return _term(ast.parse(re.sub(r"!(?!=)", "not ", expression), mode="eval").body, expression)


def _term(node: ast.expr, expression: str) -> Term:
    if isinstance(node, ast.BoolOp):
        terms = tuple(_term(value, expression) for value in node.values)
        return AllOf(terms) if isinstance(node.op, ast.And) else AnyOf(terms)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return Not(_term(node.operand, expression))
    if isinstance(node, ast.Name):
        return Named(node.id)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "In"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return InState(node.args[0].value)
    raise ValueError(f"guard {expression!r}: cannot export {ast.dump(node)}")


def python_guard(term: Term) -> str:
    """``term`` in the Python dialect python-statemachine's restricted evaluator reads:
    ``not``, ``and``, ``or``, ``In('x')`` and the data model's names."""

    def spell(term: Term, inside: bool) -> str:
        if isinstance(term, InState):
            return f"In({term.state!r})"
        if isinstance(term, Named):
            return term.name
        if isinstance(term, Not):
            return f"not {spell(term.term, True)}"
        joiner = " and " if isinstance(term, AllOf) else " or "
        text = joiner.join(spell(part, True) for part in term.terms)
        return f"({text})" if inside else text

    return spell(term, False)


def term_names(term: Term) -> tuple[str, ...]:
    """The named conditions ``term`` reads, in order."""
    if isinstance(term, Named):
        return (term.name,)
    if isinstance(term, InState):
        return ()
    if isinstance(term, Not):
        return term_names(term.term)
    return tuple(name for part in term.terms for name in term_names(part))


# ---------------------------------------------------------------------- the document model


@dataclass(frozen=True, slots=True)
class Datum:
    """One variable of the document's data model."""

    name: str
    initial: JSONValue
    """Its value when a handoff starts (for the default order and revision)."""
    text: str
    """What it is, for people."""
    condition: Condition | None = None
    """The named condition it is (``None``: the completion or the list of actions issued)."""

    @property
    def parameter(self) -> bool:
        """Set before the first event: the order or the revision decides it."""
        return self.condition is not None and self.condition.parameter


@dataclass(frozen=True, slots=True)
class Assignment:
    """``name = value``, done by an entry or a transition."""

    name: str
    value: JSONValue


@dataclass(frozen=True, slots=True)
class ExportTransition:
    """One declared transition a document runs."""

    index: int
    """The chart's number for it (document order)."""
    events: tuple[str, ...]
    """``()``: eventless; ``("done.state.<id>",)``: the state's regions all finished."""
    kind: EdgeKind
    target: str
    guard: Term | None
    assignments: tuple[Assignment, ...]
    """What taking it records (the completion)."""
    validators: tuple[str, ...]
    """Checks of the input's payload that may refuse it before it is taken (not run)."""
    stores: tuple[str, ...]
    """Payload bookkeeping it does (``store_transfer_timing``; not run)."""
    text: str
    """The transition in one line, as the chart's description words it."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """An input the chart refuses with an error code in a state."""

    event: str
    code: str


@dataclass(frozen=True, slots=True)
class ExportState:
    """One state, with what entering it does and the transitions leaving it."""

    id: str
    label: str
    kind: StateKind
    initial: str | None
    """The child entered first, for a compound state or a region."""
    final: bool
    children: tuple[ExportState, ...]
    sets: tuple[Assignment, ...]
    """Flags its entry sets (``source_engaged = True``)."""
    issues: tuple[str, ...]
    """The kinds of the actions its entry issues (``SubmitPrefill``), appended to ``issued``."""
    transitions: tuple[ExportTransition, ...]
    rejections: tuple[Rejection, ...]

    @property
    def parallel(self) -> bool:
        return self.kind is StateKind.PARALLEL

    def walk(self) -> tuple[ExportState, ...]:
        """This state and every state below it, document order."""
        return (self, *(state for child in self.children for state in child.walk()))


@dataclass(frozen=True, slots=True)
class InputRow:
    """Which input becomes an event (a document is given events, not inputs)."""

    event: str
    text: str


@dataclass(frozen=True, slots=True)
class ExportChart:
    """Everything an exported document says."""

    name: str
    title: str
    revision: Revision | None
    """``None``: every revision, chosen by the data model's revision parameters."""
    states: tuple[ExportState, ...]
    """The top-level states."""
    initial: str
    data: tuple[Datum, ...]
    inputs: tuple[InputRow, ...]

    def walk(self) -> tuple[ExportState, ...]:
        return tuple(state for top in self.states for state in top.walk())

    @property
    def parameters(self) -> tuple[Datum, ...]:
        return tuple(datum for datum in self.data if datum.parameter)

    def parameters_for(self, order: HandoffOrder, revision: Revision) -> dict[str, bool]:
        """The parameters to set before the first event of a handoff of ``order`` and
        ``revision`` (a revision's document holds that revision only)."""
        if self.revision is not None and revision is not self.revision:
            raise ValueError(f"this document is revision {self.revision.value}'s only")
        return {
            datum.name: datum.condition.value(order, revision)
            for datum in self.parameters
            if datum.condition is not None
        }

    def settings(self) -> tuple[tuple[str, dict[str, bool]], ...]:
        """Each way to start a handoff (an order, and in the family a revision too), named,
        with the values of its parameters (:meth:`parameters_for`)."""
        revisions = (self.revision,) if self.revision is not None else tuple(Revision)
        return tuple(
            (
                order.value if self.revision is not None else f"{revision.value}, {order.value}",
                self.parameters_for(order, revision),
            )
            for revision in revisions
            for order in HandoffOrder
        )

    @property
    def source(self) -> str:
        """Where the document comes from, for its header."""
        text = f"handoff_fsm.chart.{self.name}"
        if self.revision is not None:
            text += f" as revision {self.revision.value} runs it"
        else:
            text += " (every revision; the revision is a parameter)"
        return text


def export_model(model: ChartModel, chart: type[HandoffChart] = HandoffChart) -> ExportChart:
    """The document model of ``model`` (the family's description of ``chart`` or one
    revision's)."""
    conditions = chart_conditions(model, chart)
    default_revision = model.revision if model.revision is not None else Revision.SEED
    ordered = sorted(
        enumerate(conditions),
        key=lambda item: (not item[1].by_order, not item[1].by_revision, item[0]),
    )
    data = [
        Datum(
            condition.name,
            condition.value(HandoffOrder.SOURCE_FIRST, default_revision),
            _condition_text(condition),
            condition,
        )
        for _, condition in ordered
    ]
    data.append(Datum(COMPLETION, None, "the completion a transition records: Success or Canceled"))
    data.append(Datum(ISSUED, [], "the kinds of the actions the entries issued, in order"))
    by_name = {condition.name: condition for condition in conditions}
    _check_rejections(model)
    return ExportChart(
        name=model.name,
        title=model.title,
        revision=model.revision,
        states=tuple(_state(model, model.state(state_id), by_name) for state_id in model.top_level),
        initial=model.initial,
        data=tuple(data),
        inputs=tuple(InputRow(event.event, event.text.replace("`", "")) for event in model.inputs),
    )


def _condition_text(condition: Condition) -> str:
    """What decides a condition, in words (its name says what it is)."""
    if condition.set_by:
        return f"set on entering {', '.join(condition.set_by)}"
    true = sorted(
        {
            (order.value if condition.by_order else revision.value)
            for order, revision, value in condition.start
            if value
        }
    )
    deciders = [
        w for w, d in (("order", condition.by_order), ("revision", condition.by_revision)) if d
    ]
    if not deciders:
        return "the same for every handoff"
    return f"decided by the {' and the '.join(deciders)}: true for {', '.join(true) or 'none'}"


def _state(model: ChartModel, node: StateNode, conditions: dict[str, Condition]) -> ExportState:
    children = model.children(node.id)
    initial = None
    if children and node.kind is not StateKind.PARALLEL:
        initial = next((child.id for child in children if child.initial), children[0].id)
    owned = [edge for edge in model.edges if edge.source == node.id]
    return ExportState(
        id=node.id,
        label=node.label,
        kind=node.kind,
        initial=initial,
        final=node.final,
        children=tuple(_state(model, child, conditions) for child in children),
        sets=tuple(Assignment(name, True) for name in node.entry_fields),
        issues=node.entry_actions,
        transitions=tuple(
            _transition(edge, conditions) for edge in owned if edge.kind is not EdgeKind.REJECTION
        ),
        rejections=tuple(
            Rejection(event, edge.rejection.value)
            for edge in owned
            if edge.kind is EdgeKind.REJECTION and edge.rejection is not None
            for event in edge.events
        ),
    )


def _transition(edge: Edge, conditions: dict[str, Condition]) -> ExportTransition:
    guard = guard_term(edge.guard.expression) if edge.guard is not None else None
    unknown = [name for name in term_names(guard) if name not in conditions] if guard else []
    if unknown:
        raise ValueError(f"transition {edge}: its guard reads {unknown}, no named condition")
    assignments: tuple[Assignment, ...] = ()
    if edge.completion is not None:
        assignments = (Assignment(COMPLETION, edge.completion.value),)
    stores = tuple(effect for effect in edge.effects if effect.startswith("store_"))
    return ExportTransition(
        index=edge.index,
        events=edge.events,
        kind=edge.kind,
        target=edge.target,
        guard=guard,
        assignments=assignments,
        validators=edge.validators,
        stores=stores,
        text=str(edge),
    )


def _check_rejections(model: ChartModel) -> None:
    """A refused input has no transition in a document: that is faithful only while no
    enclosing state would take the same event instead."""
    for edge in model.edges:
        if edge.kind is not EdgeKind.REJECTION:
            continue
        parent = model.state(edge.source).parent
        while parent is not None:
            taken = [
                other
                for other in model.edges
                if other.source == parent
                and other.kind is not EdgeKind.REJECTION
                and set(other.events) & set(edge.events)
            ]
            if taken:
                raise ValueError(
                    f"{edge}: refused here, but {taken[0]} would take it in a document "
                    "without the refusal"
                )
            parent = model.state(parent).parent


# ---------------------------------------------------------------------- what is not run


def not_expressed(chart: ExportChart) -> tuple[str, ...]:
    """What no exported document runs, in words: each format names these (and its own)."""
    rejected = sorted({(r.event, r.code) for s in chart.walk() for r in s.rejections})
    checked = sorted({v for s in chart.walk() for t in s.transitions for v in t.validators})
    stored = sorted({v for s in chart.walk() for t in s.transitions for v in t.stores})
    notes = [
        "Refusals: in some states the chart refuses an input with an error code ("
        + ", ".join(f"{event}: {code}" for event, code in rejected)
        + "; each is named at its state); the document has no transition for that event "
        "there, so it does not take it, but it cannot answer with the error.",
        "Payload checks: "
        + ", ".join(checked)
        + (" judges" if len(checked) == 1 else " judge")
        + " an input's payload before the transitions that name them are taken "
        "(each is named at its transition); the document sees events, not payloads: give "
        "it the event of an input whose payload passed them.",
        "Payloads: the chart stores "
        + ", ".join(s.removeprefix("store_").replace("_", " ") for s in stored)
        + " for the actions it issues later; a document records the kinds of the actions "
        f"issued ({ISSUED}), not their ids, handoff or delay.",
        "The journal: an outcome becomes an event only for an action outstanding, and "
        "only once; a fact of another handoff becomes none. The inputs table says which "
        "input becomes which event.",
        "Parameters: "
        + ", ".join(datum.name for datum in chart.parameters)
        + " are decided by the order"
        + (" and the revision" if chart.revision is None else "")
        + " and must be set before the first event (see the settings).",
    ]
    return tuple(notes)

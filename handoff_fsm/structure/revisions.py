"""One protocol revision's chart: the chart family with that revision decided.

Rule kept here: what a revision's chart shows is read off the chart and that
revision's compiled table (:func:`~handoff_fsm.engines.compiled.compiled_chart`),
never from a list of names. The compiled table holds every chart state a
coordinator of the revision can reach (configuration and declared fields), so:

* a guard's parts that take one value in every reachable chart state (a field such
  as ``reopens_after_success``, whose value only the revision decides, or
  ``In('x')`` of a state never or always active) are replaced by that value and the
  guard is simplified: a transition whose guard becomes false is left out, one whose
  guard becomes true is drawn without it, and what remains is worded again;
* a state no run enters is left out (``decoding`` under the seed), with every
  transition into or out of it. A run enters the states of the reachable
  configurations (where it rests between inputs) and, within one input, the
  targets of the transitions left from a state it entered (``source_pending``,
  ``released``: a run passes through them).

Every other part of the family's description (words, effects, actions, the
transitions' numbers) is kept, so a revision's chart is drawn, tabled and diffed
by the same code as the family. Which declared transitions the revision's
compiled steps fire is measured separately (:mod:`handoff_fsm.structure.transitions`);
the tests hold the two to the same set.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import cache
from typing import Any, Final

from handoff_fsm.chart import HandoffChart
from handoff_fsm.engines.compiled import CompiledChart, compile_chart, compiled_chart
from handoff_fsm.model import HandoffOrder, Revision, checked_revision
from handoff_fsm.structure.describe import ChartModel, Edge, StateKind, describe_chart, word_guard
from handoff_fsm.structure.transitions import QuietModel

_IN: Final = "In"


def revision_chart(
    revision: Revision | str | None = None, chart: type[HandoffChart] = HandoffChart
) -> ChartModel:
    """The chart as ``revision`` (default: the seed) runs it; see the module's rule."""
    chosen = checked_revision(revision if revision is not None else Revision.SEED)
    if chart is HandoffChart:
        return _default(chosen)
    return _resolve(chart, compile_chart(chart, chosen))


@cache
def _default(revision: Revision) -> ChartModel:
    return _resolve(HandoffChart, compiled_chart(revision))


def constant_guard_parts(chart: type[HandoffChart], compiled: CompiledChart) -> dict[str, bool]:
    """The guard parts of ``chart`` that take one value in every chart state of ``compiled``.

    Keys are the fields guards read (``reopens_after_success``) and ``In('state')``
    for the states they read, each evaluated by the chart itself on every reachable
    chart state's declared fields and configuration.
    """
    family = describe_chart(chart)
    guards = [edge.guard for edge in family.edges if edge.guard is not None]
    fields = sorted({name for guard in guards for name in guard.fields})
    states = sorted({state for guard in guards for state in guard.states})
    machine: Any = chart(QuietModel(), HandoffOrder.SOURCE_FIRST, compiled.revision)
    seen: dict[str, set[bool]] = {}
    for state in compiled.states:
        machine.load_fields(state.fields)
        for name in fields:
            seen.setdefault(name, set()).add(bool(getattr(machine, name)))
        for state_id in states:
            seen.setdefault(_in(state_id), set()).add(state_id in state.configuration)
    return {part: values.pop() for part, values in seen.items() if len(values) == 1}


def _in(state_id: str) -> str:
    return f"{_IN}({state_id!r})"


def _resolve(chart: type[HandoffChart], compiled: CompiledChart) -> ChartModel:
    family = describe_chart(chart)
    constants = constant_guard_parts(chart, compiled)
    possible: list[Edge] = []
    for edge in family.edges:
        if edge.guard is None:
            possible.append(edge)
            continue
        decided = decide(ast.parse(_python(edge.guard.expression), mode="eval").body, constants)
        if decided is False:
            continue
        guard = None if decided is True else word_guard(ast.unparse(decided), family)
        possible.append(replace(edge, guard=guard))
    entered = entered_states(family, compiled, possible)
    return replace(
        family,
        states=tuple(
            replace(state, children=tuple(c for c in state.children if c in entered))
            for state in family.states
            if state.id in entered
        ),
        edges=tuple(e for e in possible if e.source in entered and e.target in entered),
        top_level=tuple(s for s in family.top_level if s in entered),
        revision=compiled.revision,
    )


def entered_states(family: ChartModel, compiled: CompiledChart, edges: Iterable[Edge]) -> set[str]:
    """The states some run of ``compiled``'s revision enters.

    Those of its reachable configurations (where a run rests between inputs), and
    those a run passes through within one input: the targets of ``edges`` leaving a
    state entered, with what entering a state enters (its ancestors, the initial child
    of a compound state, every region of a parallel one).
    """
    entered = {state_id for state in compiled.states for state_id in state.configuration}
    # A configuration's states were entered too, but what entering them entered need not
    # be in the configuration any more.
    for state_id in tuple(entered):
        entered |= entered_with(family, state_id)
    edges = tuple(edges)
    grew = True
    while grew:
        before = len(entered)
        for edge in edges:
            if edge.source in entered:
                entered |= entered_with(family, edge.target)
        grew = len(entered) != before
    return entered


def entered_with(model: ChartModel, state_id: str) -> frozenset[str]:
    """The states active once ``state_id`` is entered: itself, its ancestors and what
    entering it enters (the initial child of a compound state, every region of a
    parallel one, and so on down), as the framework enters them."""
    found: set[str] = set()
    node: str | None = model.state(state_id).parent
    while node is not None:
        found.add(node)
        node = model.state(node).parent
    below = [state_id]
    while below:
        current = below.pop()
        found.add(current)
        state = model.state(current)
        children = model.children(current)
        if state.kind is StateKind.PARALLEL:
            below += [child.id for child in children]
        elif children:
            below.append(next((c for c in children if c.initial), children[0]).id)
    return frozenset(found)


def _python(expression: str) -> str:
    """python-statemachine's ``!`` as Python's ``not``."""
    return re.sub(r"!(?!=)", "not ", expression)


def _part(node: ast.expr) -> str | None:
    """The key of a guard part :func:`constant_guard_parts` may know: a field or ``In('x')``."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == _IN
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return _in(node.args[0].value)
    return None


def decide(node: ast.expr, values: Mapping[str, bool]) -> ast.expr | bool:
    """``node`` with the parts in ``values`` replaced by their value, and simplified."""
    part = _part(node)
    if part is not None:
        return values.get(part, node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = decide(node.operand, values)
        return (not operand) if isinstance(operand, bool) else ast.UnaryOp(ast.Not(), operand)
    if isinstance(node, ast.BoolOp):
        conjunction = isinstance(node.op, ast.And)
        parts: list[ast.expr] = []
        for value in node.values:
            decided = decide(value, values)
            if decided is (not conjunction):
                return not conjunction  # False in an `and`, True in an `or`
            if not isinstance(decided, bool):
                parts.append(decided)
        if not parts:
            return conjunction
        return parts[0] if len(parts) == 1 else ast.BoolOp(node.op, parts)
    return node

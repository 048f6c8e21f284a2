"""Every exported document runs in its own framework and agrees with the library on every
trace of ``check``'s exploration, for both revisions and both orders (and the family
document, for each revision it holds).

The SCXML, JSON and YAML documents are loaded by python-statemachine's own
``statemachine.io.load`` with ``trusted=False`` (its restricted evaluator) and the XState
config by the real ``xstate`` package (pinned in tools/mermaid-check/package.json), in one
Node process per document, driven by a script this module writes. The traces are the
exploration's (tests/support/traces.py): after every input the loaded machine's active
atomic states, its data model (the engaged flags, the completion, the parameters) and the
kinds of the actions it recorded equal the library's; an input the library refuses with a
refusal the chart declares is one the document does not take (python-statemachine: not
among ``enabled_events()``; XState: ``snapshot.can`` is false) and sending it changes
nothing; an input refused for its payload is one whose check the document names where it
would have been taken; an input the journal stops never reaches the document. The
counts checked are printed (``-s``) and listed at the end of the run.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Final

import pytest
from statemachine.io import load

from handoff_fsm import HandoffOrder, Revision
from handoff_fsm.chart import ChartFields
from handoff_fsm.render.export import FAMILY, ExportChart, ExportFormat, export_chart, export_model
from handoff_fsm.render.export.document import COMPLETION, ISSUED
from handoff_fsm.structure import describe_chart, revision_chart
from tests.requirements import MERMAID_CHECK
from tests.support.traces import COUNTS_PROPERTY, Answer, TraceTree, trace_tree

pytestmark = pytest.mark.slow

CHARTS: Final = (Revision.SEED.value, Revision.A976B2BF.value, FAMILY)
PYTHON_FORMATS: Final = (ExportFormat.SCXML, ExportFormat.JSON, ExportFormat.YAML)


def _model(chart: str) -> ExportChart:
    return export_model(describe_chart() if chart == FAMILY else revision_chart(chart))


def _driven(chart: ExportChart) -> list[tuple[Revision, HandoffOrder, dict[str, bool]]]:
    """Each exploration a document is driven along, with the parameters to set for it."""
    revisions = tuple(Revision) if chart.revision is None else (chart.revision,)
    return [
        (revision, order, chart.parameters_for(order, revision))
        for revision in revisions
        for order in HandoffOrder
    ]


def _expected_data(chart: ExportChart, fields: ChartFields, values: dict[str, bool]) -> Any:
    """The data model a document must hold where the library's chart fields are ``fields``."""
    expected: dict[str, Any] = {}
    for datum in chart.data:
        if datum.name == ISSUED:
            continue
        if datum.name == COMPLETION:
            expected[datum.name] = None if fields.completion is None else fields.completion.value
        elif datum.parameter:
            expected[datum.name] = values[datum.name]
        else:
            expected[datum.name] = getattr(fields, datum.name)
    return expected


def _names_the_check(chart: ExportChart, leaves: frozenset[str], event: str | None) -> bool:
    """The document names a payload check on a transition for ``event`` from an active state."""
    return any(
        event in transition.events and transition.validators
        for state in chart.walk()
        if state.id in leaves or any(child.id in leaves for child in state.walk())
        for transition in state.transitions
    )


def _report(record_property: Any, line: str) -> None:
    print(line)
    record_property(COUNTS_PROPERTY, line)


# ---------------------------------------------------------------------- python-statemachine


def _leaves(machine: Any) -> frozenset[str]:
    return frozenset(state.id for state in machine.configuration if state.is_atomic)


def _drive_loaded(
    text: str, fmt: ExportFormat, chart: ExportChart, tree: TraceTree, values: dict[str, bool]
) -> Counter[str]:
    """Drive the document loaded by ``statemachine.io.load`` along every trace of ``tree``."""
    machine = load(text, format=fmt.value, trusted=False)()
    for name, value in values.items():
        setattr(machine.model, name, value)
    data = [datum.name for datum in chart.data if datum.name != ISSUED]

    def agrees(target: Any, leaves: frozenset[str], fields: ChartFields, where: str) -> None:
        assert _leaves(target) == leaves, where
        held = {name: getattr(target.model, name) for name in data}
        assert held == _expected_data(chart, fields, values), where

    root = tree.nodes[0]
    agrees(machine, root.leaves, root.fields, "the initial configuration")
    at = {0: machine}
    counted: Counter[str] = Counter()
    for kind, index in tree.walk():
        if kind == "enter":
            continue
        step = tree.steps[index]
        node = tree.nodes[step.node]
        where = f"{tree.revision.value} {tree.order.value}: trace {index} ({step.op} in {node})"
        here = at[step.node]
        target = copy.deepcopy(here) if step.child is not None else here
        counted["traces"] += 1
        if step.answer is Answer.NO_EVENT:
            assert (step.leaves, step.fields, step.issued) == (node.leaves, node.fields, ()), where
        elif step.answer is Answer.PAYLOAD:
            assert _names_the_check(chart, node.leaves, step.event), where
        elif step.answer is Answer.REFUSED:
            assert step.event is not None
            assert step.event not in {event.id for event in here.enabled_events()}, where
            target.send(step.event)
            counted["inputs"] += 1
        else:
            assert step.event is not None
            changed = (step.leaves, step.fields, step.issued) != (node.leaves, node.fields, ())
            if changed and target is here:
                target = copy.deepcopy(here)
            before = len(target.model.issued)
            target.send(step.event)
            assert tuple(target.model.issued[before:]) == step.issued, where
            counted["inputs"] += 1
        agrees(target, step.leaves, step.fields, where)
        counted[step.answer.value] += 1
        if step.child is not None:
            at[step.child] = target
    return counted


@pytest.mark.parametrize("fmt", PYTHON_FORMATS, ids=str)
@pytest.mark.parametrize("chart_name", CHARTS)
def test_python_statemachine_runs_the_export_like_the_library(
    fmt: ExportFormat, chart_name: str, record_property: Any
) -> None:
    text = export_chart(fmt, chart_name)
    chart = _model(chart_name)
    for revision, order, values in _driven(chart):
        tree = trace_tree(revision, order)
        counted = _drive_loaded(text, fmt, chart, tree, values)
        assert counted["traces"] == len(tree.steps) == tree.explored_transitions > 0
        assert counted["inputs"] > 0 and counted[Answer.REFUSED.value] > 0
        assert counted[Answer.PAYLOAD.value] > 0
        _report(
            record_property,
            f"{fmt} {chart_name} as {revision.value} {order.value}: "
            + ", ".join(f"{key} {value}" for key, value in sorted(counted.items())),
        )


# ---------------------------------------------------------------------- XState


DRIVER: Final = r"""
// Written by tests/test_export_run.py: runs an XState config with the real xstate
// package along a tree of traces, and prints what the machine did after every input.
const fs = require('node:fs');
const { createMachine, createActor, assign, and, or, not, stateIn } = require('xstate');

const [configPath, inputPath] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
const input = JSON.parse(fs.readFileSync(inputPath, 'utf8'));

// The config's guards and actions, implemented from their params (docs/elsewhere.md).
function guardOf(p) {
  if ('stateIn' in p) return stateIn(p.stateIn);
  if ('context' in p) return ({ context }) => context[p.context] === true;
  if ('not' in p) return not(guardOf(p.not));
  if ('and' in p) return and(p.and.map(guardOf));
  if ('or' in p) return or(p.or.map(guardOf));
  throw new Error('unknown guard ' + JSON.stringify(p));
}
const guards = {};
(function collect(node) {
  if (Array.isArray(node)) return node.forEach(collect);
  if (node && typeof node === 'object') {
    if (node.guard) guards[node.guard.type] = guardOf(node.guard.params);
    Object.values(node).forEach(collect);
  }
})(config.states);
const actions = {
  set: assign((_, params) => params),
  issue: assign({ issued: ({ context }, params) => [...context.issued, params.action] }),
};

const leaves = (value) =>
  typeof value === 'string' ? [value] : Object.values(value).flatMap(leaves);
function observe(snapshot, before, can) {
  const data = {};
  for (const name of input.data) data[name] = snapshot.context[name];
  const issued = snapshot.context.issued.slice(before);
  return [can, leaves(snapshot.value), data, issued];
}

const results = [];
for (const run of input.runs) {
  const machine = createMachine(
    { ...config, context: { ...config.context, ...run.context } },
    { guards, actions },
  );
  const first = createActor(machine).start();
  const root = observe(first.getSnapshot(), 0, null);
  const states = [first.getPersistedSnapshot()];
  const steps = [];
  for (const [node, event, child] of run.steps) {
    const actor = createActor(machine, { snapshot: states[node] }).start();
    const before = actor.getSnapshot();
    const can = event === null ? null : before.can({ type: event });
    if (event !== null) actor.send({ type: event });
    steps.push(observe(actor.getSnapshot(), before.context.issued.length, can));
    if (child !== null) states[child] = actor.getPersistedSnapshot();
    actor.stop();
  }
  results.push({ root, steps });
}
process.stdout.write(JSON.stringify(results) + '\n');
"""


def _sent(step_answer: Answer) -> bool:
    """Whether the document is given the event (a refused one too: it must not take it)."""
    return step_answer in (Answer.EVENT, Answer.REFUSED)


def _run_input(chart: ExportChart) -> tuple[dict[str, Any], list[TraceTree]]:
    trees, runs = [], []
    for revision, order, values in _driven(chart):
        tree = trace_tree(revision, order)
        trees.append(tree)
        runs.append(
            {
                "context": values,
                "steps": [
                    [step.node, step.event if _sent(step.answer) else None, step.child]
                    for step in tree.steps
                ],
            }
        )
    data = [datum.name for datum in chart.data if datum.name != ISSUED]
    return {"data": data, "runs": runs}, trees


def _check_xstate_run(
    chart: ExportChart, tree: TraceTree, values: dict[str, bool], result: dict[str, Any]
) -> Counter[str]:
    _, root_leaves, root_data, _ = result["root"]
    assert frozenset(root_leaves) == tree.nodes[0].leaves
    assert root_data == _expected_data(chart, tree.nodes[0].fields, values)
    counted: Counter[str] = Counter()
    assert len(result["steps"]) == len(tree.steps)
    for index, (step, (can, leaves, data, issued)) in enumerate(
        zip(tree.steps, result["steps"], strict=True)
    ):
        node = tree.nodes[step.node]
        where = f"{tree.revision.value} {tree.order.value}: trace {index} ({step.op} in {node})"
        counted["traces"] += 1
        counted[step.answer.value] += 1
        if step.answer is Answer.REFUSED:
            assert can is False, where
        if step.answer is Answer.PAYLOAD:
            assert _names_the_check(chart, node.leaves, step.event), where
        if _sent(step.answer):
            counted["inputs"] += 1
        assert frozenset(leaves) == step.leaves, where
        assert data == _expected_data(chart, step.fields, values), where
        assert tuple(issued) == step.issued, where
    return counted


def _run_xstate(config_text: str, chart: ExportChart, folder: Path) -> tuple[Any, list[TraceTree]]:
    """One Node process: the config driven along every trace of every exploration it holds."""
    config = folder / "statechart.xstate.json"
    config.write_text(config_text, encoding="utf-8")
    driver = folder / "drive.cjs"
    driver.write_text(DRIVER, encoding="utf-8")
    given, trees = _run_input(chart)
    inputs = folder / "traces.json"
    inputs.write_text(json.dumps(given), encoding="utf-8")
    env = {**os.environ, "NODE_PATH": str(MERMAID_CHECK / "node_modules")}
    done = subprocess.run(
        ["node", str(driver), str(config), str(inputs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) == len(trees)
    return results, trees


@pytest.mark.requires("node")
@pytest.mark.parametrize("chart_name", CHARTS)
def test_xstate_runs_the_export_like_the_library(
    chart_name: str, tmp_path: Path, record_property: Any
) -> None:
    chart = _model(chart_name)
    results, trees = _run_xstate(export_chart(ExportFormat.XSTATE, chart_name), chart, tmp_path)
    for (revision, order, values), tree, result in zip(_driven(chart), trees, results, strict=True):
        counted = _check_xstate_run(chart, tree, values, result)
        assert counted["traces"] == tree.explored_transitions > 0
        assert counted["inputs"] > 0 and counted[Answer.REFUSED.value] > 0
        _report(
            record_property,
            f"xstate {chart_name} as {revision.value} {order.value}: "
            + ", ".join(f"{key} {value}" for key, value in sorted(counted.items())),
        )


# ---------------------------------------------------------------------- the drive can fail

MUTANTS: Final = [
    pytest.param('"cond": "In(\'activated\')"', '"cond": "In(\'activating\')"', id="a guard"),
    pytest.param("issued + ['StartTransfer']", "issued", id="an action"),
    pytest.param("'Canceled'", "'Success'", id="a completion"),
    pytest.param(
        '"source_idle": {\n              "initial": true,\n              "transitions": [',
        '"source_idle": {\n              "initial": true,\n              "transitions": [\n'
        '                {"event": "source_held", "target": "source_idle"},',
        id="a refused input taken",
    ),
]


@pytest.mark.parametrize(("old", "new"), MUTANTS)
def test_the_drive_fails_on_a_document_that_differs(old: str, new: str) -> None:
    """One change to the JSON document, and driving it along the traces fails."""
    text = export_chart(ExportFormat.JSON, Revision.SEED)
    assert text.count(old) >= 1
    changed = text.replace(old, new, 1)
    chart = _model(Revision.SEED.value)

    def drive() -> None:
        for revision, order, values in _driven(chart):
            _drive_loaded(changed, ExportFormat.JSON, chart, trace_tree(revision, order), values)

    with pytest.raises(AssertionError):
        drive()


@pytest.mark.requires("node")
def test_the_xstate_drive_fails_on_a_config_that_differs(tmp_path: Path) -> None:
    text = export_chart(ExportFormat.XSTATE, Revision.SEED)
    old = '"stateIn": "#activated"'
    assert text.count(old) == 1
    chart = _model(Revision.SEED.value)
    results, trees = _run_xstate(text.replace(old, '"stateIn": "#activating"'), chart, tmp_path)
    for (_, _, values), tree, result in zip(_driven(chart), trees, results, strict=True):
        with pytest.raises(AssertionError):
            _check_xstate_run(chart, tree, values, result)

"""handoff_fsm.render.export and ``handoff-fsm export``: what each document holds and names.

That the documents *run* like the library is tests/test_export_run.py's (slow: it drives
them along every explored trace). Here, quickly: each document loads with
python-statemachine's restricted evaluator (the JSON and YAML ones also satisfy its
published schema; XState's is a JSON config, checked for its shape), keeps every state,
region, initial child and final state under the chart's ids, names what it cannot run,
and the YAML file is the JSON file's mapping for any YAML reader; the command refuses an
unknown format or revision in one line and writes nothing, and a write that fails leaves
the old file.
"""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from statemachine.io import load

from handoff_fsm import HandoffOrder, Revision
from handoff_fsm.cli import export as cli_export
from handoff_fsm.cli import main
from handoff_fsm.render.export import (
    FAMILY,
    SUFFIXES,
    ExportFormat,
    export_chart,
    export_document,
    export_model,
)
from handoff_fsm.render.export.document import (
    ISSUED,
    AllOf,
    InState,
    Named,
    Not,
    guard_term,
    python_guard,
)
from handoff_fsm.render.export.scxml import NAMESPACE, comment
from handoff_fsm.structure import ChartModel, EdgeKind, StateKind, describe_chart, revision_chart
from handoff_fsm.structure.conditions import chart_conditions
from tests.support.cli import COMMAND

CHARTS: Final = (Revision.SEED.value, Revision.A976B2BF.value, FAMILY)
PYTHON_FORMATS: Final = (ExportFormat.SCXML, ExportFormat.JSON, ExportFormat.YAML)
OLD: Final = b"a previously good document\n"


def _described(chart: str) -> ChartModel:
    return describe_chart() if chart == FAMILY else revision_chart(chart)


def test_the_command_knows_every_format_and_the_family() -> None:
    assert tuple(fmt.value for fmt in ExportFormat) == cli_export.FORMATS
    assert cli_export.FAMILY == FAMILY
    assert set(SUFFIXES) == set(ExportFormat)


def test_export_chart_is_the_document_of_the_chart_as_data() -> None:
    for chart in CHARTS:
        for fmt in ExportFormat:
            assert export_chart(fmt, chart) == export_document(_described(chart), fmt)
    assert export_chart("json", None) == export_chart("json", FAMILY)
    assert export_chart("json") == export_chart("json", Revision.SEED)
    with pytest.raises(ValueError, match="'dot' is not a valid ExportFormat"):
        export_chart("dot")


# ---------------------------------------------------------------------- what is kept


@pytest.mark.parametrize("fmt", PYTHON_FORMATS, ids=str)
@pytest.mark.parametrize("chart", CHARTS)
def test_python_statemachine_loads_it_untrusted(fmt: ExportFormat, chart: str) -> None:
    machine = load(export_chart(fmt, chart), format=fmt.value, trusted=False)()
    leaves = {state.id for state in machine.configuration if state.is_atomic}
    assert leaves == {"source_idle", "destination_idle", "transfer_idle"}
    assert machine.model.issued == []
    assert machine.model.source_first is True and machine.model.destination_first is False
    machine.send("start")
    assert machine.model.issued == ["SubmitPrefill"] and machine.model.source_engaged is True


@pytest.mark.parametrize("fmt", [ExportFormat.JSON, ExportFormat.YAML], ids=str)
@pytest.mark.parametrize("chart", CHARTS)
def test_json_and_yaml_satisfy_python_statemachine_s_published_schema(
    fmt: ExportFormat, chart: str
) -> None:
    """``validate=True``: the document against the JSON Schema python-statemachine ships."""
    assert load(export_chart(fmt, chart), format=fmt.value, validate=True).__name__


def _scxml_states(element: ET.Element) -> dict[str, tuple[str, str | None]]:
    """``id -> (tag, initial)`` for every state element below ``element``."""
    found: dict[str, tuple[str, str | None]] = {}
    for child in element:
        tag = child.tag.removeprefix(f"{{{NAMESPACE}}}")
        if tag in ("state", "parallel", "final"):
            found[child.attrib["id"]] = (tag, child.attrib.get("initial"))
            found |= _scxml_states(child)
    return found


def _expected_states(model: ChartModel) -> dict[str, tuple[str, str | None]]:
    expected = {}
    for state in model.states:
        tag = (
            "parallel" if state.kind is StateKind.PARALLEL else "final" if state.final else "state"
        )
        children = model.children(state.id)
        initial = None
        if children and state.kind is not StateKind.PARALLEL:
            initial = next(child.id for child in children if child.initial)
        expected[state.id] = (tag, initial)
    return expected


@pytest.mark.parametrize("chart", CHARTS)
def test_scxml_keeps_every_state_region_and_final_state(chart: str) -> None:
    model = _described(chart)
    root = ET.fromstring(export_chart(ExportFormat.SCXML, chart))
    assert root.tag == f"{{{NAMESPACE}}}scxml" and root.attrib["initial"] == model.initial
    assert root.attrib["datamodel"] == "python"
    assert _scxml_states(root) == _expected_states(model)
    assert {"active", "cleaning_up"} <= {
        state for state, (tag, _) in _scxml_states(root).items() if tag == "parallel"
    }
    events = {
        element.attrib.get("event", "")
        for element in root.iter(f"{{{NAMESPACE}}}transition")
        if element.attrib.get("event", "").startswith("done.state.")
    }
    assert events == {"done.state.active", "done.state.cleaning_up"}


def _native_states(states: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    found: dict[str, tuple[str, str | None]] = {}
    for state_id, body in states.items():
        children = body.get("states", {})
        tag = "parallel" if body.get("parallel") else "final" if body.get("final") else "state"
        initial = next((c for c, b in children.items() if b.get("initial")), None)
        found[state_id] = (tag, None if body.get("parallel") else initial)
        found |= _native_states(children)
    return found


@pytest.mark.parametrize("chart", CHARTS)
def test_json_and_yaml_are_one_mapping_that_keeps_every_state(chart: str) -> None:
    model = _described(chart)
    as_json = json.loads(export_chart(ExportFormat.JSON, chart))
    # PyYAML's safe loader reads YAML 1.1, where a bare `on` is true: the file quotes it.
    as_yaml = yaml.safe_load(export_chart(ExportFormat.YAML, chart))
    assert as_json.pop("description").replace("format json", "format yaml") == as_yaml.pop(
        "description"
    )
    assert as_json == as_yaml
    assert _native_states(as_json["states"]) == _expected_states(model)
    assert as_json["datamodel"][ISSUED] == "[]"


def _xstate_states(states: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    found: dict[str, tuple[str, str | None]] = {}
    for key, body in states.items():
        assert body["id"] == key  # targets are #<id>: one name for a state everywhere
        tag = {"parallel": "parallel", "final": "final"}.get(body.get("type", ""), "state")
        found[key] = (tag, body.get("initial"))
        found |= _xstate_states(body.get("states", {}))
    return found


def _targets(node: Any) -> set[str]:
    if isinstance(node, list):
        return {target for item in node for target in _targets(item)}
    if isinstance(node, dict):
        own = {node["target"]} if isinstance(node.get("target"), str) else set()
        return own | {target for value in node.values() for target in _targets(value)}
    return set()


@pytest.mark.parametrize("chart", CHARTS)
def test_xstate_keeps_every_state_and_targets_by_id(chart: str) -> None:
    model = _described(chart)
    config = json.loads(export_chart(ExportFormat.XSTATE, chart))
    assert config["initial"] == model.initial
    assert _xstate_states(config["states"]) == _expected_states(model)
    assert _targets(config["states"]) <= {f"#{state.id}" for state in model.states}
    assert config["states"]["active"]["onDone"] and config["states"]["cleaning_up"]["onDone"]
    assert config["context"][ISSUED] == []


def test_a_guard_is_the_same_condition_in_every_format() -> None:
    term = guard_term("destination_first and not In('reserved')")
    assert term == AllOf((Named("destination_first"), Not(InState("reserved"))))
    assert python_guard(term) == "destination_first and not In('reserved')"
    assert python_guard(guard_term("!(a and In('x')) or b")) == "not (a and In('x')) or b"
    with pytest.raises(ValueError, match="cannot export"):
        guard_term("retries > 1")
    config = json.loads(export_chart(ExportFormat.XSTATE, Revision.SEED))
    (guarded,) = config["states"]["active"]["states"]["destination"]["states"]["destination_idle"][
        "always"
    ]
    assert guarded["guard"] == {
        "type": "source_first and In('held')",
        "params": {"and": [{"context": "source_first"}, {"stateIn": "#held"}]},
    }


# ---------------------------------------------------------------------- what is named


@pytest.mark.parametrize("fmt", ExportFormat, ids=str)
@pytest.mark.parametrize("chart", CHARTS)
def test_what_a_format_cannot_run_is_named_in_the_document(fmt: ExportFormat, chart: str) -> None:
    model = _described(chart)
    text = export_chart(fmt, chart)
    refusals = {edge.rejection.value for edge in model.edges if edge.rejection is not None}
    checks = {
        v for edge in model.edges if edge.kind is not EdgeKind.REJECTION for v in edge.validators
    }
    assert len(refusals) == 3 and checks >= {"validate_transfer_timing"}
    for name in (*refusals, *checks, "store_transfer_timing".removeprefix("store_"), "journal"):
        assert name in text, name
    for datum in export_model(model).parameters:
        assert datum.name in text
    made = (f"--format {fmt} --revision {chart}", f"(format {fmt}, revision {chart})")
    assert "do not edit" in text and any(command in text for command in made)


@pytest.mark.parametrize("chart", CHARTS)
def test_a_refused_input_has_no_transition_where_it_is_refused(chart: str) -> None:
    model = _described(chart)
    config = json.loads(export_chart(ExportFormat.XSTATE, chart))
    native = json.loads(export_chart(ExportFormat.JSON, chart))

    def find(states: dict[str, Any], state_id: str) -> Any:
        for key, body in states.items():
            if key == state_id:
                return body
            found = find(body.get("states", {}), state_id)
            if found is not None:
                return found
        return None

    refusing = [edge for edge in model.edges if edge.kind is EdgeKind.REJECTION]
    assert len(refusing) == 6
    for edge in refusing:
        (event,) = edge.events
        assert event not in find(config["states"], edge.source).get("on", {}), edge
        transitions = find(native["states"], edge.source).get("transitions", [])
        assert all(event not in t.get("event", "").split() for t in transitions), edge
        assert find(config["states"], edge.source)["meta"]["handoff-fsm"]["refuses"] == {
            event: edge.rejection.value if edge.rejection is not None else None
        }


def test_a_refusal_an_enclosing_state_would_take_is_not_exported() -> None:
    model = revision_chart(Revision.SEED)
    (failing,) = [edge for edge in model.edges if edge.source == "active"][:1]
    taking = replace(
        failing, index=999, events=("source_held",), event_kinds=failing.event_kinds[:1]
    )
    with pytest.raises(ValueError, match="would take it in a document without the refusal"):
        export_model(replace(model, edges=(*model.edges, taking)))


def test_the_conditions_are_the_chart_s_own() -> None:
    by_name = {c.name: c for c in chart_conditions(describe_chart())}
    assert by_name["source_first"].value(HandoffOrder.SOURCE_FIRST, Revision.SEED) is True
    assert by_name["source_first"].value(HandoffOrder.DESTINATION_FIRST, Revision.SEED) is False
    assert by_name["destination_first"].by_order and not by_name["destination_first"].by_revision
    reopens = by_name["reopens_after_success"]
    assert reopens.by_revision and reopens.parameter and not reopens.by_order
    assert reopens.value(HandoffOrder.SOURCE_FIRST, Revision.A976B2BF) is True
    assert by_name["source_engaged"].set_by == ("submitting",)
    assert not by_name["source_engaged"].parameter
    seed = {c.name for c in chart_conditions(revision_chart(Revision.SEED))}
    assert seed == {"source_first", "destination_first", "source_engaged", "destination_engaged"}


def test_an_xml_comment_never_holds_two_dashes() -> None:
    for text in ("--format", "a---b", "a-----b", "ends with -"):
        made = comment(text)
        assert "--" not in made[4:-3] and not made[4:-3].endswith("-")


# ---------------------------------------------------------------------- the command


def test_export_writes_the_document_to_stdout_or_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--format", "yaml", "--revision", "a976b2bf"]) == 0
    assert capsys.readouterr().out == export_chart("yaml", "a976b2bf")
    out = tmp_path / "chart.scxml"
    assert main(["export", "--format", "scxml", "--revision", "family", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == export_chart("scxml", FAMILY)
    assert capsys.readouterr().out == f"wrote {out} (scxml, revision family)\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--format", "dot"],
            "argument --format: invalid choice: 'dot' (choose from 'scxml', 'json', 'yaml', "
            "'xstate')",
        ),
        (
            ["--format", "json", "--revision", "v2"],
            "argument --revision: invalid choice: 'v2' (choose from 'seed', 'a976b2bf', 'family')",
        ),
        (["--format", "SCXML"], "argument --format: invalid choice: 'SCXML'"),
        ([], "the following arguments are required: --format"),
        (["--format", "json", "extra"], "unrecognized arguments: extra"),
    ],
)
def test_a_mistake_on_the_command_line_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit) as stop:
        main(["export", *args, "-o", str(out)])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"handoff-fsm export: {says}") and captured.err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_the_one_line_of_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "--format", "xstate", "-o", "/dev/full"]) == 2
    assert capsys.readouterr().err == "handoff-fsm export: /dev/full: No space left on device\n"


@pytest.mark.slow
def test_a_folder_without_write_permission_changes_nothing(tmp_path: Path) -> None:
    """The folder's mode forbids writing; as root, the process runs without the
    capability that overrides it (util-linux's setpriv), as an ordinary user would."""
    folder = tmp_path / "locked"
    folder.mkdir()
    old = folder / "statechart.scxml"
    old.write_bytes(OLD)
    folder.chmod(0o555)
    command = [*COMMAND, "export", "--format", "scxml", "-o", str(old)]
    if os.geteuid() == 0:
        drop = "--bounding-set=-dac_override,-dac_read_search"
        command = ["setpriv", "--inh-caps=-all", drop, "--", *command]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"handoff-fsm export: {old}: Permission denied\n"
        assert result.stdout == ""
        assert old.read_bytes() == OLD
        assert [p.name for p in folder.iterdir()] == ["statechart.scxml"]
    finally:
        folder.chmod(0o755)

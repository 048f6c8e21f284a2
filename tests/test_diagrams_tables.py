"""Transition tables: one row per declared transition, one section per region."""

from __future__ import annotations

from handoff_fsm.chart import INPUT_EVENTS
from handoff_fsm.review import inputs_markdown
from handoff_fsm.review import transition_tables_markdown as tables
from handoff_fsm.structure import EdgeKind, describe_chart


def _rows(markdown: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in markdown.splitlines()
        if line.startswith("| `")
    ]


def test_one_row_per_declared_transition() -> None:
    model = describe_chart()
    rows = _rows(tables(model))
    in_sections = [*model.edges_of(None), *(e for r in model.regions for e in model.edges_of(r.id))]
    assert sorted(e.index for e in in_sections) == [e.index for e in model.edges]
    for row, edge in zip(rows, in_sections, strict=True):
        source, events, guard, target, actions, _notes = row
        assert source == f"`{edge.source}`"
        assert events == (", ".join(f"`{e}`" for e in edge.events) or "—")
        assert guard == (edge.guard.text if edge.guard else "")
        if edge.kind is EdgeKind.REJECTION:
            assert target == "— (rejected)"
            assert f"✗ `{edge.rejection}`" in row[5]
        else:
            assert target == f"`{edge.target}`"
        assert actions == ", ".join(f"`{a}`" for a in edge.actions)


def test_one_section_per_region_after_the_top_level() -> None:
    markdown = tables(describe_chart(), heading_level=3)
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert headings == [
        "### Top level",
        "### Source (region of Active)",
        "### Destination (region of Active)",
        "### Transfer (region of Active)",
        "### Source cleanup (region of Cleaning up)",
        "### Destination cleanup (region of Cleaning up)",
    ]


def test_validators_and_effects_are_noted() -> None:
    markdown = tables(describe_chart())
    held = next(line for line in markdown.splitlines() if line.startswith("| `submitted` |"))
    assert "`invalid_transfer_bandwidth`" in held
    assert "store transfer timing" in held
    submitting = [line for line in markdown.splitlines() if "| `submitting` |" in line]
    assert any("sets source engaged" in line for line in submitting)


def test_every_input_event_is_listed_with_where_it_is_handled() -> None:
    markdown = inputs_markdown(describe_chart())
    events = [row[0].strip("`") for row in _rows(markdown)]
    assert events == list(INPUT_EVENTS)
    release = next(row for row in _rows(markdown) if row[0] == "`release_confirmed`")
    assert release[2] == "`releasing`, `canceling_source`"

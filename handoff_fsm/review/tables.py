"""The transition tables and the input vocabulary as Markdown, one section per region.

Rule kept here: one row per declared transition of the chart's description
(:class:`~handoff_fsm.structure.ChartModel`; rejections included, as rows that change
nothing), with the same words as the pictures, and one row per input event of the same
description (:attr:`~handoff_fsm.structure.ChartModel.inputs`). Nothing is typed twice.
"""

from __future__ import annotations

from handoff_fsm.review.codes import VALIDATOR_CODES
from handoff_fsm.structure.describe import ChartModel, Edge, EdgeKind, effect_text, field_text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _notes(edge: Edge, model: ChartModel) -> str:
    notes: list[str] = []
    for name in edge.validators:
        if edge.rejection is not None:
            notes.append(f"rejected: ✗ {_code(edge.rejection.value)}, nothing changes")
        else:
            codes = ", ".join(_code(code.value) for code in VALIDATOR_CODES.get(name, ()))
            notes.append(f"checks {name.removeprefix('validate_').replace('_', ' ')}: ✗ {codes}")
    notes += [effect_text(name) for name in edge.effects]
    if edge.kind is EdgeKind.EVENTLESS:
        notes.append("eventless: taken as soon as the guard holds")
    if edge.kind is EdgeKind.DONE:
        notes.append(f"every region of {_code(edge.source)} is final")
    if edge.kind is not EdgeKind.REJECTION:
        target = model.state(edge.target)
        notes += [f"sets {field_text(name)}" for name in target.entry_fields]
    return "; ".join(notes)


def _transition_rows(model: ChartModel, edges: tuple[Edge, ...]) -> list[str]:
    rows = [
        _row(["Source", "Event", "Guard", "Target", "Actions issued", "Notes"]),
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for edge in edges:
        events = ", ".join(_code(event) for event in edge.events) or "—"
        guard = edge.guard.text if edge.guard is not None else ""
        target = "— (rejected)" if edge.kind is EdgeKind.REJECTION else _code(edge.target)
        actions = ", ".join(_code(action) for action in edge.actions)
        rows.append(_row([_code(edge.source), events, guard, target, actions, _notes(edge, model)]))
    return rows


def transition_tables_markdown(model: ChartModel, *, heading_level: int = 2) -> str:
    """Every transition, grouped by the region that owns it (top-level ones first)."""
    mark = "#" * heading_level
    out: list[str] = []
    sections: list[tuple[str, str | None]] = [("Top level", None)]
    sections += [
        (f"{r.label} (region of {model.state(r.parent).label if r.parent else ''})", r.id)
        for r in model.regions
    ]
    for title, region in sections:
        edges = model.edges_of(region)
        if not edges:
            continue
        out += [f"{mark} {title}", ""]
        if region is not None:
            state = model.state(region)
            initial = next(c for c in model.children(region) if c.initial)
            out += [
                f"Region {_code(state.id)} of {_code(state.parent or '')}; starts in "
                f"{_code(initial.id)}; final: "
                + ", ".join(_code(c.id) for c in model.children(region) if c.final)
                + ".",
                "",
            ]
        out += _transition_rows(model, edges)
        out.append("")
    return "\n".join(out)


def inputs_markdown(model: ChartModel) -> str:
    """Which input becomes which chart event, and where the chart handles it."""
    handled: dict[str, list[str]] = {}
    for edge in model.edges:
        for event in edge.events:
            where = handled.setdefault(event, [])
            if edge.source not in where:
                where.append(edge.source)
    rows = [_row(["Event", "Input", "Handled in"]), "| --- | --- | --- |"]
    for entry in model.inputs:
        states = (
            ", ".join(_code(s) for s in handled.get(entry.event, [])) or "— (ignored everywhere)"
        )
        rows.append(_row([_code(entry.event), entry.text, states]))
    rows.append("")
    rows.append(
        "An event a state does not handle is ignored (no actions, no error); late "
        "acknowledgements after completion are ignored too."
    )
    return "\n".join(rows) + "\n"

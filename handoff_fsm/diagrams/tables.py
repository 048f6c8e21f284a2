"""The transition tables and the input vocabulary as Markdown, one section per region.

Rule kept here: one row per declared transition of the :class:`~.model.ChartModel`
(rejections included, as rows that change nothing), with the same words as
the pictures; the inputs table is read from :data:`~handoff_fsm.chart.FACT_EVENTS`
and :data:`~handoff_fsm.chart.ACKNOWLEDGEMENTS`. Nothing is typed twice.
"""

from __future__ import annotations

from handoff_fsm.chart import ACKNOWLEDGEMENTS, ACTION_FAILED, FACT_EVENTS, START
from handoff_fsm.diagrams.codes import VALIDATOR_CODES
from handoff_fsm.diagrams.model import ChartModel, Edge, EdgeKind, effect_text, field_text


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
    inputs: list[tuple[str, str]] = [(START, "`start()`")]
    inputs += [(event, f"fact `{kind.__name__}`") for kind, event in FACT_EVENTS.items()]
    inputs += [
        (
            ack.event,
            " or ".join(f"`{o.value}`" for o in sorted(ack.accepted)) + f" for `{kind.__name__}`",
        )
        for kind, ack in ACKNOWLEDGEMENTS.items()
    ]
    failing = [f"`{kind.__name__}`" for kind, ack in ACKNOWLEDGEMENTS.items() if ack.may_fail]
    inputs.append((ACTION_FAILED, f"`Failed(..)` for {', '.join(failing)}"))
    rows = [_row(["Event", "Input", "Handled in"]), "| --- | --- | --- |"]
    for event, source in inputs:
        states = ", ".join(_code(s) for s in handled.get(event, [])) or "— (ignored everywhere)"
        rows.append(_row([_code(event), source, states]))
    rows.append("")
    rows.append(
        "An event a state does not handle is ignored (no actions, no error); late "
        "acknowledgements after completion are ignored too."
    )
    return "\n".join(rows) + "\n"

"""The review's lost-message tables, worded from :func:`handoff_fsm.verify.losses.lost_messages`.

Rule kept here: every cell and every sentence is computed from the loss
reports (one per revision and order); when the chart changes, the words
change with it. The first table gives, per awaited message and phase of the
handoff, what losing it does under each revision; the second lists every
state where a single loss stalls the handoff for good, with the shortest input
sequence that gets there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from handoff_fsm.io.inputs import Input
from handoff_fsm.model import Revision
from handoff_fsm.structure.describe import ChartModel
from handoff_fsm.verify.losses import Awaited, Fate, LossReport, Situation

Reports = Mapping[Revision, Sequence[LossReport]]


def _phase(model: ChartModel, leaves: tuple[str, ...]) -> str:
    state = model.state(leaves[0])
    while state.parent is not None:
        state = model.state(state.parent)
    return state.id


def _words(line: str) -> str:
    op = Input.from_wire(json.loads(line))
    if op.kind == "start":
        return "start"
    if op.kind == "fact":
        return type(op.fact).__name__
    return f"#{op.action_id} {op.outcome}"


def trace_words(trace: Sequence[str]) -> str:
    """A replay trace's inputs in a few words: ``start → #0 Submitted → Failed``."""
    return " → ".join(_words(line) for line in trace[1:]) or "(none)"


@dataclass(slots=True)
class _Cell:
    counts: Counter[Fate]
    situations: list[Situation]


def _cells(model: ChartModel, reports: Sequence[LossReport]) -> dict[tuple[Awaited, str], _Cell]:
    cells: dict[tuple[Awaited, str], _Cell] = {}
    for report in reports:
        for situation in report.situations:
            phase = _phase(model, situation.state)
            for awaited, fate in situation.fates:
                cell = cells.setdefault((awaited, phase), _Cell(Counter(), []))
                cell.counts[fate] += situation.states
                cell.situations.append(situation)
    return cells


def _fate_text(fate: Fate) -> str:
    return f"**{fate.value}**" if fate is Fate.STALLS else fate.value


def _fate_of(situation: Situation, awaited: Awaited) -> Fate:
    return next(fate for a, fate in situation.fates if a == awaited)


def _others(situation: Situation, awaited: Awaited) -> set[Awaited]:
    return {a for a, _ in situation.fates if a != awaited}


def _where(cell: _Cell, awaited: Awaited, fate: Fate) -> str:
    """Where losing ``awaited`` has ``fate`` while it has another fate elsewhere in the cell.

    Per chart state: the state itself when the other fate never occurs there, else the
    messages awaited alongside in every such situation and in none of the others.
    """
    places: dict[str, list[str]] = {}
    """``while ...`` clause (``""`` for none) -> the chart states it applies in."""
    for state in dict.fromkeys(s.state for s in cell.situations):
        here = [s for s in cell.situations if s.state == state]
        mine = [s for s in here if _fate_of(s, awaited) is fate]
        rest = [s for s in here if _fate_of(s, awaited) is not fate]
        if not mine:
            continue
        clause = ""
        if rest:
            shared = set.intersection(*(_others(s, awaited) for s in mine))
            elsewhere: set[Awaited] = set().union(*(_others(s, awaited) for s in rest))
            common = shared - elsewhere
            also = " and ".join(str(a) for a in sorted(common))
            clause = f" while {also} is also awaited" if also else " (in some states)"
        places.setdefault(clause, []).append(f"`{', '.join(state)}`")
    if not places:
        return ""
    return ": " + "; ".join(
        f"in {' or '.join(states)}{clause}" for clause, states in places.items()
    )


def _cell_text(cell: _Cell | None, awaited: Awaited) -> str:
    if cell is None:
        return "—"
    fates = sorted(cell.counts, key=list(Fate).index, reverse=True)
    parts = [f"{_fate_text(fates[0])} ({cell.counts[fates[0]]})"]
    parts += [
        f"{_fate_text(fate)} ({cell.counts[fate]}){_where(cell, awaited, fate)}"
        for fate in fates[1:]
    ]
    return "; ".join(parts)


def _stall_rows(model: ChartModel, reports: Reports) -> list[str]:
    rows: list[str] = []
    seen: set[tuple[str, tuple[str, ...], Awaited]] = set()
    for revision, order_reports in reports.items():
        for report in order_reports:
            best: dict[tuple[tuple[str, ...], Awaited], Situation] = {}
            for situation in report.situations:
                for awaited, fate in situation.fates:
                    key = (situation.state, awaited)
                    shorter = key not in best or len(situation.trace) < len(best[key].trace)
                    if fate is Fate.STALLS and shorter:
                        best[key] = situation
            for (state, awaited), situation in best.items():
                if (report.order.value, state, awaited) in seen:
                    continue
                seen.add((report.order.value, state, awaited))
                rows.append(
                    f"| `{revision.value}` | `{report.order.value}` | `{', '.join(state)}` | "
                    f"{awaited} | {trace_words(situation.trace)} |"
                )
    return rows


def stalls(reports: Sequence[LossReport]) -> tuple[int, int]:
    """Of the explored states that wait for a message (both orders), how many stall for
    good when one message is lost, and how many there are."""
    stalling = sum(
        situation.states
        for report in reports
        for situation in report.situations
        if situation.worst is Fate.STALLS
    )
    return stalling, sum(report.waiting for report in reports)


def losses_markdown(model: ChartModel, reports: Reports) -> list[str]:
    """The section's body: method, the fate table, the stall table (``reports`` by revision)."""
    revisions = list(reports)
    first = reports[revisions[0]]
    stalling_states, waiting = stalls(first)
    stalled = {
        (situation.state, awaited)
        for report in first
        for situation in report.situations
        for awaited, fate in situation.fates
        if fate is Fate.STALLS
    }
    phases = sorted({_phase(model, state) for state, _ in stalled})
    lost = sorted({awaited for _, awaited in stalled})
    cells = {revision: _cells(model, reports[revision]) for revision in revisions}
    keys: list[tuple[Awaited, str]] = []
    for revision in revisions:
        keys += [key for key in cells[revision] if key not in keys]
    phase_order = {phase: index for index, phase in enumerate(model.top_level)}
    keys.sort(key=lambda key: phase_order[key[1]])  # stable: first appearance within a phase
    out = [
        "Each explored state that is not complete waits for some messages: the "
        "acknowledgement of each outstanding action, and the fact an acknowledgement made "
        "due (`SourceHeld` once `Submitted` arrived, ...). Here each of them is lost in each "
        "state (no input ever delivers it), and the state graph is searched: *harmless* if "
        "the remaining honest inputs still reach `Complete`; *needs a time-out* if only a "
        "failure fact from the caller (`TimedOut`, `Failed` or `Canceled`, its deadline) and "
        "then honest inputs do (the handoff then completes as Canceled); **never completes** "
        "if nothing does. Counts are explored states, both orders "
        "(`handoff_fsm.verify.losses.lost_messages`).",
        "",
        f"Under `{revisions[0].value}`, {stalling_states} of the {waiting} states that wait "
        f"for a message stall for good when one message is lost; all of them are in "
        f"{', '.join(f'`{p}`' for p in phases) or 'no phase'}, and the lost message is "
        f"{' or '.join(str(a) for a in lost) or 'none'}. There no failure fact helps either. "
        "(The simulator's driver re-sends an unacknowledged cancel after `cleanup_retry_ms` "
        "for this reason.)",
        "",
        "| Lost message | While the handoff is in | "
        + " | ".join(f"`{revision.value}`" for revision in revisions)
        + " |",
        "| --- | --- | " + " | ".join("---" for _ in revisions) + " |",
    ]
    for awaited, phase in keys:
        texts = [_cell_text(cells[r].get((awaited, phase)), awaited) for r in revisions]
        shown = [texts[0]] + [
            f"same as `{revisions[0].value}`" if t == texts[0] else t for t in texts[1:]
        ]
        out.append(f"| {awaited} | `{phase}` | " + " | ".join(shown) + " |")
    out += [
        "",
        "Where one lost message stalls the handoff for good, with the shortest input "
        "sequence to such a state (a revision's row is listed only where the earlier "
        "revisions have none):",
        "",
        "| Revision | Order | Chart state | Lost message | Shortest way there |",
        "| --- | --- | --- | --- | --- |",
        *_stall_rows(model, reports),
        "",
    ]
    return out

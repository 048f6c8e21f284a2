"""The statechart as a Mermaid ``stateDiagram-v2`` that GitHub renders.

Rule kept here: same chart, same words as the DOT picture (every row comes from
:mod:`handoff_fsm.render.words`, line for line as the DOT picture breaks it), written
in the subset of Mermaid that parses *and draws* with Mermaid 11 and 12, and read top
to bottom down a web page's column: the chart flows downwards (``direction TB``), each
label broken into its lines (``<br>``, the one markup written here; a label's text is
escaped by :func:`mermaid_text`), and the regions of a parallel state stacked one
under the other, in document order, instead of side by side.

How the regions stack: each region is a named composite inside its parallel state,
and the parallel state's body says ``direction LR``. No transition joins two regions
(cross-region ordering is written as ``In(...)`` guards), so Mermaid lays the parallel
state out as a graph of its own in that direction, where unconnected regions share
one rank: left to right, one rank is one column, so the regions stand one under the
other, and each region's inside, laid out across its parent's direction, reads top to
bottom again. In that direction the room above the first region is the spacing
between states, so the file's front matter sets ``nodeSpacing`` (:data:`SPACING`)
wide enough for the region to clear its parallel state's title; ``rankSpacing``, the
gap down the chart, stays tight.

Mermaid bug #4052: a transition to or from a composite state nested inside a
``--`` concurrent region crashes the layout ("Cannot set properties of
undefined (setting 'rank')"; Mermaid 11.17.2 still has it). The regions are written
as composites only while no transition touches a composite below the top level,
which holds for the handoff chart. Should a chart ever add such a transition, the
regions are written flat between ``--`` separators instead (the region's name then
labels its initial arrow, and Mermaid puts those regions side by side), so the file
still draws.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from handoff_fsm.render.words import (
    edge_rejection_rows,
    edge_rows,
    row_lines,
    state_entry_rows,
)
from handoff_fsm.structure.describe import ChartModel, Edge, EdgeKind, StateKind, StateNode

_INDENT = "    "
_BREAK: Final = "<br>"
"""A line break inside a label (Mermaid draws it; it is never written from a label's text)."""
SPACING: Final = (("nodeSpacing", 50), ("rankSpacing", 36))
"""Mermaid's state-diagram spacing (its defaults are 50 and 50), in the file's front matter.

``nodeSpacing`` is also the room above a stacked region (see the module's rule): any
less and the first region's box cuts into its parallel state's title."""


_ENTITIES = {
    "#": "#35;",
    ";": "#59;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "%": "#37;",
}
"""Characters Mermaid would read as syntax or markup, as the entity codes it draws as text."""


def mermaid_text(text: str) -> str:
    """Text Mermaid shows exactly as written, on one line.

    Mermaid reads ``;`` as the end of a statement, drops a label that starts
    with ``#``, turns ``<br>`` into a line break, passes other tags to the
    browser's sanitizer and ``%%`` starts a comment or directive; written as
    entity codes (``#35;``, ``#59;``, ``#lt;``, ...) it draws the characters
    themselves. Line breaks and tabs become spaces; other control characters
    (and lone surrogates) are spelled ``\\xNN``/``\\uNNNN`` so they stay visible.
    """
    out: list[str] = []
    for char in text:
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in "\t\n\r":
            out.append(" ")
        elif char in "\ufffe\uffff" or unicodedata.category(char) in ("Cc", "Cs"):
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


_WORKAROUND = {
    True: "Regions are composites stacked by `direction LR` in their parallel state: "
    "no transition touches one (Mermaid bug #4052).",
    False: "Regions are written flat between `--`: a transition touches a nested "
    "composite, which crashes Mermaid (bug #4052).",
}


def regions_can_nest(model: ChartModel) -> bool:
    """True when no transition touches a composite below the top level (see bug #4052)."""
    nested = {s.id for s in model.states if s.is_cluster and s.parent is not None}
    return not any(edge.source in nested or edge.target in nested for edge in model.edges)


def statechart_mermaid(model: ChartModel) -> str:
    """The chart as Mermaid ``stateDiagram-v2`` source (deterministic)."""
    nest = regions_can_nest(model)
    source = f"handoff_fsm.chart.{model.name}"
    if model.revision is not None:
        source += f" as revision {model.revision.value} runs it"
    out = [
        "---",
        f"title: {model.title}",
        "config:",
        "  state:",
        *(f"    {name}: {value}" for name, value in SPACING),
        "---",
        "stateDiagram-v2",
        f"{_INDENT}direction TB",
        f"{_INDENT}%% Generated from {source} by `handoff-fsm diagrams`;",
        f"{_INDENT}%% do not edit. {_WORKAROUND[nest]}",
        f"{_INDENT}classDef final stroke-width:3px",
        f"{_INDENT}[*] --> {model.initial}",
    ]
    for state_id in model.top_level:
        _state(model, model.state(state_id), 1, out, nest)
    for edge in model.edges_of(None):
        if edge.kind is EdgeKind.REJECTION:
            continue
        out.append(f"{_INDENT}{_transition(edge)}")
    for state_id in model.top_level:
        if model.state(state_id).final:
            out.append(f"{_INDENT}{state_id} --> [*]")
    finals = [s.id for s in model.states if s.final and not s.is_cluster]
    out.append(f"{_INDENT}class {','.join(finals)} final")
    return "\n".join(out) + "\n"


def _state(model: ChartModel, state: StateNode, depth: int, out: list[str], nest: bool) -> None:
    pad = _INDENT * depth
    if not state.is_cluster:
        out.append(f'{pad}state "{mermaid_text(state.label)}" as {state.id}')
        for row in _rows(model, state):
            out.append(f"{pad}{state.id} : {mermaid_text(row)}")
        return
    if state.kind is StateKind.PARALLEL:
        out.append(f'{pad}state "{mermaid_text(state.label)} (parallel)" as {state.id} {{')
        if nest:  # the regions stacked: see the module's rule
            out.append(f"{pad}{_INDENT}direction LR")
        for index, region in enumerate(model.children(state.id)):
            if nest:
                _state(model, region, depth + 1, out, nest)
                continue
            if index:
                out.append(f"{pad}{_INDENT}--")
            _region_body(model, region, depth + 1, out, nest)
        out.append(f"{pad}}}")
        return
    out.append(f'{pad}state "{mermaid_text(state.label)}" as {state.id} {{')
    _region_body(model, state, depth + 1, out, nest)
    out.append(f"{pad}}}")


def _region_body(
    model: ChartModel, region: StateNode, depth: int, out: list[str], nest: bool
) -> None:
    """A compound state's body: its initial arrow, states and transitions."""
    pad = _INDENT * depth
    children = model.children(region.id)
    initial = next((c for c in children if c.initial), children[0])
    if nest:
        out.append(f"{pad}[*] --> {initial.id}")
    else:
        out.append(f"{pad}[*] --> {initial.id} : {mermaid_text(region.label)}")
    for child in children:
        _state(model, child, depth, out, nest)
    for edge in model.edges_of(region.id):
        if edge.kind is EdgeKind.REJECTION:
            continue
        out.append(f"{pad}{_transition(edge)}")


def _transition(edge: Edge) -> str:
    """``a --> b : label``, the label's lines as the DOT picture breaks them."""
    label = _BREAK.join(mermaid_text(line) for _, line in row_lines(edge_rows(edge)))
    return f"{edge.source} --> {edge.target}" + (f" : {label}" if label else "")


def _rows(model: ChartModel, state: StateNode) -> list[str]:
    """A state's description rows: what entering it does, then each input it rejects."""
    rows = [line for _, line in row_lines(state_entry_rows(state))]
    for edge in model.edges:
        if edge.kind is EdgeKind.REJECTION and edge.source == state.id:
            rows += [line.strip("\u00a0") for _, line in row_lines(edge_rejection_rows(edge))]
    return rows


def mermaid_block(source: str) -> list[str]:
    """Mermaid ``source`` as the lines of a fenced Markdown block, for documents.

    A file's title is left out of its front matter (the document's heading says it); its
    ``config`` stays, so the block is drawn as the file is.
    """
    lines = source.rstrip("\n").split("\n")
    if lines[0] == "---":
        end = lines.index("---", 1)
        kept = [line for line in lines[1:end] if not line.startswith("title:")]
        lines = (["---", *kept, "---"] if kept else []) + lines[end + 1 :]
    return ["```mermaid", *lines, "```"]

"""The statechart as SVG whose parts name themselves, so a configuration can be marked on it.

Rule kept here: the drawing is the project's one chart drawing, never a second one. A
revision's chart (:func:`~handoff_fsm.structure.revisions.revision_chart`) is drawn by
:func:`~handoff_fsm.render.dot.statechart_dot` and laid out by Graphviz
(:func:`~handoff_fsm.render.graphviz.render`); this module only annotates Graphviz's
SVG. Each state's drawing gets ``data-state="<state id>"`` and the class ``state``
(atomic states are the nodes Graphviz titles with their id, compound and parallel
states the clusters it titles ``cluster_<id>``); each transition's drawing (its edge,
both pieces of one drawn between two phases, and the label between them)
``data-transition="<index>"`` (the
:attr:`~handoff_fsm.structure.describe.Edge.index`) and the class ``transition``.

Marking is then only classes: ``active`` on the active atomic states,
``active-ancestor`` on the compound and parallel states holding them, ``taken`` on
transitions, ``rejecting`` on the state whose row refused an input. What each class
looks like is the SVG's own style sheet (``chart.css``, coloured with the palette's CSS
variables from :mod:`~handoff_fsm.render.style`), so one SVG shows the same marks in a
page that moves them (the inspector) and alone (a notebook, marked here by
:func:`marked_chart_svg`). Graphviz's element ids are dropped: several drawings share
one page.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from functools import cache
from importlib.resources import files
from typing import Final

from handoff_fsm.model import Revision
from handoff_fsm.render.dot import TRANSITION_ID_PREFIX, statechart_dot
from handoff_fsm.render.graphviz import render
from handoff_fsm.render.style import css_variables
from handoff_fsm.structure.describe import ChartModel
from handoff_fsm.structure.revisions import revision_chart

SVG_NS: Final = "http://www.w3.org/2000/svg"
XLINK_NS: Final = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

CHART_CLASS: Final = "handoff-chart"
"""The class of the chart's ``<svg>`` element (its style sheet applies under it only)."""
STATE: Final = "data-state"
TRANSITION: Final = "data-transition"
ACTIVE: Final = "active"
ACTIVE_ANCESTOR: Final = "active-ancestor"
TAKEN: Final = "taken"
REJECTING: Final = "rejecting"

_G: Final = f"{{{SVG_NS}}}g"
_TITLE: Final = f"{{{SVG_NS}}}title"
_STYLE: Final = f"{{{SVG_NS}}}style"
_CLUSTER_TITLE: Final = re.compile(r"cluster_(.+)")
_VIA_TITLE: Final = re.compile(r"__via_(\d+)__")
"""The label node between the two pieces of a transition drawn between two phases."""


def style_sheet(selector: str) -> str:
    """``chart.css`` with the palette defined for ``selector`` first (CSS text)."""
    rules = files("handoff_fsm.render").joinpath("chart.css").read_text(encoding="utf-8")
    return css_variables(selector) + "\n" + rules


def parse_svg(data: bytes | str) -> ET.Element:
    """An SVG document Graphviz wrote, as an element tree (comments and doctype dropped)."""
    return ET.fromstring(data)


def svg_text(root: ET.Element) -> str:
    """The element tree as SVG text, without an XML declaration (it goes inline in HTML)."""
    return ET.tostring(root, encoding="unicode")


def add_class(element: ET.Element, *names: str) -> None:
    present = element.get("class", "").split()
    element.set("class", " ".join([*present, *(n for n in names if n not in present)]))


def drop_ids(root: ET.Element) -> None:
    """Remove every ``id`` Graphviz gave (two drawings on one page would share them)."""
    for element in root.iter():
        element.attrib.pop("id", None)


def _title(group: ET.Element) -> str | None:
    title = group.find(_TITLE)
    return title.text if title is not None else None


def annotate_chart(data: bytes, model: ChartModel) -> ET.Element:
    """Graphviz's SVG of ``statechart_dot(model, ids=True)``, its states and transitions named.

    See the module's rule; raises ``ValueError`` when a state of ``model`` is drawn
    nowhere, so the contract cannot silently lose one.
    """
    root = parse_svg(data)
    states = {state.id: state for state in model.states}
    named: set[str] = set()
    for group in root.iter(_G):
        kind = group.get("class")
        title = _title(group) or ""
        if kind == "node" and title in states and not states[title].is_cluster:
            group.set(STATE, title)
            add_class(group, "state")
            named.add(title)
        elif kind == "node" and (via := _VIA_TITLE.fullmatch(title)) is not None:
            group.set(TRANSITION, via[1])
            add_class(group, "transition")
        elif kind == "cluster" and (cluster := _CLUSTER_TITLE.fullmatch(title)) is not None:
            if cluster[1] in states:
                group.set(STATE, cluster[1])
                add_class(group, "state")
                named.add(cluster[1])
        elif kind == "edge" and group.get("id", "").startswith(TRANSITION_ID_PREFIX):
            group.set(TRANSITION, group.get("id", "").removeprefix(TRANSITION_ID_PREFIX))
            add_class(group, "transition")
    missing = sorted(set(states) - named)
    if missing:
        raise ValueError(f"states drawn nowhere in the chart's SVG: {missing}")
    drop_ids(root)
    add_class(root, CHART_CLASS)
    style = ET.Element(_STYLE)
    style.text = style_sheet(f"svg.{CHART_CLASS}")
    root.insert(0, style)
    return root


def chart_svg(revision: Revision = Revision.SEED) -> str:
    """The revision's chart as annotated SVG text, nothing marked (drawn once per process)."""
    return model_svg(revision_chart(revision))


@cache
def model_svg(model: ChartModel) -> str:
    """The chart ``model`` describes (one side's of a diff, say) as annotated SVG text,
    nothing marked (each distinct chart drawn once per process)."""
    drawn = render(statechart_dot(model, ids=True), "svg")
    return svg_text(annotate_chart(drawn, model))


def ancestors(model: ChartModel, leaves: Iterable[str]) -> set[str]:
    """The compound and parallel states that hold any of ``leaves``."""
    found: set[str] = set()
    for leaf in leaves:
        parent = model.state(leaf).parent
        while parent is not None:
            found.add(parent)
            parent = model.state(parent).parent
    return found


def marked_chart_svg(
    revision: Revision,
    active: Iterable[str],
    *,
    taken: Iterable[int] = (),
    rejecting: str | None = None,
) -> str:
    """The revision's chart with ``active`` atomic states (and what holds them) marked.

    ``taken`` are transition indexes to draw as just taken; ``rejecting`` the state whose
    row refused the last input. The marks are classes (see the module's rule), styled by
    the SVG's own style sheet, so the text stands alone (a notebook shows it as is).
    """
    model = revision_chart(revision)
    leaves = set(active)
    unknown = sorted(leaf for leaf in leaves if leaf not in {s.id for s in model.states})
    if unknown:
        raise ValueError(f"no such states in the {revision.value} chart: {unknown}")
    held = ancestors(model, leaves)
    edges = {str(index) for index in taken}
    root = parse_svg(chart_svg(revision))
    for group in root.iter(_G):
        state = group.get(STATE)
        if state is not None:
            if state in leaves:
                add_class(group, ACTIVE)
            if state in held:
                add_class(group, ACTIVE_ANCESTOR)
            if state == rejecting:
                add_class(group, REJECTING)
        if group.get(TRANSITION) in edges:
            add_class(group, TAKEN)
    return svg_text(root)

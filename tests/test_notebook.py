"""Jupyter: a coordinator, and with ``engine="statechart"`` its live chart, draw themselves.

The drawing is installed by importing ``handoff_fsm.render.notebook`` (the core never
imports the drawing layer); before that ``_repr_svg_`` is ``None``, Jupyter's "no
picture". Once installed, the picture is the inspector's chart with the coordinator's
own ``state`` marked, after every call.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

import handoff_fsm as hf
from handoff_fsm import display
from handoff_fsm.coordinator import Engine
from handoff_fsm.render import notebook
from handoff_fsm.render.livechart import SVG_NS, marked_chart_svg
from handoff_fsm.structure.revisions import revision_chart
from tests.support import HANDOFF_ID, ack, destination_reserved, one, source_held

pytestmark = pytest.mark.requires("dot")


@pytest.fixture(autouse=True)
def installed() -> Iterator[None]:
    notebook.install()
    yield
    notebook.install()  # whatever a test did, the drawing stays as importing left it


def _marked(svg: str) -> dict[str, set[str]]:
    """State id -> its classes, for every state of the drawing."""
    root = ET.fromstring(svg)
    return {
        element.attrib["data-state"]: set(element.get("class", "").split())
        for element in root.iter(f"{{{SVG_NS}}}g")
        if "data-state" in element.attrib
    }


def _check(coordinator: hf.HandoffCoordinator) -> None:
    svg = coordinator._repr_svg_()
    assert svg is not None
    marked = _marked(svg)
    active = {state for state, classes in marked.items() if "active" in classes}
    assert active == set(coordinator.state)
    model = revision_chart(coordinator.revision)
    holding = {state for state, classes in marked.items() if "active-ancestor" in classes}
    parents = {model.state(leaf).parent for leaf in coordinator.state} - {None}
    assert parents <= holding
    assert svg == marked_chart_svg(coordinator.revision, coordinator.state)  # the inspector's
    chart = coordinator.chart
    if chart is not None:
        assert chart._repr_svg_() == svg
        assert chart._repr_html_() is None  # not the framework's pydot drawing


def test_a_coordinator_shows_its_state_after_every_call(engine: Engine) -> None:
    c = hf.HandoffCoordinator(
        HANDOFF_ID, hf.HandoffOrder.SOURCE_FIRST, fallback_transfer_delay_ms=0.0, engine=engine
    )
    _check(c)
    submit = one(c.start())
    _check(c)
    ack(c, submit, hf.HandoffActionOutcome.SUBMITTED)
    _check(c)
    reserve = one(c.on_fact(source_held()))
    _check(c)
    ack(c, reserve, hf.HandoffActionOutcome.ACCEPTED)
    one(c.on_fact(destination_reserved()))
    _check(c)
    c.on_fact(hf.TimedOut(handoff_id=HANDOFF_ID))
    _check(c)
    assert "canceling_source" in c.state


def test_each_revision_draws_its_own_chart() -> None:
    seed = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST)
    newer = hf.HandoffCoordinator(
        uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, revision=hf.Revision.A976B2BF
    )
    assert "decoding" not in _marked(str(seed._repr_svg_()))  # no seed run enters it
    assert "decoding" in _marked(str(newer._repr_svg_()))
    assert "revision a976b2bf" in str(newer._repr_svg_())


def test_without_the_drawing_there_is_no_picture() -> None:
    c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine="statechart")
    notebook.unload_ipython_extension(None)
    assert display.installed_drawing() is None
    assert c._repr_svg_() is None and c.chart is not None and c.chart._repr_svg_() is None
    notebook.load_ipython_extension(None)  # %load_ext handoff_fsm.render.notebook
    assert c._repr_svg_() is not None


def test_importing_the_core_draws_nothing_and_loads_no_drawing_layer() -> None:
    probe = textwrap.dedent(
        """
        import sys, uuid
        import handoff_fsm as hf
        c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine="statechart")
        c.start()
        print(c._repr_svg_(), c.chart._repr_svg_(), c.chart._repr_html_())
        print(sorted(m for m in sys.modules if m.startswith(("handoff_fsm.render", "graphviz"))))
        import handoff_fsm.render.notebook
        print(c._repr_svg_().startswith("<svg"), "submitting" in c.state)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300
    )
    assert result.stdout.splitlines() == ["None None None", "[]", "True True"]


def test_a_state_the_chart_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="no such states in the seed chart: \\['decoding'\\]"):
        marked_chart_svg(hf.Revision.SEED, ("decoding",))

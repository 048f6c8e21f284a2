"""Jupyter: a coordinator, and with ``engine="statechart"`` its live chart, draw themselves.

``import handoff_fsm`` alone names the drawing (``handoff_fsm.render.notebook:DRAWING``,
imported when a picture is first asked for; the core never imports the drawing layer).
The picture is the inspector's chart with the coordinator's own ``state`` marked, after
every call. Where Graphviz's ``dot`` is missing there is no picture (``_repr_svg_`` is
``None``) and the text Jupyter shows instead says why.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.formatters import DisplayFormatter

import handoff_fsm as hf
from handoff_fsm import display
from handoff_fsm.coordinator import Engine
from handoff_fsm.render import notebook
from handoff_fsm.render.livechart import SVG_NS, marked_chart_svg
from handoff_fsm.structure.revisions import revision_chart
from tests.support import HANDOFF_ID, ack, destination_reserved, one, source_held

LOCATION = "handoff_fsm.render.notebook:DRAWING"
"""Where ``import handoff_fsm`` says the drawing lives."""
SVG = "image/svg+xml"
TEXT = "text/plain"
DOT_MISSING = "Graphviz's dot is not installed"


@pytest.fixture(autouse=True)
def as_imported() -> Iterator[None]:
    """Whatever a test did, the drawing is left as ``import handoff_fsm`` leaves it."""
    display.install_drawing_from(LOCATION)
    yield
    display.install_drawing_from(LOCATION)


@pytest.fixture
def no_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's PATH holds no Graphviz (an empty folder)."""
    monkeypatch.setenv("PATH", str(tmp_path))


def _shown(thing: object) -> dict[str, object]:
    """What Jupyter's display machinery (IPython's formatters) makes of ``thing``."""
    data, _ = DisplayFormatter().format(thing)  # type: ignore[no-untyped-call]  # IPython's
    return dict(data)


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


@pytest.mark.requires("dot")
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


@pytest.mark.requires("dot")
def test_each_revision_draws_its_own_chart() -> None:
    seed = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST)
    newer = hf.HandoffCoordinator(
        uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, revision=hf.Revision.A976B2BF
    )
    assert "decoding" not in _marked(str(seed._repr_svg_()))  # no seed run enters it
    assert "decoding" in _marked(str(newer._repr_svg_()))
    assert "revision a976b2bf" in str(newer._repr_svg_())


@pytest.mark.requires("dot")
def test_jupyter_shows_the_picture_and_the_plain_repr_beside_it() -> None:
    c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine="statechart")
    c.start()
    shown = _shown(c)
    assert shown[SVG] == c._repr_svg_() and "active" in _marked(str(shown[SVG]))["submitting"]
    assert shown[TEXT] == repr(c)  # no note: there is a picture
    assert c.chart is not None
    assert _shown(c.chart) == {TEXT: repr(c.chart), SVG: c._repr_svg_()}


@pytest.mark.requires("dot")
def test_without_the_drawing_there_is_no_picture() -> None:
    c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine="statechart")
    notebook.unload_ipython_extension(None)
    assert display.installed_drawing() is None
    assert c._repr_svg_() is None and c.chart is not None and c.chart._repr_svg_() is None
    assert _shown(c) == {TEXT: repr(c)}  # nothing to explain: pictures were turned off
    notebook.load_ipython_extension(None)  # %load_ext handoff_fsm.render.notebook
    assert display.installed_drawing() is notebook.DRAWING
    assert c._repr_svg_() is not None


@pytest.mark.requires("dot")
def test_importing_the_drawing_module_as_before_is_harmless() -> None:
    c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST)
    named = c._repr_svg_()
    notebook.install()  # what `import handoff_fsm.render.notebook` does
    assert display.installed_drawing() is notebook.DRAWING
    assert named is not None and c._repr_svg_() == named


@pytest.mark.usefixtures("no_dot")
def test_without_dot_there_is_no_picture_and_the_text_says_why(engine: Engine) -> None:
    c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine=engine)
    c.start()
    assert c._repr_svg_() is None
    shown = _shown(c)
    assert list(shown) == [TEXT]
    first, note = str(shown[TEXT]).splitlines()
    assert first == repr(c)  # the repr itself is unchanged (logs, tracebacks)
    assert note.startswith(f"no picture: {DOT_MISSING}; install Graphviz: ")
    assert "apt-get install graphviz" in note and "brew install graphviz" in note
    assert DOT_MISSING not in repr(c)
    if c.chart is not None:
        assert c.chart._repr_svg_() is None
        assert _shown(c.chart) == {TEXT: f"{c.chart!r}\n{note}"}


def test_the_drawing_is_only_named_until_a_picture_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    imported = importlib.import_module

    def counted(name: str) -> object:
        asked.append(name)
        return imported(name)

    monkeypatch.setattr(importlib, "import_module", counted)
    assert display.pending_drawing() == LOCATION
    hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST).start()
    assert asked == [] and display.pending_drawing() == LOCATION  # running draws nothing
    assert display.installed_drawing() is notebook.DRAWING
    assert asked == ["handoff_fsm.render.notebook"] and display.pending_drawing() is None
    display.installed_drawing()
    assert asked == ["handoff_fsm.render.notebook"]  # imported once


@pytest.mark.parametrize(
    "location",
    ["handoff_fsm.render.notebook", ":DRAWING", "handoff_fsm.render.notebook:", "m:a.b"],
)
def test_a_drawing_named_badly_is_refused_and_changes_nothing(location: str) -> None:
    with pytest.raises(ValueError, match="a drawing's location is 'module:attribute', got"):
        display.install_drawing_from(location)
    assert display.pending_drawing() == LOCATION


@pytest.mark.slow
def test_importing_the_package_alone_gives_the_picture_and_loads_no_drawing_layer() -> None:
    probe = textwrap.dedent(
        """
        import sys, uuid
        import handoff_fsm as hf
        def drawing():
            drawn = ("handoff_fsm.render", "graphviz")
            return sorted(m for m in sys.modules if m.startswith(drawn))
        c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST, engine="statechart")
        c.start()
        print(drawing())
        svg = c._repr_svg_()
        print(svg.startswith("<svg"), 'data-state="submitting"' in svg, c.chart._repr_svg_() == svg)
        print(c.chart._repr_html_(), "handoff_fsm.render.notebook" in drawing())
        import handoff_fsm.render.notebook  # as before: harmless
        print(c._repr_svg_() == svg)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300
    )
    assert result.stdout.splitlines() == ["[]", "True True True", "None True", "True"]


@pytest.mark.slow
def test_without_dot_on_path_a_fresh_interpreter_shows_the_text(tmp_path: Path) -> None:
    """What a user without Graphviz meets, nothing monkeypatched: PATH holds no ``dot``."""
    probe = (
        "import uuid, handoff_fsm as hf\n"
        "from IPython.core.formatters import DisplayFormatter\n"
        "c = hf.HandoffCoordinator(uuid.uuid4(), hf.HandoffOrder.SOURCE_FIRST)\n"
        "data, _ = DisplayFormatter().format(c)\n"
        "print(c._repr_svg_(), sorted(data))\n"
        "print(data['text/plain'].splitlines()[1])\n"
    )
    env = {**os.environ, "PATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    first, note = result.stdout.splitlines()
    assert first == "None ['text/plain']"
    assert note.startswith(f"no picture: {DOT_MISSING}; install Graphviz: ")


@pytest.mark.requires("dot")
def test_a_state_the_chart_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="no such states in the seed chart: \\['decoding'\\]"):
        marked_chart_svg(hf.Revision.SEED, ("decoding",))

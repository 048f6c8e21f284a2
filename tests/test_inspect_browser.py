"""The inspector pages in a real browser: Debian's Chromium, driven by Playwright.

Every line of every committed lifecycle trace is stepped through on its page, and the
page's ``activeStates()`` and its ``.active`` elements are held against each
coordinator's own ``state`` after that line, found by an independent replay
(tests/inspect_pages.py). Each page is loaded from a file and must make no other
request and log no error. One browser serves the module, and a page steps through all
its lines in one script call per coordinator, not one load per step. Screenshots go to
SHOTS, for people to look at.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from handoff_fsm.model import Revision
from handoff_fsm.render.livechart import marked_chart_svg
from handoff_fsm.render.style import ACTIVE_LINE, CURRENT_STEP, TAKEN
from handoff_fsm.structure.revisions import revision_chart
from tests.inspect_pages import (
    COMMITTED_TRACES,
    HOSTILE_TRACES,
    ROOT,
    page_html,
    replayed,
    trace_lines,
)
from tests.support.browser import VIEWPORT, Opened, open_page, shot

if TYPE_CHECKING:
    from playwright.sync_api import Browser, FloatRect, Page

pytestmark = pytest.mark.requires("chromium", "dot")

SHOTS: Final = Path("/tmp/handoff-fsm-inspect")
"""Where the screenshots go (outside the work tree: people look at them, nothing compares)."""
FAILURE: Final = ROOT / "diagrams" / "lifecycle_destination_first_failure.jsonl"
RUN: Final = ROOT / "docs" / "figures" / "run.jsonl"

_STEP_ALL: Final = """() => {
  const h = window.handoffInspector;
  const all = {};
  for (const key of h.coordinators) {
    h.select(key);
    const seen = [];
    for (let n = 0; n <= h.steps; n++) {
      h.step(n);
      const marked = [...document.querySelectorAll("[data-state].active")];
      const shown = document.querySelector("#chart-pane .chart:not([hidden])");
      seen.push([
        h.activeStates(),
        marked.map((e) => e.dataset.state),
        marked.every((e) => shown.contains(e)),
      ]);
    }
    all[key] = [h.coordinator, h.steps, seen];
  }
  return all;
}"""
"""Every coordinator of the page, every step: one script call for the whole page."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return tmp_path_factory.mktemp("inspect")


def _page_file(folder: Path, path: Path) -> Path:
    target = folder / f"{path.parent.name}-{path.stem}.html"
    if not target.exists():
        target.write_text(page_html(path), encoding="utf-8")
    return target


def _shot(opened: Opened, name: str, *, whole: bool = False) -> Path:
    return shot(opened, SHOTS / f"{name}.png", whole=whole)


# ---------------------------------------------------------------------- every line


@pytest.mark.parametrize(
    "path", [*COMMITTED_TRACES, *HOSTILE_TRACES], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_line_shows_the_coordinator_s_own_state(
    browser: Browser, folder: Path, path: Path
) -> None:
    expected = replayed(trace_lines(path))
    opened = open_page(browser, _page_file(folder, path).as_uri())
    try:
        assert opened.run("window.handoffInspector.coordinators") == list(expected)
        stepped = opened.run(_STEP_ALL)
        assert list(stepped) == list(expected)
        for key, want in expected.items():
            shown, steps, seen = stepped[key]
            assert shown == key
            assert steps == len(want.states) - 1, key
            for n, (active, marked, inside) in enumerate(seen):
                assert tuple(active) == want.states[n], (key, n)
                assert sorted(marked) == sorted(want.states[n]), (key, n)
                assert inside, (key, n)  # no mark left on a hidden chart
        opened.clean()
    finally:
        opened.close()


# ---------------------------------------------------------------------- stepping by hand


def test_keys_slider_buttons_clicks_and_the_address_step_the_page(
    browser: Browser, folder: Path
) -> None:
    url = _page_file(folder, FAILURE).as_uri()
    want = replayed(trace_lines(FAILURE))["destination_first_failure"]
    last = len(want.states) - 1
    opened = open_page(browser, url + "#step=4")
    page = opened.page
    try:
        state = "async () => [await window.handoffInspector.drawn(), location.hash]"
        assert opened.run(state) == [4, "#step=4"]  # opened where the address said
        assert tuple(opened.run("window.handoffInspector.activeStates()")) == want.states[4]
        _shot(opened, "failure-step-4-rejected")
        page.keyboard.press("ArrowRight")
        assert opened.run(state) == [5, "#step=5"]  # and stepping rewrites it
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        assert opened.run(state) == [3, "#step=3"]
        page.keyboard.press("End")
        assert opened.run(state) == [last, f"#step={last}"]
        page.keyboard.press("ArrowRight")  # past the end: stays
        assert opened.run(state)[0] == last
        _shot(opened, "failure-last-step")
        page.keyboard.press("Home")
        assert opened.run(state) == [0, "#step=0"]
        page.locator("#slider").fill("6")
        assert opened.run(state) == [6, "#step=6"]
        page.click("#prev")
        page.click("#prev")
        page.click("#next")
        assert opened.run(state)[0] == 5
        page.click("#first")
        assert opened.run(state)[0] == 0
        page.click("#last")
        assert opened.run(state)[0] == last
        # A click on a message of the lifecycle steps to that message's step.
        for n in (2, 7, 1):
            page.locator(f'#lifecycle-pane [data-step="{n}"]').first.click()
            assert opened.run(state) == [n, f"#step={n}"]
            marked = opened.run("[...document.querySelectorAll('.message.current')].length")
            assert marked >= 1
        page.evaluate("location.hash = '#step=3'")
        page.wait_for_function("window.handoffInspector.current === 3")
        with pytest.raises(Exception, match="RangeError"):
            opened.run(f"window.handoffInspector.step({last + 1})")
        opened.clean()
    finally:
        opened.close()


def test_the_rejected_input_is_shown_with_its_code(browser: Browser, folder: Path) -> None:
    opened = open_page(browser, _page_file(folder, FAILURE).as_uri() + "#step=4")
    try:
        details = opened.page.inner_text("#details")
        assert "✗ source_held_before_submit: source held before prefill submission" in details
        assert "(unchanged)" in details
        rejecting = opened.run(
            "[...document.querySelectorAll('[data-state].rejecting')].map(e => e.dataset.state)"
        )
        assert rejecting == ["submitting"]  # the state whose row refused SourceHeld
        assert opened.run("document.querySelectorAll('[data-transition].taken').length") == 0
        opened.clean()
    finally:
        opened.close()


def test_a_trace_of_many_coordinators_has_a_selector(browser: Browser, folder: Path) -> None:
    expected = replayed(trace_lines(RUN))
    url = _page_file(folder, RUN).as_uri()
    opened = open_page(browser, url + "#step=7&coordinator=h12")
    page = opened.page
    try:
        where = "async () => [handoffInspector.coordinator, await handoffInspector.drawn()]"
        assert opened.run(where) == ["h12", 7]
        assert (
            tuple(opened.run("window.handoffInspector.activeStates()"))
            == (expected["h12"].states[7])
        )
        assert page.is_visible("#coordinator")
        _shot(opened, "run-h12-step-7")
        page.select_option("#coordinator", label="h5")
        assert opened.run(where) == ["h5", 0]
        assert opened.run("window.handoffInspector.steps") == len(expected["h5"].states) - 1
        assert opened.run("window.handoffInspector.drawn().then(() => location.hash)") == (
            "#step=0&coordinator=h5"
        )
        page.keyboard.press("End")
        assert (
            tuple(opened.run("window.handoffInspector.activeStates()"))
            == (expected["h5"].states[-1])
        )
        _shot(opened, "run-h5-last-step")
        opened.clean()
    finally:
        opened.close()


# ---------------------------------------------------------------------- what a person sees


def _box(page: Page, selector: str) -> FloatRect:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box


def test_the_layout_keeps_the_step_in_view(browser: Browser, folder: Path) -> None:
    """The chart, the step's details and the lifecycle share the window without overlapping,
    and stepping keeps the active states and the current message in view."""
    opened = open_page(browser, _page_file(folder, RUN).as_uri() + "#coordinator=h12")
    page = opened.page
    try:
        chart, details, lifecycle = (
            _box(page, "#chart-pane"),
            _box(page, "#details"),
            _box(page, "#lifecycle-pane"),
        )
        for box in (chart, details, lifecycle):
            assert box["x"] >= 0 and box["y"] >= 0
            assert box["x"] + box["width"] <= VIEWPORT["width"] + 1
            assert box["y"] + box["height"] <= VIEWPORT["height"] + 1
        assert chart["x"] + chart["width"] <= details["x"] + 1  # side by side
        assert details["y"] + details["height"] <= lifecycle["y"] + 1  # stacked
        assert lifecycle["height"] > 300 and chart["width"] > 700
        for n in range(opened.run("window.handoffInspector.steps") + 1):
            opened.run(f"window.handoffInspector.step({n}) && window.handoffInspector.drawn()")
            for leaf in opened.run("window.handoffInspector.activeStates()"):
                state = _box(page, f'#chart-pane [data-state="{leaf}"]')
                assert chart["y"] <= state["y"] and state["y"] + state["height"] <= (
                    chart["y"] + chart["height"]
                ), (n, leaf)
            if n:
                band = _box(page, "#lifecycle-pane .step-band")
                assert lifecycle["y"] <= band["y"] and band["y"] + band["height"] <= (
                    lifecycle["y"] + lifecycle["height"]
                ), n
        opened.run("window.handoffInspector.step(1) && window.handoffInspector.drawn()")
        colours = opened.run(  # step 1 (start) takes a transition and marks its message
            """() => [
              getComputedStyle(document.querySelector('.state.active > path')).stroke,
              getComputedStyle(document.querySelector('.step-band')).fill,
              getComputedStyle(document.querySelector('.transition.taken path')).stroke,
            ]"""
        )
        assert colours == [_rgb(ACTIVE_LINE), _rgb(CURRENT_STEP), _rgb(TAKEN)]
        opened.clean()
    finally:
        opened.close()


def _rgb(colour: str) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"


def test_the_notebook_drawing_stands_alone(browser: Browser, folder: Path) -> None:
    """What a coordinator shows in Jupyter, opened as a file of its own: its style is inside."""
    into = [e.index for e in revision_chart(Revision.A976B2BF).edges if e.target == "decoding"]
    svg = marked_chart_svg(Revision.A976B2BF, ("decoding",), taken=into)
    path = folder / "notebook.svg"
    path.write_text(svg, encoding="utf-8")
    opened = open_page(browser, path.as_uri())
    try:
        stroke = opened.run(
            "getComputedStyle(document.querySelector('[data-state=decoding] > path')).stroke"
        )
        assert stroke == _rgb(ACTIVE_LINE)
        cell = folder / "notebook.html"  # as a notebook cell holds it: inline in HTML
        cell.write_text(f"<!DOCTYPE html><html><body>{svg}</body></html>", encoding="utf-8")
        opened.page.goto(cell.as_uri())
        stroke = opened.run(
            "getComputedStyle(document.querySelector('[data-state=decoding] > path')).stroke"
        )
        assert stroke == _rgb(ACTIVE_LINE)
        _shot(opened, "notebook-a976b2bf-decoding", whole=True)
        assert opened.errors == []
    finally:
        opened.close()


# ---------------------------------------------------------------------- the checks can fail


def test_a_request_or_an_error_would_be_caught(browser: Browser, folder: Path) -> None:
    """The request count sees a page that loads something; the policy blocks it loudly."""
    page = _page_file(folder, FAILURE).read_text(encoding="utf-8")
    image = '<img src="https://example.invalid/x.png" alt="">'
    loose = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    leaky = folder / "leaky.html"
    leaky.write_text(loose.replace("<footer>", image + "<footer>"), encoding="utf-8")
    opened = open_page(browser, leaky.as_uri())
    try:
        assert len(opened.requests) == 2 and opened.requests[1].startswith("https://example")
    finally:
        opened.close()
    guarded = folder / "guarded.html"
    guarded.write_text(page.replace("<footer>", image + "<footer>"), encoding="utf-8")
    opened = open_page(browser, guarded.as_uri())
    try:
        assert opened.requests == [guarded.as_uri()]  # the policy stopped it before the network
        assert any("Content Security Policy" in error for error in opened.errors), opened.errors
    finally:
        opened.close()

"""The diff page in a real browser: Debian's Chromium, driven by Playwright.

The page of ``handoff-fsm diff seed a976b2bf --html`` is stepped through, every step of
every difference, and each side's ``activeStates()`` and ``.active`` elements are held
against a coordinator of that side's revision replayed to that step (tests/inspect_pages.py,
the library's replayer alone). The page is loaded from a file and must make no other
request and log no error. The screenshot goes to SHOT, for people to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from handoff_fsm.model import Revision
from tests.inspect_pages import seed_diff_page, seed_report, trace_states
from tests.support.browser import VIEWPORT, Opened, open_page, shot

if TYPE_CHECKING:
    from playwright.sync_api import Browser, FloatRect

pytestmark = pytest.mark.requires("chromium", "dot")

SHOT: Final = Path("/tmp/diffpage.png")
"""The screenshot (outside the work tree: people look at it, nothing compares)."""
SIDES: Final = {"a": Revision.SEED, "b": Revision.A976B2BF}

_STEP_ALL: Final = """() => {
  const h = window.handoffDiff;
  const all = [];
  for (let i = 0; i < h.differences; i++) {
    h.show(i);
    const opened = h.current;
    const seen = [];
    for (let n = 0; n <= h.steps; n++) {
      h.step(n);
      const marked = (side) => [
        ...document.querySelectorAll(`#chart-${side} [data-state].active`),
      ].map((e) => e.dataset.state);
      seen.push({
        a: h.activeStates("a"),
        b: h.activeStates("b"),
        markedA: marked("a"),
        markedB: marked("b"),
        all: document.querySelectorAll("[data-state].active").length,
      });
    }
    all.push({ steps: h.steps, first: h.firstDifference, opened, seen });
  }
  return all;
}"""
"""Every difference of the page, every step: one script call for the whole page."""


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("diffpage") / "diff.html"
    target.write_text(seed_diff_page(), encoding="utf-8")
    return target


def test_every_step_shows_each_side_s_own_state(browser: Browser, page_file: Path) -> None:
    report = seed_report()
    opened = open_page(browser, page_file.as_uri())
    try:
        assert opened.run("window.handoffDiff.differences") == len(report.differences) == 2
        stepped = opened.run(_STEP_ALL)
        for difference, shown in zip(report.differences, stepped, strict=True):
            assert shown["steps"] == difference.inputs
            assert shown["first"] == shown["opened"] == difference.inputs  # opens where they part
            want = {side: trace_states(difference.trace, r) for side, r in SIDES.items()}
            assert len(shown["seen"]) == difference.inputs + 1
            for n, seen in enumerate(shown["seen"]):
                for side in SIDES:
                    assert tuple(seen[side]) == want[side][n], (difference.kind, side, n)
                    marked = seen[f"marked{side.upper()}"]
                    assert sorted(marked) == sorted(want[side][n]), (difference.kind, side, n)
                assert seen["all"] == len(want["a"][n]) + len(want["b"][n])  # no stray mark
        with pytest.raises(Exception, match="RangeError"):
            opened.run("window.handoffDiff.activeStates('c')")
        with pytest.raises(Exception, match="RangeError"):
            opened.run("window.handoffDiff.show(2)")
        opened.clean()
    finally:
        opened.close()


def test_keys_slider_buttons_clicks_and_the_address_step_both_sides(
    browser: Browser, page_file: Path
) -> None:
    url = page_file.as_uri()
    opened = open_page(browser, url + "#difference=2&step=3")
    page = opened.page
    where = "async () => [handoffDiff.shown, await handoffDiff.drawn(), location.hash]"
    try:
        assert opened.run(where) == [1, 3, "#difference=2&step=3"]  # the address, from 1
        steps = opened.run("handoffDiff.steps")
        page.keyboard.press("ArrowRight")
        assert opened.run(where) == [1, 4, "#difference=2&step=4"]
        page.keyboard.press("End")
        assert opened.run(where)[1] == steps
        assert page.locator("#answer-a.differs").count() == 1  # the step where they part
        assert page.locator("#answer-b.differs").count() == 1
        assert "the replies differ here" in page.inner_text("#answer-b")
        assert "CancelDestination #6" in page.inner_text("#answer-b")
        page.keyboard.press("ArrowRight")  # past the end: stays
        assert opened.run(where)[1] == steps
        page.keyboard.press("Home")
        assert opened.run(where)[1] == 0
        assert page.locator(".answer.differs").count() == 0
        page.locator("#slider").fill("6")
        assert opened.run(where)[1] == 6
        page.click("#prev")
        page.click("#next")
        page.click("#next")
        assert opened.run(where)[1] == 7
        page.click("#first")
        assert opened.run(where)[1] == 0
        page.click("#last")
        assert opened.run(where)[1] == steps
        page.locator('#steps li[data-step="2"]').click()
        assert opened.run(where) == [1, 2, "#difference=2&step=2"]
        assert page.locator("#steps li.current").get_attribute("data-step") == "2"
        page.select_option("#difference", index=0)
        first = seed_report().differences[0].inputs
        assert opened.run(where) == [0, first, f"#difference=1&step={first}"]
        assert page.locator("#steps li.differs").count() == 1
        page.evaluate("location.hash = '#difference=2&step=1'")
        page.wait_for_function("handoffDiff.shown === 1 && handoffDiff.current === 1")
        opened.clean()
    finally:
        opened.close()


def _box(opened: Opened, selector: str) -> FloatRect:
    box = opened.page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box


def test_the_two_charts_stand_side_by_side_with_the_step_in_view(
    browser: Browser, page_file: Path
) -> None:
    """The trace, A's chart and B's chart share the window without overlapping, and
    stepping keeps each side's active states in its own pane."""
    opened = open_page(browser, page_file.as_uri() + "#difference=2")
    try:
        steps, chart_a, chart_b = (_box(opened, s) for s in ("#steps-pane", "#chart-a", "#chart-b"))
        for box in (steps, chart_a, chart_b):
            assert box["x"] >= 0 and box["y"] >= 0
            assert box["x"] + box["width"] <= VIEWPORT["width"] + 1
            assert box["y"] + box["height"] <= VIEWPORT["height"] + 1
        assert steps["x"] + steps["width"] <= chart_a["x"] + 1
        assert chart_a["x"] + chart_a["width"] <= chart_b["x"] + 1
        assert abs(chart_a["y"] - chart_b["y"]) < 2 and abs(chart_a["width"] - chart_b["width"]) < 2
        assert chart_a["height"] > 450 and chart_a["width"] > 550
        for n in range(opened.run("handoffDiff.steps") + 1):
            opened.run(f"handoffDiff.step({n}) && handoffDiff.drawn()")
            for side, pane in (("a", chart_a), ("b", chart_b)):
                for leaf in opened.run(f"handoffDiff.activeStates('{side}')"):
                    state = _box(opened, f'#chart-{side} [data-state="{leaf}"]')
                    assert pane["y"] <= state["y"], (n, side, leaf)
                    assert state["y"] + state["height"] <= pane["y"] + pane["height"], (n, side)
        opened.run(f"handoffDiff.step({opened.run('handoffDiff.firstDifference')})")
        opened.run("handoffDiff.drawn()")
        shot(opened, SHOT)
        opened.clean()
    finally:
        opened.close()

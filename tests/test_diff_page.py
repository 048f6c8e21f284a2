"""``handoff-fsm diff A B --html PAGE``: what the page holds, how it is made, what is refused.

The page's data is held against an independent replay of each difference's trace on
each side's revision (tests/inspect_pages.py's ``replayed``: the library's replayer
alone, reading each coordinator's own ``state``). The browser half (stepping through
the page in Chromium) is tests/test_diff_page_browser.py.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.model import Revision
from handoff_fsm.render.livechart import SVG_NS
from handoff_fsm.review.diffpage import diff_page
from handoff_fsm.structure.plain import chart_from_plain
from handoff_fsm.structure.revisions import revision_chart
from handoff_fsm.verify.diff.driver import _plain
from tests.inspect_pages import (
    assert_self_contained,
    diff_page_data,
    seed_diff_page,
    seed_report,
    trace_states,
)

SIDES = {"a": Revision.SEED, "b": Revision.A976B2BF}


def side_svg(page: str, side: str) -> ET.Element:
    """The chart drawn in ``#chart-<side>``."""
    match = re.search(
        rf'<div class="chart-pane" id="chart-{side}"><div class="chart">(.*?)</div>', page, re.S
    )
    assert match is not None, side
    return ET.fromstring(match[1])


# ---------------------------------------------------------------------- the data


@pytest.mark.slow
def test_every_step_holds_each_side_s_own_state_and_reply() -> None:
    report = seed_report()
    data = diff_page_data(seed_diff_page())
    assert len(data["differences"]) == len(report.differences) == 2
    for shown, difference in zip(data["differences"], report.differences, strict=True):
        assert shown["kind"] == difference.kind
        assert len(shown["steps"]) == len(difference.trace)
        for side, revision in SIDES.items():
            want = trace_states(difference.trace, revision)
            got = [tuple(step[side]["state"]) for step in shown["steps"]]
            assert got == want, (difference.kind, side)
            replies = difference.replies_a if side == "a" else difference.replies_b
            for step, reply in zip(shown["steps"], replies, strict=True):
                assert json.loads(step[side]["reply"].replace("Infinity", "1e999")) == reply
        # The diff stops at the first divergence: only the last step's replies differ.
        assert [step["differs"] for step in shown["steps"]] == [False] * difference.inputs + [True]
        assert shown["first"] == difference.inputs


@pytest.mark.slow
def test_a_completed_coordinator_still_shows_its_state() -> None:
    """After Success the seed's coordinator is complete, yet still asked: its state is kept."""
    steps = diff_page_data(seed_diff_page())["differences"][1]["steps"]
    assert steps[-1]["a"]["state"] == ["complete"]
    assert steps[-1]["b"]["state"] == ["canceling_decode"]  # a state only a976b2bf's chart has
    assert steps[-1]["a"]["complete"] and not steps[-1]["b"]["complete"]


# ---------------------------------------------------------------------- the charts


@pytest.mark.requires("dot")
def test_every_state_of_each_side_s_chart_names_itself() -> None:
    page = seed_diff_page()
    for side, revision in SIDES.items():
        root = side_svg(page, side)
        named = {g.get("data-state") for g in root.iter(f"{{{SVG_NS}}}g")} - {None}
        assert named == {state.id for state in revision_chart(revision).states}, side


@pytest.mark.requires("dot")
def test_a_chart_change_between_the_sides_shows_on_the_page() -> None:
    page = seed_diff_page()
    added = {"decoding", "canceling_decode"}  # a976b2bf's states the seed lacks

    def states(side: str, mark: str | None = None) -> set[str]:
        return {
            str(g.get("data-state"))
            for g in side_svg(page, side).iter(f"{{{SVG_NS}}}g")
            if g.get("data-state") is not None
            and (mark is None or mark in (g.get("class") or "").split())
        }

    assert added <= states("b") and not added & states("a")
    assert states("b", "changed") == added
    changed_edges = [
        g for g in side_svg(page, "a").iter(f"{{{SVG_NS}}}g") if "changed" in (g.get("class") or "")
    ]
    assert changed_edges and all(g.get("data-transition") is not None for g in changed_edges)
    assert "The charts differ: 9 changes" in page
    assert "added state decoding" in page


def test_a_side_s_chart_is_read_back_as_it_described_itself() -> None:
    for revision in Revision:
        model = revision_chart(revision)
        assert chart_from_plain(_plain(model)) == model
    plain = _plain(revision_chart(Revision.SEED))
    with pytest.raises(ValueError, match="names states it does not describe"):
        chart_from_plain({**plain, "states": plain["states"][1:]})
    with pytest.raises(ValueError, match="the transition kind 'teleport'"):
        chart_from_plain({**plain, "edges": [{**plain["edges"][0], "kind": "teleport"}]})


@pytest.mark.requires("dot")
def test_a_side_without_a_chart_is_said_and_still_stepped() -> None:
    report = seed_report()
    unreadable = replace(report, charts=({"states": "none"}, report.charts[1]))
    page = diff_page(unreadable)
    assert "No chart drawn for seed: its chart cannot be read here" in page
    assert 'id="chart-a"><p class="problem">' in page
    assert diff_page_data(page)["differences"][0]["steps"][1]["a"]["state"] == [
        "submitting",
        "destination_idle",
        "transfer_idle",
    ]
    without = diff_page(replace(report, charts=(None, None), chart_notes=("a reason", None)))
    assert "No chart drawn for seed: a reason" in without
    assert "No chart drawn for a976b2bf: the diff was run without" in without


@pytest.mark.requires("dot")
def test_equivalent_sides_make_a_page_with_nothing_to_step() -> None:
    report = seed_report()
    page = diff_page(replace(report, differences=(), charts=(report.charts[0], report.charts[0])))
    assert diff_page_data(page)["differences"] == []
    assert "equivalent: no input sequence tells them apart" in page
    assert "The two charts are the same." in page


# ---------------------------------------------------------------------- self-contained


@pytest.mark.requires("dot")
def test_the_page_loads_nothing_from_elsewhere() -> None:
    page = seed_diff_page()
    assert_self_contained(page)
    assert "window.handoffDiff" in page and "HandoffStepper" in page


# ---------------------------------------------------------------------- the command


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.requires("dot")
def test_the_command_writes_the_page(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "seed", "a976b2bf", "--html", "page.html"]) == 1  # they differ
    out = capsys.readouterr().out
    assert out.startswith("wrote page.html\n")
    page = (work / "page.html").read_text(encoding="utf-8")
    assert diff_page_data(page) == diff_page_data(seed_diff_page())
    assert main(["diff", "seed", "a976b2bf", "--html", "page.html", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["equivalent"] is False  # stdout stays JSON


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ("page.txt", "--html page.txt: the page is written as .html"),
        ("-", "--html -: the page is a file"),
        ("missing/page.html", "the folder missing does not exist"),
        ("", "--html: an empty path names no file"),
    ],
)
def test_a_bad_page_path_is_refused_before_any_work(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    output: str,
    said: str,
) -> None:
    def no_diff(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the diff ran")

    monkeypatch.setattr("handoff_fsm.verify.diff.diff", no_diff)
    assert main(["diff", "seed", "a976b2bf", "--html", output]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err
    assert list(work.iterdir()) == []

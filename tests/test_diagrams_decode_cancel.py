"""The decode-phase cancel under each revision: real simulated runs, drawn side by side.

The committed traces are what ``handoff-fsm simulate`` writes (the command is run
here, and that coordinator's lines compared); the committed drawings are what the
one lifecycle drawing path makes of the committed traces (``handoff-fsm lifecycle``
too); the side-by-side figure is made of exactly those two drawings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.io.lifecycle import MessageKind, Participant, trace_lifecycle
from handoff_fsm.io.lines import bounded_lines
from handoff_fsm.model import HandoffCompletion, Revision
from handoff_fsm.render import (
    COMPACT,
    Panel,
    read_stamp,
    sequence_dot,
    sequence_mermaid,
    side_by_side_svg,
)
from handoff_fsm.render.sequence import render_sequence, render_sequence_legend
from handoff_fsm.render.side_by_side import figure_digest
from handoff_fsm.render.stamp import dot_digest
from handoff_fsm.review import DIAGRAMS_DIR
from handoff_fsm.review.design import SIDE_BY_SIDE_FILE, decode_cancel_file
from handoff_fsm.review.files import decode_cancel_side_by_side
from handoff_fsm.simulate.decode_cancel import (
    TITLE,
    DecodeCancelRun,
    decode_cancel_run,
    decode_cancel_runs,
    lifecycle_title,
    simulate_command,
)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DIAGRAMS_DIR
REVISIONS = list(Revision)


def _run(revision: Revision) -> DecodeCancelRun:
    return next(run for run in decode_cancel_runs() if run.revision is revision)


def _committed(revision: Revision, suffix: str) -> Path:
    return COMMITTED / decode_cancel_file(revision, suffix)


def _committed_trace(revision: Revision) -> list[str]:
    return _committed(revision, "jsonl").read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------- the traces


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_the_committed_trace_is_what_the_simulate_command_writes(
    revision: Revision, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.jsonl"
    assert main(simulate_command(revision, str(trace))) == 0
    capsys.readouterr()
    key = _run(revision).coordinator
    # The documented filter: `grep '"coordinator": "KEY"' run.jsonl`.
    kept = [
        line
        for line in trace.read_text(encoding="utf-8").splitlines()
        if f'"coordinator": "{key}"' in line
    ]
    assert kept == _committed_trace(revision)
    assert len(kept) > 10


def test_the_same_handoff_gets_the_same_inputs_up_to_the_cancel() -> None:
    seed, a976b2bf = (_committed_trace(revision) for revision in REVISIONS)
    news = [json.loads(trace[0]) for trace in (seed, a976b2bf)]
    assert news[0].pop("revision", None) is None  # the seed is the default: not named
    assert news[1].pop("revision") == "a976b2bf"
    assert news[0] == news[1]
    cancel = _run(Revision.SEED).cancel
    assert cancel == _run(Revision.A976B2BF).cancel
    assert seed[1 : cancel + 2] == a976b2bf[1 : cancel + 2]
    assert json.loads(seed[cancel + 1])["fact"] == {
        "Canceled": {"handoff_id": news[0]["handoff_id"]}
    }
    # Only that coordinator's lines are kept; the seed has nothing after the cancel.
    for trace in (seed, a976b2bf):
        assert {json.loads(line)["coordinator"] for line in trace} == {news[0]["coordinator"]}
    assert len(seed) == cancel + 2
    assert len(a976b2bf) > len(seed)


# ---------------------------------------------------------------------- what they show


def test_under_the_seed_the_cancel_after_success_is_late_and_the_destination_keeps_it() -> None:
    run = _run(Revision.SEED)
    lifecycle = run.lifecycle
    assert lifecycle.completion is HandoffCompletion.SUCCESS
    assert lifecycle.final_state == ("complete",)
    messages = list(lifecycle.messages)
    complete = next(i for i, m in enumerate(messages) if m.action == "Complete")
    later = messages[complete + 1 :]
    cancel = next(m for m in later if m.kind is MessageKind.FACT)
    assert cancel.text == "Canceled (late, ignored)"
    assert cancel.sender is Participant.CALLER
    assert not [m for m in later if m.kind is MessageKind.ACTION]
    assert run.after_success == "Canceled after #5 Complete (Success): ignored, nothing issued"
    assert run.destination.startswith("the destination is not told")
    assert run.held_after_cancel_ms > 0


def test_under_a976b2bf_cleanup_reopens_and_cancels_the_decode_destination() -> None:
    run = _run(Revision.A976B2BF)
    lifecycle = run.lifecycle
    assert lifecycle.completion is HandoffCompletion.CANCELED
    messages = list(lifecycle.messages)
    complete = next(i for i, m in enumerate(messages) if m.action == "Complete")
    later = messages[complete + 1 :]
    actions = [(m.receiver, m.text) for m in later if m.kind is MessageKind.ACTION]
    assert actions == [
        (Participant.DESTINATION, "#6 CancelDestination"),
        (Participant.CALLER, "#7 Complete (Canceled)"),
    ]
    states = [m.text for m in messages if m.kind is MessageKind.STATE]
    assert states[-3:] == ["decoding", "canceling_decode", "complete"]
    assert run.after_success == (
        "Canceled after #5 Complete (Success): #6 CancelDestination, then #7 Complete (Canceled)"
    )
    assert run.destination.startswith("the destination is canceled")
    assert run.held_after_cancel_ms == 0
    assert run.canceled_while_decoding == _run(Revision.SEED).canceled_while_decoding > 0


# ---------------------------------------------------------------------- the drawings


@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_each_drawing_is_redrawn_from_its_committed_trace(revision: Revision) -> None:
    with _committed(revision, "jsonl").open("rb") as stream:
        lifecycle = trace_lifecycle(bounded_lines(stream), title=lifecycle_title(revision))
    assert lifecycle == _run(revision).lifecycle
    assert sequence_mermaid(lifecycle) == _committed(revision, "mmd").read_text(encoding="utf-8")
    svg = _committed(revision, "svg").read_bytes()
    assert read_stamp("svg", svg) == dot_digest(sequence_dot(lifecycle))


@pytest.mark.requires("dot")
@pytest.mark.parametrize("revision", REVISIONS, ids=str)
def test_the_lifecycle_command_reproduces_each_drawing(revision: Revision, tmp_path: Path) -> None:
    args = ["lifecycle", str(_committed(revision, "jsonl")), "--title", lifecycle_title(revision)]
    for suffix in ("mmd", "svg"):
        out = tmp_path / f"out.{suffix}"
        assert main([*args, "-o", str(out)]) == 0
        committed = _committed(revision, suffix).read_bytes()
        if suffix == "mmd":
            assert out.read_bytes() == committed
        else:
            assert read_stamp("svg", out.read_bytes()) == read_stamp("svg", committed)


@pytest.mark.requires("dot")
def test_the_side_by_side_figure_is_the_two_committed_traces_drawn_next_to_each_other() -> None:
    runs = [
        decode_cancel_run(
            revision,
            _committed_trace(revision),
            canceled_while_decoding=_run(revision).canceled_while_decoding,
            held_after_cancel_ms=_run(revision).held_after_cancel_ms,
        )
        for revision in REVISIONS
    ]
    assert runs == list(decode_cancel_runs())
    redrawn = decode_cancel_side_by_side(tuple(runs))
    committed = (COMMITTED / SIDE_BY_SIDE_FILE).read_bytes()
    assert read_stamp("svg", redrawn) == read_stamp("svg", committed)
    panels = tuple(
        Panel(
            run.revision.value,
            run.words,
            render_sequence(run.lifecycle, "svg", COMPACT, legend=False, parting=run.parting_line),
        )
        for run in runs
    )
    legend = render_sequence_legend("svg", timed=True, held=False)
    assert read_stamp("svg", committed) == figure_digest(TITLE, panels, legend)
    text = committed.decode("utf-8")
    assert text.count("<svg ") == 4  # the figure, its two panels and their one legend
    for run in runs:
        assert f">{run.revision.value}</text>" in text
        assert f">{run.revision.value}</text>" in text
        assert all(line.split()[-1] in text for line in run.words)
    assert "Canceled (late, ignored)" in text
    assert "#6 CancelDestination" in text


# ---------------------------------------------------------------------- side by side


def _panel(heading: str, lines: tuple[str, ...] = ("one line",)) -> Panel:
    lifecycle = _run(Revision.SEED).lifecycle
    return Panel(heading, lines, render_sequence(lifecycle, "svg", COMPACT))


@pytest.mark.requires("dot")
def test_the_figures_stamp_changes_with_its_words_and_its_panels() -> None:
    panels = (_panel("a"), _panel("b"))
    figure = side_by_side_svg("title", panels)
    assert read_stamp("svg", figure) == figure_digest("title", panels)
    assert figure_digest("title", panels) != figure_digest("other", panels)
    assert figure_digest("title", panels) != figure_digest("title", (_panel("a"), _panel("c")))
    other = Panel("b", ("one line",), render_sequence(_run(Revision.A976B2BF).lifecycle, "svg"))
    assert figure_digest("title", panels) != figure_digest("title", (panels[0], other))


@pytest.mark.requires("dot")
def test_the_panels_ids_stay_unique_and_their_own_stamps_are_dropped() -> None:
    figure = side_by_side_svg("t", (_panel("a"), _panel("b"))).decode("utf-8")
    ids = re.findall(r'\bid="([^"]*)"', figure)
    assert len(ids) == len(set(ids)) > 10
    assert figure.count('<metadata id="dot-sha256">') == 1
    assert all(i.startswith(("p1_", "p2_")) or i == "dot-sha256" for i in ids)


def test_a_panel_must_be_a_stamped_svg_drawing() -> None:
    with pytest.raises(ValueError, match="not an SVG document"):
        side_by_side_svg("t", (Panel("a", (), b"<png/>"),))
    unstamped = b'<svg width="10pt" height="10pt" viewBox="0 0 10 10"></svg>'
    with pytest.raises(ValueError, match="not a stamped drawing"):
        side_by_side_svg("t", (Panel("a", (), unstamped),))
    with pytest.raises(ValueError, match="at least one panel"):
        side_by_side_svg("t", ())


def test_words_are_escaped_in_the_figure() -> None:
    stamped = (
        b'<svg width="10pt" height="10pt" viewBox="0 0 10 10">'
        b'<metadata id="dot-sha256">' + b"0" * 64 + b"</metadata></svg>"
    )
    figure = side_by_side_svg("<t> & co", (Panel("a<b", ("x & y",), stamped),)).decode()
    assert "&lt;t&gt; &amp; co" in figure
    assert ">a&lt;b</text>" in figure
    assert ">x &amp; y</text>" in figure


# ---------------------------------------------------------------------- the docs


def _protocol_revisions() -> str:
    """The docs page on revisions. The site serves the repository's diagrams/ at its root,
    beside the pages (tools/docs/hooks.py), so its ``diagrams/...`` links name those files."""
    page = (ROOT / "docs" / "revisions.md").read_text(encoding="utf-8")
    assert page.startswith("# Protocol revisions\n")
    return page


def test_the_docs_show_the_figure_and_link_each_revisions_chart_and_table() -> None:
    section = _protocol_revisions()
    assert f"](diagrams/{SIDE_BY_SIDE_FILE})" in section
    assert section.count("![") == 1
    for revision in Revision:
        for name in ("statechart.svg", "transitions.md", "lifecycle_decode_cancel.jsonl"):
            link = f"diagrams/{revision.value}/{name}"
            assert f"]({link})" in section
            assert (ROOT / link).is_file()
    command = " ".join(simulate_command(Revision.A976B2BF))
    assert f"`handoff-fsm {command}`, and the same with `--revision seed`" in " ".join(
        section.split()
    )

"""Drift check: the committed diagrams/ folder is exactly what the code generates.

Everything is regenerated into a temporary folder with the same functions
``make diagrams`` runs, then compared with ``diagrams/``: text byte for byte,
figures by the hash of the DOT they were drawn from (so the check holds with
any Graphviz and any fonts); a failure names the stale, missing and extra
files. Other tests change the chart (a copy of chart.py with one guard
edited) and show the check catches a stale text file and a stale figure, and
that a figure drawn differently from the same DOT is current.
"""

from __future__ import annotations

import shutil
import sys
import types
import zlib
from pathlib import Path

import graphviz
import pytest

import handoff_fsm.chart
from handoff_fsm.chart import HandoffChart
from handoff_fsm.model import Revision
from handoff_fsm.render import dot_digest, read_stamp, render, statechart_dot
from handoff_fsm.render.export import SUFFIXES
from handoff_fsm.render.stamp import Format, figure_format, stamp
from handoff_fsm.render.style import FONT
from handoff_fsm.review import (
    DIAGRAMS_DIR,
    REVIEW_NAME,
    diagram_files,
    drift,
    review_files,
    write_diagrams,
    write_review,
)
from handoff_fsm.review.system import system_reports
from handoff_fsm.simulate.scenarios import SCENARIOS
from handoff_fsm.structure import describe_chart
from handoff_fsm.structure.revisions import revision_chart

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DIAGRAMS_DIR


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """diagrams/ rebuilt from scratch, as `make diagrams` would write it."""
    folder = tmp_path_factory.mktemp("diagrams")
    write_diagrams(folder)
    write_review(folder / REVIEW_NAME)
    return folder


def _format(name: str) -> Format:
    fmt = figure_format(name)
    assert fmt is not None, name
    return fmt


def _contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its ``/``-separated path relative to it."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.requires("dot")
def test_the_committed_diagrams_are_up_to_date(regenerated: Path) -> None:
    report = drift(COMMITTED, _contents(regenerated))
    assert report.ok, f"diagrams/ is out of date: {report}"


@pytest.mark.requires("dot")
def test_a_rerun_writes_byte_identical_files(regenerated: Path, tmp_path: Path) -> None:
    write_diagrams(tmp_path)
    write_review(tmp_path / REVIEW_NAME)
    assert _contents(tmp_path) == _contents(regenerated)


CHART_FILES = (
    "statechart.dot",
    "statechart.svg",
    "statechart.png",
    "statechart.mmd",
    *(f"statechart.{suffix}" for suffix in SUFFIXES.values()),
)
"""A chart's pictures and the documents it is exported as (SCXML, JSON, YAML, XState)."""
REVISION_FILES = (
    *CHART_FILES,
    "transitions.md",
    "lifecycle_decode_cancel.jsonl",
    "lifecycle_decode_cancel.mmd",
    "lifecycle_decode_cancel.svg",
)
"""What each revision's folder holds: its chart, its table, its decode-phase cancel (and
each counterexample of its system check, as its trace and its lifecycle)."""


@pytest.mark.requires("dot")
def test_generated_files_are_the_documented_set(regenerated: Path) -> None:
    names = set(_contents(regenerated))
    assert set(CHART_FILES) <= names
    assert {"transitions.md", REVIEW_NAME, "decode_cancel_by_revision.svg"} <= names
    lifecycles = {n for n in names if n.startswith("lifecycle_")}
    assert len(lifecycles) == 3 * len(SCENARIOS)  # each lifecycle as its trace, Mermaid, SVG
    for scenario in SCENARIOS:
        stem = f"lifecycle_{scenario.name}"
        assert {f"{stem}.jsonl", f"{stem}.mmd", f"{stem}.svg"} <= lifecycles
    folders = {name.partition("/")[0] for name in names if "/" in name}
    assert folders == {revision.value for revision in Revision}
    system = 0
    for revision in Revision:
        broken = [v.name.value for v in system_reports()[revision].verdicts if not v.holds]
        counterexamples = {
            f"system_{name}.{suffix}" for name in broken for suffix in ("jsonl", "svg")
        }
        system += len(counterexamples)
        assert {n for n in names if n.startswith(f"{revision.value}/")} == {
            f"{revision.value}/{name}" for name in (*REVISION_FILES, *counterexamples)
        }
    top = len(CHART_FILES) + 3  # and transitions.md, REVIEW.md, decode_cancel_by_revision.svg
    assert len(names) == top + len(lifecycles) + len(Revision) * len(REVISION_FILES) + system


@pytest.fixture
def changed_chart(monkeypatch: pytest.MonkeyPatch) -> type[HandoffChart]:
    """A copy of chart.py with one guard changed: the source waits for activating."""
    source = Path(handoff_fsm.chart.__file__).read_text(encoding="utf-8")
    edited = source.replace(
        "held.to(releasing, cond=\"In('activated')\")",
        "held.to(releasing, cond=\"In('activating')\")",
    )
    assert edited != source
    module = types.ModuleType("changed_chart")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(edited, module.__name__, "exec"), module.__dict__)
    changed: type[HandoffChart] = module.HandoffChart
    return changed


@pytest.mark.requires("dot")
def test_the_drift_check_fails_when_the_chart_changes(
    changed_chart: type[HandoffChart], tmp_path: Path
) -> None:
    expected = diagram_files(changed_chart) | review_files(changed_chart)
    report = drift(COMMITTED, expected)
    assert not report.ok
    charts = [*CHART_FILES, "transitions.md"]
    assert set(report.stale) == {
        *charts,
        *(f"{revision.value}/{name}" for revision in Revision for name in charts),
        REVIEW_NAME,
    }
    assert "stale: REVIEW.md, a976b2bf/statechart.dot" in str(report)
    for folder in ("", *(f"{revision.value}/" for revision in Revision)):
        assert "[destination activating]" in expected[f"{folder}statechart.dot"].decode()


def test_the_drift_check_names_missing_and_extra_files(tmp_path: Path) -> None:
    (tmp_path / "old.svg").write_bytes(b"<svg/>")
    (tmp_path / "same.md").write_bytes(b"x")
    report = drift(tmp_path, {"same.md": b"x", "new.mmd": b"y"})
    assert (report.stale, report.missing, report.extra) == ((), ("new.mmd",), ("old.svg",))
    assert str(report) == (
        "missing: new.mmd; not generated: old.svg (regenerate with `make diagrams`)"
    )


def test_every_committed_figure_names_the_dot_it_was_drawn_from() -> None:
    for folder in (COMMITTED, *(COMMITTED / revision.value for revision in Revision)):
        dot = (folder / "statechart.dot").read_text(encoding="utf-8")
        for name in ("statechart.svg", "statechart.png"):
            fmt = _format(name)
            assert read_stamp(fmt, (folder / name).read_bytes()) == dot_digest(dot), folder / name
    figures = [*COMMITTED.rglob("lifecycle_*.svg"), COMMITTED / "decode_cancel_by_revision.svg"]
    assert len(figures) == len(SCENARIOS) + len(Revision) + 1
    for path in figures:
        assert read_stamp("svg", path.read_bytes()) is not None, path.name


@pytest.fixture
def committed_copy(tmp_path: Path) -> Path:
    """A scratch copy of diagrams/ to make stale."""
    folder = tmp_path / "diagrams"
    shutil.copytree(COMMITTED, folder)
    return folder


@pytest.mark.requires("dot")
@pytest.mark.parametrize("name", ["statechart.svg", "statechart.png"])
def test_a_figure_drawn_from_a_stale_chart_is_caught(
    changed_chart: type[HandoffChart], committed_copy: Path, regenerated: Path, name: str
) -> None:
    """The DOT is current but the figure was drawn before a guard changed."""
    fmt = _format(name)
    (committed_copy / name).write_bytes(render(statechart_dot(describe_chart(changed_chart)), fmt))
    report = drift(committed_copy, _contents(regenerated))
    assert (report.stale, report.missing, report.extra) == ((name,), (), ())


@pytest.mark.requires("dot")
@pytest.mark.parametrize("revision", list(Revision), ids=str)
def test_a_revisions_chart_drawn_from_another_revision_is_caught(
    committed_copy: Path, regenerated: Path, revision: Revision
) -> None:
    """The drift check looks into the revision folders: a figure there is compared too."""
    other = next(r for r in Revision if r is not revision)
    name = f"{revision.value}/statechart.svg"
    (committed_copy / name).write_bytes(render(statechart_dot(revision_chart(other)), "svg"))
    report = drift(committed_copy, _contents(regenerated))
    assert (report.stale, report.missing, report.extra) == ((name,), (), ())


def test_the_drift_check_names_files_in_subfolders(tmp_path: Path) -> None:
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "old.md").write_bytes(b"x")
    (tmp_path / "seed" / "same.md").write_bytes(b"x")
    report = drift(tmp_path, {"seed/same.md": b"x", "a976b2bf/new.md": b"y"})
    assert (report.stale, report.missing, report.extra) == (
        (),
        ("a976b2bf/new.md",),
        ("seed/old.md",),
    )


@pytest.mark.requires("dot")
@pytest.mark.parametrize("name", ["statechart.svg", "statechart.png"])
def test_an_unstamped_figure_is_stale(committed_copy: Path, regenerated: Path, name: str) -> None:
    dot = (committed_copy / "statechart.dot").read_text(encoding="utf-8")
    fmt = _format(name)
    (committed_copy / name).write_bytes(graphviz.Source(dot).pipe(format=fmt, quiet=True))
    assert drift(committed_copy, _contents(regenerated)).stale == (name,)


def _recompressed(png: bytes) -> bytes:
    """The same image with its pixel stream deflated differently (another zlib/libpng)."""
    at, head, pixels, tail = 8, b"", b"", b""
    while at < len(png):
        length = int.from_bytes(png[at : at + 4], "big")
        chunk = png[at : at + 12 + length]
        if chunk[4:8] == b"IDAT":
            pixels += chunk[8:-4]
        elif pixels:
            tail += chunk
        else:
            head += chunk
        at += 12 + length
    data = zlib.compress(zlib.decompress(pixels), 1)
    idat = len(data).to_bytes(4, "big") + b"IDAT" + data
    idat += zlib.crc32(b"IDAT" + data).to_bytes(4, "big")
    return png[:8] + head + idat + tail


@pytest.mark.requires("dot")
def test_figures_drawn_by_another_graphviz_or_other_fonts_are_current(
    committed_copy: Path, regenerated: Path
) -> None:
    """Same DOT, different pixels: what another machine's `make diagrams` commits."""
    dot = (committed_copy / "statechart.dot").read_text(encoding="utf-8")
    other_fonts = dot.replace(FONT, "Courier")
    assert other_fonts != dot
    svg = stamp("svg", graphviz.Source(other_fonts).pipe(format="svg", quiet=True), dot_digest(dot))
    png = _recompressed((committed_copy / "statechart.png").read_bytes())
    assert svg != (committed_copy / "statechart.svg").read_bytes()
    assert png != (committed_copy / "statechart.png").read_bytes()
    (committed_copy / "statechart.svg").write_bytes(svg)
    (committed_copy / "statechart.png").write_bytes(png)
    assert read_stamp("png", png) == dot_digest(dot)
    assert drift(committed_copy, _contents(regenerated)).ok


@pytest.mark.requires("dot")
def test_text_files_are_compared_byte_for_byte(committed_copy: Path, regenerated: Path) -> None:
    revision_texts = [
        f"{revision.value}/{name}"
        for revision in Revision
        for name in REVISION_FILES
        if not name.endswith((".svg", ".png"))
    ]
    for name in (
        "statechart.dot",
        "statechart.mmd",
        "transitions.md",
        REVIEW_NAME,
        *revision_texts,
    ):
        path = committed_copy / name
        original = path.read_bytes()
        path.write_bytes(original.rstrip(b"\n") + b"\n\n")
        assert drift(committed_copy, _contents(regenerated)).stale == (name,), name
        path.write_bytes(original)
    assert drift(committed_copy, _contents(regenerated)).ok

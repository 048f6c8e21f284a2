"""Drift check: the committed diagrams/ folder is exactly what the code generates.

Everything is regenerated into a temporary folder with the same functions
``make diagrams`` runs, then compared byte for byte with ``diagrams/``; a
failure names the stale, missing and extra files. A second test changes the
chart (a copy of chart.py with one guard edited) and shows the check catches it.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import handoff_fsm.chart
from handoff_fsm.chart import HandoffChart
from handoff_fsm.diagrams import (
    DIAGRAMS_DIR,
    REVIEW_NAME,
    diagram_files,
    drift,
    review_files,
    write_diagrams,
    write_review,
)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / DIAGRAMS_DIR


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """diagrams/ rebuilt from scratch, as `make diagrams` would write it."""
    folder = tmp_path_factory.mktemp("diagrams")
    write_diagrams(folder)
    write_review(folder / REVIEW_NAME)
    return folder


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.requires("dot")
def test_the_committed_diagrams_are_up_to_date(regenerated: Path) -> None:
    report = drift(COMMITTED, _contents(regenerated))
    assert report.ok, f"diagrams/ is out of date: {report}"


@pytest.mark.requires("dot")
def test_a_rerun_writes_byte_identical_files(regenerated: Path, tmp_path: Path) -> None:
    write_diagrams(tmp_path)
    write_review(tmp_path / REVIEW_NAME)
    assert _contents(tmp_path) == _contents(regenerated)


@pytest.mark.requires("dot")
def test_generated_files_are_the_documented_set(regenerated: Path) -> None:
    names = set(_contents(regenerated))
    assert {"statechart.dot", "statechart.svg", "statechart.png", "statechart.mmd"} <= names
    assert {"transitions.md", REVIEW_NAME} <= names
    lifecycles = {n for n in names if n.startswith("lifecycle_")}
    assert len(lifecycles) == 10  # five lifecycles, each as Mermaid and SVG
    assert len(names) == 16


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
    assert set(report.stale) == {
        "statechart.dot",
        "statechart.svg",
        "statechart.png",
        "statechart.mmd",
        "transitions.md",
        REVIEW_NAME,
    }
    assert "stale: REVIEW.md, statechart.dot" in str(report)
    assert "[destination activating]" in expected["statechart.dot"].decode()


def test_the_drift_check_names_missing_and_extra_files(tmp_path: Path) -> None:
    (tmp_path / "old.svg").write_bytes(b"<svg/>")
    (tmp_path / "same.md").write_bytes(b"x")
    report = drift(tmp_path, {"same.md": b"x", "new.mmd": b"y"})
    assert (report.stale, report.missing, report.extra) == ((), ("new.mmd",), ("old.svg",))
    assert str(report) == (
        "missing: new.mmd; not generated: old.svg (regenerate with `make diagrams`)"
    )

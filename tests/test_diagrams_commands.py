"""The `diagrams` and `review` commands write their files, or say what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.review import diagram_files, review_files


@pytest.mark.requires("dot")
def test_diagrams_writes_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["diagrams", str(out)]) == 0
    expected = diagram_files()
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert written == expected
    assert {"seed/statechart.svg", "a976b2bf/transitions.md"} <= set(written)
    assert f"wrote {len(expected)} files" in capsys.readouterr().out


def test_review_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "nested" / "REVIEW.md"
    assert main(["review", "-o", str(out)]) == 0
    assert out.read_bytes() == review_files()["REVIEW.md"]


def test_diagrams_without_graphviz_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz `dot`
    assert main(["diagrams", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert "handoff-fsm diagrams:" in error
    assert "apt-get install graphviz" in error
    assert not (tmp_path / "out").exists()

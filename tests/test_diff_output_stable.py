"""``handoff-fsm diff -o DIR`` writes the same bytes on every run: nothing in its files
comes from the process (object ids, hash order, the clock), only from the two charts.

One fresh process with its own hash seed writes the folder; this test's process (another
hash seed, every object made anew) makes the same files through the same functions. The
sides are judged once per process (the verdict DIFF.md opens with), so the second run
costs this process only the diff and the drawing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_fsm.model import VERDICT_LOSSES
from handoff_fsm.review.diffreview import diff_review_files
from handoff_fsm.verify.diff import diff
from handoff_fsm.verify.verdicts import judge_change
from tests.support.cli import run_cli

COMMAND = "handoff-fsm diff seed a976b2bf -o out"


def _run(directory: Path, hash_seed: str) -> dict[str, bytes]:
    """The files one fresh ``diff seed a976b2bf -o out`` process writes, by name."""
    directory.mkdir()
    process = run_cli(
        *COMMAND.split()[1:],
        python=("-X", "faulthandler"),
        cwd=directory,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        text=False,
    )
    out = directory / "out"
    said = process.stderr.decode(errors="replace")
    # exit status 1: the two revisions differ; anything else (a signal: below 0, with
    # faulthandler's traceback), or no folder, is a failure
    assert process.returncode == 1 and out.is_dir(), f"exit {process.returncode}: {said}"
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


@pytest.mark.requires("dot")
def test_two_processes_write_byte_identical_files(tmp_path: Path) -> None:
    first = _run(tmp_path / "first", "1")
    report = diff("seed", "a976b2bf", charts=True)
    second = diff_review_files(
        report, command=COMMAND, judged=judge_change(report, losses=VERDICT_LOSSES)
    )
    assert {"chart_diff.dot", "chart_diff.svg", "DIFF.md", "diff.json"} <= set(first)
    assert sorted(first) == sorted(second)
    for name, data in first.items():
        assert data == second[name], f"{name} differs between two processes"

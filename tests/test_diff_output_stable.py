"""``handoff-fsm diff -o DIR`` writes the same bytes on every run: nothing in its files
comes from the process (object ids, hash order, the clock), only from the two charts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run(directory: Path, hash_seed: str) -> dict[str, bytes]:
    """The files one fresh ``diff seed a976b2bf -o out`` process writes, by name."""
    directory.mkdir()
    subprocess.run(
        [sys.executable, "-m", "handoff_fsm", "diff", "seed", "a976b2bf", "-o", "out"],
        cwd=directory,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        check=False,  # the two revisions differ: exit status 1
    )
    out = directory / "out"
    return {path.name: path.read_bytes() for path in sorted(out.iterdir())}


@pytest.mark.requires("dot")
def test_two_runs_write_byte_identical_files(tmp_path: Path) -> None:
    first = _run(tmp_path / "first", "1")
    second = _run(tmp_path / "second", "2")
    assert {"chart_diff.dot", "chart_diff.svg", "DIFF.md", "diff.json"} <= set(first)
    assert sorted(first) == sorted(second)
    for name, data in first.items():
        assert data == second[name], f"{name} differs between two runs"

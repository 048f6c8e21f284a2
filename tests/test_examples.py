"""The "Driving real handoffs" guide's code is real (docs/driving.md): the example program
runs and is shown verbatim, and the sans-I/O snippet does what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "two_workers.py"
GUIDE = ROOT / "docs" / "driving.md"


def section() -> str:
    guide = GUIDE.read_text(encoding="utf-8")
    assert guide.startswith("# Driving real handoffs\n")
    return guide


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.slow
def test_the_example_program_runs_as_the_guide_says() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    expected = "handoff 1: Success\nhandoff 2: Canceled (timed out)\nworkers still holding: 0\n"
    assert result.stdout == expected
    assert "$ python examples/two_workers.py\n" + expected in section()


def test_the_guide_shows_the_example_program_verbatim() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") in python_blocks(section())


def test_the_guide_s_policy_snippet_does_what_its_comments_say() -> None:
    (snippet,) = [b for b in python_blocks(section()) if "SessionPolicy(" in b]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, str(GUIDE), "exec"), namespace)
    policy, step = namespace["policy"], namespace["step"]
    assert [type(i.action).__name__ for i in step.actions] == ["CancelSource", "CancelDestination"]
    assert policy.result.held_back == 1 and policy.result.unapplied == ()
    assert policy.result.failed[0].reason == "no acknowledgement 0.2 after it was sent"

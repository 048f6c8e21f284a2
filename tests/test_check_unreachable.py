"""``handoff-fsm check`` says of every step it lists as unreachable whether that is expected,
and why, from what the exploration saw (never from a list of known steps)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from handoff_fsm.cli import main
from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.verify.coverage import untaken_steps
from handoff_fsm.verify.exploration import explore

pytestmark = pytest.mark.slow  # each test explores a revision (tests/quick.py)

SF = HandoffOrder.SOURCE_FIRST


@pytest.mark.parametrize("revision", list(Revision))
def test_every_unreachable_step_is_said_expected_or_not(
    capsys: pytest.CaptureFixture[str], revision: Revision
) -> None:
    assert main(["check", "--revision", revision.value, "--order", SF.value]) == 0
    out = capsys.readouterr().out
    listed = [line for line in out.splitlines() if line.startswith("  step ")]
    assert listed  # the compiler records steps no input can take
    for line in listed:
        assert ": unreachable, as expected: only " in line, line
        assert "no explored state here has one outstanding (outstanding here: " in line, line
    assert f"all {len(listed)} unreachable steps are expected" in out


def test_the_json_carries_each_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--revision", "seed", "--order", SF.value, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    steps = report["unreachable_steps"]["seed"]
    assert steps and all(step["expected"] for step in steps)
    first = steps[0]
    assert set(first) == {"state", "order", "event", "expected", "why"}
    assert first["order"] == "SourceFirst" and first["why"].startswith("only ")


def test_the_verdict_comes_from_what_was_outstanding() -> None:
    coverage = explore(SF).coverage
    assert coverage is not None
    judged = untaken_steps(coverage, [SF])
    failed = next(step for step in judged if step.event == "action_failed")
    assert failed.expected and "outstanding here: nothing" in failed.why
    # Had a submission been outstanding there, a Failed outcome could have taken the step.
    awaited = coverage.awaited | {(failed.state.index, "SubmitPrefill")}
    rejudged = untaken_steps(replace(coverage, awaited=awaited), [SF])
    again = next(s for s in rejudged if (s.state, s.event) == (failed.state, failed.event))
    assert not again.expected
    assert again.why == "SubmitPrefill is outstanding here, yet no outcome of it took this step"


def test_a_fact_step_never_taken_is_not_expected() -> None:
    coverage = explore(SF).coverage
    assert coverage is not None
    taken = next((s, e) for s, e in sorted(coverage.steps) if e == "source_held")
    gap = untaken_steps(replace(coverage, steps=coverage.steps - {taken}), [SF])
    step = next(s for s in gap if (s.state.index, s.event) == taken)
    assert not step.expected
    assert step.why == "fact SourceHeld was given in every state explored"

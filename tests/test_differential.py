"""The library against the compiled Rust reference, on random walks and on fixed traces.

The oracle (tests/oracle) is the reference's own code behind a replay harness;
by default it carries the three documented improvements, ``--raw`` not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_fsm.io.replay import replay
from tests.differential import (
    ORACLE_DIR,
    build_oracle,
    compare,
    normalized,
    random_trace,
    run_oracle,
)

pytestmark = pytest.mark.requires("cargo")


@pytest.fixture(scope="module")
def oracle() -> Path:
    return build_oracle()


@pytest.mark.parametrize(("seed", "live"), [(1, 8), (2, 2), (3, 40)])
def test_random_walks_match_the_reference(oracle: Path, seed: int, live: int) -> None:
    trace = random_trace(40_000, seed, live=live)
    problems = compare(trace, list(replay(trace)), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


def test_the_statechart_engine_matches_the_reference_too(oracle: Path) -> None:
    trace = random_trace(4_000, 11)
    problems = compare(trace, list(replay(trace, engine="statechart")), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


# Malformed input on which the oracle is stricter than Python's json module (README,
# "Trace replay"): a braced UUID, a lone surrogate escape, a repeated key.
KNOWN_DIVERGENCES = {
    '{"coordinator": "m2", "op": "new", "handoff_id": "{01234567-89ab-cdef-0123-456789abcdef}", '
    '"order": "SourceFirst"}',
    '{"coordinator": "\\ud800", "op": "start"}',
    '{"coordinator": "m1", "op": "start", "coordinator": "m1"}',
}


@pytest.mark.parametrize(
    "example",
    sorted(p.name for p in (ORACLE_DIR / "examples").glob("*.jsonl") if "expected" not in p.name),
)
def test_example_traces_match_the_reference(oracle: Path, example: str) -> None:
    trace = (ORACLE_DIR / "examples" / example).read_bytes().decode("utf-8", "replace").splitlines()
    problems = compare(trace, list(replay(trace)), run_oracle(oracle, trace))
    diverging = {problem.split("\n")[0].split(": ", 1)[1] for problem in problems}
    assert diverging <= KNOWN_DIVERGENCES, "\n".join(problems[:10])
    if example == "malformed.jsonl":
        assert diverging == KNOWN_DIVERGENCES


def test_the_raw_reference_differs_exactly_where_the_improvements_apply(oracle: Path) -> None:
    trace = (ORACLE_DIR / "examples" / "invalid_outcome_retry.jsonl").read_text().splitlines()
    ours = [json.loads(line) for line in replay(trace)]
    raw = [json.loads(line) for line in run_oracle(oracle, trace, raw=True)]
    differing = [
        n for n, (a, b) in enumerate(zip(ours, raw, strict=True)) if normalized(a) != normalized(b)
    ]
    assert differing, "the raw reference should wedge after an invalid outcome"
    first = differing[0]
    assert raw[first]["error"]["code"] == "conflicting_outcome"
    assert "error" not in ours[first]

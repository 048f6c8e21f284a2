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
from tests.hostile import hostile_trace, mutated_trace

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


@pytest.mark.parametrize(
    "example",
    sorted(p.name for p in (ORACLE_DIR / "examples").glob("*.jsonl") if "expected" not in p.name),
)
def test_example_traces_match_the_reference(oracle: Path, example: str) -> None:
    # malformed.jsonl included: a braced UUID, a lone surrogate escape and a repeated key
    # are read alike (the uuid crate's forms; both refused as JSON).
    trace = (ORACLE_DIR / "examples" / example).read_bytes().decode("utf-8", "replace").splitlines()
    problems = compare(trace, list(replay(trace)), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


def test_hostile_lines_are_read_alike(oracle: Path) -> None:
    """Every spelling the two readers might disagree on, each followed by a probe line."""
    trace = hostile_trace()
    problems = compare(trace, list(replay(trace)), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_lines_are_read_alike(oracle: Path, seed: int) -> None:
    trace = mutated_trace(3_000, seed)
    problems = compare(trace, list(replay(trace)), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


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

"""The library against the compiled Rust reference, on random walks and on fixed traces.

The oracle (tests/oracle) is the reference's own code behind a replay harness;
by default it carries the three documented improvements, ``--raw`` not. Each
coordinator runs the protocol revision its ``new`` line names (docs/revisions.md):
``seed`` is the improved reference, ``a976b2bf`` the same patched to that
revision; walks run each revision alone and both mixed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_fsm import Revision
from handoff_fsm.io.replay import replay
from tests.differential import (
    ORACLE_DIR,
    WalkRevision,
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


@pytest.mark.parametrize(
    ("revision", "seed", "live"),
    [
        ("seed", 1, 8),
        ("seed", 2, 2),
        ("seed", 3, 40),
        ("a976b2bf", 4, 8),
        ("a976b2bf", 5, 40),
        ("mixed", 6, 8),
    ],
)
def test_random_walks_match_the_reference(
    oracle: Path, revision: WalkRevision, seed: int, live: int
) -> None:
    trace = random_trace(40_000, seed, live=live, revision=revision)
    theirs = run_oracle(oracle, trace)
    problems = compare(trace, list(replay(trace)), theirs)
    assert problems == [], "\n".join(problems[:10])
    if revision != "seed":
        _assert_the_walk_exercised_a976b2bf(trace, theirs)


def _assert_the_walk_exercised_a976b2bf(trace: list[str], replies: list[str]) -> None:
    """Agreement means little unless the walk reached what a976b2bf changes: the
    reopened cleanup after a success and the rejected scheduled delay."""
    reopened: set[str] = set()  # coordinator keys name one coordinator each
    second_completions = rejected_reservations = 0
    for line, text in zip(trace, replies, strict=True):
        reply = json.loads(text)
        key = reply["coordinator"]
        kinds = [next(iter(issued["action"])) for issued in reply.get("actions", [])]
        if kinds == ["CancelDestination"] and reply["completion"] == "Success":
            assert not reply["complete"], text
            reopened.add(key)  # a terminal fact after success reopened cleanup
        elif key in reopened and "Complete" in kinds:
            assert (kinds, reply["completion"]) == (["Complete"], "Canceled"), text
            second_completions += 1
        if reply.get("error", {}).get("code") == "invalid_transfer_delay":
            rejected_reservations += '"DestinationReserved"' in line  # never fails in seed
    assert len(reopened) >= 20, len(reopened)
    assert second_completions >= len(reopened) // 2, (second_completions, len(reopened))
    assert rejected_reservations >= 2, rejected_reservations


@pytest.mark.parametrize(("revision", "seed"), [("seed", 21), ("mixed", 22)])
def test_random_walks_with_times_match_the_reference(
    oracle: Path, revision: WalkRevision, seed: int
) -> None:
    """The oracle's harness keeps the file's clock too: same codes for every bad time."""
    trace = random_trace(20_000, seed, revision=revision, times=True)
    ours = list(replay(trace))
    problems = compare(trace, ours, run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])
    codes = [json.loads(reply).get("error", {}).get("code") for reply in ours]
    assert codes.count("invalid_time") > 50 and codes.count("time_went_backwards") > 50
    assert sum('"at_ms": ' in line for line in trace) > 10_000


@pytest.mark.parametrize(("revision", "seed"), [("seed", 11), ("a976b2bf", 12)])
def test_the_statechart_engine_matches_the_reference_too(
    oracle: Path, revision: WalkRevision, seed: int
) -> None:
    trace = random_trace(4_000, seed, revision=revision)
    problems = compare(trace, list(replay(trace, engine="statechart")), run_oracle(oracle, trace))
    assert problems == [], "\n".join(problems[:10])


def test_the_oracle_meets_its_hand_derived_expectations(oracle: Path) -> None:
    """check_examples.py: every example's replies, line by line, as derived from the
    reference, docs/architecture.md §6 and docs/revisions.md, under --raw,
    --improved and --revision a976b2bf."""
    check = subprocess.run(
        [sys.executable, str(ORACLE_DIR / "check_examples.py"), str(oracle)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert " 0 problem(s)" in check.stdout


def test_a_default_revision_applies_to_new_lines_naming_none(oracle: Path) -> None:
    """The default revision on both sides: a walk with every revision key removed,
    replayed with a976b2bf as the default, answers exactly as the walk that names
    a976b2bf on each line."""
    named = random_trace(3_000, 13, revision="a976b2bf")
    unnamed = [line.replace(', "revision": "a976b2bf"', "") for line in named]
    assert sum('"revision"' in line for line in unnamed) < 100  # only the invalid names
    theirs = run_oracle(oracle, unnamed, revision="a976b2bf")
    assert theirs == run_oracle(oracle, named)
    assert run_oracle(oracle, unnamed) != theirs  # the seed answers differently
    problems = compare(unnamed, list(replay(unnamed, revision=Revision.A976B2BF)), theirs)
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

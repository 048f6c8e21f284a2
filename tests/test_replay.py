"""Trace replay: the CLI contract of docs/architecture.md §7, streaming, and error replies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm import (
    Canceled,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffError,
    HandoffOrder,
    TimedOut,
    TransferCompleted,
)
from handoff_fsm.io.replay import _KEY_RANGES, _OP_OF_KEYS, _OP_SHAPES, TraceReplayer, replay
from handoff_fsm.io.wire import fact_to_wire, outcome_to_wire
from tests.differential import random_trace
from tests.support import HANDOFF_ID, OTHER_ID, destination_reserved, source_held
from tests.support.cli import run_cli

HID = str(HANDOFF_ID)


def new(key: str = "c1", order: str = "SourceFirst", **extra: Any) -> str:
    return json.dumps({"coordinator": key, "op": "new", "handoff_id": HID, "order": order, **extra})


def op(key: str, name: str, **fields: Any) -> str:
    return json.dumps({"coordinator": key, "op": name, **fields})


def fact(key: str, value: Any) -> str:
    return op(key, "fact", fact=fact_to_wire(value))


def outcome(key: str, action_id: int, value: HandoffActionOutcome) -> str:
    return op(key, "outcome", action_id=action_id, outcome=outcome_to_wire(value))


def run(lines: list[str], engine: str = "compiled") -> list[dict[str, Any]]:
    return [json.loads(reply) for reply in replay(lines, engine=engine)]  # type: ignore[arg-type]


SUCCESS = [
    new(),
    op("c1", "start"),
    outcome("c1", 0, HandoffActionOutcome.SUBMITTED),
    fact("c1", source_held(2.5)),
    outcome("c1", 1, HandoffActionOutcome.ACCEPTED),
    fact("c1", destination_reserved()),
    outcome("c1", 2, HandoffActionOutcome.SCHEDULED),
    fact("c1", TransferCompleted(handoff_id=HANDOFF_ID)),
    outcome("c1", 3, HandoffActionOutcome.APPLIED),
    outcome("c1", 4, HandoffActionOutcome.NOOP),
]


def test_a_successful_handoff_replies_line_by_line(engine: str) -> None:
    replies = run(SUCCESS, engine)
    assert replies[0] == {"coordinator": "c1", "actions": [], "complete": False, "completion": None}
    names = [[next(iter(a["action"])) for a in r["actions"]] for r in replies]
    assert names == [
        [],
        ["SubmitPrefill"],
        [],
        ["ReserveDestination"],
        [],
        ["StartTransfer"],
        [],
        ["ActivateDestination"],
        ["ReleaseSource"],
        ["Complete"],
    ]
    assert replies[5]["actions"] == [
        {"id": 2, "action": {"StartTransfer": {"handoff_id": HID, "delay_ms": 2.5}}}
    ]
    assert replies[-1]["complete"] is True and replies[-1]["completion"] == "Success"
    assert all(r["complete"] is False for r in replies[:-1])


def test_coordinator_errors_are_replies_and_replay_goes_on() -> None:
    replies = run(
        [
            new(),
            fact("c1", source_held()),
            fact("c1", TimedOut(handoff_id=OTHER_ID)),
            op("c1", "start"),
            outcome("c1", 0, HandoffActionOutcome.ACCEPTED),
            outcome("c1", 7, HandoffActionOutcome.APPLIED),
            outcome("c1", 0, HandoffActionOutcome.SUBMITTED),
        ]
    )
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes == [
        None,
        "source_held_before_submit",
        "foreign_handoff",
        None,
        "invalid_outcome",
        "unknown_action",
        None,
    ]
    assert replies[1]["coordinator"] == "c1" and replies[1]["complete"] is False


def test_coordinator_keys_new_and_unknown() -> None:
    replies = run(
        [
            new("a"),
            new("a", "DestinationFirst"),
            op("b", "start"),
            new("z", fallback_transfer_delay_ms=-1.0),
            op("z", "start"),
            new("z", fallback_transfer_delay_ms=3),
            op("z", "start"),
        ]
    )
    codes = [r.get("error", {}).get("code") for r in replies]
    assert codes == [
        None,
        "duplicate_coordinator",
        "unknown_coordinator",
        "invalid_fallback",
        "unknown_coordinator",  # an invalid fallback created nothing
        None,
        None,
    ]
    assert next(iter(replies[-1]["actions"][0]["action"])) == "SubmitPrefill"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "not json",
        "[1, 2]",
        '{"op": "start"}',
        '{"coordinator": 3, "op": "start"}',
        '{"coordinator": "c1", "op": "explode"}',
        '{"coordinator": "c1", "op": "start", "extra": true}',
        '{"coordinator": "c1", "op": "outcome", "action_id": "0", "outcome": "Submitted"}',
        '{"coordinator": "c1", "op": "outcome", "action_id": true, "outcome": "Submitted"}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 18446744073709551616, '
        '"outcome": "Noop"}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 0}',
        '{"coordinator": "c1", "op": "fact", "fact": {"TimedOut": {"handoff_id": 5}}}',
        '{"coordinator": "c2", "op": "new", "handoff_id": "nope", "order": "SourceFirst"}',
        '{"coordinator": "c2", "op": "new", "handoff_id": "' + HID + '", "order": "Sideways"}',
        '{"coordinator": "c2", "op": "new", "handoff_id": "' + HID + '", "order": "SourceFirst", '
        '"fallback_transfer_delay_ms": "1"}',
    ],
)
def test_malformed_lines_are_invalid_input_with_their_line_number(line: str) -> None:
    replies = run(
        [new(), op("c1", "start"), line, outcome("c1", 0, HandoffActionOutcome.SUBMITTED)]
    )
    error = replies[2]["error"]
    assert error["code"] == "invalid_input"
    assert error["message"].startswith("line 3: ")
    assert replies[2]["complete"] is False
    assert "error" not in replies[3]  # replay goes on, and the malformed line changed nothing


@pytest.mark.slow
def test_non_utf8_line_is_invalid_input(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(new().encode() + b"\n\xff\xfe\n" + op("c1", "start").encode() + b"\n")
    result = run_cli("replay", str(trace), check=True)
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r.get("error", {}).get("code") for r in replies] == [None, "invalid_input", None]


@pytest.mark.slow
def test_cli_reads_stdin_and_writes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "replies.jsonl"
    run_cli("replay", "-", "-o", str(out), input="\n".join(SUCCESS) + "\n", check=True)
    assert [json.loads(line) for line in out.read_text().splitlines()] == run(SUCCESS)


def test_replay_streams_lazily() -> None:
    def lines() -> Iterator[str]:
        yield new()
        yield op("c1", "start")
        raise RuntimeError("the reader must not look ahead")

    replies = replay(lines())
    assert json.loads(next(replies))["actions"] == []
    assert json.loads(next(replies))["actions"][0]["id"] == 0
    with pytest.raises(RuntimeError):
        next(replies)


def test_completed_coordinators_are_dropped_but_still_answer_like_a_coordinator() -> None:
    replayer = TraceReplayer()
    for number, line in enumerate([new(), fact("c1", Canceled(handoff_id=HANDOFF_ID))], 1):
        replayer.reply(line, number)
    assert "c1" not in replayer.live and "c1" in replayer.completed
    # Every kind of later input gets the same answer a completed coordinator gives.
    reference = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    reference.on_fact(Canceled(handoff_id=HANDOFF_ID))
    later: list[tuple[str, Any]] = [
        ("start", None),
        ("fact", source_held()),
        ("fact", source_held(handoff_id=OTHER_ID)),
        ("fact", TimedOut(handoff_id=HANDOFF_ID)),
        ("outcome", (0, HandoffActionOutcome.APPLIED)),
        ("outcome", (9, HandoffActionOutcome.failed("x"))),
    ]
    for kind, value in later:
        if kind == "start":
            line, expected = op("c1", "start"), _reply(reference.start)
        elif kind == "fact":
            line, expected = fact("c1", value), _reply(reference.on_fact, value)
        else:
            line = outcome("c1", *value)
            expected = _reply(reference.on_action_outcome, *value)
        got = replayer.reply(line, 99)
        assert ("error" in got) == ("error" in expected)
        assert got.get("error", {}).get("code") == expected.get("error", {}).get("code")
        assert got.get("actions") == expected.get("actions")
        assert (got["complete"], got["completion"]) == (True, "Canceled")


def _reply(call: Any, *args: Any) -> dict[str, Any]:
    try:
        return {"actions": call(*args)}
    except HandoffError as error:
        return {"error": {"code": error.code.value}}


def test_reply_text_is_exactly_what_json_dumps_writes() -> None:
    for reply in replay(random_trace(5_000, seed=4)):
        assert reply == json.dumps(json.loads(reply))


def test_only_the_most_recent_completed_coordinators_are_remembered() -> None:
    replayer = TraceReplayer(remember_completed=3)
    number = 0
    for index in range(10):
        for line in (new(f"k{index}"), fact(f"k{index}", Canceled(handoff_id=HANDOFF_ID))):
            number += 1
            assert "error" not in replayer.reply(line, number)
    assert list(replayer.completed) == ["k7", "k8", "k9"]  # memory stays bounded
    assert replayer.live == {}
    assert len(replayer.retired) == 7 and "k0" in replayer.retired and "k7" not in replayer.retired
    late = replayer.reply(outcome("k9", 0, HandoffActionOutcome.APPLIED), 99)
    assert late == {"coordinator": "k9", "actions": [], "complete": True, "completion": "Canceled"}
    forgotten = replayer.reply(outcome("k0", 0, HandoffActionOutcome.APPLIED), 100)
    assert forgotten["error"]["code"] == "forgotten_coordinator"
    assert "last 3 completions" in forgotten["error"]["message"]
    assert (forgotten["complete"], forgotten["completion"]) == (True, "Canceled")
    # A forgotten key is still taken: it can never start a second handoff.
    again = replayer.reply(new("k0"), 101)
    assert again["error"]["code"] == "duplicate_coordinator"
    assert (again["complete"], again["completion"]) == (True, "Canceled")
    assert "k0" not in replayer.live
    never = replayer.reply(op("k10", "start"), 102)
    assert never["error"]["code"] == "unknown_coordinator"
    assert (never["complete"], never["completion"]) == (False, None)


def test_remembering_every_completed_coordinator_is_possible() -> None:
    replayer = TraceReplayer(remember_completed=None)
    for index in range(5):
        replayer.reply(new(f"k{index}"), 1)
        replayer.reply(fact(f"k{index}", Canceled(handoff_id=HANDOFF_ID)), 2)
    assert len(replayer.completed) == 5
    with pytest.raises(ValueError, match="remember_completed"):
        TraceReplayer(remember_completed=-1)


@pytest.mark.slow
def test_cli_remember_option(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    lines = [new("a"), fact("a", Canceled(handoff_id=HANDOFF_ID)), new("b")]
    lines += [fact("b", Canceled(handoff_id=HANDOFF_ID)), op("a", "start")]
    trace.write_text("\n".join(lines) + "\n")
    for remember, code in (("1", "forgotten_coordinator"), ("all", None), ("2", None)):
        result = run_cli("replay", str(trace), "--remember", remember, check=True)
        last = json.loads(result.stdout.splitlines()[-1])
        assert last.get("error", {}).get("code") == code, remember
    for bad_count in ("-3", "²", "٣", "1_0", " 3", "+3", "3.0", ""):
        bad = run_cli("replay", str(trace), "--remember", bad_count)
        assert bad.returncode == 2, bad_count
        assert f"expected a count or 'all', got {bad_count!r}" in bad.stderr
        assert "Traceback" not in bad.stderr


def test_after_the_default_10000_completions_no_key_starts_a_second_handoff() -> None:
    replayer = TraceReplayer()
    number = 0
    for index in range(10_001):
        for line in (new(f"k{index}"), fact(f"k{index}", Canceled(handoff_id=HANDOFF_ID))):
            number += 1
            assert "error" not in replayer.reply(line, number)
    assert len(replayer.completed) == 10_000 and len(replayer.retired) == 1
    assert replayer.reply(new("k0"), number + 1)["error"]["code"] == "duplicate_coordinator"
    assert replayer.reply(op("k0", "start"), number + 2)["error"]["code"] == (
        "forgotten_coordinator"
    )
    late = replayer.reply(op("k1", "start"), number + 3)  # still remembered in full
    assert late == {"coordinator": "k1", "actions": [], "complete": True, "completion": "Canceled"}
    assert "k0" not in replayer.live


def test_remember_zero_keeps_only_keys() -> None:
    lines = [new("a"), fact("a", Canceled(handoff_id=HANDOFF_ID)), new("a"), op("a", "start")]
    replies = [json.loads(r) for r in replay(lines, remember_completed=0)]
    assert [r.get("error", {}).get("code") for r in replies] == [
        None,
        None,
        "duplicate_coordinator",
        "forgotten_coordinator",
    ]
    assert all(r["completion"] == "Canceled" for r in replies[1:])


def test_each_ops_shapes_are_its_required_keys_plus_every_subset_of_the_optional() -> None:
    # What lets replay check a line's keys by two set comparisons (_KEY_RANGES).
    for name, shapes in _OP_SHAPES.items():
        required, allowed = shapes[0], shapes[-1]
        optional = sorted(allowed - required)
        subsets = [
            required | set(chosen)
            for size in range(len(optional) + 1)
            for chosen in combinations(optional, size)
        ]
        assert sorted(map(sorted, shapes)) == sorted(map(sorted, subsets)), name


def test_the_key_set_lookup_accepts_exactly_what_the_key_ranges_accept() -> None:
    # Replay recognises a valid line by one lookup of its key set (_OP_OF_KEYS) and
    # words a refusal by the key ranges (_KEY_RANGES): both must be the same rule, for
    # every key set made of the known keys, the time and a stranger.
    known = sorted({key for _, allowed in _KEY_RANGES.values() for key in allowed} | {"stranger"})
    for size in range(len(known) + 1):
        for chosen in combinations(known, size):
            keys = frozenset(chosen)
            by_ranges = [
                name
                for name, (required, allowed) in _KEY_RANGES.items()
                if required <= keys <= allowed
            ]
            looked_up = _OP_OF_KEYS.get(keys)
            assert len(by_ranges) <= 1, keys
            assert looked_up == ((by_ranges[0], "at_ms" in keys) if by_ranges else None), keys

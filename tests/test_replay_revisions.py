"""Replay knows the revision: a `new` line may name one, `--revision` sets the default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm import HandoffCompletion, Revision
from handoff_fsm.io import TraceReplayer, replay
from tests.support.cli import run_cli

ID = "00000000-0000-4000-8000-000000000001"
TIMING = {"mode": "full_prompt", "full_prompt_tokens": 10, "kv_bytes_per_token": 1024,
          "bandwidth_gb_s": 1.0}  # fmt: skip


def _line(op: str, **fields: Any) -> str:
    return json.dumps({"coordinator": "c", "op": op, **fields})


def _fact(name: str, **fields: Any) -> str:
    return _line("fact", fact={name: {"handoff_id": ID, **fields}})


def _outcome(action_id: int, outcome: str) -> str:
    return _line("outcome", action_id=action_id, outcome=outcome)


SUCCESS = [
    _line("start"),
    _outcome(0, "Submitted"),
    _fact("SourceHeld", transfer_timing=TIMING),
    _outcome(1, "Accepted"),
    _fact("DestinationReserved", transferable_prompt_tokens=10),
    _outcome(2, "Scheduled"),
    _fact("TransferCompleted"),
    _outcome(3, "Applied"),
    _outcome(4, "Applied"),
]
AFTER = [_fact("Canceled"), _outcome(1, "Accepted"), _outcome(6, "Noop"), _fact("Canceled")]


def _new(**extra: Any) -> str:
    return _line("new", handoff_id=ID, order="SourceFirst", **extra)


def _replies(lines: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    return [json.loads(reply) for reply in replay(lines, **kwargs)]


def _status(reply: dict[str, Any]) -> tuple[Any, ...]:
    actions = [next(iter(a["action"])) for a in reply.get("actions", [])]
    error = reply["error"]["code"] if "error" in reply else None
    return (actions, error, reply["complete"], reply["completion"])


def test_a_new_line_names_a976b2bf_and_the_reopened_cleanup_is_replayed() -> None:
    replies = _replies([_new(revision="a976b2bf"), *SUCCESS, *AFTER])
    assert _status(replies[9]) == (["Complete"], None, True, "Success")
    assert [_status(r) for r in replies[10:]] == [
        (["CancelDestination"], None, False, "Success"),
        ([], "unknown_action", False, "Success"),
        (["Complete"], None, True, "Canceled"),
        ([], None, True, "Canceled"),
    ]


def test_the_seed_ignores_what_follows_success() -> None:
    replies = _replies([_new(), *SUCCESS, *AFTER])
    assert [_status(r) for r in replies[10:]] == [([], None, True, "Success")] * 4


def test_the_default_revision_applies_to_lines_that_name_none() -> None:
    replies = _replies([_new(), *SUCCESS, AFTER[0]], revision=Revision.A976B2BF)
    assert _status(replies[-1]) == (["CancelDestination"], None, False, "Success")
    # A line's own revision wins over the default.
    replies = _replies([_new(revision="seed"), *SUCCESS, AFTER[0]], revision=Revision.A976B2BF)
    assert _status(replies[-1]) == ([], None, True, "Success")


def test_a_succeeded_a976b2bf_coordinator_is_retired_and_still_reopens() -> None:
    replayer = TraceReplayer(remember_completed=0)
    for number, line in enumerate([_new(revision="a976b2bf"), *SUCCESS], start=1):
        replayer.reply_text(line, number)
    # Retired like any completed one, with a record of it: a terminal fact still reopens it.
    assert "c" not in replayer.live and "c" not in replayer.completed
    assert replayer.retired.completion("c") is HandoffCompletion.SUCCESS
    assert replayer.retired.record("c")
    replies = [json.loads(replayer.reply_text(line, n)) for n, line in enumerate(AFTER, start=20)]
    assert [_status(r) for r in replies[:3]] == [
        (["CancelDestination"], None, False, "Success"),
        ([], "unknown_action", False, "Success"),
        (["Complete"], None, True, "Canceled"),
    ]
    assert "c" not in replayer.live
    assert replayer.retired.record("c") == b""  # final now: its key and completion only
    assert _status(replies[3]) == ([], "forgotten_coordinator", True, "Canceled")


def test_revision_mistakes_are_coded() -> None:
    replies = _replies([_new(revision="A976B2BF"), _new(revision=7), _new(revision=None)])
    assert [r["error"]["code"] for r in replies] == [
        "invalid_revision",
        "invalid_input",
        "invalid_input",
    ]
    assert _status(_replies([_new(revision="seed")])[0]) == ([], None, False, None)


@pytest.mark.slow
def test_the_cli_takes_a_default_revision(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join([_new(), *SUCCESS, AFTER[0]]) + "\n")
    for revision, last in [("seed", []), ("a976b2bf", ["CancelDestination"])]:
        out = run_cli("replay", str(trace), "--revision", revision, check=True).stdout.splitlines()
        assert _status(json.loads(out[-1]))[0] == last

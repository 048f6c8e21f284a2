"""Differential checking against the compiled Rust reference (tests/oracle).

``random_trace`` writes a reactive random walk over many interleaved coordinators:
it watches the library's replies to choose plausible next inputs (acknowledge
what was issued, report facts in roughly the right order) and mixes in wrong,
duplicate, premature, foreign, non-finite and malformed inputs. ``compare``
then checks that ``handoff-fsm replay`` and the oracle answer every line alike:
same actions, ids and delays (floats compared bit for bit), same completion,
same error codes (messages are free text and differ).

Run it by hand for a long walk:
``python -m tests.differential --steps 100000 --seed 7``.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handoff_fsm.io.replay import TraceReplayer, replay

ORACLE_DIR = Path(__file__).parent / "oracle"

OUTCOMES = ["Submitted", "Accepted", "Scheduled", "Applied", "Noop"]
GOOD = {
    "SubmitPrefill": ["Submitted"],
    "ReserveDestination": ["Accepted"],
    "StartTransfer": ["Scheduled"],
    "ActivateDestination": ["Applied"],
    "ReleaseSource": ["Applied", "Noop"],
    "CancelSource": ["Applied", "Noop"],
    "CancelDestination": ["Applied", "Noop"],
    "Complete": ["Applied"],
}
BANDWIDTHS: list[Any] = [1.0, 0.5, 100.0, 0.0, None, -1.0, float("nan"), float("inf"), 1e-300, 3]
FALLBACKS: list[Any] = [0.0, 7.5, 1e-9, 2.5, float("nan"), float("inf"), -1.0, 0]


def build_oracle() -> Path:
    """Build the oracle offline (cached by cargo) and return the binary's path."""
    result = subprocess.run(
        [str(ORACLE_DIR / "build.sh")], check=True, capture_output=True, text=True
    )
    return Path(result.stdout.strip().splitlines()[-1])


@dataclass
class _Handoff:
    key: str
    handoff_id: str
    actions: dict[int, str] = field(default_factory=dict)
    acked: dict[int, Any] = field(default_factory=dict)
    complete: bool = False


def _timing(rng: random.Random) -> dict[str, Any]:
    timing: dict[str, Any] = {
        "mode": rng.choice(["full_prompt", "destination_missing"]),
        "full_prompt_tokens": rng.choice([0, 1, 10, 4096, rng.randrange(2**20), 2**64 - 1]),
    }
    if rng.random() < 0.9:
        timing["kv_bytes_per_token"] = rng.choice(
            [None, 0, 1024, 131_072, rng.randrange(2**24), 2**64 - 1]
        )
    if rng.random() < 0.9:
        timing["bandwidth_gb_s"] = rng.choice(BANDWIDTHS)
    return timing


def _fact(rng: random.Random, handoff: _Handoff, handoff_ids: list[str]) -> dict[str, Any]:
    handoff_id = handoff.handoff_id if rng.random() < 0.95 else rng.choice(handoff_ids)
    kind = rng.choices(
        [
            "SourceHeld",
            "DestinationReserved",
            "TransferCompleted",
            "Failed",
            "TimedOut",
            "Canceled",
        ],
        weights=[5, 5, 5, 1, 1, 1],
    )[0]
    body: dict[str, Any] = {"handoff_id": handoff_id}
    if kind == "SourceHeld":
        body["transfer_timing"] = _timing(rng)
    elif kind == "DestinationReserved":
        body["transferable_prompt_tokens"] = rng.choice([0, 1, 3, 100, 2**64 - 1])
    return {kind: body}


def _outcome(rng: random.Random, action: str | None) -> Any:
    roll = rng.random()
    if roll < 0.07:
        return {"Failed": rng.choice(["boom", "timeout", ""])}
    if action is not None and roll < 0.85:
        return rng.choice(GOOD[action])
    return rng.choice(OUTCOMES)


_MALFORMED = [
    "",
    "not json",
    "[]",
    '{"op": "start"}',
    '{"coordinator": 5, "op": "start"}',
    '{"coordinator": "h0", "op": "launch"}',
    '{"coordinator": "h0", "op": "start", "extra": 1}',
    '{"coordinator": "h0", "op": "outcome", "action_id": -1, "outcome": "Applied"}',
    '{"coordinator": "h0", "op": "outcome", "action_id": 1.0, "outcome": "Applied"}',
    '{"coordinator": "h0", "op": "outcome", "action_id": 0, "outcome": "Done"}',
    '{"coordinator": "h0", "op": "fact", "fact": {"Exploded": {"handoff_id": "x"}}}',
    '{"coordinator": "h0", "op": "fact", "fact": {"TimedOut": {"handoff_id": "nope"}}}',
    '{"coordinator": "h0", "op": "fact", "fact": {"TimedOut": {}}}',
    '{"coordinator": "h0", "op": "new", "handoff_id": "00000000-0000-0000-0000-000000000000"}',
]


def random_trace(steps: int, seed: int, live: int = 8) -> list[str]:
    """A reactive random walk of ``steps`` trace lines over ``live`` interleaved handoffs."""
    rng = random.Random(seed)
    replayer = TraceReplayer()
    lines: list[str] = []
    handoffs: list[_Handoff] = []
    handoff_ids: list[str] = [str(uuid.UUID(int=rng.getrandbits(128)))]
    serial = 0

    def emit(op: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(op)
        lines.append(line)
        return replayer.reply(line, len(lines))

    while len(lines) < steps:
        if len(handoffs) < live or rng.random() < 0.02:
            key = f"h{serial}" if rng.random() < 0.97 or not handoffs else rng.choice(handoffs).key
            serial += 1
            handoff_id = str(uuid.UUID(int=rng.getrandbits(128)))
            handoff_ids.append(handoff_id)
            fallback = rng.choice(FALLBACKS) if rng.random() < 0.3 else 0.0
            reply = emit(
                {
                    "coordinator": key,
                    "op": "new",
                    "handoff_id": handoff_id,
                    "order": rng.choice(["SourceFirst", "DestinationFirst"]),
                    "fallback_transfer_delay_ms": fallback,
                }
            )
            if "error" not in reply:
                handoffs.append(_Handoff(key, handoff_id))
            continue
        roll = rng.random()
        if roll < 0.01:
            lines.append(rng.choice(_MALFORMED))
            replayer.reply(lines[-1], len(lines))
            continue
        handoff = rng.choice(handoffs)
        if roll < 0.03:
            op: dict[str, Any] = {"coordinator": f"ghost{rng.randrange(3)}", "op": "start"}
        elif roll < 0.12:
            op = {"coordinator": handoff.key, "op": "start"}
        elif roll < 0.45:
            op = {
                "coordinator": handoff.key,
                "op": "fact",
                "fact": _fact(rng, handoff, handoff_ids),
            }
        else:
            if handoff.actions and rng.random() < 0.93:
                action_id, action = rng.choice(list(handoff.actions.items()))
                if action_id in handoff.acked and rng.random() < 0.5:
                    outcome = handoff.acked[action_id]  # exact duplicate
                else:
                    outcome = _outcome(rng, action)
            else:
                action_id = rng.choice([rng.randrange(12), rng.randrange(2**64)])
                outcome = _outcome(rng, None)
            op = {
                "coordinator": handoff.key,
                "op": "outcome",
                "action_id": action_id,
                "outcome": outcome,
            }
        reply = emit(op)
        for issued in reply.get("actions", []):
            (name,) = issued["action"]
            handoff.actions[issued["id"]] = name
        if op["op"] == "outcome" and "error" not in reply and op["action_id"] in handoff.actions:
            handoff.acked.setdefault(op["action_id"], op["outcome"])
        if reply.get("complete") and op["coordinator"] == handoff.key:
            handoff.complete = True
            if rng.random() < 0.7:  # keep some completed ones around for late inputs
                handoffs.remove(handoff)
    return lines


def normalized(value: Any) -> Any:
    """Replies compared field by field: floats by their bits, error messages ignored."""
    if isinstance(value, float):
        return ("f64", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k != "message"}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def compare(trace: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    """Human-readable mismatches (empty when every reply agrees)."""
    problems: list[str] = []
    if len(ours) != len(theirs):
        problems.append(f"reply counts differ: ours {len(ours)}, reference {len(theirs)}")
    for number, (line, a, b) in enumerate(zip(trace, ours, theirs, strict=False), start=1):
        if normalized(json.loads(a)) != normalized(json.loads(b)):
            problems.append(
                f"line {number}: {_clip(line)}\n  ours:      {_clip(a)}\n  reference: {_clip(b)}"
            )
    return problems


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def run_oracle(oracle: Path, trace: list[str], *, raw: bool = False) -> list[str]:
    result = subprocess.run(
        [str(oracle), *(["--raw"] if raw else [])],
        input="\n".join(trace) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.splitlines()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    trace = random_trace(args.steps, args.seed)
    ours = list(replay(trace))
    theirs = run_oracle(build_oracle(), trace)
    problems = compare(trace, ours, theirs)
    for problem in problems[:20]:
        print(problem)
    print(f"{len(trace)} lines, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

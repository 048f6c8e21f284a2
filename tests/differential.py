"""Differential checking against the compiled Rust reference (tests/oracle).

``random_trace`` writes a reactive random walk over many interleaved coordinators:
it watches the library's replies to choose plausible next inputs (acknowledge
what was issued, report facts in roughly the right order) and mixes in wrong,
duplicate, premature, foreign, non-finite and malformed inputs. ``compare``
then checks that ``handoff-fsm replay`` and the oracle answer every line alike:
same actions, ids and delays (floats compared bit for bit), same completion,
same error codes (messages are free text and differ). About a third of the
handoffs are diligent: they mostly send what a well-behaved engine would, so
walks reach successful handoffs (and what follows them) often.

Each walk runs one protocol revision (docs/revisions.md) or mixes them per
coordinator: ``seed`` writes no ``"revision"`` key, ``a976b2bf`` writes it on
every ``new`` line, ``mixed`` picks per coordinator (and names the seed
explicitly or not). Walks that name revisions also send invalid revision names
and values, and keep successful a976b2bf handoffs around for the terminal facts
that reopen their cleanup; every walk sends timings whose scheduled delay
overflows (destination-missing tokens far beyond the prompt at a tiny bandwidth)
and timings with ``state_bytes``. With ``times=True`` the same walk's lines carry
``at_ms``, good and bad (docs/replay.md, Times).

Run it by hand for a long walk:
``python -m tests.differential --steps 100000 --seed 7 --revision a976b2bf``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import struct
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

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
# The tiny ones make a destination-missing delay overflow to inf while the full
# prompt's stays finite: 10 tokens of 1 KiB at 1e-300 GB/s take 1.024e298 ms.
BANDWIDTHS: list[Any] = [
    1.0,
    0.5,
    100.0,
    0.0,
    None,
    -1.0,
    float("nan"),
    float("inf"),
    1e-300,
    3,
    5e-324,
    1e-290,
]
FALLBACKS: list[Any] = [0.0, 7.5, 1e-9, 2.5, float("nan"), float("inf"), -1.0, 0]
TRANSFERABLE_TOKENS = [0, 1, 3, 100, 2**40, 2**64 - 1]
TERMINAL_FACTS = ["Failed", "TimedOut", "Canceled"]

WalkRevision = Literal["seed", "a976b2bf", "mixed"]
WALK_REVISIONS: tuple[WalkRevision, ...] = get_args(WalkRevision)
# Names a ``new`` line may not carry: unknown strings give invalid_revision, other
# JSON values invalid_input.
BAD_REVISIONS: list[Any] = ["A976B2BF", "Seed", "", "a976b2b", " seed", "main", 7, None, ["seed"]]


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
    revision: str
    diligent: bool = False
    """Mostly sends what a well-behaved engine would (so it often succeeds)."""
    actions: dict[int, str] = field(default_factory=dict)
    acked: dict[int, Any] = field(default_factory=dict)
    facts: set[str] = field(default_factory=set)
    """Kinds of the facts it accepted."""
    complete: bool = False
    completion: str | None = None

    @property
    def may_reopen(self) -> bool:
        """Completed with Success under a976b2bf: a terminal fact reopens its cleanup."""
        return self.complete and self.completion == "Success" and self.revision == "a976b2bf"


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
    if rng.random() < 0.15:
        timing["state_bytes"] = rng.choice([0, 1, 4096, 2**20, rng.randrange(2**40), 2**64 - 1])
    return timing


def _overflowing_timing(rng: random.Random) -> dict[str, Any]:
    """A timing whose full-prompt delay is finite but whose destination-missing delay
    overflows for a large transferable footprint (a976b2bf's scheduled-delay check)."""
    return {
        "mode": "destination_missing",
        "full_prompt_tokens": rng.choice([1, 10, 4096]),
        "kv_bytes_per_token": rng.choice([1024, 131_072]),
        "bandwidth_gb_s": rng.choice([1e-300, 5e-324, 1e-290]),
    }


def _fact(rng: random.Random, handoff: _Handoff, handoff_ids: list[str]) -> dict[str, Any]:
    handoff_id = handoff.handoff_id if rng.random() < 0.95 else rng.choice(handoff_ids)
    # A handoff that may reopen mostly hears terminal facts: that is what it is kept for.
    kind = rng.choices(
        ["SourceHeld", "DestinationReserved", "TransferCompleted", *TERMINAL_FACTS],
        weights=[1, 1, 1, 5, 5, 5] if handoff.may_reopen else [5, 5, 5, 1, 1, 1],
    )[0]
    body: dict[str, Any] = {"handoff_id": handoff_id}
    if kind == "SourceHeld":
        body["transfer_timing"] = _overflowing_timing(rng) if rng.random() < 0.25 else _timing(rng)
    elif kind == "DestinationReserved":
        body["transferable_prompt_tokens"] = rng.choice(TRANSFERABLE_TOKENS)
    return {kind: body}


# The fact a handoff owes once an action was acknowledged with this outcome.
_DUE_AFTER = {
    ("SubmitPrefill", "Submitted"): "SourceHeld",
    ("ReserveDestination", "Accepted"): "DestinationReserved",
    ("StartTransfer", "Scheduled"): "TransferCompleted",
}


def _diligent_op(
    rng: random.Random, handoff: _Handoff, handoff_ids: list[str]
) -> dict[str, Any] | None:
    """What a well-behaved engine sends next: an acknowledgement of an outstanding
    action or the fact that is due, and, once it succeeded under a976b2bf, the
    decode-phase cancel. ``None`` when nothing is owed."""
    if handoff.may_reopen:
        cancel = {rng.choice(TERMINAL_FACTS): {"handoff_id": handoff.handoff_id}}
        return {"coordinator": handoff.key, "op": "fact", "fact": cancel}
    pending = [i for i in handoff.actions if i not in handoff.acked]
    due = set()
    for action_id, outcome in handoff.acked.items():
        if isinstance(outcome, str) and (handoff.actions[action_id], outcome) in _DUE_AFTER:
            due.add(_DUE_AFTER[handoff.actions[action_id], outcome])
    due -= handoff.facts
    if due and (not pending or rng.random() < 0.5):
        while True:  # a fact of a due kind, or (rarely) any other
            fact = _fact(rng, handoff, handoff_ids)
            if next(iter(fact)) in due or rng.random() < 0.05:
                return {"coordinator": handoff.key, "op": "fact", "fact": fact}
    if pending:
        action_id = rng.choice(pending)
        outcome = rng.choice(GOOD[handoff.actions[action_id]])
        return {
            "coordinator": handoff.key,
            "op": "outcome",
            "action_id": action_id,
            "outcome": outcome,
        }
    return None


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


def _revision_key(rng: random.Random, revision: WalkRevision) -> tuple[str, dict[str, Any]]:
    """The revision a new coordinator runs, and the ``"revision"`` member its line carries."""
    if revision == "seed":
        return "seed", {}
    if rng.random() < 0.02:
        return "invalid", {"revision": rng.choice(BAD_REVISIONS)}
    if revision == "a976b2bf" or rng.random() < 0.5:
        return "a976b2bf", {"revision": "a976b2bf"}
    return "seed", ({"revision": "seed"} if rng.random() < 0.5 else {})


_BAD_TIMES: list[Any] = [-1.0, -1e-300, math.nan, math.inf, -math.inf, "5", True, None, [1]]
"""``at_ms`` values replay refuses whatever the clock (``invalid_input``, ``invalid_time``)."""


class _Clock:
    """Times for a walk's lines (``times=True``): mostly moving forward, some equal, some
    going back, some not times at all, some lines without one. Drawn from a random
    generator of its own, so walks without times are what they always were."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"{seed}/times")
        self.now = 0.0

    def stamp(self, op: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.2:
            return op
        if roll < 0.9:
            self.now += rng.choice([0.0, 0.0, 1e-9, 0.5, 3.0, 1e3])
            at: Any = int(self.now) if self.now.is_integer() and rng.random() < 0.3 else self.now
        elif roll < 0.95:
            at = self.now - rng.choice([1e-9, 1.0, self.now])  # back (or -0.0, or equal)
        else:
            at = rng.choice(_BAD_TIMES)
        return {"at_ms": at, **op}


def random_trace(
    steps: int, seed: int, live: int = 8, revision: WalkRevision = "seed", *, times: bool = False
) -> list[str]:
    """A reactive random walk of ``steps`` trace lines over ``live`` interleaved handoffs.

    ``times``: the walk's lines carry ``at_ms`` (see :class:`_Clock`).
    """
    if revision not in WALK_REVISIONS:
        raise ValueError(f"revision must be one of {WALK_REVISIONS}, not {revision!r}")
    rng = random.Random(seed)
    replayer = TraceReplayer()
    lines: list[str] = []
    handoffs: list[_Handoff] = []
    handoff_ids: list[str] = [str(uuid.UUID(int=rng.getrandbits(128)))]
    serial = 0
    clock = _Clock(seed) if times else None

    def emit(op: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(op if clock is None else clock.stamp(op))
        lines.append(line)
        return replayer.reply(line, len(lines))

    while len(lines) < steps:
        if len(handoffs) < live or rng.random() < 0.02:
            key = f"h{serial}" if rng.random() < 0.97 or not handoffs else rng.choice(handoffs).key
            serial += 1
            handoff_id = str(uuid.UUID(int=rng.getrandbits(128)))
            handoff_ids.append(handoff_id)
            fallback = rng.choice(FALLBACKS) if rng.random() < 0.3 else 0.0
            runs, member = _revision_key(rng, revision)
            reply = emit(
                {
                    "coordinator": key,
                    "op": "new",
                    "handoff_id": handoff_id,
                    "order": rng.choice(["SourceFirst", "DestinationFirst"]),
                    "fallback_transfer_delay_ms": fallback,
                    **member,
                }
            )
            if "error" not in reply:
                handoffs.append(_Handoff(key, handoff_id, runs, diligent=rng.random() < 0.35))
            continue
        roll = rng.random()
        if roll < 0.01:
            lines.append(rng.choice(_MALFORMED))
            replayer.reply(lines[-1], len(lines))
            continue
        handoff = rng.choice(handoffs)
        if roll < 0.03:
            op: dict[str, Any] = {"coordinator": f"ghost{rng.randrange(3)}", "op": "start"}
        elif (
            handoff.diligent
            and rng.random() < 0.9
            and (diligent := _diligent_op(rng, handoff, handoff_ids)) is not None
        ):
            op = diligent
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
        if op["op"] == "fact" and "error" not in reply:
            handoff.facts.add(next(iter(op["fact"])))
        if op["coordinator"] != handoff.key:
            continue
        handoff.complete = bool(reply.get("complete"))
        handoff.completion = reply.get("completion")
        # Keep some completed ones around for late inputs, and most of those a
        # terminal fact would reopen (they are retired after a few more lines).
        if handoff.complete and rng.random() < (0.25 if handoff.may_reopen else 0.7):
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


def run_oracle(
    oracle: Path, trace: list[str], *, raw: bool = False, revision: str | None = None
) -> list[str]:
    """The oracle's replies; ``revision`` is the default for ``new`` lines naming none."""
    flags = [*(["--raw"] if raw else []), *(["--revision", revision] if revision else [])]
    result = subprocess.run(
        [str(oracle), *flags],
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
    parser.add_argument("--live", type=int, default=8, help="interleaved handoffs")
    parser.add_argument(
        "--revision",
        choices=WALK_REVISIONS,
        default="seed",
        help="the revision every coordinator runs, or mixed per coordinator",
    )
    parser.add_argument("--times", action="store_true", help="put at_ms on the lines")
    args = parser.parse_args()
    trace = random_trace(
        args.steps, args.seed, live=args.live, revision=args.revision, times=args.times
    )
    ours = list(replay(trace))
    theirs = run_oracle(build_oracle(), trace)
    problems = compare(trace, ours, theirs)
    for problem in problems[:20]:
        print(problem)
    print(f"{len(trace)} lines, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

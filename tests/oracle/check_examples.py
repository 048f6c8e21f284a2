#!/usr/bin/env python3
"""Check handoff-oracle against hand-derived expectations for examples/*.jsonl.

The expectations below were derived by reading reference/replay_handoff.rs
(and docs/architecture.md §6/§7, and docs/revisions.md for a976b2bf),
not by running the oracle. Each example is replayed in several runs (RUNS: ``--raw``, the
reference as written for every coordinator; ``--improved``, each coordinator
under the revision its ``new`` line names, seed by default; ``--revision
a976b2bf``, the same with a976b2bf as the default). For every run this checks,
per line: the actions (ids, kinds, handoff ids, delays bit-for-bit against
Python float arithmetic) or the error code (and message fragments),
complete/completion and the echoed coordinator; that every reply is
byte-identical to Python's ``json.dumps(json.loads(reply))``; and that the
output equals the committed golden file ``examples/NAME.RUN.expected.jsonl``
(``--update-golden`` rewrites those after the hand checks pass).

Usage: python3 check_examples.py [path/to/handoff-oracle] [--update-golden]
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "examples"

MAX = 18446744073709551615
INF = math.inf
NAN = math.nan

# Expected delays, computed with the reference's expression in Python floats.
def delay(tokens: int, kv: int, bandwidth: float) -> float:
    return float(tokens) * float(kv) / (bandwidth * 1e9) * 1000.0


# With the newer timing model's state bytes (every revision): a fixed payload added in f64.
def state_delay(tokens: int, kv: int | None, bandwidth: float, state_bytes: int) -> float:
    return (float(tokens) * float(kv or 0) + float(state_bytes)) / (bandwidth * 1e9) * 1000.0


D_SF = delay(10, 1024, 1.0)
assert struct.pack("<d", D_SF) == struct.pack("<d", 10.0 * 1024.0 / (1.0 * 1e9) * 1000.0)
D_DF = delay(37, 2048, 25.5)
# errors_and_delays line 18: MAX * MAX / (5e-324 * 1e9) overflows to inf (no exception).
assert delay(MAX, MAX, 5e-324) == INF
# a976b2bf_scheduled_delay: with 1e-300 GB/s, 10 tokens of 1 KiB take a finite
# 1.024e298 ms (the full prompt is validated), MAX tokens an infinite time.
D_TINY10 = delay(10, 1024, 1e-300)
D_TINY3 = delay(3, 1024, 1e-300)
assert math.isfinite(D_TINY10) and delay(MAX, 1024, 1e-300) == INF
# state_bytes: full prompt (10 tokens) with 4096 state bytes; state bytes alone.
D_STATE = state_delay(10, 1024, 2.5, 4096)
D_STATE_ONLY = state_delay(7, None, 1.0, 1_000_000)
assert D_STATE != delay(10, 1024, 2.5) and state_delay(10, None, 1e-300, MAX) == INF

# A line's expectation: "[]", "0:SubmitPrefill 1:StartTransfer@<float>", "!code",
# "!code~message fragment", each optionally followed by " |Success"/" |Canceled"
# (complete, with that completion) or " |Success(open)" (not complete, yet the
# completion reads Success: an a976b2bf cleanup reopened after success).
# A tuple is (raw, every other run) where they differ; a dict names each run.
E = str | tuple[str, str] | dict[str, str]

RUNS = {"raw": ["--raw"], "improved": ["--improved"], "a976b2bf": ["--revision", "a976b2bf"]}
DEFAULT_RUNS = ("raw", "improved")

EXPECT: dict[str, list[E]] = {
    "source_first_success": [
        "[]",
        "0:SubmitPrefill",
        "[]",
        "1:ReserveDestination",
        "[]",
        "2:StartTransfer@D_SF",
        "[]",
        "3:ActivateDestination",
        "4:ReleaseSource",
        "5:Complete |Success",
        "[] |Success",
        "[] |Success",
    ],
    "destination_first_success": [
        "[]",
        "[]",
        "0:ReserveDestination",
        "0:ReserveDestination",
        "[]",
        "[]",
        "1:SubmitPrefill",
        "1:SubmitPrefill",
        "[]",
        "[]",
        "2:StartTransfer@D_DF",
        "2:StartTransfer@7.5",  # bandwidth 0.0 -> no model -> fallback
        "[]",
        "3:ActivateDestination",
        "4:ReleaseSource",
        "5:Complete |Success",
    ],
    "timeout_cleanup": [
        "[]",
        "0:SubmitPrefill",
        "[]",
        "1:ReserveDestination",
        "2:CancelSource 3:CancelDestination",
        "[]",  # late Accepted is still accepted while cleaning up
        "[]",  # facts are ignored once cleaning up
        "!foreign_handoff~fact belongs to a different handoff",
        "[]",
        "4:Complete |Canceled",
        "[] |Canceled",
        "[] |Canceled",
        "[] |Canceled",  # unknown id, but completed coordinators ignore outcomes
    ],
    "invalid_outcome_retry": [
        "[]",
        "0:SubmitPrefill",
        "!invalid_outcome~invalid handoff action outcome Accepted",
        ("!conflicting_outcome~conflicting outcome for handoff action HandoffActionId(0)", "[]"),
        ("!source_held_before_submit", "1:ReserveDestination"),
        "[]",
        "0:SubmitPrefill",
        "1:CancelSource",
        "!cleanup_action_failed~handoff cleanup action HandoffActionId(1) failed",
        ("!conflicting_outcome~HandoffActionId(1)", "2:Complete |Canceled"),
        ("[]", "[] |Canceled"),
    ],
    "start_after_failed": [
        "[]",
        "0:Complete |Canceled",
        ("1:ReserveDestination |Canceled", "[] |Canceled"),
        "[] |Canceled",
        "[] |Canceled",
    ],
    "errors_and_delays": [
        "[]",
        "!transfer_completed_before_scheduled~transfer completed before it was scheduled",
        "!destination_reserved_before_accept~destination reserved before ownership was accepted",
        "!source_held_before_submit~source held before prefill submission was acknowledged",
        "!foreign_handoff",
        "!unknown_action~unknown handoff action HandoffActionId(99)",
        "!unknown_action~unknown handoff action HandoffActionId(18446744073709551615)",
        "0:SubmitPrefill",
        "[]",
        "[]",
        "!invalid_transfer_bandwidth~invalid handoff transfer bandwidth -1",
        "!invalid_transfer_bandwidth~invalid handoff transfer bandwidth NaN",
        "!invalid_transfer_bandwidth~invalid handoff transfer bandwidth inf",
        "!invalid_transfer_delay~invalid handoff transfer delay inf",
        "1:ReserveDestination",
        "[]",  # already held: ignored before validation
        "[]",
        "2:StartTransfer@INF",  # destination-missing delay is not validated
        "!transfer_completed_before_scheduled",
        "[]",
        "[]",
        "!conflicting_outcome~HandoffActionId(2)",
        "!conflicting_outcome~HandoffActionId(1)",
        "3:ActivateDestination",
        "4:CancelSource 5:CancelDestination",
        "[]",
        "!conflicting_outcome~HandoffActionId(3)",
        "[]",
        "!invalid_outcome~invalid handoff action outcome Submitted",
        ("!conflicting_outcome~HandoffActionId(5)", "6:Complete |Canceled"),
        ("!unknown_action~HandoffActionId(99)", "[] |Canceled"),
    ],
}


def fallback_block(raw_delay: str, improved_ok: bool) -> list[E]:
    ok = ["[]", "0:SubmitPrefill", "[]", "1:ReserveDestination", "[]"]
    if improved_ok:
        return [*ok, f"2:StartTransfer@{raw_delay}"]
    failing: list[E] = [(ok[0], "!invalid_fallback")]
    return failing + [
        (e, "!unknown_coordinator") for e in [*ok[1:], f"2:StartTransfer@{raw_delay}"]
    ]


EXPECT["fallbacks"] = (
    fallback_block("NAN", False)
    + fallback_block("-1.0", False)
    + fallback_block("INF", False)
    + fallback_block("-INF", False)
    + fallback_block("-0.0", True)
    + fallback_block("5e-324", True)
    + fallback_block("INF", False)  # 1e400 parses as inf
    + fallback_block("7.0", True)
)

INVALID = "!invalid_input"
EXPECT["malformed"] = (
    list[E](["[]"])
    + [INVALID] * 16
    + ["[]"]  # a braced UUID, as the uuid crate reads it
    + [INVALID]
    + ["!duplicate_coordinator", "!unknown_coordinator"]
    + [INVALID] * 4
    + ["!unknown_coordinator", "0:SubmitPrefill", INVALID]
    + [INVALID] * 6
    + ["[]"]
)
# Echoed "coordinator" of each malformed line (None = JSON null).
MALFORMED_COORDINATORS = (
    ["m1", None, None, None, None, "m1", None]
    + ["m1"] * 10
    + ["m2", "m1", "m1", "m9", None, None, None, None, "\u00e7\U0001F600\"q\n", "m1", None]
    + ["m1"] * 5
    + [None]  # a repeated key makes the line unreadable JSON: no coordinator is named
    + ["m1"]
)

# ------------------------------------------------------------------ revision a976b2bf
# Coordinators whose `new` line says "revision": "a976b2bf"; the raw reference
# runs them as written (it knows no revisions), so its column is the seed's.
S, O = " |Success", " |Success(open)"  # complete Success / reopened, completion still Success
C = " |Canceled"
SUCCESS_PATH = [
    "0:SubmitPrefill",
    "[]",
    "1:ReserveDestination",
    "[]",
    "2:StartTransfer@D_SF",
    "[]",
    "3:ActivateDestination",
    "4:ReleaseSource",
    "5:Complete" + S,
]
EXPECT["a976b2bf_cancel_after_success"] = [
    # sf: SourceFirst; the Complete is acknowledged before the cancel arrives.
    "[]",
    *SUCCESS_PATH,
    "[]" + S,  # ack of Complete: ignored while complete
    ("[]" + S, "6:CancelDestination" + O),  # cleanup reopens, destination only
    ("[]" + S, "!unknown_action~HandoffActionId(0)" + O),  # journal cleared at Complete
    ("[]" + S, "!unknown_action~HandoffActionId(5)" + O),  # ... the Complete's own id too
    ("[]" + S, "!unknown_action~HandoffActionId(4)" + O),
    ("[]" + S, "[]" + O),  # a second terminal fact during the reopened cleanup
    ("[]" + S, "[]" + O),
    ("[]" + S, "[]" + O),  # start() issues nothing once not active
    ("!foreign_handoff" + S, "!foreign_handoff" + O),
    ("[]" + S, "[]" + O),  # non-terminal facts are ignored while cleaning up
    ("[]" + S, "!invalid_outcome~invalid handoff action outcome Submitted" + O),
    ("[]" + S, "!cleanup_action_failed~HandoffActionId(6)" + O),
    ("[]" + S, "7:Complete" + C),  # neither rejection was journalled (§6.1)
    ("[]" + S, "[]" + C),
    ("[]" + S, "[]" + C),  # after the second completion, facts are ignored
    ("[]" + S, "[]" + C),
    ("[]" + S, "[]" + C),
    ("!foreign_handoff" + S, "!foreign_handoff" + C),
    # df: DestinationFirst; the cancel arrives before the Complete is acknowledged.
    "[]",
    "0:ReserveDestination",
    "[]",
    "1:SubmitPrefill",
    "[]",
    "2:StartTransfer@D_DF",
    "[]",
    "3:ActivateDestination",
    "4:ReleaseSource",
    "5:Complete" + S,
    ("[]" + S, "6:CancelDestination" + O),
    ("[]" + S, "!unknown_action~HandoffActionId(5)" + O),
    ("[]" + S, "7:Complete" + C),
    ("[]" + S, "[]" + C),
    ("[]" + S, "[]" + C),
    # seed (named explicitly), same inputs as sf: a cancel after success is ignored.
    "[]",
    *SUCCESS_PATH,
    "[]" + S,
    "[]" + S,
]
EXPECT["a976b2bf_scheduled_delay"] = [
    # sf (a976b2bf): the DestinationReserved that would schedule an infinite delay.
    "[]",
    "0:SubmitPrefill",
    "[]",
    "1:ReserveDestination",  # the full-prompt delay (10 tokens) is finite
    "[]",
    ("2:StartTransfer@INF", "!invalid_transfer_delay~invalid handoff transfer delay inf"),
    "!transfer_completed_before_scheduled",
    ("[]", "2:StartTransfer@D_TINY3"),  # nothing was latched: this one is not a duplicate
    "[]",  # now reserved: a repeat is ignored before any check
    "[]",
    # sf-seed: the seed schedules the infinite delay.
    "[]",
    "0:SubmitPrefill",
    "[]",
    "1:ReserveDestination",
    "[]",
    "2:StartTransfer@INF",
    "!transfer_completed_before_scheduled",
    "[]",
    "[]",
    "[]",
    # df (a976b2bf, fallback 2.5): the SourceHeld triggers it in DestinationFirst.
    "[]",
    "0:ReserveDestination",
    "[]",
    "1:SubmitPrefill",  # reserved with MAX transferable tokens
    "[]",
    ("2:StartTransfer@INF", "!invalid_transfer_delay~invalid handoff transfer delay inf"),
    ("[]", "2:StartTransfer@2.5"),  # bandwidth 0.0: no model, the fallback is scheduled
    "[]",
    "[]",
    "3:ActivateDestination",
]
EXPECT["state_bytes"] = [
    "[]",
    "0:SubmitPrefill",
    "[]",
    "1:ReserveDestination",
    "[]",
    "2:StartTransfer@D_STATE",
    "[]",
    "0:ReserveDestination",
    "[]",
    "1:SubmitPrefill",
    "[]",
    "!invalid_input~state_bytes",  # null
    "!invalid_input~state_bytes",  # negative
    "!invalid_input~state_bytes",  # 1.0 is not an integer
    "!invalid_transfer_delay~invalid handoff transfer delay inf",  # MAX state bytes, 1e-300 GB/s
    "2:StartTransfer@D_STATE_ONLY",  # no per-token bytes: the state bytes alone
    "[]",
    "0:SubmitPrefill",
    "[]",
    "1:ReserveDestination",  # no per-token bytes and no state bytes: no model
    "[]",
    "2:StartTransfer@7.5",
]


EXPECT["revisions"] = [
    "[]",
    "[]",
    "[]",
    '!invalid_revision~unknown revision "A976B2BF"',  # names are exact, in every run
    "!unknown_coordinator",  # nothing was created
    "!invalid_input~revision",  # not a string
    "!invalid_input~revision",  # null
    "!invalid_revision",  # read with the line, before the duplicate is looked for
    "!duplicate_coordinator",
    "!invalid_revision",  # ... and before the fallback is checked
    # then lines alternate between x (no revision), s (seed) and a (a976b2bf)
    *[step for expect in SUCCESS_PATH for step in (expect, expect, expect)],
    {"raw": "[]" + S, "improved": "[]" + S, "a976b2bf": "6:CancelDestination" + O},
    "[]" + S,
    ("[]" + S, "6:CancelDestination" + O),
    {"raw": "[]" + S, "improved": "[]" + S, "a976b2bf": "7:Complete" + C},
    "[]" + S,
    ("[]" + S, "7:Complete" + C),
]
EXAMPLE_RUNS = {"revisions": ("raw", "improved", "a976b2bf")}

# ------------------------------------------------------------------ times ("at_ms")
# Not the reference's: the harness's clock (docs/replay.md, Times). A time is
# checked after the rest of the line, before any coordinator; only an accepted time
# moves the clock, and a refused line changes nothing.
EXPECT["times"] = [
    "[]",  # clock 0
    "0:SubmitPrefill",  # 1.5
    "!time_went_backwards",  # 1 < 1.5: the acknowledgement is not applied ...
    "[]",  # ... so it is here (equal times are fine)
    "!invalid_time",  # negative
    "!invalid_time",  # NaN
    "!invalid_time",  # Infinity
    "!invalid_time",  # 1e400 reads as infinity
    "!invalid_input~at_ms",  # a string
    "!invalid_input~at_ms",  # null
    "!invalid_input~at_ms",  # a boolean
    "!time_went_backwards",  # -0 is the time 0: before 1.5
    "!unknown_coordinator",  # the time was fine: the clock is 5 now
    "!time_went_backwards",  # 4 < 5 (no t2 was created by any line above)
    "!invalid_revision",  # the line is read before its time is checked
    "[]",  # no time: t2 is created whatever the clock
    "!duplicate_coordinator",  # the time (5, equal) was accepted first
    "!time_went_backwards",  # 4.999 < 5
    "[]",  # clock 1e308
    "!time_went_backwards",  # 2^64 < 1e308: t4 not created ...
    "[]",  # ... so this creates it
]

NAMED = {
    "D_SF": D_SF,
    "D_DF": D_DF,
    "D_TINY3": D_TINY3,
    "D_STATE": D_STATE,
    "D_STATE_ONLY": D_STATE_ONLY,
    "INF": INF,
    "-INF": -INF,
    "NAN": NAN,
}


def as_float(text: str) -> float:
    return NAMED[text] if text in NAMED else float(text)


def same_bits(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return struct.pack("<d", a) == struct.pack("<d", b)


def handoff_ids(trace_lines: list[bytes]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for raw in trace_lines:
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and line.get("op") == "new" and "coordinator" in line:
            try:
                import uuid

                ids.setdefault(line["coordinator"], str(uuid.UUID(line["handoff_id"])))
            except (ValueError, TypeError, AttributeError):
                pass
    return ids


def check_line(
    where: str, expect: str, reply: dict[str, Any], handoff_id: str | None
) -> list[str]:
    problems: list[str] = []
    body, _, completion_text = expect.partition(" |")
    completion, reopened, _ = completion_text.partition("(open)")
    complete = bool(completion) and not reopened
    if reply.get("complete") != complete or reply.get("completion") != (completion or None):
        problems.append(
            f"{where}: expected complete={complete}, completion {completion or None!r}, "
            f"got {reply!r}"
        )
    if body.startswith("!"):
        code, _, fragment = body[1:].partition("~")
        err = reply.get("error")
        if set(reply) != {"coordinator", "error", "complete", "completion"} or not err:
            return problems + [f"{where}: expected error {code}, got {reply!r}"]
        if err.get("code") != code:
            problems.append(f"{where}: expected code {code}, got {err!r}")
        if fragment and fragment not in err.get("message", ""):
            problems.append(f"{where}: message lacks {fragment!r}: {err!r}")
        if code == "invalid_input" and f"line {where.rsplit(':', 1)[1]}" not in err["message"]:
            problems.append(f"{where}: invalid_input message lacks the line number: {err!r}")
        return problems
    if set(reply) != {"coordinator", "actions", "complete", "completion"}:
        return problems + [f"{where}: expected actions, got {reply!r}"]
    want = [] if body == "[]" else body.split()
    got = reply["actions"]
    if len(want) != len(got):
        return problems + [f"{where}: expected {want}, got {got!r}"]
    for w, g in zip(want, got):
        wid, _, kind = w.partition(":")
        kind, _, wdelay = kind.partition("@")
        if g.get("id") != int(wid) or list(g.get("action", {})) != [kind]:
            problems.append(f"{where}: expected {w}, got {g!r}")
            continue
        payload = g["action"][kind]
        keys = ["handoff_id", "delay_ms"] if kind == "StartTransfer" else ["handoff_id"]
        if list(payload) != keys:
            problems.append(f"{where}: bad payload keys {payload!r}")
        if handoff_id is not None and payload.get("handoff_id") != handoff_id:
            problems.append(f"{where}: handoff_id {payload.get('handoff_id')} != {handoff_id}")
        if wdelay and not same_bits(payload["delay_ms"], as_float(wdelay)):
            problems.append(
                f"{where}: delay {payload['delay_ms']!r} != {as_float(wdelay)!r} (bitwise)"
            )
    return problems


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    update = "--update-golden" in sys.argv
    binary = args[0] if args else str(HERE / "target" / "release" / "handoff-oracle")
    problems: list[str] = []
    checked = 0
    for name, expectations in sorted(EXPECT.items()):
        trace = (EXAMPLES / f"{name}.jsonl").read_bytes()
        trace_lines = trace.split(b"\n")[:-1]
        ids = handoff_ids(trace_lines)
        assert len(expectations) == len(trace_lines), (name, len(expectations), len(trace_lines))
        for variant in EXAMPLE_RUNS.get(name, DEFAULT_RUNS):
            run = subprocess.run([binary, *RUNS[variant]], input=trace, capture_output=True)
            if run.returncode != 0:
                problems.append(f"{name}/{variant}: exit {run.returncode}: {run.stderr!r}")
                continue
            out_lines = run.stdout.decode().split("\n")
            if out_lines[-1] != "" or len(out_lines) - 1 != len(trace_lines):
                problems.append(f"{name}/{variant}: {len(out_lines) - 1} replies for {len(trace_lines)} lines")
                continue
            for n, (expect, text) in enumerate(zip(expectations, out_lines), start=1):
                reply = json.loads(text)
                if json.dumps(reply) != text:
                    problems.append(f"{name}/{variant}:{n}: not json.dumps-identical: {text}")
                if isinstance(expect, dict):
                    exp = expect[variant]
                elif isinstance(expect, tuple):
                    exp = expect[0 if variant == "raw" else 1]
                else:
                    exp = expect
                coord = reply.get("coordinator")
                if name == "malformed":
                    if coord != MALFORMED_COORDINATORS[n - 1]:
                        problems.append(f"{name}/{variant}:{n}: coordinator echo {coord!r}")
                else:
                    src = json.loads(trace_lines[n - 1])
                    if coord != src["coordinator"]:
                        problems.append(f"{name}/{variant}:{n}: coordinator echo {coord!r}")
                problems += check_line(f"{name}/{variant}:{n}", exp, reply, ids.get(coord))
                checked += 1
            golden = EXAMPLES / f"{name}.{variant}.expected.jsonl"
            if update:
                golden.write_bytes(run.stdout)
            elif not golden.exists() or golden.read_bytes() != run.stdout:
                problems.append(f"{name}/{variant}: output differs from {golden.name}")
    for p in problems:
        print("FAIL", p)
    print(f"checked {checked} replies; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

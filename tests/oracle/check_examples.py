#!/usr/bin/env python3
"""Check handoff-oracle against hand-derived expectations for examples/*.jsonl.

The expectations below were derived by reading reference/replay_handoff.rs
(and docs/ARCHITECTURE.md §6/§7), not by running the oracle. For every example
and both variants this checks, per line: the actions (ids, kinds, handoff ids, delays
bit-for-bit against Python float arithmetic) or the error code (and message
fragments), complete/completion and the echoed coordinator; that every reply
is byte-identical to Python's ``json.dumps(json.loads(reply))``; and that the
output equals the committed golden file ``examples/NAME.VARIANT.expected.jsonl``
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


D_SF = delay(10, 1024, 1.0)
assert struct.pack("<d", D_SF) == struct.pack("<d", 10.0 * 1024.0 / (1.0 * 1e9) * 1000.0)
D_DF = delay(37, 2048, 25.5)
# errors_and_delays line 18: MAX * MAX / (5e-324 * 1e9) overflows to inf (no exception).
assert delay(MAX, MAX, 5e-324) == INF

# A line's expectation: "[]", "0:SubmitPrefill 1:StartTransfer@<float>", "!code",
# "!code~message fragment", each optionally followed by " |Success"/" |Canceled".
# A tuple is (raw, improved) where the variants differ.
E = str | tuple[str, str]

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

NAMED = {"D_SF": D_SF, "D_DF": D_DF, "INF": INF, "-INF": -INF, "NAN": NAN}


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
    completion = completion_text or None
    if reply.get("complete") != (completion is not None) or reply.get("completion") != completion:
        problems.append(f"{where}: expected completion {completion!r}, got {reply!r}")
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
        for variant, index in (("raw", 0), ("improved", 1)):
            run = subprocess.run([binary, f"--{variant}"], input=trace, capture_output=True)
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
                exp = expect if isinstance(expect, str) else expect[index]
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

"""Hostile trace lines: every spelling a reader might get wrong, and random mutations.

``hostile_trace`` is a fixed trace that puts each questionable spelling of a
handoff id, an integer and a float into every field of its kind (``at_ms`` too), and mixes in
deep nesting, repeated keys, surrogates, byte-order marks and long values;
``mutated_trace`` corrupts a random walk's lines, as text and as JSON. Both are
replayed by the library and the Rust oracle and must get the same replies
(tests/test_differential.py); the library must answer each line with one
well-formed reply (tests/test_replay_hostile.py).
"""

from __future__ import annotations

import json
import random
from typing import Any

from tests.differential import random_trace

HID = "01234567-89ab-cdef-0123-456789abcdef"
SIMPLE = HID.replace("-", "")

UUID_SPELLINGS = [
    HID,
    HID.upper(),
    SIMPLE,
    SIMPLE.upper(),
    "{" + HID + "}",
    "urn:uuid:" + HID,
    "urn:uuid:" + HID.upper(),
    "URN:UUID:" + HID,
    "urn:uuid:" + SIMPLE,
    "{" + SIMPLE + "}",
    "{" + HID,
    HID + "}",
    "{{" + HID + "}}",
    "uuid:" + HID,
    "urn:" + HID,
    " " + HID,
    HID + " ",
    "\t" + SIMPLE,
    "\ufeff" + HID,
    "+" + SIMPLE[1:],
    "0_" + SIMPLE[2:],
    "\u0660" * 32,  # Arabic-Indic zeros
    "\uff10" * 32,  # fullwidth zeros
    "\u0660" * 8 + HID[8:],
    "0123-4567-89ab-cdef-0123-4567-89ab-cdef",  # 39 characters, dashed every 4
    "01234567-89ab-cdef-0123-456789abcdef--",
    "01234567--89ab-cdef-0123-456789abcdef",
    "-".join(SIMPLE[i : i + 4] for i in range(0, 32, 4)) + "---",  # 42 characters
    "0123456789abcdef0123456789abcdef0",
    SIMPLE[:-1],
    SIMPLE[:-1] + "g",
    "",
    "nil",
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
]
"""Strings a handoff id field might hold; the uuid crate accepts the first six and the last two."""

NUMBER_LITERALS = [
    "0",
    "-0",
    "1",
    "-1",
    "7",
    "1.0",
    "-0.0",
    "1e0",
    "1E2",
    "2.5",
    "1e-400",
    "1e400",
    "-1e400",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "1" + "0" * 400,
    "-" + "9" * 400,
    "0." + "0" * 400 + "1",
    "NaN",
    "Infinity",
    "-Infinity",
    "true",
    "null",
    '"1"',
    '"\\u0661"',
    "[]",
    "{}",
    "[1]",
    "01",
    "+1",
    ".5",
    "0x10",
    "1_000",
]
"""JSON texts an integer or float field might hold (some are not JSON at all)."""


def _line(**fields: Any) -> str:
    return json.dumps(fields)


def _with(text: str, placeholder: str, literal: str) -> str:
    """``text`` with the JSON string ``"placeholder"`` replaced by raw JSON ``literal``."""
    return text.replace(json.dumps(placeholder), literal)


def _timing(**overrides: Any) -> dict[str, Any]:
    return {"mode": "full_prompt", "full_prompt_tokens": 10, **overrides}


def hostile_trace() -> list[str]:
    """A fixed trace of hostile lines around two live coordinators (see the module doc)."""
    lines = [
        _line(coordinator="c1", op="new", handoff_id=HID, order="SourceFirst"),
        _line(coordinator="c1", op="start"),
    ]
    probe = _line(coordinator="c1", op="start")

    # Handoff ids: in `new` and in every fact variant (c1 waits for SubmitPrefill's ack,
    # so each fact is refused by state or by id, and nothing changes).
    for number, spelling in enumerate(UUID_SPELLINGS):
        lines.append(
            _line(coordinator=f"u{number}", op="new", handoff_id=spelling, order="SourceFirst")
        )
        for variant in ("TransferCompleted", "Failed", "DestinationReserved", "SourceHeld"):
            body: dict[str, Any] = {"handoff_id": spelling}
            if variant == "DestinationReserved":
                body["transferable_prompt_tokens"] = 1
            if variant == "SourceHeld":
                body["transfer_timing"] = _timing()
            if variant == "Failed":  # would cancel c1: give it to a throwaway coordinator
                lines.append(_line(coordinator=f"u{number}", op="fact", fact={variant: body}))
                continue
            lines.append(_line(coordinator="c1", op="fact", fact={variant: body}))
        lines.append(probe)

    # Numbers: in every integer and float field.
    for number, literal in enumerate(NUMBER_LITERALS):
        slot = "@@"
        lines += [
            _with(
                _line(coordinator="c1", op="outcome", action_id=slot, outcome="Applied"),
                slot,
                literal,
            ),
            _with(
                _line(
                    coordinator="c1",
                    op="fact",
                    fact={"DestinationReserved": {"handoff_id": HID, "tokens": slot}},
                ),
                slot,
                literal,
            ).replace('"tokens"', '"transferable_prompt_tokens"'),
        ]
        for field in ("full_prompt_tokens", "kv_bytes_per_token", "bandwidth_gb_s"):
            fact = {"SourceHeld": {"handoff_id": HID, "transfer_timing": _timing(**{field: slot})}}
            lines.append(_with(_line(coordinator="c1", op="fact", fact=fact), slot, literal))
        # A fallback only shows in a delay: run a handoff whose timing has no bandwidth.
        key = f"n{number}"
        lines += [
            _with(
                _line(
                    coordinator=key,
                    op="new",
                    handoff_id=HID,
                    order="SourceFirst",
                    fallback_transfer_delay_ms=slot,
                ),
                slot,
                literal,
            ),
            _line(coordinator=key, op="start"),
            _line(coordinator=key, op="outcome", action_id=0, outcome="Submitted"),
            _line(
                coordinator=key,
                op="fact",
                fact={"SourceHeld": {"handoff_id": HID, "transfer_timing": _timing()}},
            ),
            _line(coordinator=key, op="outcome", action_id=1, outcome="Accepted"),
            _line(
                coordinator=key,
                op="fact",
                fact={"DestinationReserved": {"handoff_id": HID, "transferable_prompt_tokens": 3}},
            ),
            probe,
        ]

    # Structure: nesting, repeated keys, surrogates, byte-order marks, odd whitespace.
    # (Under the 1 MiB line limit, which the oracle does not have.)
    for depth in (4, 5, 6, 64, 65, 1_000, 100_000):
        lines += ["[" * depth + "]" * depth, "[" * depth, "{" * depth]
        lines.append('{"coordinator": "c1", "op": "start", "x": ' + "[" * depth + "]" * depth + "}")
        if depth > 10_000:
            continue
        lines.append(
            '{"coordinator": "c1", "op": "fact", "fact": '
            + '{"Failed": ' * depth
            + "{}"
            + "}" * depth
            + "}"
        )
    late = '{"coordinator": "c1", "op": "outcome", "action_id": 9, "outcome": '  # unknown id
    timed_out = '{"TimedOut": {"handoff_id": "' + HID + '", "handoff_id": "' + HID + '"}}'
    timing = '{"mode": "full_prompt", "mode": "full_prompt", "full_prompt_tokens": 1}'
    lines += [
        late + '{"Failed": "[[[[[[[{{{{{{"}}',
        late + '{"Failed": "\\"[[[[[[[[["}}',
        late + '{"Failed": "\\\\"}, "x": [[[[[]]]]]}',
        '{"coordinator": "c1", "op": "start", "op": "start"}',
        '{"coordinator": "c1", "op": "start", "coordinator": "c2"}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 9, "action_id": 9, "outcome": "Noop"}',
        '{"coordinator": "c1", "op": "fact", "fact": ' + timed_out + "}",
        '{"coordinator": "c1", "op": "fact", "fact": {"SourceHeld": {"handoff_id": "'
        + HID
        + '", "transfer_timing": '
        + timing
        + "}}}",
        late + '{"Failed": "a", "Failed": "b"}}',
        '{"a": 1, "a": 1}',
        '{"coordinator": "\\ud800", "op": "start"}',
        '{"coordinator": "\\udc00", "op": "start"}',
        '{"coordinator": "\\ud83d\\ude00", "op": "start"}',
        '{"coordinator": "\\ud83d\\ud83d", "op": "start"}',
        late + '{"Failed": "\\udbff"}}',
        late + '{"Failed": "\\\\ud800"}}',
        '{"coordinator": "c1", "op": "start", "\\ud800": 1}',
        "\ufeff" + probe,
        probe + "\ufeff",
        '{"coordinator": "\ufeffc1", "op": "start"}',
        "\t" + probe + " \r",
        probe + "\x00",
        '{"coordinator": "c1\x01", "op": "start"}',
        probe + " " + probe,
        probe + ",",
        '{"coordinator": "c1", "op": "start"',
        '"coordinator"',
        "1" + "0" * 5000,
        "-0",
        "NaN",
        "nan",
        "null",
        '{"coordinator": null, "op": "start"}',
        '{"coordinator": ["c1"], "op": "start"}',
        '{"coordinator": "c1", "op": ["start"]}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 0, "outcome": "Failed"}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 0, "outcome": {"Failed": null}}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 0, "outcome": {"failed": "x"}}',
        '{"coordinator": "c1", "op": "outcome", "action_id": 0, "outcome": "applied"}',
        '{"coordinator": "' + "k" * 10_000 + '", "op": "start"}',
        '{"coordinator": "c1", "op": "' + "s" * 10_000 + '"}',
        '{"coordinator": "c1", "op": "start", "' + "x" * 10_000 + '": 1}',
        late + '{"Failed": "' + "r" * 10_000 + '"}}',
        '{"coordinator": "c1", "op": "fact", "fact": {"' + "V" * 10_000 + '": {}}}',
        '{"coordinator": "c1", "op": "new", "handoff_id": "'
        + "f" * 10_000
        + '", "order": "SourceFirst"}',
        probe,
    ]
    # Times last (the lines above carry none): every number spelling as an `at_ms`, on a
    # line that changes nothing; accepted ones move the clock, so later ones may go back.
    for literal in NUMBER_LITERALS:
        lines.append(_with(_line(coordinator="c1", op="start", at_ms="@@"), "@@", literal))
        lines.append(_with(_line(coordinator="zz", op="start", at_ms="@@"), "@@", literal))
    lines.append(probe)
    return lines


# ----------------------------------------------------------------------- mutations

_ALPHABET = '{}[]":,\\ -+.0123456789eE' + "aflnrstuNIy" + "\t\r\x00\x1f\x7f" + "é€😀\ufeff\u0660"
_SCALARS: list[Any] = [
    None,
    True,
    False,
    -1,
    0,
    2**64,
    2**64 - 1,
    -(2**63) - 1,
    1.5,
    -0.0,
    float("inf"),
    float("nan"),
    "",
    "x" * 300,
    HID,
    "{" + HID + "}",
    [],
    {},
    [[[[[]]]]],
    {"Failed": "x"},
]


def _mutate_text(rng: random.Random, line: str) -> str:
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(line) + 1)
        roll = rng.random()
        if roll < 0.35:
            line = line[:at] + rng.choice(_ALPHABET) + line[at:]
        elif roll < 0.6:
            line = line[:at] + line[at + rng.randint(1, 4) :]
        elif roll < 0.8:
            line = line[:at] + rng.choice(_ALPHABET) + line[at + 1 :]
        elif roll < 0.9:
            line = line[:at]
        else:
            piece = line[at : at + rng.randint(1, 30)]
            line = line[:at] + piece + line[at:]
    return line


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _mutate_json(rng: random.Random, line: str) -> str:
    try:
        value = json.loads(line)
    except ValueError:
        return _mutate_text(rng, line)
    path = rng.choice(_paths(value))
    if not path:
        return json.dumps(rng.choice(_SCALARS))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    roll = rng.random()
    if roll < 0.5:
        parent[last] = rng.choice(_SCALARS)
    elif roll < 0.65:
        parent[last] = [parent[last]]
    elif roll < 0.8 and isinstance(parent, dict):
        del parent[last]
    elif isinstance(parent, dict):
        # Repeat the key (json.dumps cannot write that): splice a second member in.
        text = json.dumps(value)
        member = json.dumps(last) + ": "
        at = text.find(member)
        if at >= 0:
            return text[:at] + member + json.dumps(rng.choice(_SCALARS)) + ", " + text[at:]
        return text
    else:
        parent[last] = {"x": parent[last]}
    return json.dumps(value)


def mutated_trace(steps: int, seed: int) -> list[str]:
    """A random walk with a third of its lines corrupted, as text or as JSON."""
    rng = random.Random(seed)
    lines = random_trace(steps, seed)
    for index, line in enumerate(lines):
        if rng.random() < 1 / 3:
            mutate = _mutate_text if rng.random() < 0.5 else _mutate_json
            lines[index] = mutate(rng, line).replace("\n", " ")
    return lines

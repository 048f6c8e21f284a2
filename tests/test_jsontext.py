"""The one JSON reader: what serde_json reads, with bounded work and no recursion."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handoff_fsm.errors import HandoffError
from handoff_fsm.io import jsontext
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.jsontext import MAX_NESTING, dumps, loads, nesting


def refused(text: str | bytes) -> str:
    with pytest.raises(HandoffError) as error:
        loads(text)
    assert error.value.code is TraceErrorCode.INVALID_INPUT
    return error.value.message


def test_ordinary_lines_read_like_json_loads() -> None:
    line = (
        '{"coordinator": "c\\u00e7\\ud83d\\ude00", "op": "fact", "fact": {"SourceHeld": '
        '{"handoff_id": "x", "transfer_timing": {"mode": "full_prompt", "full_prompt_tokens": '
        '18446744073709551615, "bandwidth_gb_s": NaN, "kv_bytes_per_token": -Infinity}}}}'
    )
    # (compared as text: NaN is unequal to itself)
    assert dumps(loads(line)) == dumps(json.loads(line))
    assert dumps(loads(line.encode())) == dumps(json.loads(line))


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("0", 0),
        ("7", 7),
        ("-7", -7),
        ("18446744073709551615", 2**64 - 1),  # u64::MAX stays an integer
        ("-9223372036854775808", -(2**63)),  # i64::MIN stays an integer
        ("18446744073709551616", 18446744073709551616.0),  # beyond u64: a float, as serde_json
        ("-9223372036854775809", -9223372036854775809.0),  # beyond i64: a float
        ("1" + "0" * 400, math.inf),  # as 1e400: no OverflowError anywhere downstream
        ("-" + "9" * 400, -math.inf),
        ("1" + "0" * 5000, math.inf),  # beyond Python's int-string limit too
        ("1.0", 1.0),
        ("1e0", 1.0),
    ],
)
def test_integer_literals_are_classified_as_serde_json_does(literal: str, expected: object) -> None:
    value = loads(f"[{literal}]")[0]
    assert type(value) is type(expected)
    assert value == expected


def test_minus_zero_is_the_float_minus_zero() -> None:
    value = loads("-0")
    assert type(value) is float and math.copysign(1.0, value) == -1.0
    assert type(loads("-0.0")) is float


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("\ufeff{}", "byte-order mark"),
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b"{\xff}", "not UTF-8"),
        (b'{"a": "\xed\xa0\x80"}', "not UTF-8"),  # an encoded surrogate
        ('{"a": 1}'.encode("utf-16"), "not UTF-8"),  # json.loads(bytes) would accept UTF-16
        ('{"a": 1}'.encode("utf-32-le"), "invalid JSON"),  # NUL bytes are UTF-8, not JSON
        ('{"a": 1, "a": 1}', "repeated"),
        ('{"a": {"b": 1, "b": 2}}', "repeated"),
        ('{"\\u0061": 1, "a": 2}', "repeated"),  # the same key, spelled differently
        ('"\\ud800"', "surrogate"),
        ('"\udcff"', "lone surrogate at character 1"),  # the character itself, in a str
        ('{"\\udfff": 1}', "surrogate"),
        ('["\\ud83d\\ud83d"]', "surrogate"),
        ('["\\ude00\\ud83d"]', "surrogate"),
        ("[[[[[]]]]]", "nested"),
        ("{" * 100_000, "nested"),
        ("[" * 1_000 + "]" * 1_000, "nested"),
        ("", "invalid JSON"),
        ("{} {}", "invalid JSON"),
        ("nan", "invalid JSON"),
    ],
)
def test_what_serde_refuses_is_invalid_input(text: str | bytes, why: str) -> None:
    assert why in refused(text)


def test_deep_nesting_never_reaches_a_recursion_limit() -> None:
    # Even with almost no stack left, the depth check refuses before parsing.
    limit = sys.getrecursionlimit()
    depth = 0

    def nested_call() -> str:
        nonlocal depth
        depth += 1
        if depth < limit - 60:
            return nested_call()
        return refused("[" * 100_000 + "]" * 100_000)

    assert "nested" in nested_call()


def test_nesting_is_measured_outside_strings() -> None:
    assert MAX_NESTING == 4
    assert nesting('{"a": [{"b": {"c": 1}}]}') == 4
    assert nesting('["[[[[[[", "{{{{{{{{", "\\"[[[[[["]') == 1
    assert nesting('["\\\\", [[[]]]]') == 4  # an escaped backslash ends the string
    assert nesting('"unterminated [[[[[[[[') == 0
    assert nesting("]]]]") == 0
    accepted = loads('{"reason": "[[[[[[[[[[{{{{{{{{{{", "x": [[["]]]]]]"]]]}')
    assert accepted["reason"] == "[[[[[[[[[[{{{{{{{{{{"


def test_paired_surrogates_are_characters() -> None:
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"
    assert loads('"\\\\ud800"') == "\\ud800"  # an escaped backslash, not an escape


def test_messages_quote_little_of_the_input() -> None:
    message = refused('{"' + "k" * 100_000 + '": 1, "' + "k" * 100_000 + '": 2}')
    assert len(message) < 200


def _read(reader: Callable[[str], object], text: str) -> str:
    """What ``reader`` makes of ``text``, as comparable text (a value or the error)."""
    try:
        return "value " + dumps(reader(text)) + repr(reader(text))
    except HandoffError as error:
        return f"error {error.code.value} {error.message}"


_JSON_PIECES = st.sampled_from(
    [
        '{"a": 1',
        ', "a": 2',
        ', "b": -0',
        "}",
        "[",
        "]",
        ", ",
        " ",
        "\n",
        "\r\n",
        "\t",
        '"x:y"',
        ": ",
        "18446744073709551616",
        "NaN",
        "tru",
        "true",
        "0",
        "-0.0",
        "{}",
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_JSON_PIECES, max_size=12).map("".join))
def test_the_scanner_shortcut_reads_every_text_as_the_whole_decoder_does(text: str) -> None:
    # loads reads a line with no surrounding whitespace by the scanner directly: for
    # every text, that must give the value (or the error) the whole decoder gives.
    assert _read(loads, text) == _read(_exact_with_rules, text)


def _exact_with_rules(text: str) -> object:
    """loads without its shortcut: the same checks, then always the whole decoder."""

    def never(text: str, index: int) -> tuple[object, int]:
        raise StopIteration(index)

    with patch.object(jsontext, "_scan", never):
        return loads(text)

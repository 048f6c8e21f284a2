"""``quoted``: how a message names an input without echoing it whole."""

from __future__ import annotations

import json

from handoff_fsm import HandoffActionOutcome
from handoff_fsm.errors import QUOTE_LIMIT, quoted


def test_small_values_are_their_repr() -> None:
    for value in ("abc", 3, -0.0, float("nan"), None, [1, "x"], {"Failed": "boom"}):
        assert quoted(value) == repr(value)


def test_large_or_deep_values_are_cut() -> None:
    huge_int = 10**5000  # repr() itself refuses an int this long
    deep = json.loads("[" * 900 + "]" * 900)
    values: list[object] = [
        "x" * 10**7,
        b"\xff" * 10**6,
        list(range(10**5)),
        {str(i): i for i in range(10**4)},
        deep,
        huge_int,
        -huge_int,
        HandoffActionOutcome.failed("r" * 10**6),
    ]
    for value in values:
        text = quoted(value)
        assert len(text) <= QUOTE_LIMIT, text
    assert quoted("x" * 1000).startswith("'xxx") and "..." in quoted("x" * 1000)
    assert quoted(huge_int) == "<integer of 16610 bits>"
    assert quoted(deep) == "[[[...]]]"
    assert quoted([1, 2, 3, 4, 5, 6]) == "[1, 2, 3, 4, ...]"


def test_outcome_text_cuts_its_reason() -> None:
    assert str(HandoffActionOutcome.failed("boom")) == "Failed('boom')"
    assert len(str(HandoffActionOutcome.failed("r" * 10**6))) < QUOTE_LIMIT + 10

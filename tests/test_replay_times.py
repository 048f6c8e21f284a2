"""Times on trace lines (``"at_ms"``): replay ignores them for behaviour and polices them.

Every op may carry a time; it never changes a reply; a bad one (not a number:
``invalid_input``; negative, NaN, infinite: ``invalid_time``; less than the last
accepted time of the file: ``time_went_backwards``) is refused and changes
nothing, the clock included.
"""

from __future__ import annotations

import io
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handoff_fsm import HandoffActionOutcome, HandoffError, HandoffErrorCode, Revision
from handoff_fsm.io.clock import TraceClock
from handoff_fsm.io.errors import TraceError, TraceErrorCode
from handoff_fsm.io.replay import TraceReplayer, replay
from handoff_fsm.model import Backend
from handoff_fsm.simulate import FaultPlan, Simulation, SimulationConfig, TraceWriter
from tests.differential import random_trace
from tests.hostile import NUMBER_LITERALS
from tests.support import source_held
from tests.test_replay import SUCCESS, fact, new, op, outcome


def timed(line: str, at_ms: str) -> str:
    """``line`` (a JSON object) with ``"at_ms": <at_ms>`` (raw JSON) as its first key."""
    assert line.startswith("{")
    return '{"at_ms": ' + at_ms + ", " + line[1:]


def untimed(line: str) -> str:
    """The line a writer without a clock writes: ``at_ms`` taken out, nothing else changed."""
    fields = json.loads(line)
    del fields["at_ms"]
    return json.dumps(fields)


def recorded(config: SimulationConfig, *, clocked: bool) -> tuple[list[str], list[str]]:
    """The trace of a run (with each line's virtual time, or without) and its replies."""
    out, replies = io.StringIO(), list[str]()
    simulation = Simulation(
        config,
        recorder=TraceWriter(out, replies, clock=(lambda: simulation.now) if clocked else None),
    )
    simulation.run()
    return out.getvalue().splitlines(), replies


# ---------------------------------------------------------------------- ignored for behaviour


CONFIGS = st.builds(
    SimulationConfig,
    backend=st.sampled_from([Backend.VLLM, Backend.SGLANG]),
    handoffs=st.integers(1, 40),
    concurrency=st.integers(1, 8),
    seed=st.integers(0, 2**32),
    faults=st.sampled_from([0.0, 0.1, 0.3, 0.6]).map(FaultPlan.uniform),
    revision=st.sampled_from(list(Revision)),
)


@settings(max_examples=15, deadline=None)
@given(config=CONFIGS)
def test_a_simulated_trace_replays_the_same_with_and_without_its_times(
    config: SimulationConfig,
) -> None:
    with_times, replies = recorded(config, clocked=True)
    without_times, same_replies = recorded(config, clocked=False)
    assert all('"at_ms": ' in line for line in with_times)
    assert [untimed(line) for line in with_times] == without_times  # the only difference
    assert same_replies == replies
    assert list(replay(with_times)) == replies  # byte for byte
    assert list(replay(without_times)) == replies


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_times_on_any_lines_of_a_random_walk_change_no_reply(seed: int) -> None:
    """Walks hold every kind of line, rejected and late ones included; times are put on a
    random half of the JSON objects, never decreasing, some equal, in several spellings."""
    trace = random_trace(3_000, seed, revision="mixed")
    rng = random.Random(seed)
    now = 0.0
    with_times = []
    for line in trace:
        if _is_object(line) and rng.random() < 0.5:
            now += rng.choice([0.0, 0.0, 1e-9, 0.25, 3.0, 1e6])
            spellings = [repr(now), f"{now:.17e}"] + ([str(int(now))] if now.is_integer() else [])
            with_times.append(timed(line, rng.choice(spellings)))
        else:
            with_times.append(line)
    assert (
        sum(line != timed_line for line, timed_line in zip(trace, with_times, strict=True)) > 1000
    )
    assert list(replay(with_times)) == list(replay(trace))


READ_BACK = [0.0, 5e-324, 0.1 + 0.2, 1 / 3, 2.0**53 + 2, 1.7976931348623157e308]
"""Increasing times whose shortest decimal spelling needs every digit, or is extreme."""


def test_a_time_is_read_back_exactly() -> None:
    replayer = TraceReplayer()
    for number, value in enumerate(READ_BACK):
        line = timed(op("c", "start"), repr(value))
        replayer.reply_text(line, number + 1)
        assert replayer.line_at_ms == value and replayer.clock.at_ms == value
        assert replayer.clock.line == number + 1


# ---------------------------------------------------------------------- each violation


def _each_op(at_ms: str) -> list[str]:
    """A line of every op, timed ``at_ms``, for a coordinator ``c1`` that is waiting for
    the acknowledgement of SubmitPrefill (so each input would change it)."""
    return [
        timed(new("c2"), at_ms),
        timed(op("c1", "start"), at_ms),
        timed(fact("c1", source_held(2.5)), at_ms),
        timed(outcome("c1", 0, HandoffActionOutcome.SUBMITTED), at_ms),
    ]


BEFORE = [timed(new(), "5"), timed(op("c1", "start"), "5.5")]
"""c1 created and started; the clock at 5.5."""

BAD_NUMBERS = {
    "-1": TraceErrorCode.INVALID_TIME,
    "-1e-300": TraceErrorCode.INVALID_TIME,
    "-5e-324": TraceErrorCode.INVALID_TIME,
    "NaN": TraceErrorCode.INVALID_TIME,
    "Infinity": TraceErrorCode.INVALID_TIME,
    "-Infinity": TraceErrorCode.INVALID_TIME,
    "1e400": TraceErrorCode.INVALID_TIME,  # beyond f64: infinite
    "-1e400": TraceErrorCode.INVALID_TIME,
    "1" + "0" * 400: TraceErrorCode.INVALID_TIME,  # a 400-digit integer: infinite too
    "-18446744073709551616": TraceErrorCode.INVALID_TIME,
    "true": TraceErrorCode.INVALID_INPUT,
    "false": TraceErrorCode.INVALID_INPUT,
    "null": TraceErrorCode.INVALID_INPUT,
    '"6"': TraceErrorCode.INVALID_INPUT,
    "[6]": TraceErrorCode.INVALID_INPUT,
    '{"ms": 6}': TraceErrorCode.INVALID_INPUT,
    "5": TraceErrorCode.TIME_WENT_BACKWARDS,  # before 5.5
    "0": TraceErrorCode.TIME_WENT_BACKWARDS,
    "-0": TraceErrorCode.TIME_WENT_BACKWARDS,  # -0.0 is a time (0), but before 5.5
    "5.499999999999999": TraceErrorCode.TIME_WENT_BACKWARDS,
}


@pytest.mark.parametrize(("literal", "code"), BAD_NUMBERS.items())
@pytest.mark.parametrize("kind", ["new", "start", "fact", "outcome"])
def test_each_bad_time_is_its_code_and_changes_nothing(
    literal: str, code: HandoffErrorCode, kind: str
) -> None:
    bad = dict(zip(["new", "start", "fact", "outcome"], _each_op(literal), strict=True))[kind]
    after = _each_op("5.5")  # every op again, at the clock's time: accepted
    without = list(replay([*BEFORE, *after]))
    replayer = TraceReplayer()
    replies = [replayer.reply_text(line, number) for number, line in enumerate(BEFORE, 1)]
    live = {key: entry.coordinator.snapshot() for key, entry in replayer.live.items()}
    reply = json.loads(replayer.reply_text(bad, 3))
    assert reply["error"]["code"] == code.value
    assert reply["error"]["message"].startswith("line 3: ")
    assert "at_ms" in reply["error"]["message"]
    assert reply["coordinator"] == ("c2" if kind == "new" else "c1")
    assert reply["complete"] is False and reply["completion"] is None
    # nothing changed: no coordinator, no key, not the clock
    assert {key: entry.coordinator.snapshot() for key, entry in replayer.live.items()} == live
    assert (replayer.clock.at_ms, replayer.clock.line) == (5.5, 2)
    assert replayer.line_at_ms is None
    rest = [replayer.reply_text(line, number) for number, line in enumerate(after, 4)]
    assert [*replies, *rest] == without  # the rest of the trace sees no trace of it


def test_bad_literals_of_every_kind_are_refused_as_the_float_reader_refuses_them() -> None:
    """Every number spelling the hostile trace tries, as a time: accepted exactly when the
    float reader accepts it and the value is finite and >= 0."""
    for literal in NUMBER_LITERALS:
        replayer = TraceReplayer()
        reply = json.loads(replayer.reply_text(timed(new(), literal), 1))
        try:
            value = json.loads(literal)
        except ValueError:
            value = None
        if not isinstance(value, int | float) or isinstance(value, bool):
            assert reply["error"]["code"] == "invalid_input", literal
            continue
        try:
            value = float(value)
        except OverflowError:  # a 400-digit integer is the float infinity
            value = math.inf if value > 0 else -math.inf
        if not (math.isfinite(value) and value >= 0):
            assert reply["error"]["code"] == "invalid_time", literal
        else:
            assert "error" not in reply, literal
            assert replayer.line_at_ms == value, literal


def test_minus_zero_is_the_time_zero() -> None:
    replayer = TraceReplayer()
    for number, literal in enumerate(["-0", "-0.0", "0", "-0e5"], start=1):
        reply = json.loads(replayer.reply_text(timed(op("c", "start"), literal), number))
        assert reply["error"]["code"] == "unknown_coordinator"  # the time itself was fine
        assert replayer.line_at_ms == 0.0 and math.copysign(1.0, replayer.line_at_ms) == 1.0


# ---------------------------------------------------------------------- the clock


def codes(lines: list[str]) -> list[str | None]:
    return [json.loads(reply).get("error", {}).get("code") for reply in replay(lines)]


def test_times_never_decrease_across_coordinators() -> None:
    lines = [
        timed(new("a"), "1"),
        timed(new("b"), "2"),
        timed(op("a", "start"), "2"),  # equal: fine
        timed(op("b", "start"), "1.5"),  # another coordinator's later line set the clock
        op("b", "start"),  # no time: fine, whatever the clock
        timed(op("b", "start"), "3"),
    ]
    assert codes(lines) == [None, None, None, "time_went_backwards", None, None]
    message = json.loads(list(replay(lines))[3])["error"]["message"]
    assert message.startswith("line 4: at_ms 1.5 is before 2.0, the time of line 3")


def test_the_clock_is_the_last_accepted_time() -> None:
    """Refused lines leave the clock alone; lines whose time was accepted move it, even when
    the coordinator (or the lookup of it) then refuses the input."""
    lines = [
        timed(new(), "10"),  # 1: accepted, clock 10
        timed(op("c1", "start"), "30"),  # 2: accepted, clock 30
        timed(op("c1", "start"), "20"),  # 3: backwards: clock stays 30
        timed(op("c1", "start"), "25"),  # 4: still backwards (the clock is 30, not 20)
        timed(op("c1", "start"), "NaN"),  # 5: invalid: clock stays 30
        timed(op("c1", "start"), "30"),  # 6: accepted (equal)
        timed(op("c1", "fact", fact={"Nope": {}}), "1000"),  # 7: unreadable: clock stays 30
        timed(fact("c1", source_held(2.5)), "40"),  # 8: the coordinator refuses it: clock 40
        timed(op("c1", "start"), "35"),  # 9: backwards from the refused input's time
        timed(op("zz", "start"), "50"),  # 10: no such coordinator, but the time is read: 50
        timed(op("c1", "start"), "45"),  # 11: backwards
        timed(new("c1"), "60"),  # 12: duplicate, time accepted: 60
        timed(new("c9", revision="nope"), "1000"),  # 13: unknown revision: read first
        timed(op("c1", "start"), "60"),  # 14: fine: the clock is still 60
    ]
    assert codes(lines) == [
        None,
        None,
        "time_went_backwards",
        "time_went_backwards",
        "invalid_time",
        None,
        "invalid_input",
        "source_held_before_submit",
        "time_went_backwards",
        "unknown_coordinator",
        "time_went_backwards",
        "duplicate_coordinator",
        "invalid_revision",
        None,
    ]
    replayer = TraceReplayer()
    for number, line in enumerate(lines, start=1):
        replayer.reply_text(line, number)
    assert (replayer.clock.at_ms, replayer.clock.line) == (60.0, 14)


def test_a_line_too_long_leaves_the_clock_alone() -> None:
    replayer = TraceReplayer(max_line_bytes=200)
    replayer.reply_text(timed(new(), "7"), 1)
    long_line = timed(op("c1", "start", pad="x" * 300), "1000")
    assert json.loads(replayer.reply_text(long_line, 2))["error"]["code"] == "line_too_long"
    assert replayer.clock.at_ms == 7.0
    assert "error" not in json.loads(replayer.reply_text(timed(op("c1", "start"), "8"), 3))


def test_the_clock_alone_refuses_what_it_must() -> None:
    clock = TraceClock()
    assert clock.advance(3, 1) == 3.0 and type(clock.advance(3, 2)) is float
    with pytest.raises(TraceError) as caught:
        clock.advance(2.5, 3)
    assert caught.value.code is TraceErrorCode.TIME_WENT_BACKWARDS
    with pytest.raises(HandoffError) as refused:
        clock.advance("4", 4)
    assert refused.value.code is TraceErrorCode.INVALID_INPUT
    assert (clock.at_ms, clock.line) == (3.0, 2)


def test_a_successful_handoff_with_times_replies_as_without() -> None:
    times = [str(0.5 * n) for n in range(len(SUCCESS))]
    assert list(replay([timed(line, t) for line, t in zip(SUCCESS, times, strict=True)])) == list(
        replay(SUCCESS)
    )

"""The benchmark suite: its yardstick is a faithful equal, its instruments measure what they say.

No timing is asserted here (machines are noisy): the yardstick is checked against
the library on the same scenarios (same actions, ids, delays to the bit, same
completion), the instruments against known inputs, the trace generator for
determinism and validity, and the runner by running it in ``--quick`` mode.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_aio  # noqa: E402
import bench_coordinator  # noqa: E402
import bench_explore  # noqa: E402
import bench_import  # noqa: E402
import floor  # noqa: E402
import handwritten  # noqa: E402
import harness  # noqa: E402
import instructions  # noqa: E402
import json_roundtrip  # noqa: E402
import run  # noqa: E402
import tracegen  # noqa: E402

import handoff_fsm as hf  # noqa: E402
from handoff_fsm.io import replay  # noqa: E402

HANDOFF_ID = uuid.UUID(int=7)
IMPLEMENTATIONS = pytest.mark.parametrize("module", [hf, handwritten], ids=["library", "yardstick"])

# ----------------------------------------------------------------------------- equivalence

Step = tuple[Any, ...]
"""``("start",)``, ``("fact", name, fields)`` or ``("ack", k, outcome)``.

``k`` is the position of the acknowledged action among all actions issued so far.
"""


def _timing(module: Any, mode: str, tokens: int, kv: int | None, bandwidth: float | None) -> Any:
    return module.HandoffTransferTiming(
        mode=getattr(module.TransferTimingMode, mode),
        full_prompt_tokens=tokens,
        kv_bytes_per_token=kv,
        bandwidth_gb_s=bandwidth,
    )


def _fact(module: Any, name: str, fields: dict[str, Any]) -> Any:
    if "transfer_timing" in fields:
        fields = {**fields, "transfer_timing": _timing(module, *fields["transfer_timing"])}
    return getattr(module, name)(handoff_id=HANDOFF_ID, **fields)


def _outcome(module: Any, outcome: str) -> Any:
    if outcome.startswith("failed:"):
        return module.HandoffActionOutcome.failed(outcome.removeprefix("failed:"))
    return getattr(module.HandoffActionOutcome, outcome)


def play(module: Any, order: str, fallback: float, script: list[Step]) -> list[Any]:
    """What one implementation answers to ``script``: per call its actions, then completion."""
    coordinator = module.HandoffCoordinator(
        HANDOFF_ID, getattr(module.HandoffOrder, order), fallback
    )
    issued: list[Any] = []
    answers: list[Any] = []
    for step in script:
        try:
            if step[0] == "start":
                actions = coordinator.start()
            elif step[0] == "fact":
                actions = coordinator.on_fact(_fact(module, step[1], step[2]))
            else:
                actions = coordinator.on_action_outcome(
                    issued[step[1]].id, _outcome(module, step[2])
                )
        except ValueError:
            answers.append("rejected")
            continue
        issued += actions
        answers.append(
            [
                (
                    a.id,
                    type(a.action).__name__,
                    a.action.handoff_id,
                    a.action.delay_ms.hex() if hasattr(a.action, "delay_ms") else None,
                )
                for a in actions
            ]
        )
    completion = coordinator.completion
    answers.append((coordinator.is_complete, None if completion is None else completion.value))
    return answers


FULL = ("FULL_PROMPT", 4096, 131_072, 25.0)
MISSING = ("DESTINATION_MISSING", 7777, 1024, 0.3)
HELD: Step = ("fact", "SourceHeld", {"transfer_timing": FULL})
RESERVED: Step = ("fact", "DestinationReserved", {"transferable_prompt_tokens": 333})
COMPLETED: Step = ("fact", "TransferCompleted", {})
SOURCE_FIRST_TO_TRANSFER: list[Step] = [
    ("start",),
    ("ack", 0, "SUBMITTED"),
    HELD,
    ("ack", 1, "ACCEPTED"),
    RESERVED,
]

SCENARIOS: dict[str, tuple[str, float, list[Step], str | None]] = {
    # name: (order, fallback delay, script, expected completion)
    "source first success": (
        "SOURCE_FIRST",
        0.0,
        [
            *SOURCE_FIRST_TO_TRANSFER,
            ("ack", 2, "SCHEDULED"),
            COMPLETED,
            ("ack", 3, "APPLIED"),
            ("ack", 4, "APPLIED"),
        ],
        "Success",
    ),
    "destination first success, destination-missing timing": (
        "DESTINATION_FIRST",
        0.0,
        [
            ("start",),
            ("ack", 0, "ACCEPTED"),
            RESERVED,
            ("ack", 1, "SUBMITTED"),
            ("fact", "SourceHeld", {"transfer_timing": MISSING}),
            ("ack", 2, "SCHEDULED"),
            COMPLETED,
            ("ack", 3, "APPLIED"),
            ("ack", 4, "NOOP"),
        ],
        "Success",
    ),
    "no bandwidth: fallback delay": (
        "SOURCE_FIRST",
        7.5,
        [
            ("start",),
            ("ack", 0, "SUBMITTED"),
            ("fact", "SourceHeld", {"transfer_timing": ("FULL_PROMPT", 10, None, None)}),
            ("ack", 1, "ACCEPTED"),
            RESERVED,
        ],
        None,
    ),
    "zero bandwidth: fallback delay": (
        "SOURCE_FIRST",
        2.25,
        [
            ("start",),
            ("ack", 0, "SUBMITTED"),
            ("fact", "SourceHeld", {"transfer_timing": ("FULL_PROMPT", 10, 1024, 0.0)}),
            ("ack", 1, "ACCEPTED"),
            RESERVED,
        ],
        None,
    ),
    "timeout after the transfer was scheduled": (
        "SOURCE_FIRST",
        0.0,
        [
            *SOURCE_FIRST_TO_TRANSFER,
            ("ack", 2, "SCHEDULED"),
            ("fact", "TimedOut", {}),
            ("ack", 3, "APPLIED"),
            ("ack", 4, "APPLIED"),
            COMPLETED,
            ("ack", 2, "SCHEDULED"),
        ],
        "Canceled",
    ),
    "reservation failed": (
        "SOURCE_FIRST",
        0.0,
        [
            ("start",),
            ("ack", 0, "SUBMITTED"),
            HELD,
            ("ack", 1, "failed:no KV blocks"),
            ("ack", 2, "APPLIED"),
            ("ack", 3, "NOOP"),
        ],
        "Canceled",
    ),
    "canceled while the prefill is pending": (
        "DESTINATION_FIRST",
        0.0,
        [
            ("start",),
            ("ack", 0, "ACCEPTED"),
            RESERVED,
            ("fact", "Canceled", {}),
            ("ack", 1, "SUBMITTED"),
            ("ack", 2, "APPLIED"),
            ("ack", 3, "APPLIED"),
        ],
        "Canceled",
    ),
    "duplicates, a premature fact and late acknowledgements": (
        "SOURCE_FIRST",
        0.0,
        [
            ("start",),
            ("start",),
            RESERVED,  # rejected by both: the destination was not asked yet
            ("ack", 0, "SUBMITTED"),
            ("ack", 0, "SUBMITTED"),
            HELD,
            HELD,
            ("ack", 1, "ACCEPTED"),
            RESERVED,
            RESERVED,
            ("ack", 2, "SCHEDULED"),
            COMPLETED,
            COMPLETED,
            ("ack", 3, "APPLIED"),
            ("ack", 4, "NOOP"),
            ("ack", 4, "NOOP"),
            ("fact", "Failed", {}),
        ],
        "Success",
    ),
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_yardstick_answers_like_the_library(name: str) -> None:
    order, fallback, script, completion = SCENARIOS[name]
    library = play(hf, order, fallback, script)
    assert play(handwritten, order, fallback, script) == library
    assert library[-1] == (completion is not None, completion)


def test_scenarios_reach_start_transfer_with_the_expected_delays() -> None:
    def delays(name: str) -> list[float]:
        order, fallback, script, _ = SCENARIOS[name]
        return [
            float.fromhex(delay)
            for answer in play(handwritten, order, fallback, script)[:-1]
            if answer != "rejected"
            for (_, kind, _, delay) in answer
            if kind == "StartTransfer"
        ]

    assert delays("source first success") == [4096.0 * 131_072.0 / (25.0 * 1e9) * 1000.0]
    assert delays("destination first success, destination-missing timing") == [
        333.0 * 1024.0 / (0.3 * 1e9) * 1000.0
    ]
    assert delays("no bandwidth: fallback delay") == [7.5]
    assert delays("zero bandwidth: fallback delay") == [2.25]


def test_yardstick_delay_arithmetic_is_bit_identical() -> None:
    rng = random.Random(3)
    for _ in range(500):
        mode = rng.choice(["FULL_PROMPT", "DESTINATION_MISSING"])
        tokens, missing = rng.randrange(0, 1 << 20), rng.randrange(0, 1 << 20)
        kv = rng.choice([None, rng.randrange(1, 1 << 22)])
        bandwidth = rng.choice([None, 0.0, rng.uniform(1e-3, 400.0), float(rng.randrange(1, 100))])
        expected = _timing(hf, mode, tokens, kv, bandwidth).delay_ms(missing)
        actual = _timing(handwritten, mode, tokens, kv, bandwidth).delay_ms(missing)
        assert (actual is None) == (expected is None)
        if expected is not None:
            assert actual is not None
            assert actual.hex() == expected.hex()


@pytest.mark.parametrize("bandwidth", [-1.0, float("nan"), float("inf")])
def test_yardstick_rejects_the_timings_the_library_rejects(bandwidth: float) -> None:
    for module in (hf, handwritten):
        with pytest.raises(ValueError, match="bandwidth"):
            module.validate_transfer_timing(_timing(module, "FULL_PROMPT", 10, 1024, bandwidth))


# ----------------------------------------------------------------------------- workloads


SIDES = pytest.mark.parametrize(
    "side",
    [bench_coordinator.LIBRARY, bench_coordinator.HANDWRITTEN, bench_coordinator.FLOOR],
    ids=lambda s: s.name,
)
WORKLOADS: list[bench_coordinator.Workload] = [workload for _, workload, _, _ in run.TIMED]


@SIDES
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.__name__)
def test_every_workload_runs_to_its_checked_end(
    side: bench_coordinator.Side, workload: bench_coordinator.Workload
) -> None:
    assert workload(side, harness.handoff_ids(3)) > 0.0


def test_a_workload_detects_a_side_that_does_not_complete() -> None:
    never_completes = dataclasses.replace(
        bench_coordinator.HANDWRITTEN, name="broken", success="never"
    )
    with pytest.raises(RuntimeError, match="broken: source-first handoff did not succeed"):
        bench_coordinator.success_source_first(never_completes, harness.handoff_ids(2))


@SIDES
def test_mid_handoff_coordinators_are_ready_to_start_the_transfer(
    side: bench_coordinator.Side,
) -> None:
    ids = harness.handoff_ids(4)
    slots: list[Any] = [None] * len(ids)
    bench_coordinator.mid_handoff_coordinators(side, slots, ids)
    for handoff_id, coordinator in zip(ids, slots, strict=True):
        (issued,) = coordinator.on_fact(
            side.destination_reserved(handoff_id=handoff_id, transferable_prompt_tokens=1)
        )
        assert type(issued.action).__name__ == "StartTransfer"
        assert issued.id == 2


# ----------------------------------------------------------------------------- instruments


def test_quantile_interpolates_between_order_statistics() -> None:
    assert harness.quantile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert harness.quantile([4.0, 1.0, 3.0, 2.0], 0.0) == 1.0
    assert harness.quantile([4.0, 1.0, 3.0, 2.0], 1.0) == 4.0
    assert harness.quantile([5.0], 0.9) == 5.0


def test_comparison_ratio_is_the_median_of_per_pair_ratios() -> None:
    comparison = harness.Comparison((2.0, 9.0, 3.0), (1.0, 3.0, 3.0), 1)
    assert comparison.ratios == (2.0, 3.0, 1.0)
    assert comparison.ratio == 2.0
    assert comparison.library_median == 3.0
    assert comparison.baseline_median == 3.0


@pytest.mark.slow
def test_compare_calibrates_the_sample_size_and_interleaves_the_sides() -> None:
    calls: list[tuple[str, int]] = []

    def library(n: int) -> float:
        calls.append(("library", n))
        return n * 2e-3

    def baseline(n: int) -> float:
        calls.append(("baseline", n))
        return n * 1e-3

    result = harness.compare(library, baseline, pairs=4, min_sample_s=0.05)
    assert result.ratios == (2.0, 2.0, 2.0, 2.0)
    assert result.library == (2e-3,) * 4
    assert result.operations_per_sample * 2e-3 >= 0.05
    timed = [side for side, n in calls if n == result.operations_per_sample][-8:]
    assert timed == ["library", "baseline", "baseline", "library"] * 2


def test_bytes_per_live_object_counts_what_the_objects_own() -> None:
    def build(slots: list[object], ids: Any) -> None:
        for i in range(len(ids)):
            slots[i] = bytes(1000) + b"x"  # a new object per slot, 1001 bytes of payload

    per_object = harness.bytes_per_live_object(build, 2000)
    assert sys.getsizeof(bytes(1001)) <= per_object < sys.getsizeof(bytes(1001)) + 16


def test_json_roundtrip_rewrites_every_line(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"b": 1,   "a": [NaN]}\n{"x": "y"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert json_roundtrip.main([str(trace), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == '{"b": 1, "a": [NaN]}\n{"x": "y"}\n'


@pytest.mark.slow
def test_peak_rss_runs_the_program_and_reports_its_own_peak(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"a": 1}\n', encoding="utf-8")
    report, out = tmp_path / "rss", tmp_path / "out.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "peak_rss.py"),
            str(report),
            str(BENCHMARKS / "json_roundtrip.py"),
            str(trace),
            "-o",
            str(out),
        ],
        check=True,
    )
    assert out.read_text(encoding="utf-8") == '{"a": 1}\n'
    assert 1 << 20 < int(report.read_text(encoding="ascii")) < 1 << 30


# ----------------------------------------------------------------------------- trace


def test_trace_is_deterministic_and_shorter_traces_are_prefixes() -> None:
    long = list(tracegen.generate(3000, seed=5, in_flight=16))
    assert len(long) == 3000
    assert list(tracegen.generate(3000, seed=5, in_flight=16)) == long
    assert list(tracegen.generate(1000, seed=5, in_flight=16)) == long[:1000]
    assert list(tracegen.generate(3000, seed=6, in_flight=16)) != long


def test_trace_replays_with_only_its_deliberate_errors() -> None:
    lines = list(tracegen.generate(20_000, seed=2, in_flight=64))
    replies = [json.loads(reply) for reply in replay(lines)]
    errors = Counter(reply["error"]["code"] for reply in replies if "error" in reply)
    deliberate = sum('"action_id": 7,' in line for line in lines)
    assert deliberate > 0
    assert errors == {"unknown_action": deliberate}
    completions = Counter(
        reply["completion"]
        for reply in replies
        if reply.get("actions") and "Complete" in reply["actions"][-1]["action"]
    )
    assert completions["Success"] > completions["Canceled"] > 0
    handoffs = sum('"op": "new"' in line for line in lines)
    assert completions.total() >= handoffs - 64  # all but those still in flight


def test_cached_trace_is_written_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = tracegen.cached_trace(500, seed=9, in_flight=8)
    assert path.read_text(encoding="utf-8").splitlines() == list(
        tracegen.generate(500, seed=9, in_flight=8)
    )
    path.write_text("kept\n", encoding="utf-8")
    assert tracegen.cached_trace(500, seed=9, in_flight=8).read_text(encoding="utf-8") == "kept\n"


# ----------------------------------------------------------------------------- exploration


class _ForgetsCancelDestination(hf.HandoffCoordinator):
    """Never issues CancelDestination: cleanup completes with the destination still held."""

    def on_fact(self, fact: hf.HandoffFact) -> list[hf.IssuedHandoffAction]:
        return [
            issued
            for issued in super().on_fact(fact)
            if not isinstance(issued.action, hf.CancelDestination)
        ]


@pytest.mark.slow
def test_exploration_benchmark_refuses_a_broken_coordinator() -> None:
    # A broken exploration must not be timed as if it were the real one.
    with pytest.raises(AssertionError, match="exploration not clean"):
        bench_explore.measure(repeats=1, factory=_ForgetsCancelDestination)


# ----------------------------------------------------------------------------- import


@pytest.mark.slow
def test_the_import_benchmark_refuses_an_import_that_loads_the_drawing() -> None:
    """An ``import handoff_fsm`` that pulls in the drawing layers is not timed as the real one."""
    assert bench_import.run_python(bench_import.LIBRARY).seconds > 0
    drawing = bench_import.LIBRARY.replace(
        "import handoff_fsm\n", "import handoff_fsm.render.notebook\n"
    )
    assert drawing != bench_import.LIBRARY
    with pytest.raises(RuntimeError, match=r"loaded the drawing layers: .*handoff_fsm\.render"):
        bench_import.run_python(drawing)


# ----------------------------------------------------------------------------- asyncio


@pytest.mark.parametrize("driver", [bench_aio.with_session, bench_aio.by_hand])
def test_both_asyncio_sides_succeed_every_handoff_of_every_wave(
    driver: bench_aio.Driver,
) -> None:
    assert bench_aio.drive(driver, 45, 10) > 0.0  # five waves, the last one short


@pytest.mark.parametrize("driver", [bench_aio.with_session, bench_aio.by_hand])
def test_an_asyncio_side_that_does_not_succeed_is_caught(
    driver: bench_aio.Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(self: bench_aio.Workers, issued: hf.IssuedHandoffAction) -> Any:
        if type(issued.action) is hf.SubmitPrefill:
            return hf.HandoffActionOutcome.failed("no")
        return hf.HandoffActionOutcome.APPLIED

    monkeypatch.setattr(bench_aio.Workers, "perform", refuse)
    with pytest.raises(AssertionError, match="did not succeed"):
        bench_aio.drive(driver, 3, 3)


# ----------------------------------------------------------------------------- runner


def test_row_verdicts() -> None:
    assert run.Row("a", "", "", 1.2, 2.0, 1.5).verdict == "met (stretch met)"
    assert run.Row("a", "", "", 1.7, 2.0, 1.5).verdict == "met (stretch missed)"
    missed = run.Row("a", "", "", 2.01, 2.0)
    assert (missed.verdict, missed.missed) == ("MISSED", True)
    info = run.Row("a", "", "", 9.0)
    assert (info.verdict, info.missed) == ("info", False)
    absent = run.Row("a", "—", "—", None, 3.0, failure="benchmark missing")
    assert (absent.verdict, absent.missed) == ("NOT MEASURED", True)


@pytest.mark.slow
def test_quick_run_prints_every_row() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    table = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert (
        table[0] == "| benchmark | library | hand-written / baseline | ratio | target | verdict |"
    )
    labels = [line.split(" | ")[0].removeprefix("| ") for line in table[1:]]
    assert labels[: len(run.TIMED)] == [label for label, _, _, _ in run.TIMED]
    assert sum(label.startswith("bytes per live coordinator") for label in labels) == 3
    assert sum(label.startswith("replay") for label in labels) == 5
    # both revisions are measured where the issue asks them not to regress
    assert any(
        label.startswith("bytes per live coordinator, mid-handoff (a976b2bf)") for label in labels
    )
    assert any(label.startswith("replay") and "under a976b2bf" in label for label in labels)
    assert labels[-7].startswith("simulate")
    assert labels[-6].startswith("exhaustive exploration, both orders")
    assert labels[-5].startswith("system check, smoke run")
    assert labels[-4].startswith("asyncio HandoffSession, 1,000 concurrent")
    assert labels[-3].startswith("`diff seed a976b2bf`")
    assert labels[-2].startswith("`import handoff_fsm`, fresh interpreter")
    assert labels[-1].startswith("first notebook picture")
    assert "NOT MEASURED" not in result.stdout
    assert "Quick run" in result.stdout


def test_instruction_counts_need_valgrind_and_a_window_inside_the_trace(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        instructions.main(["--lines", "0"])
    with pytest.raises(SystemExit):
        instructions.main(["--lines", str(instructions.TRACE_LINES)])  # 2N beyond the trace
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert instructions.main(["--lines", "10"]) == 2
    assert "needs valgrind" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("workload", sorted(instructions.UNIT))
def test_each_instruction_workload_runs_outside_valgrind(workload: str) -> None:
    """The child program valgrind runs does its workload (here without valgrind)."""
    trace = tracegen.cached_trace(instructions.TRACE_LINES)
    child = [sys.executable, "-c", instructions._CHILD, workload, str(trace), "20"]
    result = subprocess.run(child, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_floor_replies_as_the_library_does_with_the_same_types() -> None:
    """The floor row compares like with like: on a whole handoff and a cleanup, the floor's
    replies are the library's, value for value and type for type."""
    handoff_id = harness.handoff_ids(1)[0]
    timing = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 4096, 131_072, 25.0)
    for cleanup in (False, True):
        replies: list[list[list[hf.IssuedHandoffAction]]] = []
        for new in (hf.HandoffCoordinator, floor.HandoffCoordinator):
            c: Any = new(handoff_id, hf.HandoffOrder.SOURCE_FIRST, 0.0)
            got = [c.start()]
            got.append(c.on_action_outcome(0, hf.HandoffActionOutcome.SUBMITTED))
            got.append(c.on_fact(hf.SourceHeld(handoff_id=handoff_id, transfer_timing=timing)))
            got.append(c.on_action_outcome(1, hf.HandoffActionOutcome.ACCEPTED))
            got.append(
                c.on_fact(
                    hf.DestinationReserved(handoff_id=handoff_id, transferable_prompt_tokens=9)
                )
            )
            got.append(c.on_action_outcome(2, hf.HandoffActionOutcome.SCHEDULED))
            if cleanup:
                got.append(c.on_fact(hf.TimedOut(handoff_id=handoff_id)))
                got += [c.on_action_outcome(i, hf.HandoffActionOutcome.APPLIED) for i in (3, 4)]
            else:
                got.append(c.on_fact(hf.TransferCompleted(handoff_id=handoff_id)))
                got += [c.on_action_outcome(i, hf.HandoffActionOutcome.APPLIED) for i in (3, 4)]
            replies.append(got)
        library, floor_replies = replies
        assert library == floor_replies
        assert [type(i.action) for r in library for i in r] == [
            type(i.action) for r in floor_replies for i in r
        ]
        assert library[-1][-1].action == hf.Complete(handoff_id=handoff_id)

"""``handoff-fsm simulate``: summary, JSON, exit statuses, trace + replay, progress bar."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.cli import main
from handoff_fsm.cli import simulate as cli_module
from handoff_fsm.model import ActivateDestination, Backend
from handoff_fsm.simulate import (
    AckFault,
    FaultPlan,
    ScriptedAck,
    Simulation,
    SimulationConfig,
    TraceWriter,
)
from handoff_fsm.simulate import config as simulate_config
from handoff_fsm.simulate.config import command_config
from handoff_fsm.simulate.summary import WALL_CLOCK_KEYS


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    status = main(["simulate", "--json", *args])
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object, nothing else on stdout
    summary: dict[str, Any] = json.loads(out)
    return status, summary


def test_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    status, summary = run_json(
        capsys, "--backend", "sglang", "--handoffs", "400", "--concurrency", "8", "--seed", "3"
    )
    assert status == 0
    assert summary["backend"] == "sglang" and summary["order"] == "DestinationFirst"
    assert summary["handoffs"] == summary["succeeded"] == 400
    assert summary["canceled"] == 0 and summary["leaked"] == 0
    assert summary["concurrency"] == 8 and summary["seed"] == 3


def test_the_same_seed_prints_the_same_json_but_for_the_wall_clock(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("--handoffs", "500", "--fault-rate", "0.05", "--seed", "11")
    runs = [run_json(capsys, *args)[1] for _ in range(2)]
    for summary in runs:
        for key in WALL_CLOCK_KEYS:
            del summary[key]
    assert json.dumps(runs[0]) == json.dumps(runs[1])
    assert runs[0]["canceled"] > 0  # faults were injected


def test_trtllm_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--backend", "trtllm"]) == 2
    captured = capsys.readouterr()
    assert "unsupported_backend" in captured.err
    assert "TRT-LLM does not support destination handoff" in captured.err
    assert captured.out == ""
    assert main(["simulate", "--backend", "trtllm", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "unsupported_backend"


@pytest.mark.parametrize(
    "args", [["--fault-rate", "1.5"], ["--fault-rate", "nan"], ["--concurrency", "0"]]
)
def test_bad_arguments_are_usage_errors(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(["simulate", *args]) == 2
    assert "invalid_argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value"),
    [("--handoffs", "-1"), ("--handoffs", "٣"), ("--concurrency", "1_0"), ("--seed", " 7")],
)
def test_counts_are_plain_ascii_digits(
    capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", option, value])
    assert exit_.value.code == 2
    assert f"argument {option}: expected a whole number (digits 0-9), got {value!r}" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_engine_is_the_coordinator_engine_and_backend_the_serving_engine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, summary = run_json(capsys, "--backend", "sglang", "--engine", "statechart")
    assert status == 0
    assert summary["backend"] == "sglang" and summary["coordinator_engine"] == "statechart"
    with pytest.raises(SystemExit):
        main(["simulate", "--engine", "sglang"])  # the old spelling is refused, not misread
    assert "invalid choice: 'sglang'" in capsys.readouterr().err


def test_the_table_is_printed_without_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--handoffs", "100", "--fault-rate", "0.1"]) == 0
    out = capsys.readouterr().out
    for label in ("completed", "succeeded", "canceled", "leaked", "p50", "handoffs/s"):
        assert label in out


def test_a_recorded_trace_replays_to_what_the_simulation_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.jsonl"
    args = ["--handoffs", "300", "--fault-rate", "0.1", "--seed", "5", "--trace", str(trace)]
    assert run_json(capsys, *args)[0] == 0
    first = trace.read_bytes()
    assert run_json(capsys, *args)[0] == 0
    assert trace.read_bytes() == first  # same seed, byte-identical trace

    replies: list[str] = []
    with open(tmp_path / "library.jsonl", "w", encoding="utf-8") as library_trace:
        config = SimulationConfig(
            backend=Backend.VLLM, handoffs=300, seed=5, faults=FaultPlan.uniform(0.1)
        )
        simulation = Simulation(
            config, recorder=TraceWriter(library_trace, replies, clock=lambda: simulation.now)
        )
        simulation.run()
    assert (tmp_path / "library.jsonl").read_bytes() == first

    replayed = tmp_path / "replayed.jsonl"
    assert main(["replay", str(trace), "-o", str(replayed)]) == 0
    assert replayed.read_text(encoding="utf-8").splitlines() == replies


def stuck_config(**options: Any) -> SimulationConfig:
    """The CLI's configuration, but handoff 0 loses an acknowledgement and nothing times out."""
    plan = FaultPlan(script=(ScriptedAck(0, ActivateDestination, AckFault.LOSE),))
    return replace(command_config(**options), faults=plan, deadline_ms=None)


def test_a_problem_makes_the_exit_status_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(simulate_config, "command_config", stuck_config)
    assert main(["simulate", "--handoffs", "2"]) == 1
    assert "problem: h0: never completed" in capsys.readouterr().out
    status, summary = run_json(capsys, "--handoffs", "2")
    assert status == 1
    assert summary["stuck"] == 1 and summary["leaked"] == 0
    assert summary["first_problems"] == [
        "h0: never completed",
        "the source did not drain",
        "the driver did not drain",
    ]


def test_progress_is_shown_only_on_a_terminal_for_long_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    updates: list[int] = []

    @contextmanager
    def spy(total: int) -> Iterator[Callable[[int], None]]:
        assert total == 400
        yield updates.append

    monkeypatch.setattr(cli_module, "_progress_bar", spy)
    monkeypatch.setattr(cli_module, "LONG_RUN", 100)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["simulate", "--handoffs", "400", "--no-progress"]) == 0
    assert updates == []
    capsys.readouterr()
    assert run_json(capsys, "--handoffs", "400")[0] == 0
    assert updates == []  # never with --json
    assert main(["simulate", "--handoffs", "99"]) == 0
    assert updates == []  # short run
    assert main(["simulate", "--handoffs", "400"]) == 0
    assert updates == list(range(2, 401, 2))  # every 1/200 of the run
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert main(["simulate", "--handoffs", "400"]) == 0
    assert len(updates) == 200  # not a terminal


def test_the_progress_bar_counts_completed_handoffs(capsys: pytest.CaptureFixture[str]) -> None:
    with cli_module._progress_bar(10) as advance:
        advance(5)
        advance(10)
    assert capsys.readouterr().out == ""  # the bar lives on stderr

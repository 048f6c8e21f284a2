"""Recorders: the trace is replay input (with the virtual time of each input, given the
run's clock), the input log feeds coordinators directly."""

from __future__ import annotations

import io
import json

from handoff_fsm import HandoffCoordinator
from handoff_fsm.io.inputs import reply_of
from handoff_fsm.io.replay import replay
from handoff_fsm.model import Backend
from handoff_fsm.simulate import (
    FaultPlan,
    InputLog,
    Simulation,
    SimulationConfig,
    TraceWriter,
    simulate,
)
from handoff_fsm.simulate.trace import NewHandoff


def test_trace_lines_are_replay_operations() -> None:
    out = io.StringIO()
    simulate(SimulationConfig(handoffs=2, concurrency=1), recorder=TraceWriter(out))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["op"] == "new" and lines[0]["coordinator"] == "h0"
    assert lines[0]["order"] == "SourceFirst" and lines[0]["fallback_transfer_delay_ms"] == 5.0
    assert lines[1] == {"coordinator": "h0", "op": "start"}
    assert {line["op"] for line in lines} == {"new", "start", "fact", "outcome"}
    facts = [next(iter(line["fact"])) for line in lines if line["op"] == "fact"]
    assert facts == ["SourceHeld", "DestinationReserved", "TransferCompleted"] * 2
    outcomes = [line["outcome"] for line in lines if line["op"] == "outcome"][:5]
    assert outcomes == ["Submitted", "Accepted", "Scheduled", "Applied", "Applied"]


def test_without_a_replies_list_only_the_trace_is_written() -> None:
    out = io.StringIO()
    writer = TraceWriter(out)
    simulate(SimulationConfig(handoffs=3), recorder=writer)
    assert list(replay(out.getvalue().splitlines()))  # it replays


def test_the_input_log_drives_coordinators_to_the_same_actions() -> None:
    log = InputLog()
    out, replies = io.StringIO(), list[str]()
    config = SimulationConfig(handoffs=200, faults=FaultPlan.uniform(0.1), seed=6)
    simulate(config, recorder=log)
    simulate(config, recorder=TraceWriter(out, replies))
    coordinators: dict[str, HandoffCoordinator] = {}
    issued = 0
    errors = 0
    for key, given in log.inputs:
        if isinstance(given, NewHandoff):
            coordinators[key] = HandoffCoordinator(given.handoff_id, given.order, log.fallback_ms)
            continue
        reply = reply_of(coordinators[key], given)  # the same Input the exploration gives
        assert reply.crash is None, reply.crash
        issued += len(reply.actions)
        errors += reply.rejected
    assert issued == log.issued
    assert issued == sum(len(json.loads(reply).get("actions", ())) for reply in replies)
    assert errors == sum(1 for reply in replies if '"error"' in reply)
    assert all(c.is_complete for c in coordinators.values())


def test_with_a_clock_every_line_carries_the_drivers_virtual_time() -> None:
    """The times are the driver's clock, exactly: a handoff's completion line minus its
    `new` line is, bit for bit, the latency the driver measured on its own clock."""
    config = SimulationConfig(
        backend=Backend.SGLANG,
        handoffs=300,
        concurrency=16,
        faults=FaultPlan.uniform(0.2),
        seed=9,
    )
    out, replies = io.StringIO(), list[str]()
    simulation = Simulation(
        config, recorder=TraceWriter(out, replies, clock=lambda: simulation.now)
    )
    result = simulation.run()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    times = [line["at_ms"] for line in lines]
    assert all(type(at) is float for at in times)
    assert times == sorted(times)  # never decreasing, as replay requires
    assert times[0] == 0.0 and times[-1] > 0.0  # (late acknowledgements come after the run)
    assert len(set(times)) > len(times) // 3  # the clock moves
    started = {line["coordinator"]: line["at_ms"] for line in lines if line["op"] == "new"}
    completed = [
        line["at_ms"] - started[line["coordinator"]]
        for line, reply in zip(lines, map(json.loads, replies), strict=True)
        if any("Complete" in issued["action"] for issued in reply.get("actions", ()))
    ]
    assert completed == list(result.latencies_ms)
    assert list(replay(out.getvalue().splitlines())) == replies


def test_a_time_is_written_as_the_float_it_is() -> None:
    """JSON writes the shortest text that reads back as the same float."""
    clock = iter([0.0, 0.1 + 0.2, 1 / 3, 1e-300, 123456789.00000003]).__next__
    out = io.StringIO()
    writer = TraceWriter(out, clock=clock)
    writer.start("a")
    writer.start("a")
    writer.start("a")
    writer.start("a")
    writer.start("a")
    assert [json.loads(line)["at_ms"] for line in out.getvalue().splitlines()] == [
        0.0,
        0.1 + 0.2,
        1 / 3,
        1e-300,
        123456789.00000003,
    ]
    assert (
        out.getvalue().splitlines()[1]
        == '{"coordinator": "a", "op": "start", "at_ms": 0.30000000000000004}'
    )

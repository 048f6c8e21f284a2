"""Recorders: the trace is replay input, the input log feeds coordinators directly."""

from __future__ import annotations

import io
import json

from handoff_fsm import HandoffCoordinator, HandoffError
from handoff_fsm.io.replay import replay
from handoff_fsm.simulate import FaultPlan, InputLog, SimulationConfig, TraceWriter, simulate
from handoff_fsm.simulate.trace import FACT, NEW, OUTCOME, START


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
    for op, key, a, b in log.inputs:
        try:
            if op == NEW:
                coordinators[key] = HandoffCoordinator(a, b, log.fallback_ms)
            elif op == START:
                issued += len(coordinators[key].start())
            elif op == FACT:
                issued += len(coordinators[key].on_fact(a))
            else:
                assert op == OUTCOME
                issued += len(coordinators[key].on_action_outcome(a, b))
        except HandoffError:
            errors += 1
    assert issued == log.issued
    assert issued == sum(len(json.loads(reply).get("actions", ())) for reply in replies)
    assert errors == sum(1 for reply in replies if '"error"' in reply)
    assert all(c.is_complete for c in coordinators.values())

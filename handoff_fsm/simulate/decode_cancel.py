"""A request canceled while it decodes, under each revision: one simulated handoff each.

Rule kept here: the drawings show what a real simulation did. The simulator
(:mod:`handoff_fsm.simulate`, the code behind ``handoff-fsm simulate``) runs the
same workload with the same seed under each revision, canceling some requests
while the destination decodes them, and records every coordinator input as a
``handoff-fsm replay`` trace. The handoff drawn is the first one (in trace order)
that got a ``Canceled`` fact after its handoff succeeded, in every revision, with
the same inputs up to that fact in every revision; only that coordinator's lines
are kept (a trace of its own: coordinators are independent). Each trace is drawn
the one way (:func:`~handoff_fsm.io.lifecycle.trace_lifecycle`), with words read off
its run; the design review draws the runs next to each other
(:func:`~handoff_fsm.review.files.decode_cancel_side_by_side`).

Anyone can reproduce a committed trace (``diagrams/<revision>/lifecycle_decode_cancel.jsonl``),
here for the seed, with ``KEY`` the coordinator its lines name (``h8`` when this was
written)::

    handoff-fsm simulate --handoffs 200 --decode-cancel-rate 0.2 --seed 0 --revision seed \\
        --trace run.jsonl
    grep '"coordinator": "KEY"' run.jsonl > lifecycle_decode_cancel.jsonl

and its drawing with ``handoff-fsm lifecycle lifecycle_decode_cancel.jsonl --title TITLE
-o lifecycle_decode_cancel.svg`` (:func:`simulate_command` and :func:`lifecycle_title`
give the exact words; the tests run them).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Final

from handoff_fsm.io.follow import FollowedRun, follow
from handoff_fsm.io.lifecycle import Lifecycle, action_text, trace_lifecycle
from handoff_fsm.model import (
    Backend,
    CancelDestination,
    Canceled,
    Complete,
    HandoffCompletion,
    Revision,
)
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.driver import Simulation
from handoff_fsm.simulate.faults import FaultPlan
from handoff_fsm.simulate.trace import TraceWriter

NAME: Final = "decode_cancel"
"""File stem: ``<revision>/lifecycle_decode_cancel.*`` and ``decode_cancel_by_revision.svg``."""
HANDOFFS: Final = 200
DECODE_CANCEL_RATE: Final = 0.2
SEED: Final = 0
TITLE: Final = "One handoff canceled while the destination decodes, under each revision"


def simulation_config(revision: Revision) -> SimulationConfig:
    """The run, as ``handoff-fsm simulate`` builds it from :func:`simulate_command`'s options."""
    return SimulationConfig(
        backend=Backend.VLLM,
        handoffs=HANDOFFS,
        seed=SEED,
        faults=replace(FaultPlan.uniform(0.0), decode_cancel=DECODE_CANCEL_RATE),
        revision=revision,
    )


def simulate_command(revision: Revision, trace: str = "run.jsonl") -> list[str]:
    """The ``handoff-fsm`` arguments that write the same run's trace to ``trace``."""
    return [
        "simulate",
        "--handoffs",
        str(HANDOFFS),
        "--decode-cancel-rate",
        str(DECODE_CANCEL_RATE),
        "--seed",
        str(SEED),
        "--revision",
        revision.value,
        "--trace",
        trace,
    ]


def lifecycle_title(revision: Revision) -> str:
    return f"Canceled while decoding ({revision.value})"


@dataclass(frozen=True, slots=True)
class DecodeCancelRun:
    """One revision's run of the chosen handoff: its trace, its drawing, what the run showed."""

    revision: Revision
    coordinator: str
    trace: tuple[str, ...]
    """The coordinator's lines of the simulation's trace, in order."""
    lifecycle: Lifecycle
    cancel: int
    """Index in :attr:`followed` ``.steps`` of the ``Canceled`` fact after Success."""
    followed: FollowedRun
    canceled_while_decoding: int
    """Requests of the whole run canceled while decoding."""
    held_after_cancel_ms: float
    """Virtual ms, over the whole run, destinations kept requests canceled while decoding."""

    @property
    def parting_line(self) -> int:
        """The trace line of the ``Canceled`` fact: up to it every revision's run is the same."""
        return self.followed.steps[self.cancel].line

    @property
    def after_success(self) -> str:
        """What the coordinator did with the cancel: ``Canceled after Complete #5 (Success): …``."""
        steps = self.followed.steps
        completed = [
            action_text(issued, step.completion)
            for step in steps[: self.cancel]
            for issued in step.actions
            if isinstance(issued.action, Complete)
        ]
        answers = [
            action_text(issued, step.completion)
            for step in steps[self.cancel :]
            for issued in step.actions
        ]
        done = ", then ".join(answers) if answers else "ignored, nothing issued"
        return f"Canceled after {completed[-1]}: {done}"

    @property
    def destination(self) -> str:
        """Whether the decode destination is told, read off the actions issued after the cancel."""
        told = any(
            isinstance(issued.action, CancelDestination)
            for step in self.followed.steps[self.cancel :]
            for issued in step.actions
        )
        if told:
            return "the destination is canceled: it frees the request's KV cache and slot"
        return "the destination is not told: it decodes the request to its end"

    @property
    def totals(self) -> tuple[str, str]:
        """The whole run's figures, named as ``handoff-fsm simulate`` names them."""
        held = f"{self.held_after_cancel_ms:,.1f}".removesuffix(".0")
        return (
            f"the run: {self.canceled_while_decoding} of {HANDOFFS} requests canceled while "
            "decoding",
            f"destination KV/slot held after cancel: {held} ms",
        )

    @property
    def words(self) -> tuple[str, ...]:
        """What is written above the run's drawing."""
        return (self.after_success, self.destination, *self.totals)


def _simulate(revision: Revision) -> tuple[list[str], int, float]:

    out = io.StringIO()
    # each line with its virtual time, as `handoff-fsm simulate --trace` writes it
    simulation = Simulation(
        simulation_config(revision), recorder=TraceWriter(out, clock=lambda: simulation.now)
    )
    result = simulation.run()
    return (
        out.getvalue().splitlines(),
        result.faults.get("decode_canceled", 0),
        result.destination_held_after_cancel_ms,
    )


def _by_coordinator(lines: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for line in lines:
        grouped.setdefault(json.loads(line)["coordinator"], []).append(line)
    return grouped


def _cancel_after_success(run: FollowedRun) -> int | None:
    """Index of the first step that fed ``Canceled`` to a coordinator complete with Success."""
    for index, step in enumerate(run.steps):
        before = step.before
        fact = step.input.fact if step.input is not None else None
        if (
            isinstance(fact, Canceled)
            and before.is_complete
            and before.completion is HandoffCompletion.SUCCESS
        ):
            return index
    return None


def _inputs(lines: list[str], steps: int) -> list[str]:
    """The first ``steps`` inputs after ``new`` (the ``new`` line names the revision)."""
    return lines[1 : steps + 1]


def decode_cancel_run(
    revision: Revision,
    trace: Sequence[str],
    *,
    canceled_while_decoding: int,
    held_after_cancel_ms: float,
) -> DecodeCancelRun:
    """One revision's run, read from its trace (one coordinator's lines) the one way.

    The figures of the whole run are the simulation's (a trace of one coordinator does
    not hold them). Raises ``ValueError`` when the trace has no ``Canceled`` fact after
    Success.
    """
    followed = follow(trace, revision=revision)
    cancel = _cancel_after_success(followed)
    if cancel is None:
        raise ValueError(f"{followed.coordinator}: no Canceled fact after Success")
    return DecodeCancelRun(
        revision=revision,
        coordinator=followed.coordinator,
        trace=tuple(trace),
        lifecycle=trace_lifecycle(trace, title=lifecycle_title(revision), revision=revision),
        cancel=cancel,
        followed=followed,
        canceled_while_decoding=canceled_while_decoding,
        held_after_cancel_ms=held_after_cancel_ms,
    )


@cache
def decode_cancel_runs() -> tuple[DecodeCancelRun, ...]:
    """The chosen handoff under every revision (see the module's rule), simulated once."""
    simulated = {revision: _simulate(revision) for revision in Revision}
    grouped = {revision: _by_coordinator(lines) for revision, (lines, _, _) in simulated.items()}
    candidates = dict.fromkeys(
        parsed["coordinator"]
        for parsed in map(json.loads, simulated[Revision.SEED][0])
        if parsed["op"] == "fact" and "Canceled" in parsed["fact"]
    )
    for key in candidates:
        traces = {revision: lines.get(key) for revision, lines in grouped.items()}
        followed = {
            revision: follow(trace, key, revision=revision)
            for revision, trace in traces.items()
            if trace is not None
        }
        cancels = {_cancel_after_success(run) for run in followed.values()}
        if len(followed) != len(Revision) or len(cancels) != 1 or None in cancels:
            continue
        (index,) = cancels
        assert index is not None
        if len({json.dumps(_inputs(trace or [], index + 1)) for trace in traces.values()}) != 1:
            continue
        return tuple(
            decode_cancel_run(
                revision,
                grouped[revision][key],
                canceled_while_decoding=simulated[revision][1],
                held_after_cancel_ms=simulated[revision][2],
            )
            for revision in Revision
        )
    raise RuntimeError(
        "the simulation canceled no request after its handoff succeeded with the same inputs "
        "in every revision: raise DECODE_CANCEL_RATE or HANDOFFS"
    )

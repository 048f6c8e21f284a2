"""Virtual-time simulation: real coordinators driven by fake engines, with faults.

Public API of the package only; no logic here. Modules: :mod:`.config`
(settings and distributions), :mod:`.faults` (fault plans), :mod:`.endpoints`
(fake source, destination, transfer), :mod:`.driver` (the event loop; every input
goes through a :class:`~handoff_fsm.policy.SessionPolicy`), :mod:`.recorded` and
:mod:`.trace` (recording what reaches each coordinator),
:mod:`.result` / :mod:`.summary` (what a run produced), :mod:`.phases` (where
each handoff's time went, and who held its KV), :mod:`.fixture` (conformance
records), :mod:`.scenarios` and :mod:`.decode_cancel` (the scripted and simulated
runs the design review draws), :mod:`.sweep` and :mod:`.sweep_report` (a grid of runs on
Dask, and what its cells say together: ``handoff-fsm sweep``, whose plots are
:mod:`handoff_fsm.render.sweep_plots`). Pictures of a run are drawn by
:mod:`handoff_fsm.render.plots` (matplotlib, optional) and ``summary.md`` is
written by :mod:`handoff_fsm.review.simulation`; the ``handoff-fsm simulate`` command
is :mod:`handoff_fsm.cli.simulate`.
"""

from handoff_fsm.simulate.config import (
    Count,
    CountRange,
    DestinationQuirks,
    Exponential,
    Fixed,
    Latency,
    SimulationConfig,
    Tokens,
    Uniform,
)
from handoff_fsm.simulate.driver import Simulation, simulate
from handoff_fsm.simulate.faults import (
    AckFault,
    AckFaultRates,
    FaultPlan,
    ScriptedAck,
    ScriptedFact,
    ScriptedTransferFailure,
)
from handoff_fsm.simulate.fixture import conformance_record, conformance_run
from handoff_fsm.simulate.result import EndpointObservations, Leak, SimulationResult
from handoff_fsm.simulate.summary import summarize
from handoff_fsm.simulate.trace import InputLog, TraceWriter

__all__ = [
    "AckFault",
    "AckFaultRates",
    "Count",
    "CountRange",
    "DestinationQuirks",
    "EndpointObservations",
    "Exponential",
    "FaultPlan",
    "Fixed",
    "InputLog",
    "Latency",
    "Leak",
    "ScriptedAck",
    "ScriptedFact",
    "ScriptedTransferFailure",
    "Simulation",
    "SimulationConfig",
    "SimulationResult",
    "Tokens",
    "TraceWriter",
    "Uniform",
    "conformance_record",
    "conformance_run",
    "simulate",
    "summarize",
]

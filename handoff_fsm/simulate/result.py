"""What a simulation run produced: outcomes, problems, and what the endpoints observed.

Rule kept here: a result is a plain frozen record of facts about one run; the
wall clock appears only in ``wall_s``, so two runs with the same configuration
give results equal in every other field. Problems (leaks, stuck handoffs,
late inputs that caused actions, undrained endpoints) are reported, never
hidden: :attr:`SimulationResult.ok` is false when there is any.
"""

from __future__ import annotations

from dataclasses import dataclass

from handoff_fsm.model import HandoffOrder, NormalizedHandoffEvent, NormalizedStoredTiming
from handoff_fsm.simulate.config import SimulationConfig


@dataclass(frozen=True, slots=True)
class Leak:
    """An owner still holding resources when its handoff completed."""

    handoff: int
    key: str
    owner: str
    """``"source"`` or ``"destination"``."""
    state: str
    """What the endpoint still had: e.g. ``"held"``, ``"reserved"``."""
    completion: str

    def __str__(self) -> str:
        return (
            f"{self.key}: {self.owner} still {self.state} after the handoff completed "
            f"({self.completion})"
        )


@dataclass(frozen=True, slots=True)
class EndpointObservations:
    """Counters the fake endpoints kept while they worked (inputs to conformance)."""

    source_output_tokens: int
    destination_output_tokens: int
    completed_requests: int
    destination_stored: NormalizedStoredTiming
    source_drained: bool
    """The source holds nothing for any request."""
    destination_drained: bool
    """The destination holds nothing for any request."""
    driver_drained: bool
    """No event pending, no transfer in flight, no coordinator left incomplete."""


@dataclass(frozen=True)
class SimulationResult:
    """The outcome of :meth:`Simulation.run <handoff_fsm.simulate.Simulation.run>`."""

    config: SimulationConfig
    order: HandoffOrder
    started: int
    completed: int
    succeeded: int
    canceled: int
    stuck: tuple[str, ...]
    """Keys of handoffs that never completed."""
    abandoned: tuple[str, ...]
    """Cleanup actions the session policy gave up on after every re-send, one line each."""
    leaks: tuple[Leak, ...]
    violations: tuple[str, ...]
    """Inputs after completion that made a coordinator issue actions."""
    inputs: int
    """Coordinator inputs fed (start, facts, outcomes)."""
    rejected: dict[str, int]
    """Inputs a coordinator refused, by error code (expected under faults, never without)."""
    late_inputs: int
    """Inputs fed after their handoff completed (each must yield no actions)."""
    timeouts: int
    """TimedOut facts fed by the driver's deadline policy."""
    cleanup_resends: int
    """Cancels re-sent because their acknowledgement had not arrived."""
    ack_timeouts: int
    """Work actions fed as Failed because their acknowledgement timed out (``ack_timeout_ms``)."""
    held_back: int
    """Premature facts the session policy held back until their acknowledgement came."""
    unapplied: int
    """Held-back facts never applied (cleanup began first: their acknowledgement was lost)."""
    reopened: int
    """a976b2bf: handoffs that succeeded, then were canceled while decoding and cleaned up."""
    destination_held_after_cancel_ms: float
    """Virtual ms the destination kept requests' KV and batch slots after they were canceled
    while decoding: the seed ignores that cancel (the request decodes to the end), a976b2bf
    cancels the destination at once."""
    faults: dict[str, int]
    """Injected faults, by kind."""
    fault_log: tuple[tuple[int, str], ...]
    """Every injected fault as (handoff number, kind as in :attr:`faults`), in the order drawn."""
    latencies_ms: tuple[float, ...]
    """Virtual time from start() to Complete, per completed handoff (completion order)."""
    transfer_delays_ms: tuple[float, ...]
    """``delay_ms`` of every StartTransfer the endpoints accepted."""
    events: int
    virtual_ms: float
    """When the last handoff completed or the last request finished decoding."""
    observations: EndpointObservations
    lifecycles: tuple[tuple[NormalizedHandoffEvent, ...], ...] | None
    """Per handoff (by number), when the run kept them."""
    wall_s: float

    @property
    def leaked(self) -> int:
        return len(self.leaks)

    @property
    def problems(self) -> tuple[str, ...]:
        """Every reported problem, one line each (empty for a clean run)."""
        obs = self.observations
        return (
            *(str(leak) for leak in self.leaks),
            *self.abandoned,
            *(f"{key}: never completed" for key in self.stuck),
            *self.violations,
            *(() if obs.source_drained else ("the source did not drain",)),
            *(() if obs.destination_drained else ("the destination did not drain",)),
            *(() if obs.driver_drained else ("the driver did not drain",)),
        )

    @property
    def ok(self) -> bool:
        """No leak, no abandoned cleanup, nothing stuck, no late input with actions, all drained."""
        return not self.problems

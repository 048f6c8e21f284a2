"""Where a simulated handoff's time goes: its phases and who held its KV, in virtual ms.

Rule kept here: every number comes from the run as the coordinators saw it. A
:class:`PhaseRecorder` is a :class:`~handoff_fsm.simulate.trace.Recorder`: it
sees each input before the coordinator does and each reply right after, and
reads the driver's virtual clock then. The fake endpoints act on an action the
moment it is issued and report a fact the moment it happens, so these times are
the endpoints' times too (a fact the session policy held back counts from when
it first arrived). Nothing here draws: the plots
(:mod:`handoff_fsm.render.plots`) draw these numbers, so they are tested
without matplotlib.

**Phases.** From ``start()`` to its first ``Complete``, every instant of a handoff
belongs to exactly one :class:`Phase`: that of the work action the coordinator
issued last (``SubmitPrefill`` → submit→held, ``ReserveDestination`` →
reserve→reserved, ``StartTransfer`` → transfer, ``ActivateDestination`` →
activation, ``ReleaseSource`` → release), until cleanup begins: at the first
input the coordinator accepted that can start it (a ``Failed``, ``TimedOut`` or
``Canceled`` fact, or a ``Failed(..)`` outcome) or the first cancel it issued,
whichever comes first. From then on it is cleanup. So a handoff's phases add up
to its end-to-end latency, exactly as the run measured it.

**Holds.** An owner holds the request's KV from the moment it has it until it
is told to let go: the source from ``SourceHeld`` until ``ReleaseSource`` or
``CancelSource`` is issued; the destination from ``DestinationReserved`` until
``ActivateDestination`` (the request owns the KV from then on) or
``CancelDestination``; the transfer from ``StartTransfer`` (unless it is
acknowledged ``Failed(..)``: nothing moved) until ``TransferCompleted`` or a
``Failed`` fact, which may come after the handoff completed. A release or an
activation answered ``Failed(..)`` did not happen: the hold goes on. A hold never told
to end is counted apart (:attr:`HandoffTimes.held_at_end`), not as a duration.

Statistics are nearest-rank percentiles (as in the summary) and ``math.fsum``
means, so they are the same whatever order handoffs ended in.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final
from uuid import UUID

from handoff_fsm.errors import HandoffError
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Failed,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Owner,
    ReleaseSource,
    ReserveDestination,
    Revision,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
)
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.driver import Simulation
from handoff_fsm.simulate.faults import FAULT_COUNTERS
from handoff_fsm.simulate.result import SimulationResult
from handoff_fsm.simulate.summary import percentile
from handoff_fsm.simulate.trace import Recorder


class Phase(StrEnum):
    """What a handoff is waiting for (see the module rule)."""

    SUBMIT = "submit→held"
    RESERVE = "reserve→reserved"
    TRANSFER = "transfer"
    ACTIVATION = "activation"
    RELEASE = "release"
    CLEANUP = "cleanup"


PHASE_OF: Final[Mapping[type[HandoffAction], Phase]] = {
    SubmitPrefill: Phase.SUBMIT,
    ReserveDestination: Phase.RESERVE,
    StartTransfer: Phase.TRANSFER,
    ActivateDestination: Phase.ACTIVATION,
    ReleaseSource: Phase.RELEASE,
    CancelSource: Phase.CLEANUP,
    CancelDestination: Phase.CLEANUP,
}
"""The phase an issued action begins."""

HOLDERS: Final[tuple[Owner, ...]] = (Owner.SOURCE, Owner.DESTINATION, Owner.TRANSFER)
"""The owners that hold a request's KV during its handoff, in plotting order."""

COMPLETIONS: Final[tuple[HandoffCompletion, ...]] = (
    HandoffCompletion.SUCCESS,
    HandoffCompletion.CANCELED,
)

NO_FAULT: Final = "none"
"""The fault group of handoffs that received no fault."""
SEVERAL_FAULTS: Final = "several"
"""The fault group of handoffs that received more than one kind of fault."""

FAULT_LABELS: Final[Mapping[str, str]] = {
    NO_FAULT: "no fault",
    "ack_fail": "action failed",
    "ack_lose": "ack lost",
    "ack_duplicate": "ack duplicated",
    "ack_late": "ack late",
    "transfer_failed": "transfer failed",
    "fact_Failed": "Failed fact",
    "fact_TimedOut": "TimedOut fact",
    "fact_Canceled": "Canceled fact",
    "decode_canceled": "canceled while decoding",
    SEVERAL_FAULTS: "several kinds",
}
"""How the plots name each fault group: no fault, one kind of fault
(:data:`~handoff_fsm.simulate.faults.FAULT_COUNTERS`), several kinds."""

_TERMINAL_FACTS: Final = (Failed, TimedOut, Canceled)
_LET_GO: Final[Mapping[type[HandoffAction], Owner]] = {
    ReleaseSource: Owner.SOURCE,
    CancelSource: Owner.SOURCE,
    ActivateDestination: Owner.DESTINATION,
    CancelDestination: Owner.DESTINATION,
}
_MAY_FAIL: Final = (ReleaseSource, ActivateDestination)
"""Let-go actions an owner may refuse (cancels must not fail)."""


def phase_order(order: HandoffOrder) -> tuple[Phase, ...]:
    """The phases in the order a successful handoff of ``order`` goes through them."""
    first = (
        (Phase.SUBMIT, Phase.RESERVE)
        if order is HandoffOrder.SOURCE_FIRST
        else (Phase.RESERVE, Phase.SUBMIT)
    )
    return (*first, Phase.TRANSFER, Phase.ACTIVATION, Phase.RELEASE, Phase.CLEANUP)


@dataclass(frozen=True, slots=True)
class HandoffTimes:
    """One handoff of a run: when it started and completed, its phases, its holds, its faults."""

    index: int
    key: str
    started_ms: float
    completed_ms: float | None
    """When the coordinator first issued ``Complete`` (``None``: it never did)."""
    completion: HandoffCompletion | None
    """The completion of that first ``Complete``."""
    phases: Mapping[Phase, float]
    """ms spent in each phase up to the first ``Complete`` (every phase, 0.0 if none)."""
    holds: Mapping[Owner, float]
    """ms each owner that held the KV held it (owners that never held it are absent)."""
    held_at_end: tuple[Owner, ...]
    """Owners that held the KV and were never told to let go before the run ended."""
    faults: tuple[str, ...]
    """The kinds of fault injected into this handoff, in FAULT_COUNTERS order, once each."""

    @property
    def fault_group(self) -> str:
        """:data:`NO_FAULT`, the one kind of fault it received, or :data:`SEVERAL_FAULTS`."""
        if not self.faults:
            return NO_FAULT
        return self.faults[0] if len(self.faults) == 1 else SEVERAL_FAULTS

    @property
    def latency_ms(self) -> float | None:
        """From ``start()`` to the first ``Complete`` (as the run's ``latencies_ms``)."""
        return None if self.completed_ms is None else self.completed_ms - self.started_ms


class _Track:
    """What the recorder knows of one handoff while the run goes on."""

    __slots__ = (
        "cleanup",
        "completed",
        "completion",
        "durations",
        "held",
        "holding",
        "index",
        "input",
        "letting_go",
        "phase",
        "since",
        "started",
        "transfer_id",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.started: float | None = None
        self.phase: Phase | None = None
        self.since = 0.0
        self.durations: dict[Phase, float] = dict.fromkeys(Phase, 0.0)
        self.cleanup = False
        self.completed: float | None = None
        self.completion: HandoffCompletion | None = None
        self.input: HandoffFact | HandoffActionOutcome | None = None
        """The input whose reply comes next (facts and outcomes only)."""
        self.holding: dict[Owner, float] = {}
        """Owners holding the KV now, and since when."""
        self.held: dict[Owner, float] = {}
        """Holds that ended, by owner: how long they lasted."""
        self.transfer_id: int | None = None
        self.letting_go: dict[int, tuple[Owner, float]] = {}
        """Release and activation actions by id: whose hold they ended, begun when. If
        one is answered ``Failed(..)`` the owner still holds the KV: the hold resumes."""

    def enter(self, phase: Phase, now: float) -> None:
        self.close(now)
        self.phase, self.since = phase, now

    def close(self, now: float) -> None:
        if self.phase is not None:
            self.durations[self.phase] += now - self.since
            self.phase = None

    def hold(self, owner: Owner, now: float) -> None:
        if owner not in self.holding and owner not in self.held:
            self.holding[owner] = now

    def let_go(self, owner: Owner, now: float) -> float | None:
        """End ``owner``'s hold now; returns when it began (``None``: it held nothing)."""
        since = self.holding.pop(owner, None)
        if since is not None:
            self.held[owner] = now - since
        return since

    def refused(self, action_id: int) -> None:
        """``action_id`` was answered ``Failed(..)``: what it was to change did not happen."""
        if action_id == self.transfer_id:
            self.holding.pop(Owner.TRANSFER, None)  # nothing was moved
            return
        ended = self.letting_go.pop(action_id, None)
        if ended is not None:
            owner, since = ended
            del self.held[owner]
            self.holding[owner] = since


class PhaseRecorder:
    """Records every handoff's phases and holds (see the module rule), then passes each
    call on to ``inner`` (e.g. a :class:`~handoff_fsm.simulate.trace.TraceWriter`).

    ``clock`` reads the driver's virtual time: ``PhaseRecorder(lambda: sim.now)``.
    """

    __slots__ = ("_clock", "_inner", "_order", "_tracks")

    def __init__(self, clock: Callable[[], float], inner: Recorder | None = None) -> None:
        self._clock = clock
        self._inner = inner
        self._tracks: dict[str, _Track] = {}
        self._order: HandoffOrder | None = None

    def new(
        self,
        key: str,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback_ms: float,
        revision: Revision = Revision.SEED,
    ) -> None:
        self._tracks[key] = _Track(len(self._tracks))
        self._order = order
        if self._inner is not None:
            self._inner.new(key, handoff_id, order, fallback_ms, revision)

    def start(self, key: str) -> None:
        track = self._tracks[key]
        if track.started is None:
            track.started = track.since = self._clock()
        track.input = None
        if self._inner is not None:
            self._inner.start(key)

    def fact(self, key: str, fact: HandoffFact) -> None:
        track, now = self._tracks[key], self._clock()
        track.input = fact
        kind = type(fact)
        if kind is SourceHeld:
            track.hold(Owner.SOURCE, now)
        elif kind is DestinationReserved:
            track.hold(Owner.DESTINATION, now)
        elif kind is TransferCompleted or kind is Failed:
            track.let_go(Owner.TRANSFER, now)
        if self._inner is not None:
            self._inner.fact(key, fact)

    def outcome(self, key: str, action_id: int, outcome: HandoffActionOutcome) -> None:
        track = self._tracks[key]
        track.input = outcome
        if outcome.is_failed:
            track.refused(action_id)
        if self._inner is not None:
            self._inner.outcome(key, action_id, outcome)

    def reply(
        self,
        key: str,
        actions: list[IssuedHandoffAction],
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        track, now = self._tracks[key], self._clock()
        before_end = track.completed is None
        given = track.input
        track.input = None
        if (
            before_end
            and not track.cleanup
            and (
                isinstance(given, _TERMINAL_FACTS)
                or (isinstance(given, HandoffActionOutcome) and given.is_failed)
            )
        ):
            track.cleanup = True
            track.enter(Phase.CLEANUP, now)
        for issued in actions:
            action = issued.action
            kind = type(action)
            owner = _LET_GO.get(kind)
            if owner is not None:
                since = track.let_go(owner, now)
                if since is not None and kind in _MAY_FAIL:
                    track.letting_go[issued.id] = (owner, since)
            elif kind is StartTransfer:
                track.transfer_id = issued.id
                track.hold(Owner.TRANSFER, now)
            if kind is Complete:
                if before_end:
                    track.close(now)
                    track.completed, track.completion = now, completion
                    before_end = False
            elif before_end and not track.cleanup:
                phase = PHASE_OF[kind]
                track.cleanup = phase is Phase.CLEANUP
                track.enter(phase, now)
        if self._inner is not None:
            self._inner.reply(key, actions, complete, completion)

    def error(
        self,
        key: str,
        error: HandoffError,
        complete: bool,
        completion: HandoffCompletion | None,
    ) -> None:
        self._tracks[key].input = None  # a refused input changes nothing
        if self._inner is not None:
            self._inner.error(key, error, complete, completion)

    def times(self, fault_log: Iterable[tuple[int, str]] = ()) -> RunTimes:
        """Every handoff recorded so far, with the faults ``fault_log`` (the run's
        :attr:`~handoff_fsm.simulate.SimulationResult.fault_log`) gave each."""
        received: dict[int, set[str]] = {}
        for handoff, kind in fault_log:
            received.setdefault(handoff, set()).add(kind)
        handoffs = []
        for key, track in self._tracks.items():
            kinds = received.get(track.index, set())
            handoffs.append(
                HandoffTimes(
                    index=track.index,
                    key=key,
                    started_ms=track.started if track.started is not None else 0.0,
                    completed_ms=track.completed,
                    completion=track.completion,
                    phases=(
                        dict(track.durations)
                        if track.completed is not None
                        else dict.fromkeys(Phase, 0.0)
                    ),
                    holds={o: track.held[o] for o in HOLDERS if o in track.held},
                    held_at_end=tuple(o for o in HOLDERS if o in track.holding),
                    faults=tuple(k for k in FAULT_COUNTERS if k in kinds),
                )
            )
        return RunTimes(
            order=self._order if self._order is not None else HandoffOrder.SOURCE_FIRST,
            handoffs=tuple(handoffs),
        )


@dataclass(frozen=True, slots=True)
class RunTimes:
    """The times of every handoff of one run (by handoff number)."""

    order: HandoffOrder
    handoffs: tuple[HandoffTimes, ...]

    @property
    def completed(self) -> tuple[HandoffTimes, ...]:
        """The handoffs whose coordinator issued ``Complete`` (the ones with phases)."""
        return tuple(h for h in self.handoffs if h.completed_ms is not None)

    @property
    def phases(self) -> tuple[Phase, ...]:
        return phase_order(self.order)


# ---------------------------------------------------------------------- statistics


def mean(values: Sequence[float]) -> float:
    """The exactly rounded mean (``math.fsum``), 0.0 for no values."""
    return math.fsum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class PhaseBar:
    """A group of completed handoffs and the mean ms per handoff it spent in each phase."""

    key: str
    """What the group is: a completion (``Success``) or a fault kind (``ack_lose``)."""
    label: str
    count: int
    means_ms: tuple[float, ...]
    """Mean ms per handoff in each phase, in :attr:`RunTimes.phases` order."""

    @property
    def total_ms(self) -> float:
        """The mean end-to-end latency of the group (the phases add up to it)."""
        return math.fsum(self.means_ms)


def _bar(key: str, label: str, group: Sequence[HandoffTimes], phases: Sequence[Phase]) -> PhaseBar:
    return PhaseBar(
        key=key,
        label=label,
        count=len(group),
        means_ms=tuple(mean([h.phases[phase] for h in group]) for phase in phases),
    )


def phases_by_completion(run: RunTimes) -> tuple[PhaseBar, ...]:
    """One bar per completion that occurred (Success, then Canceled)."""
    completed = run.completed
    bars = []
    for completion in COMPLETIONS:
        group = [h for h in completed if h.completion is completion]
        if group:
            bars.append(_bar(completion.value, completion.value, group, run.phases))
    return tuple(bars)


def phases_by_fault(run: RunTimes) -> tuple[PhaseBar, ...]:
    """One bar per :attr:`HandoffTimes.fault_group` that occurred: no fault, each kind
    of fault alone, several kinds (each completed handoff is in exactly one bar, so a
    bar shows what that fault does, not what the faults it came with do)."""
    completed = run.completed
    bars = []
    for kind in (NO_FAULT, *FAULT_COUNTERS, SEVERAL_FAULTS):
        group = [h for h in completed if h.fault_group == kind]
        if group:
            bars.append(_bar(kind, FAULT_LABELS[kind], group, run.phases))
    return tuple(bars)


@dataclass(frozen=True, slots=True)
class Spread:
    """Nearest-rank order statistics of some durations (ms)."""

    count: int
    min_ms: float
    p25_ms: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float


def spread(values: Iterable[float]) -> Spread | None:
    """The :class:`Spread` of ``values`` (``None`` for none)."""
    ordered = sorted(values)
    if not ordered:
        return None

    def at(q: float) -> float:
        value = percentile(ordered, q)
        assert value is not None
        return value

    return Spread(
        count=len(ordered),
        min_ms=ordered[0],
        p25_ms=at(0.25),
        p50_ms=at(0.50),
        p75_ms=at(0.75),
        p90_ms=at(0.90),
        p99_ms=at(0.99),
        max_ms=ordered[-1],
    )


@dataclass(frozen=True, slots=True)
class HoldSpread:
    """How long one owner held the KV in the handoffs of one completion."""

    owner: Owner
    completion: HandoffCompletion
    spread: Spread
    held_at_end: int
    """Handoffs of that completion whose owner was never told to let go."""


def hold_spreads(run: RunTimes) -> tuple[HoldSpread, ...]:
    """Per owner (source, destination, transfer), per completion, the hold durations."""
    completed = run.completed
    spreads = []
    for owner in HOLDERS:
        for completion in COMPLETIONS:
            group = [h for h in completed if h.completion is completion]
            stats = spread(h.holds[owner] for h in group if owner in h.holds)
            if stats is not None:
                at_end = sum(owner in h.held_at_end for h in group)
                spreads.append(HoldSpread(owner, completion, stats, at_end))
    return tuple(spreads)


@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """End-to-end latencies per completion, counted in shared log-spaced bins."""

    edges_ms: tuple[float, ...]
    """Bin edges: bin ``i`` is ``[edges[i], edges[i + 1])``, the last one closed."""
    counts: tuple[tuple[HandoffCompletion, tuple[int, ...]], ...]
    spreads: tuple[tuple[HandoffCompletion, Spread], ...]


BINS_PER_DECADE: Final = 10


def log_edges(low: float, high: float, per_decade: int = BINS_PER_DECADE) -> tuple[float, ...]:
    """Edges ``10 ** (k / per_decade)`` covering ``[low, high]`` (both > 0), at least one bin."""
    first = math.floor(math.log10(low) * per_decade)
    last = max(math.ceil(math.log10(high) * per_decade), first + 1)
    edges = [10.0 ** (k / per_decade) for k in range(first, last + 1)]
    # Rounding may leave an extreme value just outside: widen by one bin where it does.
    if edges[0] > low:
        edges.insert(0, 10.0 ** ((first - 1) / per_decade))
    if edges[-1] < high:
        edges.append(10.0 ** ((last + 1) / per_decade))
    return tuple(edges)


def bin_counts(values: Iterable[float], edges: Sequence[float]) -> tuple[int, ...]:
    """How many ``values`` fall in each bin of ``edges`` (the last bin is closed)."""
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    for value in values:
        counts[min(max(bisect_right(edges, value) - 1, 0), last)] += 1
    return tuple(counts)


def latency_histogram(run: RunTimes) -> LatencyHistogram | None:
    """The latency histogram of the completed handoffs (``None`` if none completed or
    a latency is 0, which a log scale cannot show)."""
    groups = [
        (
            completion,
            [
                h.latency_ms
                for h in run.completed
                if h.completion is completion and h.latency_ms is not None
            ],
        )
        for completion in COMPLETIONS
    ]
    groups = [(c, values) for c, values in groups if values]
    every = [v for _, values in groups for v in values]
    if not every or min(every) <= 0.0:
        return None
    edges = log_edges(min(every), max(every))
    return LatencyHistogram(
        edges_ms=edges,
        counts=tuple((c, bin_counts(values, edges)) for c, values in groups),
        spreads=tuple((c, s) for c, values in groups if (s := spread(values)) is not None),
    )


# ---------------------------------------------------------------------- running


def timed_simulation(
    config: SimulationConfig,
    *,
    inner: Recorder | None = None,
    on_progress: Callable[[int], None] | None = None,
    progress_every: int = 1000,
) -> tuple[Simulation, PhaseRecorder]:
    """A :class:`~handoff_fsm.simulate.Simulation` of ``config`` whose coordinators'
    inputs go through a :class:`PhaseRecorder` reading its clock (then to ``inner``)."""
    simulation: Simulation | None = None

    def clock() -> float:
        assert simulation is not None  # set below, before the run can call this
        return simulation.now

    recorder = PhaseRecorder(clock, inner)
    simulation = Simulation(
        config, recorder=recorder, on_progress=on_progress, progress_every=progress_every
    )
    return simulation, recorder


def simulate_times(
    config: SimulationConfig, *, inner: Recorder | None = None
) -> tuple[SimulationResult, RunTimes]:
    """Run ``config`` once; its result and the times of its handoffs."""
    simulation, recorder = timed_simulation(config, inner=inner)
    result = simulation.run()
    return result, recorder.times(result.fault_log)

"""The discrete-event driver: real coordinators, fake engines, one virtual clock.

Rule kept here: nothing sleeps and nothing runs concurrently. Every future
happening is an event ``(time, sequence, callback, handoff, a, b)`` on one heap;
the sequence number breaks ties, so events at equal times run in the order
they were scheduled, and every random draw comes from ``random.Random``
instances seeded from the configuration: equal configurations give equal runs,
byte for byte. The driver feeds each handoff's inputs to its
:class:`~handoff_fsm.policy.SessionPolicy` (never to the coordinator directly),
performs the actions it returns through the fake endpoints, sets the timers it
asks for on the same heap, and applies the fault plan to acknowledgements. The
policy is the one the asyncio session uses; in virtual milliseconds:

* **deadline**: a handoff not complete ``deadline_ms`` after it started gets a
  ``TimedOut`` fact (this is what ends a handoff whose acknowledgement was lost);
* **acknowledgement timeout** (``ack_timeout_ms``, off by default): a work action
  not acknowledged in time is fed as ``Failed``;
* **cancel re-send**: a CancelSource/CancelDestination not acknowledged
  ``cleanup_retry_ms`` after it was sent is sent again, at most ``cleanup_retries``
  times (the endpoint answers with its first answer), then abandoned and reported.
  The reference has no cancel retry and ignores TimedOut while cleaning up, so
  without this a lost cancel acknowledgement would leave the handoff cleaning up
  forever;
* **premature facts** (a fact ahead of the acknowledgement it depends on) are held
  back until that acknowledgement arrives.

When a handoff ends the driver asks the endpoints what they still hold for it:
anything held is a leak, reported in the result.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from heapq import heappop, heappush
from itertools import count
from random import Random
from time import perf_counter
from typing import Any
from uuid import UUID

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    CancelSource,
    Complete,
    HandoffAction,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    IssuedHandoffAction,
    NormalizedHandoffEvent,
    NormalizedStoredTiming,
    ReleaseSource,
    ReserveDestination,
    StartTransfer,
    SubmitPrefill,
)
from handoff_fsm.policy import SessionPolicy, SessionStep, SessionTimer
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.endpoints import Entry, Event, FakeDestination, FakeSource, FakeTransfer
from handoff_fsm.simulate.faults import FAULT_COUNTERS, AckFault, ExternalFact, FaultInjector
from handoff_fsm.simulate.record import (
    DESTINATION_ACCEPTED,
    DESTINATION_ACTIVATED,
    DESTINATION_FINISHED,
    DESTINATION_RESERVED,
    DESTINATION_STATES,
    SOURCE_HELD,
    SOURCE_PREFILLING,
    SOURCE_STATES,
    SimulatedHandoff,
    handoff_key,
)
from handoff_fsm.simulate.recorded import RecordedCoordinator
from handoff_fsm.simulate.result import EndpointObservations, Leak, SimulationResult
from handoff_fsm.simulate.trace import Recorder

_SUCCESS = HandoffCompletion.SUCCESS
_CANCELED = HandoffCompletion.CANCELED
_LOSE = AckFault.LOSE
_DUPLICATE = AckFault.DUPLICATE
_COMPLETED = NormalizedHandoffEvent.COMPLETED

Handler = Callable[[SimulatedHandoff, int, HandoffAction], None]


_V4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_V4_SET = (0x8000 << 48) | (4 << 76)


def uuid4_from(bits: int) -> UUID:
    """``UUID(int=bits, version=4)``: the version-4 UUID of 128 random ``bits`` (RFC 4122
    variant and version set here, so ``UUID`` has less to check); the driver draws one
    handoff id per handoff from its seeded generator."""
    return UUID(int=bits & _V4_CLEAR | _V4_SET)


class Simulation:
    """One run of ``config.handoffs`` handoffs, at most ``config.concurrency`` at a time.

    Handoffs start in a closed loop: ``concurrency`` at time 0, then a new one
    whenever one completes. ``recorder`` sees every coordinator input (see
    :mod:`handoff_fsm.simulate.trace`); ``on_progress(completed)`` is called every
    ``progress_every`` completions; ``keep_lifecycles`` keeps each handoff's
    normalized lifecycle in the result (for conformance records).
    """

    def __init__(
        self,
        config: SimulationConfig,
        *,
        recorder: Recorder | None = None,
        on_progress: Callable[[int], None] | None = None,
        progress_every: int = 1000,
        keep_lifecycles: bool = False,
    ) -> None:
        self.config = config
        self.order = config.handoff_order
        self.now = 0.0
        self._heap: list[Entry] = []
        self._sequence = count().__next__
        self.post: Callable[[Entry], None] = partial(heappush, self._heap)
        self.sequence = self._sequence
        seed = config.seed
        # String seeds are hashed with SHA-512: stable across processes and platforms.
        self._ids = Random(f"{seed}/ids")
        workload = Random(f"{seed}/workload")
        latency = Random(f"{seed}/latency")
        plan = config.faults
        self._faults = FaultInjector(plan, Random(f"{seed}/faults")) if plan.active else None
        self._prompt_tokens = config.prompt_tokens.sampler(workload)
        self._cached_tokens = config.destination_cached_tokens.sampler(workload)
        self.source = FakeSource(self, config, latency, self._faults)
        self.destination = FakeDestination(self, config, latency, self._faults)
        self.transfer = FakeTransfer(self, config, latency, self._faults, self.destination)
        self._policy = SessionPolicy.factory(
            deadline=config.deadline_ms,
            ack_timeout=config.ack_timeout_ms,
            cleanup_ack_timeout=config.cleanup_retry_ms,
            cleanup_retries=config.cleanup_retries,
        )
        self._handlers: dict[type, Handler] = {
            SubmitPrefill: self.source.submit,
            ReserveDestination: self.destination.reserve,
            StartTransfer: self.transfer.start,
            ActivateDestination: self.destination.activate,
            ReleaseSource: self.source.release,
            CancelSource: self.source.cancel,
            CancelDestination: self.destination.cancel,
            Complete: self._complete,
        }
        self._recorder = recorder
        self._on_progress = on_progress
        self._progress_every = max(1, progress_every)
        self._lifecycles: list[list[NormalizedHandoffEvent]] | None = (
            [] if keep_lifecycles else None
        )
        self._late_by = plan.late_by_ms
        self._duplicate_after = plan.duplicate_after_ms
        self._live: dict[int, SimulatedHandoff] = {}
        self._reopened_live: dict[int, SimulatedHandoff] = {}
        """Ended handoffs whose coordinator reopened (a976b2bf), until that cleanup ends."""
        self._deadlines: deque[tuple[SessionTimer, SimulatedHandoff]] = deque()
        self._deadline_armed = False
        self._next_index = 0
        self._ran = False
        # what the run reports
        self.completed = 0
        self.succeeded = 0
        self.canceled = 0
        self.completed_requests = 0
        self.inputs = 0
        self.late_inputs = 0
        self.timeouts = 0
        self.cleanup_resends = 0
        self.ack_timeouts = 0
        self.held_back = 0
        self.unapplied = 0
        self.reopened = 0
        """a976b2bf: handoffs that succeeded, were canceled while decoding, and cleaned up."""
        self.events = 0
        self.rejected: dict[str, int] = {}
        self.leaks: list[Leak] = []
        self.abandoned: list[str] = []
        self.violations: list[str] = []
        self.latencies_ms: list[float] = []
        self.last_ms = 0.0
        """When the last handoff completed or the last request finished decoding."""

    # ------------------------------------------------------------------ running

    def run(self) -> SimulationResult:
        """Run every handoff to completion (or until nothing can happen) and report."""
        if self._ran:
            raise RuntimeError("a Simulation runs once; build another for another run")
        self._ran = True
        config = self.config
        compiled_chart()  # built once per process: not part of any run's wall clock
        wall = perf_counter()
        for _ in range(min(config.concurrency, config.handoffs)):
            self._start_next()
        heap = self._heap
        while heap:
            when, _, event, h, a, b = heappop(heap)
            self.now = when
            event(h, a, b)
        # Each event took the next sequence number when it was posted, and all of them ran:
        # the next number is the count (not counted in the loop, which runs several times
        # per handoff).
        self.events = self._sequence()
        return self._result(perf_counter() - wall)

    def _at(self, delay_ms: float, event: Event, h: SimulatedHandoff, a: Any = None) -> None:
        heappush(self._heap, (self.now + delay_ms, self._sequence(), event, h, a, None))

    def _start_next(self) -> None:
        """Start the next handoff now: at time 0 for the first ones, then on a completion."""
        index = self._next_index
        self._next_index = index + 1
        config = self.config
        handoff_id = uuid4_from(self._ids.getrandbits(128))
        prompt = self._prompt_tokens()
        cached = min(prompt, self._cached_tokens())
        coordinator = HandoffCoordinator(
            handoff_id,
            self.order,
            config.fallback_transfer_delay_ms,
            revision=config.revision,
            engine=config.coordinator_engine,
        )
        recorder = self._recorder
        if recorder is None:
            policy = self._policy(coordinator)
        else:
            key = handoff_key(index)
            policy = self._policy(RecordedCoordinator(coordinator, key, recorder))
            recorder.new(
                key, handoff_id, self.order, config.fallback_transfer_delay_ms, config.revision
            )
        # positional: keywords to a class call cost a dict built and taken apart again
        transferable = prompt - cached
        h = SimulatedHandoff(index, handoff_id, coordinator, policy, self.now, prompt, transferable)
        self._live[index] = h
        if self._lifecycles is not None:
            self._lifecycles.append(h.lifecycle)
        if self._faults is not None:
            for offset, fact in self._faults.external_facts(index):
                self._at(offset, self._external_fact, h, fact)
        self._perform(h, policy.start(self.now))

    # ------------------------------------------------------------------ inputs

    def publish(self, h: SimulatedHandoff, fact: HandoffFact) -> None:
        """Report ``fact`` to the handoff's session policy now and perform what it returns."""
        if h.done:
            final = h.coordinator.is_final
            self._after_end(h, final, h.policy.fact(fact, self.now), type(fact).__name__)
            return
        actions, timers = h.policy.fact(fact, self.now)
        handlers = self._handlers  # what _perform does, inlined: this is the hot path
        for issued in actions:
            action = issued.action
            handlers[type(action)](h, issued.id, action)
        if timers:
            self._set_timers(h, timers)

    def deliver(self, h: SimulatedHandoff, action_id: int, outcome: HandoffActionOutcome) -> None:
        """Deliver an acknowledgement to the handoff's policy now and perform what it returns."""
        if h.done:
            final = h.coordinator.is_final
            step = h.policy.outcome(action_id, outcome, self.now)
            self._after_end(h, final, step, f"the outcome {outcome} of action {action_id}")
            return
        actions, timers = h.policy.outcome(action_id, outcome, self.now)
        handlers = self._handlers  # what _perform does, inlined: this is the hot path
        for issued in actions:
            action = issued.action
            handlers[type(action)](h, issued.id, action)
        if timers:
            self._set_timers(h, timers)

    def answer(
        self,
        h: SimulatedHandoff,
        action_id: int,
        outcome: HandoffActionOutcome,
        delay_ms: float,
        fault: AckFault | None,
    ) -> None:
        """Send an acknowledgement back, through the faults of the plan."""
        if fault is None:
            heappush(
                self._heap,
                (self.now + delay_ms, self._sequence(), self.deliver, h, action_id, outcome),
            )
        elif fault is _LOSE:
            return
        elif fault is _DUPLICATE:
            self._push(delay_ms, h, action_id, outcome)
            self._push(delay_ms + self._duplicate_after, h, action_id, outcome)
        else:  # LATE (FAIL is the endpoint's business: it answers Failed without a fault)
            self._push(delay_ms + self._late_by, h, action_id, outcome)

    def _push(
        self, delay_ms: float, h: SimulatedHandoff, action_id: int, outcome: HandoffActionOutcome
    ) -> None:
        heappush(
            self._heap,
            (self.now + delay_ms, self._sequence(), self.deliver, h, action_id, outcome),
        )

    # Timers. Deadlines: start times never decrease and deadline_ms is fixed, so
    # deadlines come due in start order. They wait in a FIFO, and one heap event is
    # armed for the earliest deadline of a handoff still running (most handoffs
    # complete long before theirs, and are dropped without ever costing a heap
    # operation). Acknowledgement timers go on the heap; a stale one costs one event.

    def _set_timers(self, h: SimulatedHandoff, timers: tuple[SessionTimer, ...]) -> None:
        for timer in timers:
            if timer.action_id is None:
                self._deadlines.append((timer, h))
                if not self._deadline_armed:
                    self._arm_deadline()
            else:
                entry: Entry = (timer.when, self._sequence(), self._expire, h, timer, None)
                heappush(self._heap, entry)

    def _expire(self, h: SimulatedHandoff, timer: SessionTimer, _b: None) -> None:
        policy = h.policy
        if h.done and policy.finished:
            return  # over (a reopened cleanup keeps its timers while it runs)
        self._perform(h, policy.expire(timer, self.now))
        if policy.finished and not h.coordinator.is_complete:
            self._finish(h)  # the policy gave up on the handoff's cleanup

    def _arm_deadline(self) -> None:
        deadlines = self._deadlines
        while deadlines and deadlines[0][1].done:
            deadlines.popleft()
        if deadlines:
            self._deadline_armed = True
            entry: Entry = (
                deadlines[0][0].when,
                self._sequence(),
                self._deadlines_due,
                None,
                None,
                None,
            )
            heappush(self._heap, entry)

    def _deadlines_due(self, _h: None, _a: None, _b: None) -> None:
        self._deadline_armed = False
        deadlines, now = self._deadlines, self.now
        while deadlines and deadlines[0][0].when <= now:
            timer, h = deadlines.popleft()
            self._expire(h, timer, None)
        self._arm_deadline()

    def _external_fact(self, h: SimulatedHandoff, fact: ExternalFact, _b: None) -> None:
        self.publish(h, fact.observed(h.handoff_id))

    def _after_end(self, h: SimulatedHandoff, final: bool, step: SessionStep, what: str) -> None:
        """An input for a handoff that ended: late if its coordinator was final when it
        came, else part of a reopened cleanup (a976b2bf: a terminal fact after Success
        cancels the decoding destination)."""
        self._count_fed(h)
        if final:
            self._late(h, step.actions, what)
            return
        if not h.policy.finished:
            self._reopened_live[h.index] = h  # until its reopened cleanup ends
        self._perform(h, step)

    def _late(self, h: SimulatedHandoff, actions: Sequence[IssuedHandoffAction], what: str) -> None:
        self.late_inputs += 1
        if actions:
            self.violations.append(
                f"{h.key}: {what} arrived after completion and issued "
                f"{[type(issued.action).__name__ for issued in actions]}"
            )

    # ------------------------------------------------------------------ actions

    def _perform(self, h: SimulatedHandoff, step: SessionStep) -> None:
        handlers = self._handlers
        actions, timers = step
        for issued in actions:
            action = issued.action
            handlers[type(action)](h, issued.id, action)
        if timers:
            self._set_timers(h, timers)

    def _complete(self, h: SimulatedHandoff, action_id: int, action: HandoffAction) -> None:
        self._finish(h)

    def _finish(self, h: SimulatedHandoff) -> None:
        """The handoff is over: its coordinator completed, or its policy gave up on cleanup."""
        if h.done:  # a976b2bf: the reopened cleanup after a Success ended (or was given up)
            self.reopened += 1
            del self._reopened_live[h.index]
            h.completion = h.policy.completion
            self._count_fed(h)
            self._tally(h)
            self._check_owners(h, h.completion)
            return
        h.done = True
        self.last_ms = self.now
        policy = h.policy
        completion = policy.completion
        h.completion = completion
        del self._live[h.index]
        self._count_fed(h)
        if not policy.quiet:  # the ordinary handoff has nothing to tally (a call saved)
            self._tally(h)
        if h.coordinator.is_complete:
            self.completed += 1
            self.latencies_ms.append(self.now - h.started_ms)
            if completion is _SUCCESS:
                self.succeeded += 1
                if h.destination == DESTINATION_FINISHED:
                    self._request_completed(h)
            else:
                self.canceled += 1
        self._check_owners(h, completion)
        if self._next_index < self.config.handoffs:
            self._start_next()
        if self._on_progress is not None and self.completed % self._progress_every == 0:
            self._on_progress(self.completed)

    def _count_fed(self, h: SimulatedHandoff) -> None:
        """Add the inputs the handoff's policy fed its coordinator, and the coordinator's
        refusals, since the run last looked: when the handoff ends, after each input that
        comes later, and at the end of the run (the hot path counts nothing)."""
        policy = h.policy
        self.inputs += policy.inputs - h.fed
        h.fed = policy.inputs
        if policy.quiet:
            return  # a refusal is never quiet
        refusals, before = policy.refusals, h.refused
        h.refused = refusals
        for code, n in refusals.items():
            new = n - before.get(code, 0)
            if new:
                self.rejected[code.value] = self.rejected.get(code.value, 0) + new

    def _tally(self, h: SimulatedHandoff) -> None:
        """Add what the handoff's policy did to the run's figures when the handoff ends
        (again when a reopened cleanup ends: only what happened since)."""
        policy = h.policy
        if policy.quiet:
            return
        result, before = policy.result, h.tallied
        h.tallied = result
        self.timeouts += result.timed_out and not (before is not None and before.timed_out)
        self.cleanup_resends += result.resends - (before.resends if before is not None else 0)
        self.ack_timeouts += len(result.failed) - (len(before.failed) if before is not None else 0)
        self.held_back += result.held_back - (before.held_back if before is not None else 0)
        unapplied = len(result.unapplied) + len(result.buffered)
        if before is not None:
            unapplied -= len(before.unapplied) + len(before.buffered)
        self.unapplied += unapplied
        self.abandoned += [
            f"{h.key}: {action.issued.action.owner.value} cleanup "
            f"({type(action.issued.action).__name__}) abandoned after {action.sends} sends"
            for action in result.abandoned[len(before.abandoned) if before is not None else 0 :]
        ]

    def _check_owners(self, h: SimulatedHandoff, completion: HandoffCompletion | None) -> None:
        """Ask the endpoints what they still hold: anything is a leak of the coordinator."""
        source = h.source
        if source in (SOURCE_PREFILLING, SOURCE_HELD):
            self.leaks.append(
                Leak(h.index, h.key, "source", SOURCE_STATES[source], _label(completion))
            )
        destination = h.destination
        if destination in (DESTINATION_ACCEPTED, DESTINATION_RESERVED) or (
            destination == DESTINATION_ACTIVATED and completion is _CANCELED
        ):
            state = DESTINATION_STATES[destination]
            self.leaks.append(Leak(h.index, h.key, "destination", state, _label(completion)))

    def request_finished(self, h: SimulatedHandoff) -> None:
        """The destination decoded the last token; the request completes with its handoff."""
        self.last_ms = self.now
        if h.done and h.completion is _SUCCESS:
            self._request_completed(h)

    def _request_completed(self, h: SimulatedHandoff) -> None:
        self.completed_requests += 1
        h.lifecycle.append(_COMPLETED)

    # ------------------------------------------------------------------ report

    def _result(self, wall_s: float) -> SimulationResult:
        destination = self.destination
        observations = EndpointObservations(
            source_output_tokens=self.source.output_tokens,
            destination_output_tokens=destination.output_tokens,
            completed_requests=self.completed_requests,
            destination_stored=NormalizedStoredTiming(
                before_activation=destination.visible_before_activation,
                on_activation=destination.visible_on_activation,
                repeated_activation_hashes_after_activation=destination.repeated_after_activation,
            ),
            source_drained=not self.source.holding,
            destination_drained=not destination.holding,
            driver_drained=not self._heap
            and not self._live
            and not self._reopened_live
            and not self.transfer.in_flight,
        )
        stuck = [h for _, h in sorted({**self._live, **self._reopened_live}.items())]
        for h in stuck:
            self._count_fed(h)
            self._tally(h)
        return SimulationResult(
            config=self.config,
            order=self.order,
            started=self._next_index,
            completed=self.completed,
            succeeded=self.succeeded,
            canceled=self.canceled,
            stuck=tuple(h.key for h in stuck),
            abandoned=tuple(self.abandoned),
            leaks=tuple(self.leaks),
            violations=tuple(self.violations),
            inputs=self.inputs,
            rejected=dict(sorted(self.rejected.items())),
            late_inputs=self.late_inputs,
            timeouts=self.timeouts,
            cleanup_resends=self.cleanup_resends,
            ack_timeouts=self.ack_timeouts,
            held_back=self.held_back,
            unapplied=self.unapplied,
            reopened=self.reopened,
            destination_held_after_cancel_ms=destination.held_after_cancel_ms,
            faults=dict(self._faults.counts)
            if self._faults is not None
            else dict.fromkeys(FAULT_COUNTERS, 0),
            fault_log=tuple(self._faults.log) if self._faults is not None else (),
            latencies_ms=tuple(self.latencies_ms),
            transfer_delays_ms=tuple(self.transfer.delays_ms),
            events=self.events,
            virtual_ms=self.last_ms,
            observations=observations,
            lifecycles=(
                tuple(tuple(lifecycle) for lifecycle in self._lifecycles)
                if self._lifecycles is not None
                else None
            ),
            wall_s=wall_s,
        )


def _label(completion: HandoffCompletion | None) -> str:
    return completion.value if completion is not None else "?"


def simulate(
    config: SimulationConfig,
    *,
    recorder: Recorder | None = None,
    keep_lifecycles: bool = False,
) -> SimulationResult:
    """Run ``config`` once and return its result (see :class:`Simulation`)."""
    return Simulation(config, recorder=recorder, keep_lifecycles=keep_lifecycles).run()

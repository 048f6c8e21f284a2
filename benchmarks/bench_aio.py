"""Many asyncio sessions in one loop: handoffs driven per second on one core.

Rule kept here: both sides drive the same handoffs against the same in-process
fake workers, which answer at once and report their facts on the next loop
iteration (no sleeping, no I/O: what is measured is the runtime, not the
workers). The library side runs one :class:`~handoff_fsm.aio.HandoffSession`
per handoff, with a deadline and acknowledgement timeouts armed; the yardstick
is the glue one would write by hand around a bare coordinator (a task per
action, outcomes and facts fed straight back; no timers, no policy). Handoffs
run ``concurrency`` at a time, in waves, on a fresh event loop per sample. Time
is the CPU time of this single-threaded process, sampled in interleaved pairs
with the garbage collector off; each side checks every handoff succeeded, so a
broken side cannot look fast.

Run as a script to print the figures.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from uuid import UUID

import handoff_fsm as hf
from handoff_fsm.aio import HandoffSession
from handoff_fsm.engines.compiled import compiled_chart

TIMING = hf.HandoffTransferTiming(hf.TransferTimingMode.FULL_PROMPT, 4096, 131_072, 25.0)
_SUBMITTED = hf.HandoffActionOutcome.SUBMITTED
_ACCEPTED = hf.HandoffActionOutcome.ACCEPTED
_SCHEDULED = hf.HandoffActionOutcome.SCHEDULED
_APPLIED = hf.HandoffActionOutcome.APPLIED

Report = Callable[[hf.HandoffFact], None]


class Workers:
    """Source, destination and transfer in one: every action answered at once, facts next."""

    def __init__(self) -> None:
        self.reports: dict[UUID, Report] = {}

    async def perform(self, issued: hf.IssuedHandoffAction) -> hf.HandoffActionOutcome:
        action = issued.action
        kind = type(action)
        handoff_id = action.handoff_id
        if kind is hf.SubmitPrefill:
            fact: hf.HandoffFact = hf.SourceHeld(handoff_id=handoff_id, transfer_timing=TIMING)
            outcome = _SUBMITTED
        elif kind is hf.ReserveDestination:
            fact = hf.DestinationReserved(handoff_id=handoff_id, transferable_prompt_tokens=4096)
            outcome = _ACCEPTED
        elif kind is hf.StartTransfer:
            fact = hf.TransferCompleted(handoff_id=handoff_id)
            outcome = _SCHEDULED
        else:
            return _APPLIED
        asyncio.get_running_loop().call_soon(self.reports[handoff_id], fact)
        return outcome


async def with_session(workers: Workers, handoff_id: UUID) -> hf.HandoffCompletion:
    """The library: one session, deadline and acknowledgement timeouts armed."""
    coordinator = hf.HandoffCoordinator(handoff_id, hf.HandoffOrder.SOURCE_FIRST)
    session = HandoffSession(coordinator, workers, deadline_s=60.0, ack_timeout_s=10.0)
    workers.reports[handoff_id] = session.report
    return await session.run()


async def by_hand(workers: Workers, handoff_id: UUID) -> hf.HandoffCompletion:
    """The yardstick: the least glue that drives a bare coordinator with these workers."""
    loop = asyncio.get_running_loop()
    coordinator = hf.HandoffCoordinator(handoff_id, hf.HandoffOrder.SOURCE_FIRST)
    done: asyncio.Future[hf.HandoffCompletion] = loop.create_future()
    tasks: set[asyncio.Task[None]] = set()

    def act(actions: list[hf.IssuedHandoffAction]) -> None:
        for issued in actions:
            if type(issued.action) is hf.Complete:
                completion = coordinator.completion
                assert completion is not None
                done.set_result(completion)
            else:
                task = loop.create_task(send(issued))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    async def send(issued: hf.IssuedHandoffAction) -> None:
        act(coordinator.on_action_outcome(issued.id, await workers.perform(issued)))

    workers.reports[handoff_id] = lambda fact: act(coordinator.on_fact(fact))
    act(coordinator.start())
    return await done


Driver = Callable[[Workers, UUID], Awaitable[hf.HandoffCompletion]]


def drive(driver: Driver, handoffs: int, concurrency: int) -> float:
    """CPU seconds to run ``handoffs`` handoffs, ``concurrency`` at a time, on a fresh loop."""

    async def waves() -> None:
        workers = Workers()
        for first in range(0, handoffs, concurrency):
            ids = [UUID(int=i + 1) for i in range(first, min(first + concurrency, handoffs))]
            completions = await asyncio.gather(*(driver(workers, i) for i in ids))
            if any(c is not hf.HandoffCompletion.SUCCESS for c in completions):
                raise AssertionError(f"{driver.__name__}: a handoff did not succeed")
            for handoff_id in ids:
                del workers.reports[handoff_id]

    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        asyncio.run(waves())
        return time.process_time() - start
    finally:
        gc.enable()


def measure(handoffs: int = 20_000, concurrency: int = 1000, pairs: int = 5) -> dict[str, float]:
    """Median CPU seconds per handoff of each side, and the median per-pair ratio."""
    compiled_chart()  # built once per process; not part of either side
    warm = min(handoffs, 2 * concurrency)
    drive(with_session, warm, concurrency)
    drive(by_hand, warm, concurrency)
    session_s: list[float] = []
    glue_s: list[float] = []
    for i in range(pairs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            if side == 0:
                session_s.append(drive(with_session, handoffs, concurrency) / handoffs)
            else:
                glue_s.append(drive(by_hand, handoffs, concurrency) / handoffs)
    ratios = [s / g for s, g in zip(session_s, glue_s, strict=True)]
    session, glue = statistics.median(session_s), statistics.median(glue_s)
    return {
        "handoffs": float(handoffs),
        "concurrency": float(concurrency),
        "session_s": session,
        "glue_s": glue,
        "sessions_per_s": 1.0 / session,
        "glue_per_s": 1.0 / glue,
        "ratio": statistics.median(ratios),
    }


def main() -> int:
    figures = measure()
    print(
        f"{figures['handoffs']:,.0f} handoffs, {figures['concurrency']:,.0f} concurrent, "
        f"one core: HandoffSession {figures['sessions_per_s']:,.0f} handoffs/s "
        f"({figures['session_s'] * 1e6:.0f} us each); hand-written glue "
        f"{figures['glue_per_s']:,.0f} handoffs/s ({figures['glue_s'] * 1e6:.0f} us each); "
        f"ratio {figures['ratio']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

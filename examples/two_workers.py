"""Two fake workers, two handoffs: one succeeds, one times out. Run it as a script."""

import asyncio
from collections.abc import Callable
from uuid import UUID

import handoff_fsm as hf
from handoff_fsm.aio import HandoffSession

Report = Callable[[hf.HandoffFact], None]
APPLIED, NOOP = hf.HandoffActionOutcome.APPLIED, hf.HandoffActionOutcome.NOOP


class PrefillWorker:
    """The source: prefills a prompt, then holds its KV cache until released or canceled."""

    def __init__(self, stalls_on: set[UUID]) -> None:
        self.holding: set[UUID] = set()
        self.stalls_on = stalls_on  # requests it accepts but never finishes (a hung GPU)

    async def perform(
        self, issued: hf.IssuedHandoffAction, report: Report
    ) -> hf.HandoffActionOutcome:
        action, loop = issued.action, asyncio.get_running_loop()
        if isinstance(action, hf.SubmitPrefill):
            self.holding.add(action.handoff_id)
            if action.handoff_id not in self.stalls_on:
                timing = hf.HandoffTransferTiming(
                    hf.TransferTimingMode.FULL_PROMPT, 4096, 131_072, 25.0
                )
                held = hf.SourceHeld(handoff_id=action.handoff_id, transfer_timing=timing)
                loop.call_later(0.02, report, held)  # prefill takes 20 ms
            return hf.HandoffActionOutcome.SUBMITTED
        # ReleaseSource or CancelSource: free the KV cache (answering Noop if there was none)
        held_it = action.handoff_id in self.holding
        self.holding.discard(action.handoff_id)
        return APPLIED if held_it else NOOP


class DecodeWorker:
    """The destination, which also pulls the KV cache (it owns the transfer)."""

    def __init__(self) -> None:
        self.holding: set[UUID] = set()

    async def perform(
        self, issued: hf.IssuedHandoffAction, report: Report
    ) -> hf.HandoffActionOutcome:
        action, loop = issued.action, asyncio.get_running_loop()
        handoff_id = action.handoff_id
        if isinstance(action, hf.ReserveDestination):
            self.holding.add(handoff_id)
            reserved = hf.DestinationReserved(
                handoff_id=handoff_id, transferable_prompt_tokens=4096
            )
            loop.call_later(0.001, report, reserved)
            return hf.HandoffActionOutcome.ACCEPTED
        if isinstance(action, hf.StartTransfer):
            done = hf.TransferCompleted(handoff_id=handoff_id)
            loop.call_later(action.delay_ms / 1000, report, done)
            return hf.HandoffActionOutcome.SCHEDULED
        if isinstance(action, hf.ActivateDestination):
            self.holding.discard(handoff_id)  # decoding owns the KV cache from here on
            return APPLIED
        held_it = handoff_id in self.holding  # CancelDestination
        self.holding.discard(handoff_id)
        return APPLIED if held_it else NOOP


class Router:
    """The executor of every session: actions go to the worker that owns them, facts come back."""

    def __init__(self, prefill: PrefillWorker, decode: DecodeWorker) -> None:
        self.prefill, self.decode = prefill, decode
        self.sessions: dict[UUID, HandoffSession] = {}

    async def perform(self, issued: hf.IssuedHandoffAction) -> hf.HandoffActionOutcome:
        worker = self.prefill if issued.action.owner is hf.Owner.SOURCE else self.decode
        return await worker.perform(issued, self.report)

    def report(self, fact: hf.HandoffFact) -> None:
        self.sessions[fact.handoff_id].report(fact)

    async def handoff(self, handoff_id: UUID) -> hf.HandoffCompletion:
        coordinator = hf.HandoffCoordinator(handoff_id, hf.HandoffOrder.SOURCE_FIRST)
        session = HandoffSession(coordinator, self, deadline_s=0.5, ack_timeout_s=0.1)
        self.sessions[handoff_id] = session
        completion = await session.run()
        timed_out = " (timed out)" if session.result.timed_out else ""
        print(f"handoff {handoff_id.int}: {completion.value}{timed_out}")
        return completion


async def main() -> None:
    fast, stuck = UUID(int=1), UUID(int=2)
    prefill, decode = PrefillWorker(stalls_on={stuck}), DecodeWorker()
    router = Router(prefill, decode)
    await asyncio.gather(router.handoff(fast), router.handoff(stuck))
    print(f"workers still holding: {len(prefill.holding) + len(decode.holding)}")


if __name__ == "__main__":
    asyncio.run(main())

"""The checker can fail: deliberately broken coordinators, each caught by the right invariant.

Every mutant below breaks one rule of the protocol the way a real bug would
(most of them by bending a real ``HandoffCoordinator``). For each, ``explore``
must report the expected invariant with a shortest counterexample, and that
counterexample, replayed through ``handoff_fsm.io.replay`` against the mutant,
must show the violation again, while the correct coordinator passes the same
trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, partial
from typing import Any
from uuid import UUID

import pytest

from handoff_fsm import (
    CancelDestination,
    Canceled,
    CancelSource,
    Complete,
    DestinationReserved,
    Engine,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffError,
    HandoffErrorCode,
    HandoffFact,
    HandoffOrder,
    HandoffSnapshot,
    IssuedHandoffAction,
    ReleaseSource,
    ReserveDestination,
    Revision,
    SourceHeld,
    StartTransfer,
    TimedOut,
)
from handoff_fsm.io import TraceReplayer, replay
from handoff_fsm.io.inputs import Input, Reply, reply_of
from handoff_fsm.journal import ActionJournal
from handoff_fsm.model import HandoffAction
from handoff_fsm.run import HandoffRun
from handoff_fsm.verify.exploration import (
    HANDOFF_ID,
    TRACE_KEY,
    ExplorationReport,
    Violation,
    explore,
    inputs_for,
)
from handoff_fsm.verify.invariants import Observation, observe
from handoff_fsm.verify.rules import Invariant, invariants_of
from tests.model_paths import audit, reply_from_wire

# The module, not the ``replay`` function the package exports under the same name. Trace
# replay builds HandoffCoordinator itself; tests swap a mutant in for it.

SF = HandoffOrder.SOURCE_FIRST
DF = HandoffOrder.DESTINATION_FIRST
SEED = Revision.SEED
A976 = Revision.A976B2BF
APPLIED = HandoffActionOutcome.APPLIED

# ---------------------------------------------------------------------- mutants


class Bent:
    """A real coordinator behind a wrapper whose :meth:`bend` rewrites what it issues.

    Constructible like ``HandoffCoordinator``, so trace replay can build it.
    """

    def __init__(
        self,
        handoff_id: UUID,
        order: HandoffOrder,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        revision: Revision = Revision.SEED,
        engine: Engine = "compiled",
    ) -> None:
        self.inner = HandoffCoordinator(
            handoff_id, order, fallback_transfer_delay_ms, revision=revision, engine=engine
        )

    @property
    def handoff_id(self) -> UUID:
        return self.inner.handoff_id

    @property
    def revision(self) -> Revision:
        return self.inner.revision

    @property
    def fallback_transfer_delay_ms(self) -> float:
        return self.inner.fallback_transfer_delay_ms

    @property
    def is_complete(self) -> bool:
        return self.inner.is_complete

    @property
    def is_final(self) -> bool:
        return self.inner.is_final

    @property
    def completion(self) -> HandoffCompletion | None:
        return self.inner.completion

    def start(self) -> list[IssuedHandoffAction]:
        return self.bend(self.inner.start())

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        return self.bend(self.inner.on_fact(fact))

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        return self.bend(self.inner.on_action_outcome(action_id, outcome))

    def snapshot(self) -> HandoffSnapshot:
        return self.inner.snapshot()

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        return actions

    def _pretend_done(
        self, actions: list[IssuedHandoffAction], kind: type
    ) -> list[IssuedHandoffAction]:
        """Hide each action of ``kind`` and acknowledge it as Applied without doing it."""
        shown: list[IssuedHandoffAction] = []
        for issued in actions:
            if type(issued.action) is kind:
                shown += self._pretend_done(self.inner.on_action_outcome(issued.id, APPLIED), kind)
            else:
                shown.append(issued)
        return shown


class ForgetsCancelDestination(Bent):
    """Cleanup never asks the destination to cancel, yet believes it was canceled."""

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        return self._pretend_done(actions, CancelDestination)


class CompletesTwice(Bent):
    """When cleanup finishes, each of its two regions issues its own Complete."""

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        if actions and type(actions[-1].action) is Complete:
            again = Complete.issued_for(self.inner.handoff_id)
            actions = [*actions, IssuedHandoffAction.trusted(actions[-1].id + 1, again)]
        return actions


class CompletesAgainOnStart(Bent):
    """``start()`` on a completed handoff completes it once more."""

    def start(self) -> list[IssuedHandoffAction]:
        if not self.inner.is_complete:
            return self.inner.start()
        again = Complete.issued_for(self.inner.handoff_id)
        return [IssuedHandoffAction.trusted(self.inner.snapshot().next_action_id, again)]


class _LastWordJournal(ActionJournal):
    """The latest outcome wins: a conflicting outcome replaces the accepted one."""

    def acknowledge(self, action_id: int, outcome: HandoffActionOutcome) -> str | None:
        previous = self.outcomes.get(action_id)
        if previous is not None and previous != outcome:
            del self.outcomes[action_id]
        return super().acknowledge(action_id, outcome)


class AcceptsConflictingOutcome(HandoffCoordinator):
    """Accepts an outcome that contradicts the one already accepted for the same action."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.journal = _LastWordJournal()


class StartsTransferBeforeReserved(Bent):
    """Takes the destination's Accepted for its reservation: transfers into unreserved room."""

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        reserving = any(
            issued.id == action_id and type(issued.action) is ReserveDestination
            for issued in self.inner.snapshot().issued
        )
        actions = self.inner.on_action_outcome(action_id, outcome)
        if reserving and outcome == HandoffActionOutcome.ACCEPTED:
            assumed = DestinationReserved(
                handoff_id=self.inner.handoff_id, transferable_prompt_tokens=0
            )
            actions += self.inner.on_fact(assumed)
        return actions


class _RecordFirstJournal(ActionJournal):
    """The reference's order: record the outcome, then validate it (and raise)."""

    def acknowledge(self, action_id: int, outcome: HandoffActionOutcome) -> str | None:
        fresh = action_id in self.issued and action_id not in self.outcomes
        try:
            return super().acknowledge(action_id, outcome)
        except HandoffError:
            if fresh:
                self.outcomes[action_id] = outcome
            raise


class RecordsBeforeValidating(HandoffCoordinator):
    """Keeps an outcome it rejected, as the reference does (and wedges on the next one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.journal = _RecordFirstJournal()


class DropsCancelDestination(Bent):
    """Never shows the destination's cancel, so cleanup waits for it forever."""

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        return [issued for issued in actions if type(issued.action) is not CancelDestination]


class SucceedsBeforeRelease(Bent):
    """Completes as soon as the destination is active, without releasing the source."""

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        return self._pretend_done(actions, ReleaseSource)


class IgnoresTimeoutInFlight(Bent):
    """Swallows a time-out while the KV transfer is in flight and carries on."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        mine = fact.handoff_id == self.inner.handoff_id
        if mine and isinstance(fact, TimedOut) and "in_flight" in self.inner.state:
            return []
        return self.inner.on_fact(fact)


class _CancelingRun(HandoffRun):
    __slots__ = ()

    def issue(self, kind: type[HandoffAction]) -> IssuedHandoffAction:
        return super().issue(CancelSource if kind is ReleaseSource else kind)


class CancelsInsteadOfReleasing(HandoffCoordinator):
    """Issues CancelSource where the successful path releases the source."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.__class__ = _CancelingRun


class _ZeroCompleteJournal(ActionJournal):
    """Numbers Complete 0 whatever was issued before."""

    def allot(self, kind: type[HandoffAction]) -> int:
        action_id = super().allot(kind)
        return 0 if kind is Complete else action_id


class ReusesActionIds(HandoffCoordinator):
    """Gives Complete an id already used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.journal = _ZeroCompleteJournal()


class TransfersForAnotherHandoff(Bent):
    """Starts the transfer under the nil handoff id."""

    def bend(self, actions: list[IssuedHandoffAction]) -> list[IssuedHandoffAction]:
        return [
            IssuedHandoffAction.trusted(
                issued.id, StartTransfer.issued_with_delay(UUID(int=0), issued.action.delay_ms)
            )
            if isinstance(issued.action, StartTransfer)
            else issued
            for issued in actions
        ]


class ForgetsCompletion(Bent):
    """Completes but never says how (``completion`` stays None)."""

    @property
    def completion(self) -> HandoffCompletion | None:
        return None


class _StrictDuplicateJournal(ActionJournal):
    """Rejects an exact duplicate as if it conflicted."""

    def acknowledge(self, action_id: int, outcome: HandoffActionOutcome) -> str | None:
        if action_id in self.outcomes:
            raise HandoffError(HandoffErrorCode.CONFLICTING_OUTCOME, "seen it already")
        return super().acknowledge(action_id, outcome)


class RejectsDuplicates(HandoffCoordinator):
    """Answers a repeated acknowledgement with an error instead of a no-op."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.journal = _StrictDuplicateJournal()


class _KeyErrorJournal(ActionJournal):
    """Refuses an unknown action id with a KeyError, not a HandoffError."""

    def acknowledge(self, action_id: int, outcome: HandoffActionOutcome) -> str | None:
        if action_id not in self.issued:
            raise KeyError(action_id)  # the bug: not a HandoffError
        return super().acknowledge(action_id, outcome)


class CrashesOnUnknownAction(HandoffCoordinator):
    """Lets a KeyError escape for an outcome naming an unknown action."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.journal = _KeyErrorJournal()


class SharesStartsAcrossInstances(Bent):
    """Keeps started handoff ids in a class-wide set: a second instance never starts."""

    started: set[UUID] = set()  # noqa: RUF012 - the shared mutable state is the bug

    def start(self) -> list[IssuedHandoffAction]:
        if self.inner.handoff_id in self.started:
            return []
        self.started.add(self.inner.handoff_id)
        return self.inner.start()


# ---------------------------------------------------------------------- a976b2bf mutants

_TERMINAL = (Failed, TimedOut, Canceled)


def _succeeded(coordinator: HandoffCoordinator) -> bool:
    return coordinator.completion is HandoffCompletion.SUCCESS and coordinator.is_complete


def _terminal(coordinator: HandoffCoordinator, fact: HandoffFact) -> bool:
    """A Failed, TimedOut or Canceled fact of the coordinator's own handoff."""
    return isinstance(fact, _TERMINAL) and fact.handoff_id == coordinator.handoff_id


class NeverReopens(Bent):
    """a976b2bf: ignores a terminal fact after Success, as the seed does (the decode keeps
    the request's KV cache and batch slot)."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        if _succeeded(self.inner) and _terminal(self.inner, fact):
            return []
        return self.inner.on_fact(fact)


class CancelsSourceOnReopen(HandoffCoordinator):
    """a976b2bf: the reopened cleanup cancels the (released) source as well."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        reopening = _succeeded(self)
        actions = super().on_fact(fact)
        if reopening and actions:
            actions.append(self._run.journal.issue(CancelSource.issued_for(self.handoff_id)))
        return actions


class CompletesReopenAtOnce(Bent):
    """a976b2bf: completes the reopened cleanup without waiting for its cancel's outcome."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        reopening = _succeeded(self.inner)
        actions = self.inner.on_fact(fact)
        if reopening:
            for issued in list(actions):
                if type(issued.action) is CancelDestination:
                    actions += self.inner.on_action_outcome(issued.id, APPLIED)
        return actions


class _UncheckedRun(HandoffRun):
    __slots__ = ()

    def validate_scheduled_delay(self, fact: SourceHeld | DestinationReserved) -> None:
        return None  # the bug: the delay StartTransfer will carry is not checked


class SchedulesAnyDelay(HandoffCoordinator):
    """a976b2bf: does not validate the scheduled delay (starts a transfer that never ends)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run.__class__ = _UncheckedRun


class ReopensUnderSeed(Bent):
    """Seed: cancels the decoding destination on a terminal fact after Success (a976b2bf's
    reopen, which the seed does not have)."""

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        if _succeeded(self.inner) and _terminal(self.inner, fact):
            return [self.inner._run.journal.issue(CancelDestination.issued_for(fact.handoff_id))]
        return self.inner.on_fact(fact)


class A976b2bfPassedOffAsSeed(HandoffCoordinator):
    """Says it follows the seed but runs a976b2bf (reopens, refuses unschedulable delays)."""

    def __init__(self, *args: Any, revision: Revision = SEED, **kwargs: Any) -> None:
        super().__init__(*args, revision=A976, **kwargs)

    @property
    def revision(self) -> Revision:
        return SEED


# ---------------------------------------------------------------------- expectations


@dataclass(frozen=True)
class Case:
    mutant: type
    order: HandoffOrder
    invariant: Invariant
    inputs: int
    """Length of the shortest counterexample, worked out by hand."""
    also: frozenset[Invariant] = frozenset()
    """Other invariants the same bug breaks on other paths (each explained below)."""
    revision: Revision = SEED
    """The revision explored (the mutant is built for it, judged by its invariants)."""

    @property
    def id(self) -> str:
        return f"{self.mutant.__name__}-{self.order.value}-{self.revision.value}"


_ACCEPTS_UNSEEN_ID = Invariant.INVALID_INPUT_REJECTED
"""A hidden action's id looks unknown to the observer, and the mutant accepts its outcome."""

CASES = [
    # The four the issue names.
    Case(
        ForgetsCancelDestination,
        DF,
        Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
        2,
        also=frozenset({_ACCEPTS_UNSEEN_ID}),
    ),
    Case(
        ForgetsCancelDestination,
        SF,
        Invariant.OWNERS_SETTLED_BEFORE_COMPLETE,
        5,
        also=frozenset({_ACCEPTS_UNSEEN_ID}),
    ),
    Case(CompletesTwice, SF, Invariant.COMPLETE_ONCE, 1),
    Case(CompletesTwice, DF, Invariant.COMPLETE_ONCE, 1),
    Case(CompletesAgainOnStart, SF, Invariant.COMPLETE_ONCE, 2),
    Case(
        AcceptsConflictingOutcome,
        SF,
        Invariant.INVALID_INPUT_REJECTED,
        3,
        # ReleaseSource failed, then Applied: the source counts as released, unacknowledged.
        also=frozenset({Invariant.OWNERS_SETTLED_BEFORE_COMPLETE}),
    ),
    Case(
        AcceptsConflictingOutcome,
        DF,
        Invariant.INVALID_INPUT_REJECTED,
        3,
        also=frozenset({Invariant.OWNERS_SETTLED_BEFORE_COMPLETE}),
    ),
    Case(StartsTransferBeforeReserved, SF, Invariant.TRANSFER_ONCE_WHEN_READY, 4),
    # Destination first, the same bug submits the prefill too early, before any transfer.
    Case(StartsTransferBeforeReserved, DF, Invariant.LIFECYCLE_ORDER, 2),
    # One more for every other invariant.
    Case(RecordsBeforeValidating, SF, Invariant.REJECTED_INPUT_CHANGES_NOTHING, 2),
    Case(
        DropsCancelDestination,
        DF,
        Invariant.LIVENESS,
        2,
        # An outcome for the hidden cancel lets cleanup finish with the destination engaged.
        also=frozenset({_ACCEPTS_UNSEEN_ID, Invariant.OWNERS_SETTLED_BEFORE_COMPLETE}),
    ),
    Case(
        SucceedsBeforeRelease,
        SF,
        Invariant.SUCCESS_AFTER_RELEASE,
        8,
        also=frozenset({Invariant.OWNERS_SETTLED_BEFORE_COMPLETE}),
    ),
    Case(IgnoresTimeoutInFlight, SF, Invariant.CANCELED_ONLY_THROUGH_CLEANUP, 8),
    Case(CancelsInsteadOfReleasing, DF, Invariant.LIFECYCLE_ORDER, 8),
    Case(ReusesActionIds, SF, Invariant.ACTION_IDS_INCREASING, 3),
    Case(TransfersForAnotherHandoff, SF, Invariant.OWN_HANDOFF, 5),
    Case(ForgetsCompletion, SF, Invariant.COMPLETION_CONSISTENT, 1),
    Case(RejectsDuplicates, SF, Invariant.DUPLICATE_OUTCOME_IDEMPOTENT, 3),
    Case(CrashesOnUnknownAction, DF, Invariant.INPUTS_HANDLED, 1),
    Case(SharesStartsAcrossInstances, SF, Invariant.DETERMINISTIC, 1),
    # The a976b2bf transitions: the nine inputs of a success, then a terminal fact.
    Case(NeverReopens, SF, Invariant.REOPENS_AFTER_SUCCESS, 10, revision=A976),
    Case(CancelsSourceOnReopen, SF, Invariant.REOPENS_AFTER_SUCCESS, 10, revision=A976),
    Case(CompletesReopenAtOnce, DF, Invariant.OWNERS_SETTLED_BEFORE_COMPLETE, 10, revision=A976),
    # Start, Submitted, SourceHeld (unschedulable timing), Accepted, DestinationReserved.
    Case(SchedulesAnyDelay, SF, Invariant.INVALID_INPUT_REJECTED, 5, revision=A976),
    Case(SchedulesAnyDelay, DF, Invariant.INVALID_INPUT_REJECTED, 5, revision=A976),
    Case(ReopensUnderSeed, SF, Invariant.COMPLETE_ONCE, 10),
    # The seed's honest reservation is refused (held with the unschedulable timing) and
    # the seed lets no failure stand in for it; on the success path it reopens.
    Case(
        A976b2bfPassedOffAsSeed,
        SF,
        Invariant.LIVENESS,
        3,
        also=frozenset({Invariant.COMPLETE_ONCE, Invariant.COMPLETION_CONSISTENT}),
    ),
]


@pytest.fixture(autouse=True)
def _fresh_shared_state() -> Iterator[None]:
    SharesStartsAcrossInstances.started.clear()
    yield
    SharesStartsAcrossInstances.started.clear()


@cache
def _report(mutant: type, order: HandoffOrder, revision: Revision = SEED) -> ExplorationReport:
    factory = partial(mutant, revision=revision)
    report = explore(order, revision=revision, factory=factory, max_states=5_000)
    SharesStartsAcrossInstances.started.clear()
    return report


def _violation(case: Case) -> Violation:
    report = _report(case.mutant, case.order, case.revision)
    violation = report.violation(case.invariant)
    assert violation is not None, [str(v) for v in report.violations]
    return violation


def test_every_invariant_has_a_mutant_that_breaks_it() -> None:
    assert {case.invariant for case in CASES} == set(Invariant)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_explore_reports_the_mutant_with_a_shortest_counterexample(case: Case) -> None:
    report = _report(case.mutant, case.order, case.revision)

    assert not report.ok
    assert report.exhausted
    assert {v.invariant for v in report.violations} == {case.invariant} | case.also
    violation = report.violation(case.invariant)
    assert violation is not None
    assert violation.inputs == case.inputs, violation.jsonl()
    assert violation.message
    lines = [json.loads(line) for line in violation.trace]
    assert lines[0] == {
        "coordinator": TRACE_KEY,
        "op": "new",
        "handoff_id": str(HANDOFF_ID),
        "order": case.order.value,
        "fallback_transfer_delay_ms": 0.0,
        **({} if case.revision is SEED else {"revision": case.revision.value}),
    }
    assert all(line["coordinator"] == TRACE_KEY for line in lines)
    verdicts = {v.invariant: v for v in report.verdicts}
    assert set(verdicts) == set(invariants_of(case.revision))
    assert not verdicts[case.invariant].holds
    assert all(verdicts[i].holds for i in set(verdicts) - {case.invariant} - case.also)


# ---------------------------------------------------------------------- replaying counterexamples


def _replay(mutant: type, trace: tuple[str, ...]) -> list[str]:
    """``handoff_fsm.io.replay.replay`` with ``mutant`` built for ``new`` lines.

    Replay passes the ``new`` line's revision on to the factory (``revision=``).
    """
    return list(replay(trace, factory=mutant))


_AFTER_COMPLETE = (CompletesAgainOnStart, ReopensUnderSeed)
"""Mutants whose counterexample gives its last input after the handoff became final.

Replay still gives that input to the coordinator (it never answers for a completed
one), so their counterexamples replay to the violation like every other; they are
also driven directly below, as is TransfersForAnotherHandoff (whose violation is the
handoff id inside an action, which replay prints as the action carries it)."""

_SEEN_IN_REPLIES = [
    case
    for case in CASES
    if case.invariant
    not in {
        Invariant.REJECTED_INPUT_CHANGES_NOTHING,
        Invariant.LIVENESS,
        Invariant.DETERMINISTIC,
        Invariant.INPUTS_HANDLED,
    }
]


def _final_before_last_input(case: Case) -> bool:
    """The correct coordinator of the case's revision was final before the trace's last input."""
    trace = _violation(case).trace
    new = json.loads(trace[0])
    revision = Revision(new.get("revision", SEED.value))
    coordinator = HandoffCoordinator(UUID(new["handoff_id"]), new["order"], revision=revision)
    for line in trace[1:-1]:
        reply_of(coordinator, Input.from_wire(json.loads(line)))
    return coordinator.is_final


@pytest.mark.slow
def test_the_after_complete_mutants_are_those_whose_last_input_follows_finality() -> None:
    for case in CASES:
        if case.invariant in {Invariant.LIVENESS, Invariant.DETERMINISTIC}:
            continue  # their traces end in a state, not with the offending input
        assert _final_before_last_input(case) is (case.mutant in _AFTER_COMPLETE), case.id


@pytest.mark.slow
@pytest.mark.parametrize("case", _SEEN_IN_REPLIES, ids=lambda case: case.id)
def test_counterexample_replays_to_the_violation(
    case: Case,
) -> None:
    violation = _violation(case)

    broken = _replay(case.mutant, violation.trace)
    assert case.invariant in {invariant for invariant, _ in audit(violation.trace, broken)}
    # The violation shows in the last reply, not before it.
    assert audit(violation.trace[:-1], broken[:-1]) == []
    # The correct coordinator passes the same trace.
    assert audit(violation.trace, list(replay(violation.trace))) == []


def _drive(mutant: type, trace: tuple[str, ...]) -> list[Invariant]:
    """Give a trace's inputs straight to one coordinator and judge every reply."""
    new = json.loads(trace[0])
    revision = Revision(new.get("revision", SEED.value))
    coordinator = mutant(UUID(new["handoff_id"]), HandoffOrder(new["order"]), revision=revision)
    obs = Observation(UUID(new["handoff_id"]), HandoffOrder(new["order"]), revision)
    found: list[Invariant] = []
    for line in trace[1:]:
        op = Input.from_wire(json.loads(line))
        obs, findings = observe(obs, op, reply_of(coordinator, op))
        found += [invariant for invariant, _ in findings]
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case.mutant in (*_AFTER_COMPLETE, TransfersForAnotherHandoff)],
    ids=lambda case: case.id,
)
def test_counterexample_driven_directly_shows_the_violation(case: Case) -> None:
    violation = _violation(case)
    assert _drive(case.mutant, violation.trace) == [case.invariant]
    assert _drive(case.mutant, violation.trace[:-1]) == []
    assert _drive(HandoffCoordinator, violation.trace) == []


class _Session:
    """A TraceReplayer fed line by line, an observer judging each reply."""

    def __init__(self, trace: tuple[str, ...], mutant: type) -> None:
        self.replayer = TraceReplayer(factory=mutant)
        self.lines = 0
        new = json.loads(trace[0])
        revision = Revision(new.get("revision", SEED.value))
        self.obs = Observation(UUID(new["handoff_id"]), HandoffOrder(new["order"]), revision)
        self.findings: list[Invariant] = []
        self._feed(trace[0])
        self.replies = [self.give(Input.from_wire(json.loads(line))) for line in trace[1:]]

    def _feed(self, line: str) -> dict[str, Any]:
        self.lines += 1
        return self.replayer.reply(line, self.lines)

    def give(self, op: Input) -> Reply:
        reply = reply_from_wire(self._feed(json.dumps(op.to_wire(TRACE_KEY))))
        self.obs, findings = observe(self.obs, op, reply)
        self.findings += [invariant for invariant, _ in findings]
        return reply

    def drive_honestly(self) -> None:
        """Give honest inputs, explorer order, while one of them changes what is known."""
        while not self.obs.complete:
            before = self.obs
            for op in inputs_for(before):
                if before.is_honest(op):
                    self.give(op)
                    if self.obs != before:
                        break
            else:
                return


def _session(mutant: type, trace: tuple[str, ...]) -> _Session:
    return _Session(trace, mutant)


@pytest.mark.slow
def test_rejected_input_that_changed_state_replays_to_a_wedge() -> None:
    violation = _violation(
        Case(RecordsBeforeValidating, SF, Invariant.REJECTED_INPUT_CHANGES_NOTHING, 2)
    )
    submit = Input("outcome", action_id=0, outcome=HandoffActionOutcome.SUBMITTED)

    broken = _session(RecordsBeforeValidating, violation.trace)
    assert broken.replies[-1].error is HandoffErrorCode.INVALID_OUTCOME
    # The rejected outcome was kept: the right one now conflicts with it, forever.
    assert broken.give(submit).error is HandoffErrorCode.CONFLICTING_OUTCOME
    broken.drive_honestly()
    assert not broken.obs.complete

    correct = _session(HandoffCoordinator, violation.trace)
    assert correct.replies[-1].error is HandoffErrorCode.INVALID_OUTCOME
    assert correct.give(submit).error is None
    correct.drive_honestly()
    assert correct.obs.completion is HandoffCompletion.SUCCESS
    assert broken.findings == correct.findings == []


@pytest.mark.slow
def test_wedged_cleanup_replays_to_a_state_honest_inputs_cannot_complete() -> None:
    violation = _violation(Case(DropsCancelDestination, DF, Invariant.LIVENESS, 2))
    broken = _session(DropsCancelDestination, violation.trace)
    broken.drive_honestly()
    assert not broken.obs.complete
    assert broken.findings == []

    correct = _session(HandoffCoordinator, violation.trace)
    correct.drive_honestly()
    assert correct.obs.completion is HandoffCompletion.CANCELED


@pytest.mark.slow
def test_a976b2bf_passed_off_as_seed_wedges_where_the_seed_completes() -> None:
    violation = _violation(Case(A976b2bfPassedOffAsSeed, SF, Invariant.LIVENESS, 3, revision=SEED))
    assert violation.state == ("held", "reserving", "transfer_idle")
    broken = _session(A976b2bfPassedOffAsSeed, violation.trace)
    broken.drive_honestly()
    assert not broken.obs.complete  # its only DestinationReserved is refused, for good
    correct = _session(HandoffCoordinator, violation.trace)
    correct.drive_honestly()
    assert correct.obs.completion is HandoffCompletion.SUCCESS
    assert broken.findings == correct.findings == []


@pytest.mark.slow
def test_crash_replays_to_the_same_exception() -> None:
    violation = _violation(Case(CrashesOnUnknownAction, DF, Invariant.INPUTS_HANDLED, 1))
    assert "KeyError" in violation.message
    with pytest.raises(KeyError):
        _replay(CrashesOnUnknownAction, violation.trace)
    assert "error" in json.loads(list(replay(violation.trace))[-1])


@pytest.mark.slow
def test_nondeterminism_replays_to_different_replies() -> None:
    violation = _violation(Case(SharesStartsAcrossInstances, SF, Invariant.DETERMINISTIC, 1))
    first = _replay(SharesStartsAcrossInstances, violation.trace)
    second = _replay(SharesStartsAcrossInstances, violation.trace)
    assert first != second
    assert list(replay(violation.trace)) == list(replay(violation.trace))


@pytest.mark.slow
def test_a_violating_state_is_not_explored_further() -> None:
    # Past the kept outcome lies a wedge; it is not reported as a second violation.
    report = explore(SF, factory=RecordsBeforeValidating)
    assert [v.invariant for v in report.violations] == [Invariant.REJECTED_INPUT_CHANGES_NOTHING]
    assert report.exhausted


@pytest.mark.slow
def test_max_states_cuts_the_exploration_short() -> None:
    report = explore(SF, max_states=10)
    assert report.states == 10
    assert not report.exhausted
    assert not report.ok
    assert report.violations == ()

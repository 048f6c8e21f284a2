"""Random fact/outcome sequences keep the protocol's invariants (hypothesis, stateful).

Both revisions: under ``a976b2bf`` a terminal fact after Success reopens cleanup, so a
handoff may issue CancelDestination and a second Complete (Canceled) after the first.
"""

from __future__ import annotations

import math
import uuid

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from handoff_fsm import (
    Canceled,
    DestinationReserved,
    Failed,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffCoordinator,
    HandoffError,
    HandoffOrder,
    HandoffTransferTiming,
    IssuedHandoffAction,
    Revision,
    SourceHeld,
    TimedOut,
    TransferCompleted,
    TransferTimingMode,
)

pytestmark = pytest.mark.slow  # the stateful run takes seconds of CPU (tests/quick.py)

HID = uuid.UUID(int=5)
OTHER = uuid.UUID(int=6)
OUTCOMES = st.sampled_from(
    [
        HandoffActionOutcome.SUBMITTED,
        HandoffActionOutcome.ACCEPTED,
        HandoffActionOutcome.SCHEDULED,
        HandoffActionOutcome.APPLIED,
        HandoffActionOutcome.NOOP,
        HandoffActionOutcome.failed("x"),
        HandoffActionOutcome.failed("y"),
    ]
)
TIMINGS = st.builds(
    HandoffTransferTiming,
    mode=st.sampled_from(TransferTimingMode),
    full_prompt_tokens=st.integers(0, 10_000),
    kv_bytes_per_token=st.none() | st.integers(0, 1 << 20),
    bandwidth_gb_s=st.none() | st.sampled_from([0.0, 1.0, 25.0, -1.0, math.nan, math.inf]),
)
GOOD = {
    "SubmitPrefill": {"Submitted"},
    "ReserveDestination": {"Accepted"},
    "StartTransfer": {"Scheduled"},
    "ActivateDestination": {"Applied"},
    "ReleaseSource": {"Applied", "Noop"},
    "CancelSource": {"Applied", "Noop"},
    "CancelDestination": {"Applied", "Noop"},
}


class HandoffProtocol(RuleBasedStateMachine):
    """Drives one coordinator with arbitrary inputs; an observer checks every output."""

    def __init__(self) -> None:
        super().__init__()
        self.coordinator: HandoffCoordinator | None = None
        self.issued: dict[int, str] = {}
        self.acknowledged: dict[int, str] = {}
        self.outputs: list[IssuedHandoffAction] = []
        self.completes = 0
        self.first_completion: HandoffCompletion | None = None
        self.reopened = False
        """a976b2bf: CancelDestination was issued after a successful Complete."""

    @rule(
        order=st.sampled_from(HandoffOrder),
        engine=st.sampled_from(["compiled", "statechart"]),
        revision=st.sampled_from(Revision),
    )
    @precondition(lambda self: self.coordinator is None)
    def create(self, order: HandoffOrder, engine: str, revision: Revision) -> None:
        self.coordinator = HandoffCoordinator(HID, order, 1.5, revision=revision, engine=engine)  # type: ignore[arg-type]

    def _reopens(self, name: str) -> bool:
        """a976b2bf: after Success, the reopened cleanup's cancel, then its Complete."""
        assert self.coordinator is not None
        if self.coordinator.revision is not Revision.A976B2BF or self.completes != 1:
            return False
        if self.first_completion is not HandoffCompletion.SUCCESS:
            return False
        return name == ("Complete" if self.reopened else "CancelDestination")

    def _apply(self, call: object) -> None:
        assert self.coordinator is not None
        before = self.coordinator.snapshot()
        try:
            actions = call()  # type: ignore[operator]
        except HandoffError:
            assert self.coordinator.snapshot() == before, "a rejected input changed the coordinator"
            return
        self._observe(actions)

    def _observe(self, actions: list[IssuedHandoffAction]) -> None:
        for issued in actions:
            name = type(issued.action).__name__
            if self.completes:
                assert self._reopens(name), "an action was issued after Complete"
                self.reopened = True
            expected_id = self.outputs[-1].id + 1 if self.outputs else 0
            assert issued.id == expected_id, "action ids must be consecutive"
            assert issued.action.handoff_id == HID
            if name == "Complete":
                self._check_owners_settled()
                self.completes += 1
                if self.completes == 1:
                    assert self.coordinator is not None
                    self.first_completion = self.coordinator.completion
            self.issued[issued.id] = name
            self.outputs.append(issued)

    def _settled(self, *names: str) -> bool:
        return any(
            self.acknowledged.get(i) in GOOD[self.issued[i]]
            for i in self.issued
            if self.issued[i] in names
        )

    def _check_owners_settled(self) -> None:
        kinds = set(self.issued.values())
        if "SubmitPrefill" in kinds:
            assert self._settled("ReleaseSource", "CancelSource"), "source leaked at Complete"
        if "ReserveDestination" in kinds:
            assert self._settled("ActivateDestination", "CancelDestination"), (
                "destination leaked at Complete"
            )
        if self.reopened:
            assert self._settled("CancelDestination"), "decoding destination leaked at Complete"

    @rule()
    @precondition(lambda self: self.coordinator is not None)
    def start(self) -> None:
        assert self.coordinator is not None
        self._apply(self.coordinator.start)

    @rule(timing=TIMINGS, foreign=st.booleans())
    @precondition(lambda self: self.coordinator is not None)
    def source_held(self, timing: HandoffTransferTiming, foreign: bool) -> None:
        assert self.coordinator is not None
        fact = SourceHeld(handoff_id=OTHER if foreign else HID, transfer_timing=timing)
        self._apply(lambda: self.coordinator.on_fact(fact))

    @rule(
        kind=st.sampled_from([DestinationReserved, TransferCompleted, Failed, TimedOut, Canceled]),
        foreign=st.booleans(),
        tokens=st.integers(0, 5000),
    )
    @precondition(lambda self: self.coordinator is not None)
    def other_fact(self, kind: type, foreign: bool, tokens: int) -> None:
        assert self.coordinator is not None
        handoff_id = OTHER if foreign else HID
        fact = (
            kind(handoff_id=handoff_id, transferable_prompt_tokens=tokens)
            if kind is DestinationReserved
            else kind(handoff_id=handoff_id)
        )
        self._apply(lambda: self.coordinator.on_fact(fact))

    @rule(data=st.data(), outcome=OUTCOMES, honest=st.booleans())
    @precondition(lambda self: self.coordinator is not None)
    def outcome(self, data: st.DataObject, outcome: HandoffActionOutcome, honest: bool) -> None:
        assert self.coordinator is not None
        ids = [*sorted(self.issued), len(self.issued) + 3]
        action_id = data.draw(st.sampled_from(ids))
        if honest and action_id in self.issued and self.issued[action_id] in GOOD:
            outcome = HandoffActionOutcome(kind=sorted(GOOD[self.issued[action_id]])[0])
        was_complete = self.coordinator.is_complete
        before = self.coordinator.snapshot()
        try:
            actions = self.coordinator.on_action_outcome(action_id, outcome)
        except HandoffError:
            assert self.coordinator.snapshot() == before
            return
        if not was_complete and action_id in self.issued and action_id not in self.acknowledged:
            self.acknowledged[action_id] = outcome.kind.value
        self._observe(actions)

    @invariant()
    def completion_is_consistent(self) -> None:
        if self.coordinator is None:
            return
        assert self.completes <= (2 if self.coordinator.revision is Revision.A976B2BF else 1)
        running_again = self.reopened and self.completes == 1
        assert self.coordinator.is_complete == (self.completes >= 1 and not running_again)
        assert (self.coordinator.completion is not None) == (self.completes >= 1)
        if running_again:
            assert self.coordinator.completion is HandoffCompletion.SUCCESS
        if self.completes == 2:
            assert self.coordinator.completion is HandoffCompletion.CANCELED
        if self.coordinator.completion is HandoffCompletion.SUCCESS:
            assert self._settled("ActivateDestination") and self._settled("ReleaseSource")
        kinds = [type(a.action).__name__ for a in self.outputs]
        assert kinds.count("StartTransfer") <= 1

    @invariant()
    def snapshot_restores_to_an_equal_coordinator(self) -> None:
        if self.coordinator is not None:
            snapshot = self.coordinator.snapshot()
            assert HandoffCoordinator.restore(snapshot).snapshot() == snapshot


HandoffProtocol.TestCase.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None
)
TestHandoffProtocol = HandoffProtocol.TestCase

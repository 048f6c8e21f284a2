"""The session of the world: the real coordinator inside the real session policy, each
of its steps computed once.

Rule kept here: the session is never re-implemented. A session state is a
coordinator's snapshot together with its policy's decisive state
(:attr:`~handoff_fsm.policy.PolicySnapshot.decisive`); what an input does in it is
computed by a real coordinator (an exact copy, ``copy.copy``, of one that reached
that state) inside a real
:class:`~handoff_fsm.policy.SessionPolicy` (restored from its
:class:`~handoff_fsm.policy.PolicySnapshot`), fed exactly what a runtime would feed
it (``start``, a fact, an acknowledgement, an expired timer), and remembered as a
:class:`Move`. Both are deterministic and the policy's tallies steer nothing, so a
session state and an input always give the same move: the world, which meets the same
pair again and again, pays for each once.

Time is abstract: every call is made at time 0 but an expiry, which is given the
timer the policy asked for at its own due time (whatever that is, nothing else
depends on it). The coordinator's inputs the policy fed are recorded in each move, so
a run's trace is the concatenation of its moves' inputs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from functools import cache
from typing import Final, NamedTuple
from uuid import UUID

from handoff_fsm.chart import FACT_EVENTS
from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.errors import HandoffError, handoff_error
from handoff_fsm.io.inputs import Input
from handoff_fsm.model import (
    Complete,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
)
from handoff_fsm.policy import (
    PolicySnapshot,
    SessionPolicy,
    SessionStep,
    SessionTimer,
)
from handoff_fsm.snapshot import HandoffSnapshot
from handoff_fsm.structure.transitions import chart_state_of
from handoff_fsm.verify.exploration import HANDOFF_ID
from handoff_fsm.verify.system.errors import SystemErrorCode
from handoff_fsm.verify.system.world import (
    ACK,
    ACTION,
    ACTION_KINDS,
    DEADLINE,
    FACT,
    FACTS,
    KIND_INDEX,
    OUTCOMES,
    Message,
    TimerKey,
)

TIMER: Final = 3
"""The channel of a session input that is an expired timer: ``(TIMER, action id, send)``."""

SessionInput = tuple[int, int, int]
"""``(ACK, action id, outcome)``, ``(FACT, fact, 0)`` or ``(TIMER, action id, send)``."""

PolicyFactory = Callable[[HandoffCoordinator], SessionPolicy]
"""Makes the policy around a fresh coordinator (``SessionPolicy.factory(...)``, or a subclass's)."""

NOW: Final = 0.0


class SessionInfo(NamedTuple):
    """What the world and its properties read of a session state."""

    finished: bool
    """:attr:`SessionPolicy.finished`: the coordinator completed or the session gave up."""
    final: bool
    """No input changes it any more: it gave up, or its coordinator is final."""
    gave_up: bool
    """It abandoned cleanup (every unconfirmed cleanup action)."""
    complete: bool
    completion: HandoffCompletion | None
    unconfirmed: frozenset[str]
    """The owners (``source``, ``destination``) its result names as unconfirmed."""
    awaited: frozenset[int]
    """The actions its policy still awaits (so may send again); none once it is final."""
    dead: frozenset[int]
    """The facts (by index into :data:`~handoff_fsm.verify.system.world.FACTS`) no chart
    state reachable from its coordinator's handles: delivering one never changes anything."""
    may_issue: frozenset[int]
    """The action kinds (by index into ``ACTION_KINDS``) its coordinator may still issue."""


class Move(NamedTuple):
    """What one input did to a session state."""

    target: int
    """The session state after it."""
    sends: tuple[Message, ...]
    """The actions to perform (re-sends included), as messages to the workers."""
    timers: tuple[TimerKey, ...]
    """The timers it armed."""
    fed: tuple[Input, ...]
    """What the policy fed the coordinator (none when it ignored the input)."""
    refused: tuple[str, ...]
    """Each input the coordinator refused and the policy could not handle (its rejections)."""
    completion_problem: str | None
    """How the actions broke ``single_completion``, if they did."""
    issued: tuple[IssuedHandoffAction, ...]
    """Every action the step named, ``Complete`` included."""

    @property
    def changes_nothing(self) -> bool:
        """Nothing any later step or property reads changed (stale timers do this)."""
        return not (self.sends or self.timers or self.refused or self.completion_problem)


class _Recorder:
    """The coordinator as the policy sees it, writing down every input it is fed and
    every refusal it answers with."""

    __slots__ = ("coordinator", "fed", "raised")

    def __init__(self, coordinator: HandoffCoordinator) -> None:
        self.coordinator = coordinator
        self.fed: list[Input] = []
        self.raised: list[HandoffError] = []

    @property
    def handoff_id(self) -> UUID:
        return self.coordinator.handoff_id

    @property
    def is_complete(self) -> bool:
        return self.coordinator.is_complete

    @property
    def completion(self) -> HandoffCompletion | None:
        return self.coordinator.completion

    @property
    def outstanding(self) -> tuple[IssuedHandoffAction, ...]:
        return self.coordinator.outstanding

    def start(self) -> list[IssuedHandoffAction]:
        self.fed.append(Input.START)
        return self._fed(self.coordinator.start)

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        self.fed.append(Input("fact", fact=fact))
        return self._fed(self.coordinator.on_fact, fact)

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        self.fed.append(Input("outcome", action_id=action_id, outcome=outcome))
        return self._fed(self.coordinator.on_action_outcome, action_id, outcome)

    def _fed(
        self, call: Callable[..., list[IssuedHandoffAction]], *given: object
    ) -> list[IssuedHandoffAction]:
        try:
            return call(*given)
        except HandoffError as error:
            self.raised.append(error)
            raise


_Live = tuple[HandoffCoordinator, _Recorder, SessionPolicy]


class Session:
    """Every session state the world reaches, and every move computed in them.

    ``coordinator`` is the coordinator class (its ``restore`` rebuilds one from a
    snapshot); ``policy`` makes the policy around a fresh one, and the policy's class
    rebuilds it from its snapshot (``SessionPolicy.restore``), so a subclass (a mutant)
    is explored as itself.
    """

    def __init__(
        self,
        revision: Revision,
        policy: PolicyFactory,
        coordinator: type[HandoffCoordinator] = HandoffCoordinator,
    ) -> None:
        self.revision = revision
        self._policy = policy
        self._coordinator = coordinator
        self._index: dict[tuple[Hashable, object], int] = {}
        self._snapshots: list[tuple[HandoffSnapshot, PolicySnapshot]] = []
        self._class: list[type[SessionPolicy]] = []
        self._templates: list[HandoffCoordinator] = []
        """A coordinator in each session state, kept apart: a move from a state starts from
        a copy of it when no live pair is spare (a copy is exact, and cheaper than a
        restore from the snapshot)."""
        self.info: list[SessionInfo] = []
        self.moves: dict[tuple[int, SessionInput], Move] = {}
        self._spare: dict[int, list[_Live]] = {}
        """Live pairs known to be in a session state (each move leaves one), to use
        instead of restoring one from the state's snapshots."""
        self._keys: dict[int, Hashable] = {}
        """The key (:func:`_coordinator_key`) of each snapshot kept in ``_snapshots``, by
        its id (those are alive as long as the session)."""
        self.armed: dict[tuple[int, tuple[TimerKey, ...]], tuple[TimerKey, ...]] = {}
        """For the search: which of some timers are still armed in a session state."""
        self._timers: dict[TimerKey, SessionTimer] = {}
        """A timer the policy asked for, by key: what an expiry hands it back."""

    @property
    def states(self) -> int:
        return len(self.info)

    def start(self, order: HandoffOrder) -> Move:
        """A fresh coordinator and policy, started: the move into the first session state."""
        coordinator = self._coordinator(HANDOFF_ID, order, revision=self.revision)
        recorder = _Recorder(coordinator)
        policy = self._policy(recorder)  # type: ignore[arg-type]  # a Coordinated
        if not isinstance(policy, SessionPolicy):
            raise handoff_error(
                SystemErrorCode.WORLD_REFUSED,
                f"the policy factory made a {type(policy).__name__}, not a SessionPolicy",
            )
        return self._moved(None, (coordinator, recorder, policy), lambda p: p.start(NOW))

    def move(self, session: int, given: SessionInput) -> Move:
        """What ``given`` does in session state ``session`` (computed once)."""
        key = (session, given)
        move = self.moves.get(key)
        if move is None:
            move = self.moves[key] = self._compute(session, given)
        return move

    def _compute(self, session: int, given: SessionInput) -> Move:
        spares = self._spare.get(session)
        live = spares.pop() if spares else None
        if live is None:
            _, policy_snapshot = self._snapshots[session]
            coordinator = copy.copy(self._templates[session])
            recorder = _Recorder(coordinator)
            policy = self._class[session].restore(recorder, policy_snapshot)
            live = (coordinator, recorder, policy)
        channel, a, b = given
        if channel == ACK:
            outcome = OUTCOMES[b]
            return self._moved(session, live, lambda p: p.outcome(a, outcome, NOW))
        if channel == FACT:
            fact = FACTS[a]
            return self._moved(session, live, lambda p: p.fact(fact, NOW))
        timer = self._timers[(a, b)]
        return self._moved(session, live, lambda p: p.expire(timer, timer.when))

    def _moved(
        self, session: int | None, live: _Live, call: Callable[[SessionPolicy], SessionStep]
    ) -> Move:
        coordinator, recorder, policy = live
        recorder.fed = []
        before = None if session is None else self.info[session]
        recorder.raised = []
        try:
            step = call(policy)
        except HandoffError as error:  # the policy refused what a runtime would feed it
            raise handoff_error(
                SystemErrorCode.WORLD_REFUSED,
                f"the session policy refused an input of the world: {error}",
            ) from error
        refused: tuple[str, ...] = ()
        if recorder.raised:  # the coordinator refused something: did the policy handle it?
            raised = {id(error) for error in recorder.raised}
            refused = tuple(
                f"{_input_text(r.input)} was refused: {r.error.code.value}"
                for r in policy.result.rejected
                if id(r.error) in raised
            )
        unchanged = None if session is None or recorder.fed else self._snapshots[session][0]
        target = self._state(coordinator, policy, unchanged)
        sends: list[Message] = []
        timers: list[TimerKey] = []
        for issued in step.actions:
            kind = type(issued.action)
            if kind is not Complete:
                sends.append((ACTION, issued.id, KIND_INDEX[kind], 0))
        for timer in step.timers:
            key = DEADLINE if timer.action_id is None else (timer.action_id, timer.send)
            self._timers.setdefault(key, timer)
            timers.append(key)
        problem = _completion_problem(before, self.info[target], tuple(step.actions))
        self._spare.setdefault(target, []).append(live)
        return Move(
            target,
            tuple(sends),
            tuple(timers),
            tuple(recorder.fed),
            refused,
            problem,
            tuple(step.actions),
        )

    def _state(
        self,
        coordinator: HandoffCoordinator,
        policy: SessionPolicy,
        unchanged: HandoffSnapshot | None = None,
    ) -> int:
        """The number of the session state the pair is in (a new one is recorded);
        ``unchanged``: the coordinator's snapshot, when it was fed nothing since."""
        coordinator_snapshot = coordinator.snapshot() if unchanged is None else unchanged
        policy_snapshot = policy.snapshot()
        if unchanged is None:
            coordinator_key = _coordinator_key(coordinator_snapshot)
        else:  # a snapshot kept in _snapshots: its id is its own for good
            coordinator_key = self._keys.get(id(unchanged))
            if coordinator_key is None:
                coordinator_key = self._keys[id(unchanged)] = _coordinator_key(unchanged)
        key = (coordinator_key, policy_snapshot.decisive)
        number = self._index.get(key)
        if number is None:
            number = self._index[key] = len(self.info)
            self._snapshots.append((coordinator_snapshot, policy_snapshot))
            self._templates.append(copy.copy(coordinator))
            self._class.append(type(policy))
            gave_up = policy_snapshot.decisive[0][2]
            final = gave_up or coordinator.is_final
            awaited = policy_snapshot.decisive[1]
            dead, may_issue = self._ahead(coordinator, coordinator_snapshot)
            self.info.append(
                SessionInfo(
                    finished=policy.finished,
                    final=final,
                    gave_up=gave_up,
                    complete=coordinator.is_complete,
                    completion=policy.completion,
                    unconfirmed=frozenset(o.value for o in policy.result.unconfirmed_owners),
                    awaited=frozenset(() if final else (issued.id for issued, _ in awaited)),
                    dead=dead,
                    may_issue=may_issue,
                )
            )
        return number

    def _ahead(
        self, coordinator: HandoffCoordinator, snapshot: HandoffSnapshot
    ) -> tuple[frozenset[int], frozenset[int]]:
        """What lies ahead of ``snapshot``'s chart state, read off the compiled table the
        coordinator runs: the facts no reachable chart state handles, and the action
        kinds some reachable step may still issue. For another coordinator class, whose
        own methods may do what the table does not say: no fact, every kind."""
        everything: tuple[frozenset[int], frozenset[int]] = (
            frozenset(),
            frozenset(range(len(ACTION_KINDS))),
        )
        if type(coordinator) is not HandoffCoordinator:
            return everything
        state = chart_state_of(snapshot)
        if state is None:
            return everything
        events, effects = _reachable(state.revision)[state.index]
        dead = frozenset(i for i, fact in enumerate(FACTS) if FACT_EVENTS[type(fact)] not in events)
        kinds = frozenset(i for i, kind in enumerate(ACTION_KINDS) if _ISSUES[kind] in effects)
        return dead, kinds


_ISSUES: Final = {
    kind: "issue_" + "".join(f"_{c.lower()}" if c.isupper() else c for c in kind.__name__)[1:]
    for kind in ACTION_KINDS
}
"""The chart effect that issues each action kind (``issue_submit_prefill`` ...)."""


@cache
def _reachable(revision: Revision) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """Per compiled chart state: the events handled and the effects run in some chart
    state or step reachable from it."""
    compiled = compiled_chart(revision)
    known = {effect for step in compiled.steps for effect in step.effects}
    missing = [name for name in _ISSUES.values() if name not in known]
    if missing:  # a chart that names its effects otherwise: assume it may issue anything
        known |= set(missing)
    successors: list[list[tuple[int, tuple[str, ...]]]] = [[] for _ in compiled.states]
    for step in compiled.steps:
        successors[step.source].append((step.target, step.effects))
    reachable = []
    for state in compiled.states:
        seen, pending = {state.index}, [state.index]
        events: set[str] = set()
        effects: set[str] = set(missing)
        while pending:
            here = pending.pop()
            events.update(compiled.states[here].steps)
            for there, done in successors[here]:
                effects.update(done)
                if there not in seen:
                    seen.add(there)
                    pending.append(there)
        reachable.append((frozenset(events), frozenset(effects)))
    return tuple(reachable)


def _coordinator_key(snapshot: HandoffSnapshot) -> Hashable:
    """Everything in a coordinator's snapshot, as plain values (cheaper to hash and
    compare than the snapshot model; equal exactly when the snapshots are)."""
    return (
        snapshot.revision,
        snapshot.order,
        snapshot.state,
        snapshot.source_engaged,
        snapshot.destination_engaged,
        snapshot.completion,
        snapshot.transfer_timing,
        snapshot.transferable_prompt_tokens,
        snapshot.next_action_id,
        snapshot.fallback_transfer_delay_ms,
        tuple((issued.id, issued.action) for issued in snapshot.issued),
        tuple((o.action_id, o.outcome.kind, o.outcome.reason) for o in snapshot.outcomes),
    )


def _input_text(given: object) -> str:
    if isinstance(given, tuple):
        action_id, outcome = given
        return f"the acknowledgement {outcome} of #{action_id}"
    return type(given).__name__


def _completion_problem(
    before: SessionInfo | None, after: SessionInfo, actions: tuple[IssuedHandoffAction, ...]
) -> str | None:
    """How one step's actions break ``single_completion``: a second Complete of one
    completion value, an action after Complete, an action while complete that does not
    reopen the handoff."""
    names = [type(issued.action).__name__ for issued in actions]
    completes = [index for index, issued in enumerate(actions) if type(issued.action) is Complete]
    if completes:
        if len(completes) > 1:
            return f"Complete issued {len(completes)} times in one step ({', '.join(names)})"
        if completes[0] != len(actions) - 1:
            return f"an action issued after Complete in the same step ({', '.join(names)})"
        if (
            before is not None
            and before.completion is not None
            and after.completion == before.completion
        ):
            value = after.completion.value if after.completion is not None else "None"
            return f"a second Complete ({value}), after one already issued"
        return None
    if actions and before is not None and before.complete and after.complete:
        return f"{', '.join(names)} issued after Complete, without reopening the handoff"
    return None

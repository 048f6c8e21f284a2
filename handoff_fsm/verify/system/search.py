"""The exhaustive, breadth-first exploration of the world, and the judging of its properties.

Rule kept here: every nondeterministic choice of the world is a step the search
branches on (:func:`steps_of`), and each step is applied by one function
(:func:`apply`), the same for the search and for writing a counterexample out, so a
counterexample replays exactly what was explored. States are visited breadth-first,
so the first violation of a property found is a shortest one. The session's moves
come from :class:`~handoff_fsm.verify.system.session.Session` (the real coordinator
in the real policy); the workers' from :mod:`~handoff_fsm.verify.system.world`.

What can no longer matter is taken out of every state (:func:`normal`), and a timer
that would change nothing is disarmed; docs/verification.md says why neither loses a
counterexample.
"""

from __future__ import annotations

import gc
import time
from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import eq
from typing import Final

from handoff_fsm.model import HandoffOrder, ReserveDestination, SubmitPrefill
from handoff_fsm.verify.system.assumptions import Answers, SystemAssumptions
from handoff_fsm.verify.system.properties import Property, SystemSettings
from handoff_fsm.verify.system.session import TIMER, Move, Session
from handoff_fsm.verify.system.world import (
    ACK,
    ACTION,
    CANCELED,
    CLEANUP,
    CLIENT_CANCELED,
    DECODING,
    DESTINATION_FAILED,
    DESTINATION_STATES,
    DESTINATION_TOLD_TO_CANCEL,
    FACT,
    FAILED,
    FREE,
    FROM_DESTINATION,
    FROM_SOURCE,
    KIND_INDEX,
    SOURCE_FAILED,
    SOURCE_STATES,
    SOURCE_TOLD_TO_CANCEL,
    TO_SOURCE,
    WORK,
    Message,
    TimerKey,
    World,
    answers,
)

START, DELIVER, LOSE, DUPLICATE, FIRE, WORKER, FAIL, CLIENT = range(8)
"""What a step of the world is (``START`` only begins a run: the session's ``start``)."""
OWN_SOURCE, OWN_DESTINATION = 0, 1
"""Whose failure (``FAIL``) a step is; ``WORKER`` is the destination's decode ending."""

Memory = tuple[tuple[int, int], ...]
SUBMIT: Final = KIND_INDEX[SubmitPrefill]
RESERVE: Final = KIND_INDEX[ReserveDestination]

Step = tuple[int, object]
"""``(kind, what)``: the message delivered, lost or duplicated, the timer fired, the
worker that fails, the order of a run's first state (``START``)."""


@dataclass(slots=True)
class Finding:
    """The first (so shortest) violation of a property, and how many there were."""

    node: int
    """The state the run ends in (for a step's violation, the state it was taken in)."""
    steps: tuple[Step, ...]
    """The step from ``node`` that broke it (none: the state itself does)."""
    message: str
    count: int = 1
    fewest_losses: int = 0
    """The fewest lost messages among all its violations."""


@dataclass(slots=True)
class Graph:
    """Everything one exploration reached."""

    settings: SystemSettings
    session: Session
    worlds: list[World] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    via: list[Step] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    index: dict[World, int] = field(default_factory=dict)
    transitions: int = 0
    findings: dict[Property, Finding] = field(default_factory=dict)
    exhausted: bool = True
    seconds: float = 0.0

    def path(self, node: int) -> list[Step]:
        """The steps from the run's first state (its ``START`` first) to ``node``."""
        steps = []
        while node >= 0:
            steps.append(self.via[node])
            node = self.parent[node]
        steps.reverse()
        return steps


# ---------------------------------------------------------------------- one step


def normal(session: Session, world: World) -> World:
    """``world`` with what can no longer matter taken out (docs/verification.md):

    * a final session's messages (it gave up, or its coordinator is final: no input
      changes it any more, so delivering one changes nothing);
    * a fact no chart state the coordinator can still reach handles (it is ignored
      there: delivering it changes nothing, now or later);
    * copies of a cleanup action, or of its acknowledgement, beyond one more than the
      losses left: a cancel leaves its worker free whatever it held, so a copy delivered
      right after another is answered ``Noop`` and changes nothing (``by-id``: answered
      as the first was), and the session settles each action on its first answer, so
      further copies only stand in for lost ones;
    * what a worker remembers (``by-id``) of an action no copy of which can reach it any
      more (none in flight, and the session no longer awaits it, so will not send it
      again);
    * whether a worker that can never hold the request again may still fail (its
      failure needs something to free): it is marked as failed;
    * whether a remembering worker was told to cancel, once no work for it can reach it
      any more (it only ever refuses work);
    * whether the client canceled, once the session ignores ``Canceled`` for good: it
      is marked as canceled, since a cancel now would change nothing but that
      (``cancel_stops_decode`` then judges the state as if it had been delivered, and
      a counterexample that has no cancel yet ends with one).
    """
    sid, source, destination, memory, net, timers, losses, duplicates, flags = world
    info = session.info[sid]
    given_net, given_memory, given_flags = net, memory, flags
    if net:  # sorted, so by channel: the actions, then the acknowledgements, then the facts
        if info.final:
            if net[-1][0] != ACTION:
                net = net[: bisect_left(net, _FIRST_ACK)]
        elif info.dead and net[-1][0] == FACT:
            dead = info.dead
            start = bisect_left(net, _FIRST_FACT)
            if any(m[1] in dead for m in net[start:]):
                net = net[:start] + tuple(m for m in net[start:] if m[1] not in dead)
        keep = losses + 1
        if len(net) > keep and any(map(eq, net, net[keep:])):
            net = _capped(net, keep)
    actions = net[: bisect_left(net, _FIRST_ACK)] if net and net[0][0] == ACTION else ()
    if memory:
        awaited = info.awaited
        flying = {m[1] for m in actions}
        kept = tuple(entry for entry in memory if entry[0] in awaited or entry[0] in flying)
        if len(kept) != len(memory):
            memory = kept
    if not flags & CLIENT_CANCELED and (info.final or CANCELED in info.dead):
        flags |= CLIENT_CANCELED
    may_issue = info.may_issue
    # A free worker that may still fail, or a worker told to cancel, whose work the
    # coordinator can no longer issue: only the work still in flight can reach it.
    source_idle = source == FREE and not flags & SOURCE_FAILED and SUBMIT not in may_issue
    destination_idle = (
        destination == FREE and not flags & DESTINATION_FAILED and RESERVE not in may_issue
    )
    if source_idle or destination_idle or flags & TOLD:
        # The kinds of the actions in flight their worker has not answered. A free worker
        # with none of its work coming never takes the request again (whether it may
        # still fail no longer matters); one told to cancel only ever refuses work.
        if memory:
            answered = {entry[0] for entry in memory}
            coming = {m[2] for m in actions if m[1] not in answered}
        else:
            coming = {m[2] for m in actions}
        if source_idle and SUBMIT not in coming:
            flags |= SOURCE_FAILED
        if destination_idle and RESERVE not in coming:
            flags |= DESTINATION_FAILED
        if flags & TOLD:
            for told, work in _TOLD_WORK:
                if flags & told and work.isdisjoint(may_issue) and work.isdisjoint(coming):
                    flags &= ~told
    if net is given_net and memory is given_memory and flags == given_flags:
        return world  # already normal: no new tuple
    return (sid, source, destination, memory, net, timers, losses, duplicates, flags)


_FIRST_ACK: Final = (ACK,)
_FIRST_FACT: Final = (FACT,)
"""Below every acknowledgement (fact) and above every action (acknowledgement) in a
sorted ``net``: messages compare by channel first."""
TOLD: Final = SOURCE_TOLD_TO_CANCEL | DESTINATION_TOLD_TO_CANCEL
_TOLD_WORK: Final = tuple(
    (told, frozenset(kind for kind in WORK if (kind in TO_SOURCE) == to_source))
    for told, to_source in ((SOURCE_TOLD_TO_CANCEL, True), (DESTINATION_TOLD_TO_CANCEL, False))
)
"""Each worker's told-to-cancel bit, with the work kinds it answers."""


def _capped(net: tuple[Message, ...], keep: int) -> tuple[Message, ...]:
    """``net`` with at most ``keep`` identical copies of each cleanup message (``net``
    is sorted, so copies stand together: :func:`normal` calls this only when some
    message has more than ``keep``, i.e. equals the one ``keep`` places after it)."""
    kept: list[Message] = []
    run = 0
    for message in net:
        run = run + 1 if kept and kept[-1] == message else 1
        if run > keep and _cleanup(message):
            continue
        kept.append(message)
    return tuple(kept)


def _cleanup(message: Message) -> bool:
    """A cleanup action, or the acknowledgement of one."""
    channel, _, b, c = message
    return (channel == ACTION and b in CLEANUP) or (channel == ACK and c in CLEANUP)


def _armed(
    session: Session, target: int, timers: tuple[TimerKey, ...], added: tuple[TimerKey, ...]
) -> tuple[TimerKey, ...]:
    """The timers still armed in session state ``target``: those whose expiry would
    change something there (a stale one never matters again)."""
    keys = tuple(sorted(set(timers).union(added))) if added else timers
    if not keys:
        return keys
    known = session.armed.get((target, keys))
    if known is not None:
        return known
    kept: tuple[TimerKey, ...] = ()
    if not session.info[target].final:
        for key in keys:
            move = session.move(target, (TIMER, key[0], key[1]))
            if move.target != target or not move.changes_nothing:
                kept += (key,)
    session.armed[(target, keys)] = kept
    return kept


def session_step(  # noqa: PLR0917  # the parts a step changes, beside the world
    session: Session,
    world: World,
    move: Move,
    net: tuple[Message, ...],
    timers: tuple[TimerKey, ...],
    flags: int,
) -> World:
    """The world after the session made ``move`` (the workers are as they were)."""
    _, source, destination, memory, _, _, losses, duplicates, _ = world
    target = move.target
    return normal(
        session,
        (
            target,
            source,
            destination,
            memory,
            tuple(sorted(net + move.sends)) if move.sends else net,
            _armed(session, target, timers, move.timers),
            losses,
            duplicates,
            flags,
        ),
    )


def apply(
    session: Session, world: World, step: Step, assumptions: SystemAssumptions
) -> tuple[World, Move | None]:
    """The world after ``step`` (its workers as ``assumptions`` has them), and the
    session's move when the step reached it."""
    sid, source, destination, memory, net, timers, losses, duplicates, flags = world
    kind, what = step
    if kind in (DELIVER, LOSE, DUPLICATE):
        message: Message = what  # type: ignore[assignment]
        at = net.index(message)
        rest = net[:at] + net[at + 1 :]
        if kind == LOSE:
            after = (sid, source, destination, memory, rest, timers, losses - 1, duplicates, flags)
            return normal(session, after), None
        if kind == DUPLICATE:
            more = tuple(sorted((*net, message)))
            after = (sid, source, destination, memory, more, timers, losses, duplicates - 1, flags)
            return normal(session, after), None
        channel, a, b, _ = message
        if channel == ACTION:
            by_id = assumptions.answers is Answers.BY_ID
            answered = next((answer for i, answer in memory if i == a), None) if by_id else None
            sent: tuple[Message, ...]
            if answered is not None:  # by-id: a copy is answered as the first was, nothing else
                sent = ((ACK, a, answered, b),)
            else:  # by-state: every copy is answered from what the worker holds now
                source, destination, flags, answer, fact = answers(
                    source, destination, flags, b, assumptions.workers
                )
                sender = FROM_SOURCE if b in TO_SOURCE else FROM_DESTINATION
                if by_id:
                    memory = tuple(sorted((*memory, (a, answer))))
                sent = ((ACK, a, answer, b),)
                if fact is not None:
                    sent += ((FACT, fact, sender, 0),)
            net = tuple(sorted(rest + sent))
            after = (sid, source, destination, memory, net, timers, losses, duplicates, flags)
            return normal(session, after), None
        move = session.move(sid, (ACK, a, b) if channel == ACK else (FACT, a, 0))
        return session_step(session, world, move, rest, timers, flags), move
    if kind == FIRE:
        key: TimerKey = what  # type: ignore[assignment]
        move = session.move(sid, (TIMER, key[0], key[1]))
        left = tuple(t for t in timers if t != key)
        return session_step(session, world, move, net, left, flags), move
    if kind == CLIENT:
        # The client's cancel reaches the session as it is sent (docs/verification.md).
        move = session.move(sid, (FACT, CANCELED, 0))
        return session_step(session, world, move, net, timers, flags | CLIENT_CANCELED), move
    if kind == WORKER:  # the request finished decoding: the destination sends nothing
        return (sid, source, FREE, memory, net, timers, losses, duplicates, flags), None
    if what == OWN_SOURCE:  # FAIL: the worker frees what it holds and says so
        source, flags, failed = FREE, flags | SOURCE_FAILED, (FACT, FAILED, FROM_SOURCE, 0)
    else:
        destination, flags = FREE, flags | DESTINATION_FAILED
        failed = (FACT, FAILED, FROM_DESTINATION, 0)
    net = tuple(sorted((*net, failed)))
    after = (sid, source, destination, memory, net, timers, losses, duplicates, flags)
    return normal(session, after), None


def steps_of(session: Session, world: World) -> Iterator[Step]:
    """Every step the world can take next, each once."""
    _, source, destination, _, net, timers, losses, duplicates, flags = world
    previous = None
    for message in net:
        if message == previous:
            continue  # two copies in flight: one choice
        previous = message
        yield (DELIVER, message)
        if losses:
            yield (LOSE, message)
        if duplicates:
            yield (DUPLICATE, message)
    for key in timers:
        yield (FIRE, key)
    if destination == DECODING:
        yield (WORKER, OWN_DESTINATION)
    if source != FREE and not flags & SOURCE_FAILED:
        yield (FAIL, OWN_SOURCE)
    if destination != FREE and not flags & DESTINATION_FAILED:
        yield (FAIL, OWN_DESTINATION)
    if not flags & CLIENT_CANCELED:
        yield (CLIENT, None)


def first_world(
    session: Session, settings: SystemSettings, order: HandoffOrder
) -> tuple[World, Move]:
    """A run's first state: the session started, its actions in flight."""
    move = session.start(order)
    budgets = settings.assumptions
    world: World = (move.target, FREE, FREE, (), (), (), budgets.losses, budgets.duplicates, 0)
    return session_step(session, world, move, (), (), 0), move


# ---------------------------------------------------------------------- judging


def quiescent(world: World) -> bool:
    """No message in flight and no timer armed (a decoding destination's finishing on
    its own does not count)."""
    return not world[4] and not world[5]


def holding(world: World) -> list[str]:
    """The workers holding the request's KV (a decoding destination does too), in words."""
    return [
        f"the {name} is {states[held]}"
        for name, held, states in (
            ("source", world[1], SOURCE_STATES),
            ("destination", world[2], DESTINATION_STATES),
        )
        if held
    ]


def state_findings(session: Session, world: World) -> list[tuple[Property, str]]:
    """The properties judged at quiescence."""
    if world[4] or world[5]:
        return []
    found = []
    source, destination, flags = world[1], world[2], world[8]
    if source != FREE or destination not in (FREE, DECODING):
        found.append((Property.NO_KV_LEAK, f"at rest, {' and '.join(holding(world))}"))
    if destination == DECODING and flags & CLIENT_CANCELED:
        found.append(
            (
                Property.CANCEL_STOPS_DECODE,
                "at rest, the client's Canceled reached the session and the destination "
                "still decodes",
            )
        )
    if not session.info[world[0]].finished:
        found.append((Property.TERMINATES, "at rest, and the session is not finished"))
    return found


def step_findings(
    session: Session, before: World, move: Move, after: World
) -> list[tuple[Property, str]]:
    """The properties judged on a step of the session."""
    found = [(Property.NO_REFUSAL, refusal) for refusal in move.refused]
    if move.completion_problem is not None:
        found.append((Property.SINGLE_COMPLETION, move.completion_problem))
    now = session.info[move.target]
    if now.gave_up and not session.info[before[0]].gave_up:
        holders = [name for name, held in (("source", after[1]), ("destination", after[2])) if held]
        if any(name not in now.unconfirmed for name in holders):
            named = ", ".join(sorted(now.unconfirmed)) or "no owner"
            found.append(
                (
                    Property.HONEST_ABANDONMENT,
                    f"the session abandoned cleanup naming {named} unconfirmed, while "
                    f"{' and '.join(holding(after))}",
                )
            )
    return found


# ---------------------------------------------------------------------- the search


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused, for a search and the reading of its graph.

    The graph keeps every world state reached, each a tuple of small ints, which no
    cycle holds: the collector's passes over that growing heap would find nothing, and
    they cost much of a search's time. It runs as before afterwards."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def explore_graph(settings: SystemSettings, session: Session, max_states: int | None) -> Graph:
    """Every world state reachable under ``settings``, breadth-first, with its findings
    (best run with the collector paused, :func:`collector_paused`)."""
    began = time.process_time()
    graph = Graph(settings, session)
    worlds, index, parent, via, depth = (
        graph.worlds,
        graph.index,
        graph.parent,
        graph.via,
        graph.depth,
    )

    for position, order in enumerate(settings.orders):
        world, move = first_world(session, settings, order)
        if world not in index:
            index[world] = len(worlds)
            worlds.append(world)
            parent.append(-1)
            via.append((START, position))
            depth.append(0)
        for name, message in (
            *step_findings(session, world, move, world),
            *state_findings(session, world),
        ):
            _found(graph, name, index[world], (), message, world)

    assumptions, info = settings.assumptions, session.info
    current = transitions = 0
    while current < len(worlds):
        if max_states is not None and len(worlds) >= max_states:
            graph.exhausted = False
            break
        world = worlds[current]
        below = depth[current] + 1
        for step in steps_of(session, world):
            after, moved = apply(session, world, step, assumptions)
            transitions += 1
            # Only a refusal, a completion problem or giving up can break a step's property.
            if moved is not None and (
                moved.refused
                or moved.completion_problem is not None
                or (info[moved.target].gave_up and not info[world[0]].gave_up)
            ):
                for name, message in step_findings(session, world, moved, after):
                    _found(graph, name, current, (step,), message, after)
            number = len(worlds)
            if index.setdefault(after, number) == number:
                worlds.append(after)
                parent.append(current)
                via.append(step)
                depth.append(below)
                if not after[4] and not after[5]:
                    for name, message in state_findings(session, after):
                        _found(graph, name, number, (), message, after)
        current += 1
    graph.transitions = transitions
    graph.seconds = time.process_time() - began
    return graph


def _found(  # noqa: PLR0917  # a finding's parts, in the order a reader names them
    graph: Graph, name: Property, node: int, steps: tuple[Step, ...], message: str, world: World
) -> None:
    lost = graph.settings.assumptions.losses - world[6]
    known = graph.findings.get(name)
    if known is None:
        graph.findings[name] = Finding(node, steps, message, 1, lost)
    else:
        known.count += 1
        known.fewest_losses = min(known.fewest_losses, lost)

"""``check_system``: explore the world of one revision and report each property.

Rule kept here: a report says only what the exploration found. Each violated
property's counterexample is its shortest run, replayed step by step with the very
function the search applies (:func:`~handoff_fsm.verify.system.search.apply`): its
world steps in words, and the coordinator's inputs the policy fed in that run as a
``handoff-fsm replay`` trace whose ``new`` line names the revision, so ``replay`` and
``lifecycle`` take it as it is.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Final

from handoff_fsm.coordinator import HandoffCoordinator
from handoff_fsm.errors import handoff_error
from handoff_fsm.io.inputs import Input
from handoff_fsm.model import (
    Complete,
    HandoffCompletion,
    HandoffOrder,
    Revision,
    StartTransfer,
    checked_member,
    checked_revision,
)
from handoff_fsm.policy import SessionPolicy
from handoff_fsm.verify.cache import kept
from handoff_fsm.verify.exploration import HANDOFF_ID
from handoff_fsm.verify.system.assumptions import Answers, SystemAssumptions, Workers
from handoff_fsm.verify.system.errors import SystemErrorCode
from handoff_fsm.verify.system.properties import (
    Counterexample,
    Mark,
    Property,
    PropertyVerdict,
    SystemReport,
    SystemSettings,
    WorldStep,
    report_from_record,
    report_record,
)
from handoff_fsm.verify.system.search import (
    CLIENT,
    DELIVER,
    DUPLICATE,
    FAIL,
    FIRE,
    LOSE,
    OWN_SOURCE,
    START,
    Finding,
    Graph,
    Step,
    apply,
    collector_paused,
    explore_graph,
    first_world,
)
from handoff_fsm.verify.system.session import Move, Session
from handoff_fsm.verify.system.world import (
    ACK,
    ACTION,
    ACTION_KINDS,
    CLEANUP,
    DESTINATION_STATES,
    FACTS,
    FROM_SOURCE,
    KIND_INDEX,
    OUTCOMES,
    SOURCE_STATES,
    TO_SOURCE,
    TRANSFER_COMPLETED,
    Message,
    TimerKey,
    World,
    answers,
    message_text,
)

DEADLINE_AFTER: Final = 100.0
ACK_TIMEOUT: Final = 10.0
CLEANUP_TIMEOUT: Final = 10.0
"""The policy's durations. Time is abstract (a timer may fire at any moment once armed),
so only whether each exists matters, not these values."""

TRACE_KEY: Final = "system"
"""The coordinator key of a counterexample's trace."""


def check_system(
    revision: Revision | str = Revision.SEED,
    *,
    losses: int = 0,
    duplicates: int = 0,
    cleanup_retries: int = 3,
    deadline: bool = True,
    orders: tuple[HandoffOrder, ...] | None = None,
    policy: type[SessionPolicy] = SessionPolicy,
    coordinator: type[HandoffCoordinator] = HandoffCoordinator,
    max_states: int | None = None,
    workers: Workers | str = Workers.REMEMBERING,
    answers: Answers | str = Answers.BY_STATE,
) -> SystemReport:
    """Explore every reachable state of the world of ``revision`` (docs/verification.md)
    and judge the six properties; each violated one comes with its shortest counterexample.

    ``policy`` is the session policy class (a subclass is explored as itself), made with
    a deadline (unless ``deadline`` is false), an acknowledgement and a cleanup timeout,
    and ``cleanup_retries``; ``coordinator`` the coordinator class. ``orders`` defaults
    to both. ``max_states`` bounds the world states explored (the report then is not
    ``ok``). ``losses``, ``duplicates``, ``workers`` and ``answers`` are the world's
    assumptions (:class:`~handoff_fsm.verify.system.assumptions.SystemAssumptions`, each
    default the weaker, realistic one): the network's budgets, what a worker does with
    work on a request it was told to cancel, how it answers an action delivered again.
    A count that is not an int >= 0, or a value of another kind, is
    ``invalid_system_setting``.
    """
    settings = system_settings(
        revision,
        losses=losses,
        duplicates=duplicates,
        cleanup_retries=cleanup_retries,
        deadline=deadline,
        orders=orders,
        workers=workers,
        answers=answers,
    )
    if max_states is not None:
        _count("max_states", max_states)

    def made(wrapped: HandoffCoordinator) -> SessionPolicy:
        return policy(
            wrapped,
            deadline=DEADLINE_AFTER if settings.deadline else None,
            ack_timeout=ACK_TIMEOUT,
            cleanup_ack_timeout=CLEANUP_TIMEOUT,
            cleanup_retries=settings.cleanup_retries,
        )

    session = Session(settings.revision, made, coordinator)
    with collector_paused():
        graph = explore_graph(settings, session, max_states)
        verdicts = []
        for name in Property:
            finding = graph.findings.get(name)
            if finding is None:
                verdicts.append(PropertyVerdict(name, None, settings.assumptions.losses, 0))
                continue
            tolerance = finding.fewest_losses - 1 if finding.fewest_losses else None
            example = counterexample(graph, name, finding)
            verdicts.append(PropertyVerdict(name, example, tolerance, finding.count))
    return SystemReport(
        settings=settings,
        states=len(graph.worlds),
        transitions=graph.transitions,
        session_states=session.states,
        session_moves=len(session.moves),
        max_depth=max(graph.depth, default=0),
        seconds=graph.seconds,
        verdicts=tuple(verdicts),
        exhausted=graph.exhausted,
    )


def system_settings(  # check_system's own keywords, checked
    revision: Revision | str = Revision.SEED,
    *,
    losses: int = 0,
    duplicates: int = 0,
    cleanup_retries: int = 3,
    deadline: bool = True,
    orders: tuple[HandoffOrder, ...] | None = None,
    workers: Workers | str = Workers.REMEMBERING,
    answers: Answers | str = Answers.BY_STATE,
) -> SystemSettings:
    """The settings :func:`check_system` explores, each checked (``invalid_system_setting``)."""
    invalid = SystemErrorCode.INVALID_SYSTEM_SETTING
    return SystemSettings(
        revision=checked_revision(revision),
        cleanup_retries=_count("cleanup_retries", cleanup_retries),
        deadline=bool(deadline),
        orders=_orders(orders),
        assumptions=SystemAssumptions(
            answers=checked_member(Answers, answers, invalid, "answers"),
            workers=checked_member(Workers, workers, invalid, "workers"),
            losses=_count("losses", losses),
            duplicates=_count("duplicates", duplicates),
        ),
    )


@cache
def default_report(
    revision: Revision, assumptions: SystemAssumptions | None = None
) -> SystemReport:
    """``check_system(revision)`` with the policy's and the orders' defaults, under
    ``assumptions`` (default: the default ones), computed once per process and kept on
    disk (:mod:`handoff_fsm.verify.cache`): it is deterministic, and the review, its
    verdict, its matrix and ``diff --check`` all read it."""
    assumed = SystemAssumptions() if assumptions is None else assumptions

    def computed() -> SystemReport:
        return check_system(
            revision,
            losses=assumed.losses,
            duplicates=assumed.duplicates,
            workers=assumed.workers,
            answers=assumed.answers,
        )

    parameters = {
        "revision": revision.value,
        "answers": assumed.answers.value,
        "workers": assumed.workers.value,
        "losses": assumed.losses,
        "duplicates": assumed.duplicates,
    }
    record = kept("system-report", parameters, lambda: report_record(computed()))
    try:
        return report_from_record(record)
    except (KeyError, TypeError, ValueError):  # not what report_record writes
        return computed()


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise handoff_error(
            SystemErrorCode.INVALID_SYSTEM_SETTING, f"{name} must be an int >= 0, got {value!r}"
        )
    return value


def _orders(orders: tuple[HandoffOrder, ...] | None) -> tuple[HandoffOrder, ...]:
    if orders is None:
        return tuple(HandoffOrder)
    try:
        chosen = tuple(dict.fromkeys(HandoffOrder(order) for order in orders))
    except (TypeError, ValueError) as error:
        raise handoff_error(
            SystemErrorCode.INVALID_SYSTEM_SETTING, f"orders must name handoff orders: {error}"
        ) from None
    if not chosen:
        raise handoff_error(SystemErrorCode.INVALID_SYSTEM_SETTING, "no order to explore")
    return chosen


# ---------------------------------------------------------------------- counterexamples


def counterexample(graph: Graph, name: Property, finding: Finding) -> Counterexample:
    """The shortest run of ``finding``, replayed: its steps in words and its trace."""
    path = graph.path(finding.node) + list(finding.steps)
    if name is Property.CANCEL_STOPS_DECODE and all(step[0] != CLIENT for step in path):
        # The search marks the client as canceled once the session ignores Canceled for
        # good (it would change nothing else): the run ends with that cancel.
        path.append((CLIENT, None))
    session, settings = graph.session, graph.settings
    start, position = path[0]
    assert start == START
    assert isinstance(position, int)
    order = settings.orders[position]
    world, move = first_world(session, settings, order)
    inputs = list(move.fed)
    kinds = {message[1]: message[2] for message in move.sends}
    steps, fed = [], []
    for step in path[1:]:
        after, moved = apply(session, world, step, settings.assumptions)
        abandons = moved is not None and (
            session.info[moved.target].gave_up and not session.info[world[0]].gave_up
        )
        completion = None if moved is None else session.info[moved.target].completion
        steps.append(
            describe(world, settings.assumptions, step, moved, kinds, abandons, completion)
        )
        fed.append(len(moved.fed) if moved is not None else 0)
        if moved is not None:
            inputs += moved.fed
            kinds.update((m[1], m[2]) for m in moved.sends)
        world = after
    return Counterexample(
        world=tuple(steps),
        trace=trace_lines(order, settings.revision, inputs),
        fed=tuple(fed),
        order=order,
        message=finding.message,
    )


def trace_lines(order: HandoffOrder, revision: Revision, inputs: list[Input]) -> tuple[str, ...]:
    """``inputs`` as ``handoff-fsm replay`` lines after a ``new`` line naming ``revision``."""
    new = {
        "coordinator": TRACE_KEY,
        "op": "new",
        "handoff_id": str(HANDOFF_ID),
        "order": order.value,
        "fallback_transfer_delay_ms": 0.0,
        "revision": revision.value,
    }
    return tuple(json.dumps(line) for line in [new, *(op.to_wire(TRACE_KEY) for op in inputs)])


def describe(  # noqa: PLR0917  # the step and what the replay knows of it, in order
    world: World,
    assumptions: SystemAssumptions,
    step: Step,
    move: Move | None,
    kinds: dict[int, int],
    abandons: bool,
    completion: HandoffCompletion | None = None,
) -> WorldStep:
    """One step of a run in words (``kinds``: each action id's kind, as far as known;
    ``abandons``: the step made the session abandon cleanup; ``completion``: the
    session's after it), and how a lifecycle drawing marks it."""
    kind, what = step
    ended = f" ({completion.value})" if completion is not None else ""
    if kind in (DELIVER, LOSE, DUPLICATE):
        message: Message = what  # type: ignore[assignment]
        words = message_text(message)
        sender, receiver = lifelines(message)
        if kind == LOSE:
            return WorldStep(
                "lose",
                f"the network loses {words}",
                (Mark("lost", sender, receiver, f"lost: {words}"),),
            )
        if kind == DUPLICATE:
            text = f"the network duplicates {words}"
            return WorldStep("duplicate", text, (Mark("note", sender, sender, text),))
        if message[0] == ACTION:
            did = _worker(world, message, assumptions)
            seen = f"receives #{message[1]} {ACTION_KINDS[message[2]].__name__}: {did}"
            return WorldStep(
                "deliver",
                f"the network delivers {words}; {did}",
                (Mark("note", receiver, receiver, seen),),
            )
        assert move is not None
        text = f"the network delivers {words}; {_session(move, kinds, ended=ended)}"
        marks = () if move.fed else (Mark("note", CALLER, CALLER, f"the session ignores {words}"),)
        return WorldStep("deliver", text, marks + _resent(move, kinds))
    if kind == FIRE:
        assert move is not None
        timer = _timer(what, kinds)  # type: ignore[arg-type]
        ending = ": the session abandons it" if abandons else ""
        note = Mark("note", CALLER, CALLER, f"{timer} fires{ending}")
        text = f"{timer} fires; {_session(move, kinds, abandons, ended)}"
        return WorldStep("timer", text, (note, *_resent(move, kinds)))
    if kind == CLIENT:
        assert move is not None
        note = Mark("note", CALLER, CALLER, "the client cancels")
        return WorldStep(
            "client", f"the client cancels: Canceled; {_session(move, kinds, ended=ended)}", (note,)
        )
    if kind == FAIL:
        who, line = ("source", SOURCE) if what == OWN_SOURCE else ("destination", DESTINATION)
        text = f"the {who} fails: it frees what it holds and sends Failed"
        return WorldStep(
            "worker", text, (Mark("note", line, line, "fails: frees what it holds, sends Failed"),)
        )
    text = "the destination finishes decoding the request: it holds nothing"
    return WorldStep("worker", text, (Mark("note", DESTINATION, DESTINATION, "finishes decoding"),))


CALLER, COORDINATOR, SOURCE, DESTINATION, TRANSFER = (
    "Caller",
    "Coordinator",
    "Source",
    "Destination",
    "Transfer",
)
"""The lifelines of a lifecycle drawing (:class:`~handoff_fsm.io.lifecycle.Participant`)."""


def lifelines(message: Message) -> tuple[str, str]:
    """Who sends ``message`` and who receives it, as a lifecycle drawing names them: the
    transfer's action and fact have a lifeline of their own there."""
    channel, a, b, c = message
    if channel == ACTION:
        return COORDINATOR, _owner(b)
    if channel == ACK:
        return _owner(c), COORDINATOR
    if a == TRANSFER_COMPLETED:
        return TRANSFER, COORDINATOR
    return (SOURCE if b == FROM_SOURCE else DESTINATION), COORDINATOR


def _owner(kind: int) -> str:
    if kind == KIND_INDEX[StartTransfer]:
        return TRANSFER
    return SOURCE if kind in TO_SOURCE else DESTINATION


def _resent(move: Move, kinds: dict[int, int]) -> tuple[Mark, ...]:
    """The actions a move sent again, as the arrows a drawing adds for them."""
    return tuple(
        Mark(
            "action",
            COORDINATOR,
            _owner(m[2]),
            f"#{m[1]} {ACTION_KINDS[m[2]].__name__} (sent again)",
        )
        for m in move.sends
        if m[1] in kinds and not move.fed
    )


def _worker(before: World, message: Message, assumptions: SystemAssumptions) -> str:
    """What the worker did with a delivered action (as :func:`apply` has it do)."""
    _, action_id, kind, _ = message
    answered = next((answer for i, answer in before[3] if i == action_id), None)
    if answered is not None:
        return f"it answered #{action_id} before: it answers {OUTCOMES[answered]} again"
    source, destination, _, answer, fact = answers(
        before[1], before[2], before[8], kind, assumptions.workers
    )
    states: tuple[str, ...]
    if kind in TO_SOURCE:
        held, state, states = before[1], source, SOURCE_STATES
    else:
        held, state, states = before[2], destination, DESTINATION_STATES
    was = states[held]
    change = f"it was {was} and is now {states[state]}" if state != held else f"it is {was}"
    sends = f", and sends {type(FACTS[fact]).__name__}" if fact is not None else ""
    return f"{change}; it answers {OUTCOMES[answer]}{sends}"


def _session(move: Move, kinds: dict[int, int], abandons: bool = False, ended: str = "") -> str:
    """What the session did with an input: what it fed, issued, re-sent, refused."""
    if abandons:
        return "the session abandons it: its owner stays unconfirmed"
    if not move.fed and not move.issued:
        return "the session changes nothing"
    parts = []
    if move.fed:
        parts.append("the session feeds " + ", ".join(str(op) for op in move.fed))
    issued = [
        f"#{issued.id} {type(issued.action).__name__}"
        + (ended if type(issued.action) is Complete else " (again)" if issued.id in kinds else "")
        for issued in move.issued
    ]
    if issued:
        parts.append("it issues " + ", ".join(issued))
    elif move.fed:
        parts.append("nothing is issued")
    parts += list(move.refused)
    return "; ".join(parts)


def _timer(key: TimerKey, kinds: dict[int, int]) -> str:
    action_id, send = key
    if action_id < 0:
        return "the policy's deadline"
    kind = kinds.get(action_id)
    name = f"#{action_id} {ACTION_KINDS[kind].__name__}" if kind is not None else f"#{action_id}"
    if kind not in CLEANUP:
        return f"the acknowledgement timer of {name}"
    return f"the cleanup timer of {name} (its send {send + 1})"

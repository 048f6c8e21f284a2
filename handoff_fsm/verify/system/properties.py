"""The system's properties as data, and the report of a system check.

Rule kept here: the properties are the ones DESIGN §10 states, by name and in its
words, judged on the world (never on the coordinator alone); this module holds their
names and statements, the settings a check explored and what it found, and writes
them as the JSON ``handoff-fsm check --system --json`` prints. It judges nothing:
:mod:`~handoff_fsm.verify.system.search` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal, cast, get_args

from handoff_fsm.model import HandoffOrder, Revision
from handoff_fsm.verify.system.assumptions import Answers, SystemAssumptions, Workers


class Property(StrEnum):
    """The properties of the whole system (DESIGN §10), in report order."""

    NO_KV_LEAK = "no_kv_leak"
    CANCEL_STOPS_DECODE = "cancel_stops_decode"
    HONEST_ABANDONMENT = "honest_abandonment"
    NO_REFUSAL = "no_refusal"
    TERMINATES = "terminates"
    SINGLE_COMPLETION = "single_completion"


STATEMENTS: Final[dict[Property, str]] = {
    Property.NO_KV_LEAK: "at quiescence no worker holds the request's KV unless it is "
    "decoding it (source free; destination free or decoding)",
    Property.CANCEL_STOPS_DECODE: "at quiescence, if the client's Canceled was delivered to "
    "the session, the destination is not decoding",
    Property.HONEST_ABANDONMENT: "whenever the session abandons cleanup, its "
    "result.unconfirmed_owners names every worker that still holds the KV",
    Property.NO_REFUSAL: "the coordinator never refuses an input the session feeds it "
    "(honest workers, whatever the order, duplicates and losses)",
    Property.TERMINATES: "every maximal run reaches a state where the session is finished",
    Property.SINGLE_COMPLETION: "Complete is issued at most once per completion value, and "
    "nothing is issued after the last one",
}
"""Each property as DESIGN §10 states it."""

StepKind = Literal["deliver", "lose", "duplicate", "timer", "worker", "client"]
"""What a world step is: the network delivers, loses or duplicates a message, a policy
timer fires, a worker takes a step of its own (or fails), the client cancels."""


@dataclass(frozen=True, slots=True)
class SystemSettings:
    """What one system check explores: the revision and orders, the policy around the
    coordinator (what the project controls), and the world's assumptions about the rest
    (its defaults are DESIGN §10's)."""

    revision: Revision = Revision.SEED
    cleanup_retries: int = 3
    """The policy's re-sends of an unacknowledged cleanup action (its default)."""
    deadline: bool = True
    """Whether the policy has a deadline (``--no-deadline``: it has none)."""
    orders: tuple[HandoffOrder, ...] = tuple(HandoffOrder)
    """The handoff orders explored (each a first state of the one exploration)."""
    assumptions: SystemAssumptions = field(default_factory=SystemAssumptions)
    """Everything the world assumes about the workers, the network, time and the client."""

    def to_json(self) -> dict[str, Any]:
        """The policy explored and the orders (the assumptions are the report's own key)."""
        return {
            "cleanup_retries": self.cleanup_retries,
            "deadline": self.deadline,
            "ack_timeout": True,
            "cleanup_timeout": True,
            "orders": [order.value for order in self.orders],
        }

    def describe(self) -> str:
        """The orders and the policy in one line, as the report prints them after the
        assumptions."""
        deadline = "a deadline" if self.deadline else "no deadline"
        orders = " and ".join(order.value for order in self.orders)
        return (
            f"{orders}; policy with {deadline}, acknowledgement and cleanup timeouts, "
            f"{_count(self.cleanup_retries, 'cleanup retry', 'retries')}"
        )


def _count(number: int, noun: str, plural: str | None = None) -> str:
    if number == 1:
        return f"1 {noun}"
    return f"{number} {plural if plural is not None else noun + 's'}"


MarkKind = Literal["note", "lost", "action"]


@dataclass(frozen=True, slots=True)
class Mark:
    """How a world step shows in a lifecycle drawing, beside the coordinator's inputs."""

    kind: MarkKind
    """A note on a lifeline, a message the network lost (drawn crossed), an action the
    policy sent again."""
    sender: str
    """The lifeline it starts on (``Caller``, ``Coordinator``, ``Source`` ...)."""
    receiver: str
    text: str


@dataclass(frozen=True, slots=True)
class WorldStep:
    """One step of a run of the world, in words."""

    kind: StepKind
    text: str
    marks: tuple[Mark, ...] = ()
    """What a lifecycle drawing adds for it (the coordinator's inputs it caused are the
    trace's own lines)."""

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text}


@dataclass(frozen=True, slots=True)
class Counterexample:
    """The shortest run that breaks a property: its world steps and the coordinator's trace."""

    world: tuple[WorldStep, ...]
    trace: tuple[str, ...]
    """The coordinator's own inputs in that run, as ``handoff-fsm replay`` lines (JSON
    text): a ``new`` line naming the revision, then ``start`` and what the policy fed."""
    fed: tuple[int, ...]
    """How many trace lines (after ``new``) each world step fed the coordinator; the
    first state's ``start`` is not a world step, so these add up to the inputs less one."""
    order: HandoffOrder
    message: str
    """What went wrong at the end of the run."""

    def jsonl(self) -> str:
        """The trace as the text of a trace file."""
        return "".join(f"{line}\n" for line in self.trace)

    def to_json(self) -> dict[str, Any]:
        return {
            "world": [step.to_json() for step in self.world],
            "trace": [json.loads(line) for line in self.trace],
        }


@dataclass(frozen=True, slots=True)
class PropertyVerdict:
    """How a property fared: its shortest counterexample, and how many losses it survives."""

    name: Property
    counterexample: Counterexample | None
    tolerance: int | None
    """The largest number of lost messages (up to the settings') with which it still
    holds; ``None``: it is broken without any loss."""
    violations: int
    """States (or steps) in which it was found broken."""

    @property
    def holds(self) -> bool:
        return self.counterexample is None

    @property
    def statement(self) -> str:
        return STATEMENTS[self.name]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name.value,
            "holds": self.holds,
            "tolerance": self.tolerance,
            "statement": self.statement,
            "counterexample": None
            if self.counterexample is None
            else self.counterexample.to_json(),
        }


@dataclass(frozen=True, slots=True)
class SystemReport:
    """Everything one system check found, for one revision and its settings."""

    settings: SystemSettings
    states: int
    """World states reached."""
    transitions: int
    """World steps taken from them."""
    session_states: int
    """Distinct session states among them (coordinator and policy)."""
    session_moves: int
    """Distinct (session state, input) pairs the real session computed."""
    max_depth: int
    seconds: float
    verdicts: tuple[PropertyVerdict, ...]
    exhausted: bool = True
    """Every reachable world state was explored (False when ``max_states`` cut it short)."""

    @property
    def revision(self) -> Revision:
        return self.settings.revision

    @property
    def ok(self) -> bool:
        return self.exhausted and all(verdict.holds for verdict in self.verdicts)

    def verdict(self, name: Property | str) -> PropertyVerdict:
        return next(v for v in self.verdicts if v.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision.value,
            "assumptions": self.settings.assumptions.to_json(),
            "settings": self.settings.to_json(),
            "states": self.states,
            "transitions": self.transitions,
            "seconds": round(self.seconds, 3),
            "properties": [verdict.to_json() for verdict in self.verdicts],
        }


# ---------------------------------------------------------------------- kept whole


def report_record(report: SystemReport) -> dict[str, Any]:
    """Everything ``report`` holds, as JSON values (:func:`report_from_record` reads it
    back equal): what a system check keeps on disk (:mod:`handoff_fsm.verify.cache`)."""
    settings = report.settings
    return {
        "settings": {
            "revision": settings.revision.value,
            "cleanup_retries": settings.cleanup_retries,
            "deadline": settings.deadline,
            "orders": [order.value for order in settings.orders],
        },
        "assumptions": {
            "answers": settings.assumptions.answers.value,
            "workers": settings.assumptions.workers.value,
            "losses": settings.assumptions.losses,
            "duplicates": settings.assumptions.duplicates,
        },
        "figures": [
            report.states,
            report.transitions,
            report.session_states,
            report.session_moves,
            report.max_depth,
            report.seconds,
            report.exhausted,
        ],
        "verdicts": [
            {
                "name": v.name.value,
                "tolerance": v.tolerance,
                "violations": v.violations,
                "counterexample": None
                if v.counterexample is None
                else _example_record(v.counterexample),
            }
            for v in report.verdicts
        ],
    }


def _example_record(example: Counterexample) -> dict[str, Any]:
    return {
        "world": [
            [step.kind, step.text, [[m.kind, m.sender, m.receiver, m.text] for m in step.marks]]
            for step in example.world
        ],
        "trace": list(example.trace),
        "fed": list(example.fed),
        "order": example.order.value,
        "message": example.message,
    }


def _one_of(value: object, kinds: tuple[str, ...]) -> str:
    if value not in kinds:
        raise ValueError(f"expected one of {kinds}, got {value!r}")
    return str(value)


def report_from_record(record: dict[str, Any]) -> SystemReport:
    """The report :func:`report_record` wrote (``KeyError``, ``TypeError`` or
    ``ValueError`` for anything else)."""
    given, assumed = record["settings"], record["assumptions"]
    settings = SystemSettings(
        revision=Revision(given["revision"]),
        cleanup_retries=int(given["cleanup_retries"]),
        deadline=bool(given["deadline"]),
        orders=tuple(HandoffOrder(order) for order in given["orders"]),
        assumptions=SystemAssumptions(
            answers=Answers(assumed["answers"]),
            workers=Workers(assumed["workers"]),
            losses=int(assumed["losses"]),
            duplicates=int(assumed["duplicates"]),
        ),
    )
    states, transitions, session_states, session_moves, depth, seconds, exhausted = record[
        "figures"
    ]
    verdicts = tuple(
        PropertyVerdict(
            name=Property(v["name"]),
            counterexample=None if v["counterexample"] is None else _example(v["counterexample"]),
            tolerance=None if v["tolerance"] is None else int(v["tolerance"]),
            violations=int(v["violations"]),
        )
        for v in record["verdicts"]
    )
    return SystemReport(
        settings=settings,
        states=int(states),
        transitions=int(transitions),
        session_states=int(session_states),
        session_moves=int(session_moves),
        max_depth=int(depth),
        seconds=float(seconds),
        verdicts=verdicts,
        exhausted=bool(exhausted),
    )


def _example(record: dict[str, Any]) -> Counterexample:
    return Counterexample(
        world=tuple(
            WorldStep(
                cast(StepKind, _one_of(kind, get_args(StepKind))),
                str(text),
                tuple(
                    Mark(cast(MarkKind, _one_of(k, get_args(MarkKind))), str(a), str(b), str(t))
                    for k, a, b, t in marks
                ),
            )
            for kind, text, marks in record["world"]
        ),
        trace=tuple(str(line) for line in record["trace"]),
        fed=tuple(int(n) for n in record["fed"]),
        order=HandoffOrder(record["order"]),
        message=str(record["message"]),
    )

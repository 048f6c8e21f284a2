"""Behavioural diff: where two coordinators answer the same inputs differently.

Rule kept here: the two sides are explored *together*, breadth-first over
pairs of states, with the input alphabet of ``handoff-fsm check``
(:func:`~handoff_fsm.verify.exploration.inputs_for`), and compared only on what
``handoff-fsm replay`` prints: actions with their ids and delays (the exact
JSON float text, so infinities and NaN count), error codes, ``complete`` and
``completion``; error messages are free text and are not compared.

A product state is (the observer's memory, A's state token, B's state token):
while both sides have answered alike the observer's memory is the same for
both (it is a function of the inputs and replies) and decides which inputs
come next; a token names one value of the side's ``snapshot()``, which by
contract holds everything a coordinator needs to continue (see
:mod:`handoff_fsm.verify.diff.driver`). So two input sequences that reach equal
product states have the same futures and one of them needs exploring, which
makes the exploration finite and, being breadth-first, every divergence is
first met through a shortest input sequence. The exploration does not go past
a divergence. A side is also held to its own word: a state is rebuilt by
replaying its inputs into a fresh replayer, and a side that then answers
differently is reported as nondeterministic (with a two-coordinator trace that
shows it) and ends the exploration, since nothing it says can be trusted.

Divergences are grouped into *kinds*, so that one behavioural change is one
entry however many states show it: the same chart event diverging the same
way, or B departing from A by the same thing (the same actions more or fewer,
the same error codes, the same completion) wherever it happens. Each kind
keeps its shortest trace; before it is reported, the trace is replayed from
scratch on both sides and must give the same replies again.
"""

from __future__ import annotations

import json
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from handoff_fsm.errors import error_code, handoff_error
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.inputs import Input, Reply
from handoff_fsm.io.wire import issued_from_wire
from handoff_fsm.model import (
    DestinationReserved,
    HandoffCompletion,
    HandoffOrder,
    SourceHeld,
)
from handoff_fsm.verify.coverage import event_of
from handoff_fsm.verify.diff.driver import TRACE_KEY, canonical
from handoff_fsm.verify.diff.errors import DiffErrorCode
from handoff_fsm.verify.diff.sides import Side, ask, opened_sides
from handoff_fsm.verify.exploration import HANDOFF_ID, inputs_for, trace_lines
from handoff_fsm.verify.invariants import Observation, observe

DEFAULT_MAX_STATES: Final = 50_000
"""Product states explored per order before the diff gives up (``diff_too_large``)."""
SECOND_KEY: Final = f"{TRACE_KEY}-again"
"""The second coordinator of a trace that shows a side answering the same inputs differently."""


# ---------------------------------------------------------------------- the report


@dataclass(frozen=True, slots=True)
class Difference:
    """One kind of divergence, with the shortest trace that shows it."""

    kind: str
    """Stable name of the divergence: the chart events, and what A and B do differently."""
    summary: str
    """The shortest instance in words, and the other forms the same change takes."""
    trace: tuple[str, ...]
    """``handoff-fsm replay`` lines (JSON text): ``new`` (no revision), then the inputs."""
    a: dict[str, Any]
    """A's reply to the last line, as ``handoff-fsm replay`` prints it."""
    b: dict[str, Any]
    order: HandoffOrder
    state_a: tuple[str, ...] | None = None
    """A's active chart states before the last line (when its snapshot says)."""
    state_b: tuple[str, ...] | None = None
    replies_a: tuple[dict[str, Any], ...] = ()
    """A's reply to every line of the trace (the last is :attr:`a`)."""
    replies_b: tuple[dict[str, Any], ...] = ()
    states_a: tuple[tuple[str, ...] | None, ...] = ()
    """A's active chart states after every line, of the coordinator the line names (``None``
    where its snapshot does not say): what ``handoff-fsm diff --html`` marks step by step."""
    states_b: tuple[tuple[str, ...] | None, ...] = ()

    @property
    def inputs(self) -> int:
        """Length of the trace: the lines after the first ``new``."""
        return len(self.trace) - 1

    def jsonl(self) -> str:
        return "".join(f"{line}\n" for line in self.trace)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "summary": self.summary,
            "trace": [json.loads(line) for line in self.trace],
            "a": self.a,
            "b": self.b,
        }


@dataclass(frozen=True, slots=True)
class DiffReport:
    """What :func:`diff` found."""

    a: str
    b: str
    explored: int
    """Product states (pairs of states) reached, over both orders."""
    differences: tuple[Difference, ...]
    """One per kind, sorted by trace length (then by discovery)."""
    stopped: str | None
    """Why not every reachable pair was explored (``None``: every one was)."""
    seconds: float
    charts: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
    """Each side's chart as plain data (``describe_chart()``), when asked for and available."""
    chart_notes: tuple[str | None, str | None] = (None, None)
    """Why a side's chart is missing."""

    @property
    def equivalent(self) -> bool:
        return not self.differences

    @property
    def exhausted(self) -> bool:
        return self.stopped is None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "equivalent": self.equivalent,
            "explored": self.explored,
            "differences": [difference.to_json() for difference in self.differences],
        }


# ---------------------------------------------------------------------- words


def _shape(reply: dict[str, Any]) -> str:
    """A reply without ids and delays: what a kind of divergence is made of."""
    if "crash" in reply:
        return f"crashes ({str(reply['crash']).partition(':')[0]})"
    error = reply.get("error")
    status = _status(reply)
    if error is not None:
        return f"rejects it ({error.get('code')}){status}"
    kinds = [next(iter(issued["action"])) for issued in reply.get("actions", [])]
    return f"issues {', '.join(kinds) if kinds else 'nothing'}{status}"


def _status(reply: dict[str, Any]) -> str:
    completion = reply.get("completion")
    if reply.get("complete"):
        return f"; complete ({completion})"
    return f"; not complete (completion {completion})" if completion is not None else ""


def reply_words(reply: dict[str, Any]) -> str:
    """A reply with its ids and delays, for the summary."""
    if "crash" in reply:
        return f"crashes: {reply['crash']}"
    error = reply.get("error")
    status = _status(reply)
    if error is not None:
        return f"rejects it with {error.get('code')}{status}"
    shown = []
    for issued in reply.get("actions", []):
        kind, body = next(iter(issued["action"].items()))
        delay = f" (delay {json.dumps(body['delay_ms'])} ms)" if "delay_ms" in body else ""
        shown.append(f"{kind} #{issued['id']}{delay}")
    return f"issues {', '.join(shown) if shown else 'nothing'}{status}"


def input_words(op: Input) -> str:
    """An input in a few words (no handoff ids): ``SourceHeld (destination_missing, ...)``."""
    if op.kind == "start":
        return "start()"
    if op.kind == "outcome":
        return f"outcome {op.outcome} for action #{op.action_id}"
    fact = op.fact
    assert fact is not None
    name = type(fact).__name__
    foreign = "" if fact.handoff_id == HANDOFF_ID else " of another handoff"
    if isinstance(fact, SourceHeld):
        timing = fact.transfer_timing
        return (
            f"{name}{foreign} ({timing.mode.value}, "
            f"{_count(timing.full_prompt_tokens, 'prompt token')}, "
            f"{timing.kv_bytes_per_token} B/token, {timing.bandwidth_gb_s} GB/s)"
        )
    if isinstance(fact, DestinationReserved):
        tokens = _count(fact.transferable_prompt_tokens, "transferable token")
        return f"{name}{foreign} ({tokens})"
    return f"{name}{foreign}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def relation(a: dict[str, Any], b: dict[str, Any]) -> str:
    """How B's reply differs from A's, in a few words."""
    for name, reply in (("A", a), ("B", b)):
        if "crash" in reply:
            return f"{name} crashes"
    error_a, error_b = a.get("error"), b.get("error")
    if error_a is not None and error_b is not None:
        if error_a.get("code") != error_b.get("code"):
            return "both reject, with different codes"
        return "the completion differs"
    if error_a is not None:
        return "A rejects, B accepts"
    if error_b is not None:
        return "A accepts, B rejects"
    kinds_a, kinds_b = _kinds_of(a), _kinds_of(b)
    if kinds_a != kinds_b:
        if not kinds_b:
            return "A acts, B issues nothing"
        if not kinds_a:
            return "A issues nothing, B acts"
        return "both act, differently"
    actions_a, actions_b = a.get("actions", []), b.get("actions", [])
    if actions_a != actions_b:
        if [i["id"] for i in actions_a] != [i["id"] for i in actions_b]:
            return "the action ids differ"
        if _handoff_ids(actions_a) != _handoff_ids(actions_b):
            return "the handoff ids inside the actions differ"
        return "the action payloads (delays) differ"
    return "the completion differs"


def _handoff_ids(actions: list[dict[str, Any]]) -> list[Any]:
    return [next(iter(issued["action"].values())).get("handoff_id") for issued in actions]


def _kinds_of(reply: dict[str, Any]) -> list[str]:
    return [next(iter(issued["action"])) for issued in reply.get("actions", [])]


def _delta(a: dict[str, Any], b: dict[str, Any]) -> tuple[Any, ...]:
    """What B does that A does not and the reverse: action kinds, error codes, completion."""
    only_a, only_b = Counter(_kinds_of(a)), Counter(_kinds_of(b))
    only_a, only_b = only_a - only_b, only_b - only_a

    def code(reply: dict[str, Any]) -> Any:
        error = reply.get("error")
        return error.get("code") if error is not None else reply.get("crash")

    status_a = (a.get("complete"), a.get("completion"))
    status_b = (b.get("complete"), b.get("completion"))
    return (
        tuple(sorted(only_a.elements())),
        tuple(sorted(only_b.elements())),
        code(a),
        code(b),
        None if status_a == status_b else (status_a, status_b),
    )


@dataclass(frozen=True, slots=True)
class _Variant:
    """A divergence up to ids and delays: one is kept per variant, its first (shortest)."""

    event: str
    """The chart event the input becomes (or its input class when the journal stops it)."""
    shape_a: str
    shape_b: str
    relation: str
    delta: tuple[Any, ...]


def _variant(obs: Observation, op: Input, a: dict[str, Any], b: dict[str, Any]) -> _Variant:
    event = event_of(obs, op) or obs.classify(op).value
    return _Variant(event, _shape(a), _shape(b), relation(a, b), _delta(a, b))


def _group(variants: list[_Variant]) -> list[list[int]]:
    """Variants that are one behavioural change, as lists of indexes (discovery order).

    Two variants are one change when the same chart event diverges the same way
    (``timed_out``: A acts, B issues nothing, whatever A's actions in each
    state), or when B departs from A by the same thing wherever it happens (B
    never issues ``CancelDestination``: after a failure fact or a failed action,
    alone or beside ``CancelSource``).
    """
    parent = list(range(len(variants)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys: tuple[Callable[[_Variant], Hashable], ...] = (
        lambda v: (v.event, v.relation),
        lambda v: v.delta,
    )
    for key in keys:
        first: dict[Hashable, int] = {}
        for index, variant in enumerate(variants):
            other = first.setdefault(key(variant), index)
            parent[root(index)] = root(other)
    groups: dict[int, list[int]] = {}
    for index in range(len(variants)):
        groups.setdefault(root(index), []).append(index)
    return sorted(groups.values())


_MIXED: Final = object()
"""A part of the delta the members of a kind do not share."""


def _delta_words(delta: tuple[Any, ...]) -> str:
    """The parts of a delta (those not :data:`_MIXED`) in words."""
    only_a, only_b, code_a, code_b, status = delta
    parts = []
    if only_a is not _MIXED and only_a:
        parts.append(f"only A issues {', '.join(only_a)}")
    if only_b is not _MIXED and only_b:
        parts.append(f"only B issues {', '.join(only_b)}")
    if _MIXED not in (code_a, code_b) and code_a != code_b:
        parts.append(
            f"A {f'rejects ({code_a})' if code_a else 'accepts'}, "
            f"B {f'rejects ({code_b})' if code_b else 'accepts'}"
        )
    if status is not None and status is not _MIXED:
        (complete_a, completion_a), (complete_b, completion_b) = status
        parts.append(
            f"A {'complete' if complete_a else 'not complete'} ({completion_a}), "
            f"B {'complete' if complete_b else 'not complete'} ({completion_b})"
        )
    return "; ".join(parts)


def _kind_name(members: list[_Variant]) -> str:
    """The events that diverge, then the most precise words all members share."""
    events = " | ".join(dict.fromkeys(v.event for v in members))
    if len({(v.shape_a, v.shape_b) for v in members}) == 1:
        shape_a, shape_b = members[0].shape_a, members[0].shape_b
        if shape_a == shape_b:  # the same actions: what differs is inside them
            relations = " or ".join(dict.fromkeys(v.relation for v in members))
            return f"{events}: {relations} (each {shape_a})"
        return f"{events}: A {shape_a} / B {shape_b}"
    shared = tuple(
        parts[0] if len(set(parts)) == 1 else _MIXED
        for parts in zip(*(v.delta for v in members), strict=True)
    )
    words = _delta_words(shared)
    if not words:
        words = " or ".join(dict.fromkeys(v.relation for v in members))
    return f"{events}: {words}"


# ---------------------------------------------------------------------- exploration


@dataclass(slots=True, eq=False)
class _Node:
    id: int
    obs: Observation
    parent: _Node | None
    line: str | None
    """The input line that reached this state from its parent."""
    expect: str | None
    """The canonical reply both sides gave to it."""

    def lines(self) -> tuple[list[str], list[str]]:
        """The input lines and canonical replies from the initial state to this one."""
        lines: list[str] = []
        expect: list[str] = []
        node: _Node | None = self
        while node is not None and node.line is not None:
            lines.append(node.line)
            assert node.expect is not None
            expect.append(node.expect)
            node = node.parent
        lines.reverse()
        expect.reverse()
        return lines, expect


@dataclass(slots=True)
class _Found:
    variant: _Variant
    order: HandoffOrder
    node: _Node
    op: Input
    line: str
    a: str
    """A's reply to the line, canonical (no key, no error message)."""
    b: str

    @property
    def length(self) -> int:
        return len(self.node.lines()[0]) + 1


@dataclass(slots=True)
class _Unstable:
    """A side answered a rebuilt state's inputs differently from the first time."""

    side: str
    order: HandoffOrder
    lines: list[str]
    """The inputs up to and including the one answered differently."""


def _normal(text: str) -> str:
    """A canonical reply with its keys sorted: replies that differ only in layout agree."""
    return json.dumps(json.loads(text), sort_keys=True)


@dataclass(slots=True)
class _Search:
    a: Side
    b: Side
    max_states: int
    found: dict[_Variant, _Found] = field(default_factory=dict)
    """The first (so shortest) finding of each variant, in discovery order."""
    explored: int = 0
    nodes: int = 0
    unstable: _Unstable | None = None
    bounded: bool = False
    """The bound on states cut an order short (after a difference was found)."""
    replies: dict[str, Reply] = field(default_factory=dict)

    def reply(self, text: str) -> Reply:
        """The observer's view of a canonical reply (cached: few distinct replies recur)."""
        reply = self.replies.get(text)
        if reply is None:
            reply = self.replies[text] = _reply_of(json.loads(text))
        return reply

    def node(
        self, obs: Observation, parent: _Node | None, line: str | None, expect: str | None
    ) -> _Node:
        self.nodes += 1
        return _Node(self.nodes, obs, parent, line, expect)

    def expand(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Both sides' answers to one request (the two sides work at the same time)."""
        self.a.submit(request)
        self.b.submit(request)
        results = [self.a.result(), self.b.result()]
        for name, side, result in zip("AB", (self.a, self.b), results, strict=True):
            mismatch = result.get("mismatch")
            if mismatch is not None and mismatch["index"] < 0:
                error = json.loads(mismatch["reply"]).get("error") or {}
                raise handoff_error(
                    DiffErrorCode.UNKNOWN_DIFF_SIDE,
                    f"side {name} ({side.spec.text}) cannot create a coordinator: "
                    f"{error.get('message') or mismatch['reply']}",
                )
        return results

    def explore(self, order: HandoffOrder) -> bool:
        """Explore one order; False when a side turned out nondeterministic."""
        try:
            return self._explore(order)
        finally:
            self.a.submit({"op": "forget"})
            self.b.submit({"op": "forget"})
            self.a.result()
            self.b.result()

    def _explore(self, order: HandoffOrder) -> bool:
        new = trace_lines(order, 0.0, [])[0]
        root = self.node(Observation(HANDOFF_ID, order), None, None, None)
        index: set[tuple[Observation, Any, Any]] = set()
        queue = deque([root])
        adopt: list[list[int]] = []
        while queue:
            node = queue.popleft()
            ops = inputs_for(node.obs)
            inputs = [json.dumps(op.to_wire(TRACE_KEY)) for op in ops]
            path, expect = node.lines()
            results = self.expand(
                {
                    "op": "expand",
                    "new": new,
                    "path": path,
                    "expect": expect,
                    "inputs": inputs,
                    "node": node.id,
                    "adopt": adopt,
                }
            )
            adopt = []
            for name, result in zip("AB", results, strict=True):
                mismatch = result["mismatch"]
                if mismatch is not None:
                    self.unstable = _Unstable(name, order, path[: mismatch["index"] + 1])
                    return False
            if node is root:
                index.add((root.obs, results[0]["token"], results[1]["token"]))
                self.explored += 1
            answers = zip(ops, inputs, results[0]["results"], results[1]["results"], strict=True)
            for position, (op, line, got_a, got_b) in enumerate(answers):
                (canon_a, token_a), (canon_b, token_b) = got_a, got_b
                if canon_a != canon_b and _normal(canon_a) != _normal(canon_b):
                    variant = _variant(node.obs, op, json.loads(canon_a), json.loads(canon_b))
                    if variant not in self.found:
                        self.found[variant] = _Found(
                            variant, order, node, op, line, canon_a, canon_b
                        )
                    continue
                if '"crash": ' in canon_a:
                    continue  # both crashed alike: replay would have stopped here
                obs, _ = observe(node.obs, op, self.reply(canon_a))
                key = (obs, token_a, token_b)
                if key in index:
                    continue
                if len(index) >= self.max_states:
                    if not self.found:
                        raise handoff_error(
                            DiffErrorCode.DIFF_TOO_LARGE,
                            f"more than {self.max_states} state "
                            f"{'pair' if self.max_states == 1 else 'pairs'} for {order.value} "
                            "and no difference among them (raise --max-states)",
                        )
                    self.bounded = True
                    return True
                index.add(key)
                self.explored += 1
                child = self.node(obs, node, line, canon_a)
                queue.append(child)
                adopt.append([position, child.id])
        return True


def _reply_of(reply: dict[str, Any]) -> Reply:
    text = reply.get("completion")
    complete = bool(reply.get("complete"))
    completion = None if text is None else HandoffCompletion(text)
    error = reply.get("error")
    if error is not None:
        # Only "rejected or not" matters to the observer; a code this package lacks
        # (a side from another revision) is still a rejection.
        code = error_code(str(error.get("code"))) or TraceErrorCode.INVALID_INPUT
        return Reply(error=code, is_complete=complete, completion=completion)
    actions = tuple(issued_from_wire(issued) for issued in reply.get("actions", []))
    return Reply(actions=actions, is_complete=complete, completion=completion)


# ---------------------------------------------------------------------- replaying findings


def _run(side: Side, lines: list[str]) -> dict[str, Any]:
    return ask(side, {"op": "run", "lines": lines})


def _states(run: dict[str, Any]) -> tuple[tuple[str, ...] | None, ...]:
    """A ``run``'s active states after each of its lines."""
    return tuple(None if leaves is None else tuple(leaves) for leaves in run["states"])


def _rekeyed(line: str, key: str) -> str:
    parsed = json.loads(line)
    parsed["coordinator"] = key
    return json.dumps(parsed)


@dataclass(frozen=True, slots=True)
class _Kind:
    name: str
    shortest: _Found
    members: tuple[_Found, ...]


def _kinds(found: list[_Found]) -> list[_Kind]:
    """The findings grouped into kinds, each with its shortest member (ties: found first)."""
    kinds = []
    for indexes in _group([finding.variant for finding in found]):
        members = tuple(found[i] for i in indexes)
        shortest = min(members, key=lambda f: f.length)
        kinds.append(_Kind(_kind_name([m.variant for m in members]), shortest, members))
    return sorted(kinds, key=lambda k: k.shortest.length)


def _confirm(kinds: list[_Kind], a: Side, b: Side, labels: tuple[str, str]) -> list[Difference]:
    """Replay every kind's trace from scratch on both sides; the replies must be the same again."""
    fresh_a, fresh_b = a.fresh(), b.fresh()
    try:
        out = []
        for kind in kinds:
            finding = kind.shortest
            path, expect = finding.node.lines()
            new = trace_lines(finding.order, 0.0, [])[0]
            trace = [new, *path, finding.line]
            before = [new, *path]
            fresh_a.submit({"op": "run", "lines": trace})
            fresh_b.submit({"op": "run", "lines": trace})
            fresh_a.submit({"op": "run", "lines": before})
            fresh_b.submit({"op": "run", "lines": before})
            run_a, run_b = fresh_a.result(), fresh_b.result()
            state_a, state_b = fresh_a.result()["state"], fresh_b.result()["state"]
            for name, run, last in (("A", run_a, finding.a), ("B", run_b, finding.b)):
                replies = run["replies"]
                again = [canonical(reply) for reply in replies[1:-1]]
                if again != expect or canonical(replies[-1]) != last:
                    raise handoff_error(
                        DiffErrorCode.DIFF_SIDE_FAILED,
                        f"side {name} ({labels['AB'.index(name)]}) answered the trace of "
                        f"{kind.name!r} differently when it was replayed from scratch: it "
                        "is not deterministic",
                    )
            out.append(
                Difference(
                    kind=kind.name,
                    summary=_summary(kind, labels, state_a),
                    trace=tuple(trace),
                    a=json.loads(run_a["replies"][-1]),
                    b=json.loads(run_b["replies"][-1]),
                    order=finding.order,
                    state_a=None if state_a is None else tuple(state_a),
                    state_b=None if state_b is None else tuple(state_b),
                    replies_a=tuple(json.loads(reply) for reply in run_a["replies"]),
                    replies_b=tuple(json.loads(reply) for reply in run_b["replies"]),
                    states_a=_states(run_a),
                    states_b=_states(run_b),
                )
            )
        return out
    finally:
        fresh_a.close()
        fresh_b.close()


def _summary(kind: _Kind, labels: tuple[str, str], state: list[str] | None) -> str:
    finding = kind.shortest
    where = f" in ({', '.join(state)})" if state else ""
    steps = finding.length - 1
    text = (
        f"{finding.order.value}, after {steps} input{'' if steps == 1 else 's'}{where}: "
        f"{input_words(finding.op)} — {labels[0]} {reply_words(json.loads(finding.a))}; "
        f"{labels[1]} {reply_words(json.loads(finding.b))}."
    )
    shown = (finding.variant.shape_a, finding.variant.shape_b)
    others = list(
        {
            (m.variant.event, m.variant.shape_a, m.variant.shape_b): m.variant
            for m in kind.members
            if (m.variant.shape_a, m.variant.shape_b) != shown
        }.values()
    )
    if others:
        forms = "; ".join(f"{v.event}: A {v.shape_a} / B {v.shape_b}" for v in others)
        plural = "s" if len(others) > 1 else ""
        text += f" The same change shows in {len(others)} more form{plural}: {forms}."
    return text


def _unstable_difference(
    unstable: _Unstable, a: Side, b: Side, labels: tuple[str, str]
) -> Difference:
    """The trace that shows a side answering the same inputs differently, run from scratch.

    One replay holds two coordinators given the same inputs; the side that keeps
    state between coordinators (or draws on anything but its inputs) answers the
    second differently. The trace is cut at the first line the sides disagree on.
    """
    new = trace_lines(unstable.order, 0.0, [])[0]
    trace = [
        new,
        *unstable.lines,
        _rekeyed(new, SECOND_KEY),
        *(_rekeyed(line, SECOND_KEY) for line in unstable.lines),
    ]
    fresh_a, fresh_b = a.fresh(), b.fresh()
    try:
        run_a, run_b = _run(fresh_a, trace), _run(fresh_b, trace)
        replies_a, replies_b = run_a["replies"], run_b["replies"]
    finally:
        fresh_a.close()
        fresh_b.close()
    for position, (text_a, text_b) in enumerate(zip(replies_a, replies_b, strict=True)):
        if _normal(canonical(text_a)) != _normal(canonical(text_b)):
            name = labels["AB".index(unstable.side)]
            reply_a, reply_b = json.loads(text_a), json.loads(text_b)
            return Difference(
                kind=f"nondeterministic: {unstable.side} answers the same inputs differently",
                summary=(
                    f"{unstable.order.value}: {name} gives a second coordinator the same "
                    f"inputs and answers differently (it keeps state between coordinators "
                    f"or draws on something other than its inputs) — {labels[0]} "
                    f"{reply_words(reply_a)}; {labels[1]} {reply_words(reply_b)}"
                ),
                trace=tuple(trace[: position + 1]),
                a=reply_a,
                b=reply_b,
                order=unstable.order,
                replies_a=tuple(json.loads(reply) for reply in replies_a[: position + 1]),
                replies_b=tuple(json.loads(reply) for reply in replies_b[: position + 1]),
                states_a=_states(run_a)[: position + 1],
                states_b=_states(run_b)[: position + 1],
            )
    raise handoff_error(
        DiffErrorCode.DIFF_SIDE_FAILED,
        f"side {unstable.side} ({labels['AB'.index(unstable.side)]}) answered the same inputs "
        "differently when a state was rebuilt, and no single replay shows it",
    )


# ---------------------------------------------------------------------- entry points


def diff_sides(
    a: Side,
    b: Side,
    *,
    orders: Iterable[HandoffOrder] = tuple(HandoffOrder),
    max_states: int = DEFAULT_MAX_STATES,
    charts: bool = False,
) -> DiffReport:
    """Explore the product of two started sides (see :func:`diff`)."""
    began = time.perf_counter()
    labels = (a.spec.text, b.spec.text)
    search = _Search(a, b, max_states)
    stopped = None
    for order in orders:
        if not search.explore(order):
            stopped = (
                f"side {search.unstable.side if search.unstable else '?'} answered the same "
                "inputs differently when they were given again, so nothing more it says can "
                "be trusted"
            )
            break
    if stopped is None and search.bounded:
        stopped = f"the bound of {max_states} state pairs per order was reached"
    differences = _confirm(_kinds(list(search.found.values())), a, b, labels)
    if search.unstable is not None:
        differences.append(_unstable_difference(search.unstable, a, b, labels))
        differences.sort(key=lambda d: d.inputs)
    described = (ask(a, {"op": "describe"}), ask(b, {"op": "describe"})) if charts else ({}, {})
    return DiffReport(
        a=labels[0],
        b=labels[1],
        explored=search.explored,
        differences=tuple(differences),
        stopped=stopped,
        seconds=time.perf_counter() - began,
        charts=(described[0].get("chart"), described[1].get("chart")),
        chart_notes=(described[0].get("why"), described[1].get("why")),
    )


def diff(
    a: str,
    b: str,
    *,
    cwd: Path | None = None,
    orders: Iterable[HandoffOrder] = tuple(HandoffOrder),
    max_states: int = DEFAULT_MAX_STATES,
    charts: bool = False,
) -> DiffReport:
    """Compare the observable behaviour of two sides over their whole reachable state space.

    ``a`` and ``b`` are side names (:func:`~handoff_fsm.verify.diff.sides.parse_side`):
    ``seed``, ``seed@statechart``, ``a976b2bf``, ``git:HEAD~1``, ``git:v1:seed``,
    ``worktree``; ``git:`` and ``worktree`` sides come from the repository that
    contains ``cwd`` (default: the working directory). ``charts=True`` also fetches
    each side's chart description (for the structural diff). Raises ``DiffError``
    when a side cannot be loaded or misbehaves, or the product exceeds
    ``max_states`` per order without a difference.
    """
    with opened_sides((a, b), cwd) as (side_a, side_b):
        return diff_sides(side_a, side_b, orders=orders, max_states=max_states, charts=charts)

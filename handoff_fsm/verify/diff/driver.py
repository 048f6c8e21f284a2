"""One side of a behavioural diff: trace lines in, replay's replies and state tokens out.

This module is the cross-version contract of ``handoff-fsm diff git:REV``: the one
file that runs inside the package of another git revision, so it must keep working
against every layout a side may have. Rule kept here: a side is driven only through
its own trace replayer (the ``TraceReplayer`` behind ``handoff-fsm replay``), so every
reply the diff sees is exactly the line ``handoff-fsm replay`` prints for it, and this
file imports nothing of ``handoff_fsm`` at module level. The same file therefore
drives the running package in-process and, run as the program of an isolated
interpreter whose import path starts at a checkout (see
:func:`handoff_fsm.verify.diff.sides.isolated_path`), the package committed at any
git revision that has trace replay, speaking one JSON object per line on stdin/stdout.

The names it relies on in a side's package (and nothing else):

* the replay module, the first of :data:`_REPLAY_MODULES` that imports;
* in it, ``TraceReplayer(engine=..., factory=...)`` (``factory`` optional) with
  ``reply_text(line, number)`` (or the first replayers' ``reply``), and the
  coordinators it keeps, ``live`` and ``completed`` (key -> an entry holding
  ``coordinator``, or the coordinator itself; a completed one may be a tombstone
  with only a ``completion``);
* a coordinator's ``snapshot()`` (``model_dump_json`` where it has it), its class's
  own ``restore(snapshot)``, and ``HandoffCoordinator(..., revision=...)`` for
  replays whose ``new`` lines take no revision;
* the chart's description, the first of :data:`DESCRIBERS` that the package has.

A state is named by a *token*: a number given to each distinct value of the
coordinator's ``snapshot()`` (which by contract holds everything it needs to
continue), also after it completed (replay keeps a completed coordinator and
asks it about later lines), or, for older replays that replaced a completed
coordinator by a tombstone, to the tombstone's completion. A state is rebuilt by replaying its
input sequence into a fresh replayer, and the replies met on the way are
compared with the ones recorded when the state was first reached: a side that
answers the same inputs differently is reported, not trusted. Further copies
of a state come from ``restore(snapshot)`` where the coordinator's own class
defines it (that is the snapshot's contract), else from replaying again.
tests/test_diff_git.py holds it to the last commit of the previous layout.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
import traceback
from dataclasses import asdict, is_dataclass
from enum import Enum
from typing import Any

TRACE_KEY = "explored"
"""The coordinator key of every explored trace."""

_REPLAY_MODULES = ("handoff_fsm.io.replay", "handoff_fsm.replay")
"""Where a package keeps trace replay, newest layout first."""

DESCRIBERS: tuple[tuple[str, str, bool], ...] = (
    ("handoff_fsm.structure.revisions", "revision_chart", True),
    ("handoff_fsm.diagrams.chartdiff", "revision_chart", True),
    ("handoff_fsm.diagrams", "describe_chart", False),
)
"""Where a package describes its chart, newest layout first: (module, function, whether
it takes ``revision=``)."""


def replay_module() -> Any:
    """The importable package's trace-replay module (current or ``src/`` layout)."""
    for name in _REPLAY_MODULES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name not in (name, name.rpartition(".")[0]):
                raise  # the module exists but something it imports does not
    raise ModuleNotFoundError(f"no trace replay module: tried {', '.join(_REPLAY_MODULES)}")


def canonical(reply: str) -> str:
    """What is compared between sides: a reply line without its key and error message.

    Error messages are free text; codes, actions (ids, kinds, delays as the
    exact JSON float text replay prints), ``complete`` and ``completion`` are
    the behaviour. Replies of the usual shape are cut as text (this runs once
    per input); anything else is parsed.
    """
    if reply.startswith(_PREFIX) and '"error": ' not in reply and '"crash": ' not in reply:
        return "{" + reply[len(_PREFIX) :]
    shown = {key: value for key, value in json.loads(reply).items() if key != "coordinator"}
    error = shown.get("error")
    if type(error) is dict:
        shown["error"] = {"code": error.get("code")}
    return json.dumps(shown)


_PREFIX = json.dumps({"coordinator": TRACE_KEY})[:-1] + ", "


class SideDriver:
    """Replays trace lines for one side (optionally on an engine and a protocol revision)."""

    def __init__(
        self, engine: str | None = None, revision: str | None = None, factory: Any = None
    ) -> None:
        self.replay = replay_module()
        self.engine = engine
        self.revision = revision
        self.factory = factory
        """Builds the coordinators instead of replay's default (in-process sides only)."""
        self._tokens: dict[Any, int] = {}
        """Snapshots seen, numbered: equal snapshots get the same token."""
        self._kept: dict[int, Any] = {}
        """Replayers known to be in the state of a node still to be expanded, by node id."""
        self._last: dict[int, Any] = {}
        """The replayers the last ``expand`` left in new states, by input position."""
        self._revision_in_line = revision is not None and factory is None
        if self._revision_in_line and not self._replay_reads_revision():
            self._revision_by_factory()

    # ------------------------------------------------------------------ replaying

    def _replayer(self) -> Any:
        options: dict[str, Any] = {}
        if self.engine is not None:
            options["engine"] = self.engine
        if self.factory is not None:
            options["factory"] = self.factory
        return self.replay.TraceReplayer(**options)

    def _replay_reads_revision(self) -> bool:
        """Whether this replay takes ``"revision"`` on a ``new`` line."""
        probe = json.dumps(
            {
                "coordinator": "probe",
                "op": "new",
                "handoff_id": "00000000-0000-4000-8000-000000000000",
                "order": "SourceFirst",
                "revision": self.revision,
            }
        )
        reply = json.loads(self._reply(self._replayer(), probe, 1))
        error = reply.get("error") or {}
        return not (error.get("code") == "invalid_input" and "revision" in error.get("message", ""))

    def _revision_by_factory(self) -> None:
        """A replay that knows no revision key, over coordinators that take ``revision=``.

        (The commits between the two: the revision reaches the coordinator through
        replay's factory; elsewhere the ``new`` line keeps it and replay says no.)
        """
        coordinator = getattr(self.replay, "HandoffCoordinator", None)
        try:
            takes = "revision" in inspect.signature(coordinator).parameters  # type: ignore[arg-type]
        except (TypeError, ValueError):
            takes = False
        if not takes or not self._takes_factory:
            return
        options: dict[str, Any] = {"revision": self.revision}
        if self.engine is not None:
            options["engine"] = self.engine
        self.factory = lambda *args: coordinator(*args, **options)  # type: ignore[misc]
        self._revision_in_line = False

    def _new_line(self, line: str) -> str:
        """The ``new`` line with this side's revision (traces themselves carry none)."""
        if not self._revision_in_line:
            return line
        parsed = json.loads(line)
        if parsed.get("op") == "new":
            parsed["revision"] = self.revision
        return json.dumps(parsed)

    @staticmethod
    def _reply(replayer: Any, line: str, number: int) -> str:
        """The reply line replay prints for ``line``; a replayer that raises yields ``crash``."""
        try:
            if hasattr(replayer, "reply_text"):
                reply: str = replayer.reply_text(line, number)
            else:  # the first replayers returned the reply object itself
                reply = json.dumps(replayer.reply(line, number))
        except Exception as error:  # replay itself would stop with this traceback
            key = json.loads(line).get("coordinator")
            return json.dumps({"coordinator": key, "crash": f"{type(error).__name__}: {error}"})
        return reply

    def _token(self, replayer: Any, key: str) -> Any:
        """A token naming the state of coordinator ``key`` in ``replayer``: equal iff equal."""
        entry = _kept(replayer, key)
        if entry is not None:
            coordinator = getattr(entry, "coordinator", entry)
            try:
                state: Any = ("live", _text(coordinator.snapshot()))
            except Exception as error:  # a snapshot that raises is a state of its own
                state = ("snapshot raised", type(error).__name__, str(error))
        else:
            tombstone = replayer.completed.get(key)
            if tombstone is not None:
                completion = getattr(tombstone, "completion", None)
                state = ("completed", str(getattr(completion, "value", completion)))
            else:
                state = ("absent",)
        token = self._tokens.get(state)
        if token is None:
            token = self._tokens[state] = len(self._tokens)
        return token

    def _rebuild(
        self, new: str, path: list[str], expect: list[str]
    ) -> tuple[Any, dict[str, Any] | None]:
        """A fresh replayer in the state ``path`` reaches, or the first unexpected reply."""
        replayer = self._replayer()
        first = self._reply(replayer, self._new_line(new), 1)
        if '"error": ' in first or '"crash": ' in first:
            return replayer, {"index": -1, "reply": first}
        for number, (line, expected) in enumerate(zip(path, expect, strict=True), start=2):
            reply = self._reply(replayer, line, number)
            if canonical(reply) != expected:
                return replayer, {"index": number - 2, "reply": reply}
        return replayer, None

    def _copier(self, replayer: Any, key: str, new: str) -> Any:
        """A way to make fresh replayers in ``replayer``'s state without replaying, or None.

        Only where the coordinator's own class defines ``restore`` (the snapshot's
        contract: it continues exactly where the snapshot was taken) and replay
        takes a ``factory``; a subclass that inherits ``restore``, a wrapper, a
        completed coordinator replay keeps as a tombstone are rebuilt by replaying.
        """
        entry = replayer.live.get(key)
        if entry is None or not self._takes_factory:
            return None
        coordinator = getattr(entry, "coordinator", entry)
        restore = vars(type(coordinator)).get("restore")
        if restore is None:
            return None
        try:
            snapshot = coordinator.snapshot()
        except Exception:  # no snapshot: no copy
            return None
        cls = type(coordinator)
        options = {"engine": coordinator.engine} if hasattr(coordinator, "engine") else {}
        line = self._new_line(new)

        def copy() -> Any:
            fresh = self.replay.TraceReplayer(
                factory=lambda *_args, **_kwargs: cls.restore(snapshot, **options)
            )
            fresh.reply_text(line, 1)
            return fresh

        return copy

    @functools.cached_property
    def _takes_factory(self) -> bool:
        try:
            return "factory" in inspect.signature(self.replay.TraceReplayer).parameters
        except (TypeError, ValueError):
            return False

    # ------------------------------------------------------------------ requests

    def expand(
        self,
        new: str,
        path: list[str],
        expect: list[str],
        inputs: list[str],
        *,
        node: int | None = None,
        adopt: list[list[int]] | None = None,
    ) -> dict[str, Any]:
        """Give each of ``inputs`` to the state ``path`` reaches; replies and tokens after.

        ``expect`` are the canonical replies the path got when it was explored; a
        rebuild that meets another reply stops with ``mismatch``. ``adopt`` pairs
        (position in the previous request's inputs, node id) name the replayers that
        request left in states now to be expanded as those nodes; ``node`` is the
        id of the state expanded now, whose adopted replayer then saves a rebuild.
        Each result is ``[canonical reply, token after]``.
        """
        for position, node_id in adopt or ():
            if position in self._last:
                self._kept[node_id] = self._last[position]
        self._last = {}
        key = json.loads(new)["coordinator"]
        spare: Any = self._kept.pop(node, None) if node is not None else None
        if spare is None:
            spare, mismatch = self._rebuild(new, path, expect)
            if mismatch is not None:
                return {"mismatch": mismatch, "token": None, "results": []}
        token = self._token(spare, key)
        copy = self._copier(spare, key, new)
        results: list[list[Any]] = []
        number = len(path) + 2
        for position, line in enumerate(inputs):
            if spare is None and copy is not None:
                spare = copy()
            elif spare is None:
                spare, mismatch = self._rebuild(new, path, expect)
                if mismatch is not None:
                    return {"mismatch": mismatch, "token": token, "results": results}
            replayer, spare = spare, None
            reply = self._reply(replayer, line, number)
            after = self._token(replayer, key)
            results.append([canonical(reply), after])
            if after == token and '"crash": ' not in reply:
                spare = replayer  # nothing changed: the same replayer serves the next input
            else:
                self._last[position] = replayer
        return {"mismatch": None, "token": token, "results": results}

    def forget(self) -> dict[str, Any]:
        """Drop every kept replayer (between orders)."""
        self._kept.clear()
        self._last.clear()
        return {}

    def run(self, lines: list[str]) -> dict[str, Any]:
        """Replay whole ``lines`` (``new`` lines get this side's revision) in a fresh replayer.

        Returns every reply line; ``states``: after each line, the active chart states
        of the coordinator it names (running, or completed and kept whole), ``None``
        where its snapshot does not say; ``state``: those of the last line's coordinator
        while it runs (``None`` once it completed).
        """
        replayer = self._replayer()
        replies = []
        states: list[list[str] | None] = []
        for number, line in enumerate(lines, start=1):
            replies.append(self._reply(replayer, self._new_line(line), number))
            states.append(_leaves(_kept(replayer, json.loads(line).get("coordinator"))))
        state = (
            _leaves(replayer.live.get(json.loads(lines[-1]).get("coordinator"))) if lines else None
        )
        return {"replies": replies, "state": state, "states": states}

    def describe(self) -> dict[str, Any]:
        """The side's chart as plain data, as its revision runs it, or why there is none.

        The first of :data:`DESCRIBERS` the side's package has: a revision's decided
        chart where it has one (a chart holding several revisions, each guard decided
        for this one), else the package's one description of its chart.
        """
        for module_name, name, takes_revision in DESCRIBERS:
            try:
                describe = getattr(importlib.import_module(module_name), name)
            except (ImportError, AttributeError):
                continue
            arguments: dict[str, Any] = {"revision": self.revision} if takes_revision else {}
            break
        else:
            names = ", ".join(f"{module}.{name}" for module, name, _ in DESCRIBERS)
            return {"chart": None, "why": f"this revision describes no chart (tried {names})"}
        try:
            model = describe(**arguments)
        except Exception as error:
            return {"chart": None, "why": f"describing the chart failed: {error!r}"}
        return {"chart": _plain(model), "why": None}

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "expand":
            return self.expand(
                request["new"],
                request["path"],
                request["expect"],
                request["inputs"],
                node=request.get("node"),
                adopt=request.get("adopt"),
            )
        if op == "forget":
            return self.forget()
        if op == "run":
            return self.run(request["lines"])
        if op == "describe":
            return self.describe()
        if op == "hello":
            return {"replay": self.replay.__name__}
        raise ValueError(f"unknown request {op!r}")


def _kept(replayer: Any, key: Any) -> Any:
    """The entry of coordinator ``key`` in ``replayer``: running, or completed and kept whole
    (a completed coordinator replay still asks); ``None`` for none or a tombstone."""
    entry = replayer.live.get(key)
    if entry is None and hasattr(replayer.completed.get(key), "coordinator"):
        entry = replayer.completed[key]
    return entry


def _leaves(entry: Any) -> list[str] | None:
    """The active chart states a kept coordinator's snapshot names (``None``: it names none)."""
    if entry is None:
        return None
    try:
        leaves = getattr(getattr(entry, "coordinator", entry).snapshot(), "state", None)
    except Exception:  # only for the report's words and the diff page's marks
        leaves = None
    return list(leaves) if leaves is not None else None


def _text(snapshot: Any) -> str:
    dump = getattr(snapshot, "model_dump_json", None)
    return dump() if dump is not None else repr(snapshot)


def _plain(value: Any) -> Any:
    """Dataclasses, enums and tuples as JSON values (the chart model's shapes)."""
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def main(argv: list[str]) -> int:
    """Serve requests, one JSON object per line: ``argv`` is ``[engine, revision]`` as JSON."""
    engine, revision = json.loads(argv[0]) if argv else (None, None)
    try:
        driver = SideDriver(engine, revision)
    except Exception:
        sys.stderr.write(traceback.format_exc())
        return 3
    out = sys.stdout
    for line in sys.stdin:
        try:
            response = driver.handle(json.loads(line))
        except Exception:
            response = {"failure": traceback.format_exc()}
        out.write(json.dumps(response) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

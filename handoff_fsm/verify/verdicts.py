"""What a side breaks: the invariants and system properties each of its revisions violates.

Rule kept here: a side is judged by its own package, as ``handoff-fsm diff`` spells
sides (:mod:`~handoff_fsm.verify.diff.sides`): the running package in this process, a
``git:`` revision or the work tree by that package's own ``handoff-fsm check --json``
(and ``check --system --json``) in an interpreter that imports it alone, unless that
package is the running one file for file (then it is judged here, as it would be
there). Either way a
verdict is read off the same JSON (:func:`read_verdicts`), so a package committed long
ago and this one are judged in the same terms. Which violations are known is the
revision's own declaration (:data:`~handoff_fsm.model.KNOWN_VIOLATIONS`); this module
only compares.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Final, Literal

from handoff_fsm.coordinator import Engine
from handoff_fsm.errors import HandoffError, handoff_error, quoted
from handoff_fsm.model import KNOWN_VIOLATIONS, HandoffOrder, Revision
from handoff_fsm.verify.cache import is_running_package, kept
from handoff_fsm.verify.diff.behaviour import DiffReport, relation
from handoff_fsm.verify.diff.errors import DiffErrorCode
from handoff_fsm.verify.diff.sides import (
    Side,
    SideSpec,
    ask,
    isolated_command,
    opened_sides,
    parse_side,
    side_environment,
    side_package,
)
from handoff_fsm.verify.exploration import explored
from handoff_fsm.verify.system import SystemAssumptions, default_report

Kind = Literal["invariant", "property"]

CHECK_PROGRAM: Final = (
    "import sys\nfrom handoff_fsm.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"
)
"""What a ``git:`` or ``worktree`` side's interpreter runs: that package's own command line."""


@dataclass(frozen=True, slots=True)
class Broken:
    """One invariant or system property a revision of a side violates."""

    name: str
    kind: Kind
    trace: tuple[str, ...]
    """Its shortest counterexample as ``handoff-fsm replay`` lines (JSON text)."""


@dataclass(frozen=True, slots=True)
class RevisionVerdict:
    """How one revision of a side fared: what was judged, and what it breaks."""

    side: str
    revision: str
    invariants: tuple[str, ...]
    """Every invariant judged (in the side's own order)."""
    properties: tuple[str, ...] | None
    """Every system property judged; ``None`` when the system was not checked."""
    broken: tuple[Broken, ...]
    exhausted: bool = True
    """Every reachable state was explored (a verdict on less is no verdict)."""
    losses: int = 0
    """The lost messages each property's tolerance was judged with (0: not judged)."""
    tolerance: tuple[tuple[str, int | None], ...] = ()
    """Each property with the most lost messages (up to ``losses``) it still holds with;
    ``None``: broken without any loss."""

    @property
    def violated(self) -> frozenset[str]:
        return frozenset(b.name for b in self.broken)

    def lost_to(self) -> tuple[str, ...]:
        """The properties that hold with no message lost but not with ``losses`` lost."""
        return tuple(
            name for name, most in self.tolerance if most is not None and most < self.losses
        )

    def unknown(self) -> tuple[Broken, ...]:
        """What it breaks that its revision does not declare as known."""
        known = declared(self.revision)
        return tuple(b for b in self.broken if b.name not in known)

    def known(self) -> tuple[Broken, ...]:
        """What it breaks that its revision declares as known."""
        known = declared(self.revision)
        return tuple(b for b in self.broken if b.name in known)


def declared(revision: str) -> Mapping[str, str]:
    """What the revision named ``revision`` declares as known to break, with the reasons
    (none for a revision this package does not offer)."""
    return next((v for r, v in KNOWN_VIOLATIONS.items() if r.value == revision), {})


def read_verdicts(
    side: str,
    check: Mapping[str, Any],
    system: Mapping[str, Any] | None,
    tolerance: Mapping[str, Any] | None = None,
) -> tuple[RevisionVerdict, ...]:
    """The verdicts of ``check --json``'s object (and ``check --system --json``'s, and that
    of ``check --system --losses N --json`` for the tolerances), one per revision, in the
    order the check reports them."""
    invariants: dict[str, dict[str, Broken]] = {}
    judged: dict[str, list[str]] = {}
    exhausted: dict[str, bool] = {}
    for report in check["orders"]:
        revision = report["revision"]
        names = judged.setdefault(revision, [])
        names += [name for name in report["invariants"] if name not in names]
        exhausted[revision] = exhausted.get(revision, True) and bool(report["exhausted"])
        found = invariants.setdefault(revision, {})
        for violation in report["violations"]:
            found.setdefault(
                violation["invariant"],
                Broken(violation["invariant"], "invariant", _lines(violation["trace"])),
            )
    properties: dict[str, tuple[tuple[str, ...], list[Broken]]] = {}
    for result in () if system is None else system["results"]:
        properties[result["revision"]] = (
            tuple(p["name"] for p in result["properties"]),
            [
                Broken(p["name"], "property", _lines(p["counterexample"]["trace"]))
                for p in result["properties"]
                if not p["holds"]
            ],
        )
    tolerated: dict[str, tuple[int, tuple[tuple[str, int | None], ...]]] = {}
    for result in () if tolerance is None else tolerance["results"]:
        # The budget is an assumption since the system check names its assumptions;
        # an older package's JSON holds it among the settings.
        losses = int(result.get("assumptions", result["settings"])["losses"])
        broken = {b.name for b in properties.get(result["revision"], ((), []))[1]}
        tolerated[result["revision"]] = (
            losses,
            tuple((p["name"], _tolerance(p, losses, broken)) for p in result["properties"]),
        )
    return tuple(
        RevisionVerdict(
            side,
            revision,
            tuple(judged[revision]),
            properties[revision][0] if revision in properties else None,
            (*invariants[revision].values(), *properties.get(revision, ((), []))[1]),
            exhausted[revision],
            *tolerated.get(revision, (0, ())),
        )
        for revision in judged
    )


def _tolerance(judged: Mapping[str, Any], losses: int, broken: set[str]) -> int | None:
    """A property's tolerance as the check reports it; a package whose JSON names none
    (before it did) is read as what its verdicts prove: ``losses`` when it holds, else
    none when it is broken without any loss, else 0."""
    if "tolerance" in judged:
        most = judged["tolerance"]
        return None if most is None else int(most)
    if judged["holds"]:
        return losses
    return None if judged["name"] in broken else 0


def _lines(trace: Iterable[Any]) -> tuple[str, ...]:
    return tuple(json.dumps(line, separators=(",", ":")) for line in trace)


# ---------------------------------------------------------------------- judging a side


def judge(
    side: str, *, system: bool = True, losses: int = 0, cwd: Path | None = None
) -> tuple[RevisionVerdict, ...]:
    """Judge ``side`` (a diff side name) with its own package: the exhaustive check of
    both orders, and with ``system`` the default system check, of the revision it names
    (every revision it has, when it names none); with ``losses`` too, the system check
    with up to that many lost messages, for each property's tolerance (a side whose
    package cannot run that check has none). A side that cannot be loaded or checked
    is ``diff_side_failed`` (or ``unknown_diff_side``). Every answer is kept on disk
    under the side's package's digest (:mod:`~handoff_fsm.verify.cache`)."""
    spec = parse_side(side)
    revision = spec.revision or BOTH
    questions: list[Question] = [("check", {"revision": revision, "engine": spec.engine})]
    if system:
        questions.append(("system", {"revision": revision, "losses": 0}))
        if losses:
            questions.append(("system", {"revision": revision, "losses": losses}))
    if spec.in_process:
        answers: list[dict[str, Any] | None] = [
            kept(kind, parameters, partial(_answer_here, kind, json.dumps(parameters)))
            for kind, parameters in questions
        ]
    else:
        with ExitStack() as stack:
            root, what = side_package(spec, Path.cwd() if cwd is None else cwd, stack)
            answers = _asked(spec, root, what, questions)
    check, found, tolerance = (*answers, None, None)[:3]
    assert check is not None, "the exhaustive check is always answered"
    return read_verdicts(side, check, found, tolerance)


def tolerance_answer(revision: Revision, losses: int) -> dict[str, Any]:
    """This package's ``check --revision R --system --losses N --json`` (its results), kept
    as :func:`judge` keeps it: what a verdict reads each property's tolerance off."""
    parameters = {"revision": revision.value, "losses": losses}
    return kept("system", parameters, partial(_answer_here, "system", json.dumps(parameters)))


BOTH: Final = "both"
Question = tuple[str, dict[str, Any]]
"""A kind (``check``, ``system``) and its parameters: what a side's verdict is read off."""


def _command(question: Question) -> list[str]:
    """The ``handoff-fsm`` command line that answers ``question``."""
    kind, parameters = question
    revision = ["--revision", parameters["revision"]]
    if kind == "check":
        engine = parameters["engine"]
        return ["check", *revision, *([] if engine is None else ["--engine", engine]), "--json"]
    # the system check runs the compiled coordinator, whatever the side's engine
    losses = parameters["losses"]
    return [
        "check",
        *revision,
        "--system",
        *(["--losses", str(losses)] if losses else []),
        "--json",
    ]


def run_side_command(spec: SideSpec, argv: Sequence[str], cwd: Path | None = None) -> int:
    """Run ``handoff-fsm ARGV`` of a ``git:`` or ``worktree`` side's own package (its
    output is this process's, its exit status returned), from ``cwd`` (default: here),
    so paths in ``argv`` mean what they say."""
    where = Path.cwd() if cwd is None else cwd
    with ExitStack() as stack:
        root, _ = side_package(spec, where, stack)
        sys.stdout.flush()
        return subprocess.run(
            isolated_command(root, CHECK_PROGRAM, *argv),
            cwd=where,
            env=side_environment(),
            check=False,
        ).returncode


@cache
def _answer_here(kind: str, parameters: str) -> dict[str, Any]:
    """What this package's ``handoff-fsm`` would print for the question (its JSON parts a
    verdict reads), computed here (once per process: the package cannot change). The
    explorations are :func:`~handoff_fsm.verify.exploration.explored`'s and the default
    system reports :func:`~handoff_fsm.verify.system.default_report`'s, which the review
    reads too."""
    asked = json.loads(parameters)
    revisions = [Revision(asked["revision"])] if asked["revision"] != BOTH else list(Revision)
    if kind == "check":
        engine: Engine = "statechart" if asked["engine"] == "statechart" else "compiled"
        orders = [
            explored(order, revision, engine).to_json()
            for revision in revisions
            for order in HandoffOrder
        ]
        return {"orders": orders}
    assumed = SystemAssumptions(losses=asked["losses"])
    reports = [default_report(r, assumed) for r in revisions]
    return {"results": [report.to_json() for report in reports]}


def _asked(
    spec: SideSpec, root: Path, what: str, questions: Sequence[Question]
) -> list[dict[str, Any] | None]:
    """Each question asked of the side's package at once (one process each, where the
    answer is not kept already), or in this process, one after the other, when the
    side's package is the running one (its processes could only answer as this one
    does); ``None`` for a tolerance the side cannot give."""
    here = is_running_package(root)

    def answer(question: Question) -> dict[str, Any] | None:
        kind, parameters = question
        asked = (
            partial(_answer_here, kind, json.dumps(parameters))
            if here
            else partial(_run, spec, root, what, question)
        )
        try:
            return kept(kind, parameters, asked, root)
        except HandoffError:
            if kind == "system" and parameters["losses"]:
                return None
            raise

    if here:
        return [answer(question) for question in questions]
    with ThreadPoolExecutor(max_workers=len(questions)) as pool:
        return list(pool.map(answer, questions))


def _run(spec: SideSpec, root: Path, what: str, question: Question) -> dict[str, Any]:
    """The side's own answer to ``question`` (the parts of its JSON a verdict reads)."""
    command = _command(question)
    process = subprocess.run(
        isolated_command(root, CHECK_PROGRAM, *command),
        cwd=root,
        env=side_environment(),
        capture_output=True,
        check=False,
    )
    said = process.stderr.decode("utf-8", "replace").strip().splitlines()
    last = quoted(said[-1] if said else "no message", 300)
    ran = f"side {quoted(spec.text)} ({what}): `handoff-fsm {' '.join(command)}`"
    if process.returncode not in (0, 1):
        raise handoff_error(
            DiffErrorCode.DIFF_SIDE_FAILED, f"{ran} exited {process.returncode}: {last}"
        )
    try:
        printed = json.loads(process.stdout)
        part = "orders" if question[0] == "check" else "results"
        return {part: printed[part]}
    except (ValueError, TypeError, KeyError):  # a traceback exits 1 too
        raise handoff_error(
            DiffErrorCode.DIFF_SIDE_FAILED, f"{ran} printed no JSON object: {last}"
        ) from None


# ---------------------------------------------------------------------- comparing


def paired(
    a: Sequence[RevisionVerdict], b: Sequence[RevisionVerdict]
) -> list[tuple[RevisionVerdict | None, RevisionVerdict]]:
    """Each revision of B with the revision of A it is compared with: the one revision
    of each when both name one (``seed`` against ``a976b2bf``), else the same name
    (``None`` when A has no revision of that name)."""
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    by_name = {verdict.revision: verdict for verdict in a}
    return [(by_name.get(verdict.revision), verdict) for verdict in b]


def new_breaks(a: RevisionVerdict | None, b: RevisionVerdict) -> tuple[Broken, ...]:
    """What B breaks that A does not (everything, without an A): among what A was judged
    on, so an invariant or property that A's package does not know is not counted."""
    if a is None:
        return b.broken
    judged = {*a.invariants, *(a.properties or ())}
    return tuple(x for x in b.broken if x.name not in a.violated and x.name in judged)


def fixed(a: RevisionVerdict | None, b: RevisionVerdict) -> tuple[Broken, ...]:
    """What A breaks that B no longer does (among what B judged)."""
    if a is None:
        return ()
    judged = {*b.invariants, *(b.properties or ())}
    return tuple(x for x in a.broken if x.name in judged and x.name not in b.violated)


# ---------------------------------------------------------------------- a change


@dataclass(frozen=True, slots=True)
class Attribution:
    """A violation one side has and the other has not, and where the sides part on its
    counterexample."""

    broken: Broken
    revision: str
    """The revision of the side that breaks it."""
    step: int | None
    """The first line of the counterexample the two sides answer differently (1 is the
    ``new`` line); ``None``: they answer it alike (the coordinators do not differ there,
    so what breaks it is elsewhere: the policy, the workers, the checker)."""
    difference: int | None
    """The behaviour difference (1-based, as the diff lists them) that step is one of."""


@dataclass(frozen=True, slots=True)
class ChangeVerdict:
    """What the change from A to B breaks and fixes, per revision compared."""

    a: tuple[RevisionVerdict, ...]
    b: tuple[RevisionVerdict, ...]
    breaks: tuple[Attribution, ...]
    """What B violates and A does not."""
    fixes: tuple[Attribution, ...]
    """What A violates and B does not."""

    @property
    def ok(self) -> bool:
        return not self.breaks and all(v.exhausted for v in self.b)

    def of_difference(self, number: int) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """What difference ``number`` breaks, and what it fixes: each name with the
        revisions it does so in."""
        found: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})
        for named, attributions in zip(found, (self.breaks, self.fixes), strict=True):
            for x in attributions:
                if x.difference == number:
                    named.setdefault(x.broken.name, []).append(x.revision)
        return found


def judge_change(
    report: DiffReport, *, cwd: Path | None = None, system: bool = True, losses: int = 0
) -> ChangeVerdict:
    """Judge both sides of ``report`` (:func:`judge`) and compare them. A side judged in
    another process is waited for beside the other; two sides of this package are
    judged one after the other (threads would only share one interpreter's time)."""
    sides = (report.a, report.b)
    judged = partial(judge, system=system, losses=losses, cwd=cwd)
    if all(parse_side(side).in_process for side in sides):
        a, b = (judged(side) for side in sides)
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            a, b = pool.map(judged, sides)
    return change_verdict(report, a, b, cwd=cwd)


def change_verdict(
    report: DiffReport,
    a: Sequence[RevisionVerdict],
    b: Sequence[RevisionVerdict],
    *,
    cwd: Path | None = None,
) -> ChangeVerdict:
    """Compare the verdicts of ``report``'s sides, replaying each counterexample on both
    sides to find the difference it passes through."""
    pairs = paired(a, b)
    breaks = [(vb, broken) for va, vb in pairs for broken in new_breaks(va, vb)]
    fixes = [(va, broken) for va, vb in pairs if va is not None for broken in fixed(va, vb)]
    if not breaks and not fixes:
        return ChangeVerdict(tuple(a), tuple(b), (), ())
    with opened_sides((report.a, report.b), cwd) as (side_a, side_b):
        made = [
            [_attributed(report, side_a, side_b, verdict, broken) for verdict, broken in found]
            for found in (breaks, fixes)
        ]
    return ChangeVerdict(tuple(a), tuple(b), tuple(made[0]), tuple(made[1]))


def _attributed(
    report: DiffReport, side_a: Side, side_b: Side, verdict: RevisionVerdict, broken: Broken
) -> Attribution:
    lines = [_without_revision(line) for line in broken.trace]
    replies_a = ask(side_a, {"op": "run", "lines": lines})["replies"]
    replies_b = ask(side_b, {"op": "run", "lines": lines})["replies"]
    for step, (text_a, text_b) in enumerate(zip(replies_a, replies_b, strict=True), start=1):
        reply_a, reply_b = json.loads(text_a), json.loads(text_b)
        if reply_a != reply_b:
            how = relation(reply_a, reply_b)
            number = next(
                (n for n, d in enumerate(report.differences, start=1) if relation(d.a, d.b) == how),
                None,
            )
            return Attribution(broken, verdict.revision, step, number)
    return Attribution(broken, verdict.revision, None, None)


def _without_revision(line: str) -> str:
    """A trace line for either side: a ``new`` line names no revision (the side has one)."""
    parsed = json.loads(line)
    if parsed.get("op") == "new" and "revision" in parsed:
        del parsed["revision"]
        return json.dumps(parsed)
    return line

"""The verdict a review opens with: what each revision breaks, what a change breaks or fixes.

Rule kept here: at most :data:`MAX_LINES` lines, every figure read off verdicts handed
in (:mod:`handoff_fsm.verify.verdicts`: the exploration's invariants, the system
check's properties, each behaviour difference's attribution), every line linking to
the section that holds its evidence. A violation a revision declares as known
(:data:`~handoff_fsm.model.KNOWN_VIOLATIONS`) is shown as known, apart from new ones,
and only a new one fails the gate (:func:`gate_failures`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from handoff_fsm.model import Revision
from handoff_fsm.verify.diff import DiffReport
from handoff_fsm.verify.exploration import ExplorationReport
from handoff_fsm.verify.system import SystemReport
from handoff_fsm.verify.verdicts import (
    ChangeVerdict,
    RevisionVerdict,
    declared,
    read_verdicts,
)

MAX_LINES: Final = 20
HEADING: Final = "Verdict"
PACKAGE: Final = "this package"
"""How the review names the side it judges: the package it was written by."""


@dataclass(frozen=True, slots=True)
class Links:
    """Where a verdict line's evidence is (Markdown link targets)."""

    invariants: str | None = None
    system: str | None = None
    losses: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One compared pair, as the verdict names it."""

    report: DiffReport
    verdict: ChangeVerdict
    link: str
    """Where the differences are listed."""
    differences: Sequence[str] = ()
    """Each difference's own link target, in the report's order (empty: ``link``)."""


def package_verdicts(
    explorations: Mapping[Revision, Sequence[ExplorationReport]],
    systems: Mapping[Revision, SystemReport],
    tolerance: Mapping[str, Any] | None = None,
) -> tuple[RevisionVerdict, ...]:
    """The running package's verdicts, read off reports the review already has (and the
    JSON of its system check with lost messages, for the tolerances)."""
    check = {"orders": [r.to_json() for reports in explorations.values() for r in reports]}
    system = {"results": [report.to_json() for report in systems.values()]}
    return read_verdicts(PACKAGE, check, system, tolerance)


def gate_failures(verdicts: Sequence[RevisionVerdict]) -> list[str]:
    """Each violation a revision does not declare as known, in words (empty: it passes);
    a verdict on less than every reachable state fails too."""
    failures = [
        f"{v.revision}: {b.name} ({b.kind}) is violated and not declared as known"
        for v in verdicts
        for b in v.unknown()
    ]
    failures += [f"{v.revision}: not every state was explored" for v in verdicts if not v.exhausted]
    return failures


def verdict_markdown(
    verdicts: Sequence[RevisionVerdict],
    links: Links,
    *,
    changes: Sequence[Change] = (),
    stalls: Mapping[str, tuple[int, int]] | None = None,
    gate: str = "handoff-fsm review --check",
    failures: Sequence[str] | None = None,
) -> list[str]:
    """The verdict section: the gate, a row per revision, a line per change, the stalls.

    ``failures``: why ``gate`` fails (default: :func:`gate_failures` of ``verdicts``)."""
    failures = gate_failures(verdicts) if failures is None else failures
    out = [f"## {HEADING}", ""]
    if failures:
        out.append(f"**`{gate}` fails**: " + "; ".join(failures) + ".")
    else:
        out.append(
            f"**`{gate}` passes**: "
            + (
                "no revision breaks an invariant or system property it does not declare as known."
                if gate.startswith("handoff-fsm review")
                else "B breaks no invariant or system property that A keeps."
            )
        )
    system = any(v.properties is not None for v in verdicts)
    with_side = len({v.side for v in verdicts}) > 1
    header = [*(["Side"] if with_side else []), "Revision", _linked("Invariants", links.invariants)]
    if system:
        header.append(_linked("System properties", links.system) + ", no message lost")
    losses = max((v.losses for v in verdicts), default=0)
    if losses:
        header.append(_linked(f"With up to {_messages(losses)} lost", links.system))
    header.append("Declared as known")
    out += ["", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for verdict in verdicts:
        cells = [*([f"`{verdict.side}`"] if with_side else []), f"`{verdict.revision}`"]
        cells.append(_held(verdict, verdict.invariants, "invariant"))
        if system:
            judged = verdict.properties
            cells.append("not checked" if judged is None else _held(verdict, judged, "property"))
        if losses:
            cells.append(_tolerated(verdict))
        cells.append(_known(verdict))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", *_reasons(verdicts)]
    for change in changes:
        out.append(_change_line(change))
    if stalls:
        shown = ", ".join(
            f"{stalling} of {waiting} waiting states (`{revision}`)"
            for revision, (stalling, waiting) in stalls.items()
        )
        where = f" ([One lost message]({links.losses}))" if links.losses else ""
        out.append(f"- One lost message stalls the handoff for good in {shown}{where}.")
    out.append("")
    assert len(out) <= MAX_LINES + 1, "the verdict grew past its limit"
    return out


def _linked(text: str, target: str | None) -> str:
    return text if target is None else f"[{text}]({target})"


def _held(verdict: RevisionVerdict, judged: Sequence[str] | None, kind: str) -> str:
    judged = judged or ()
    broken = [b for b in verdict.broken if b.kind == kind]
    held = f"{len(judged) - len(broken)}/{len(judged)} hold"
    if not broken:
        return held
    known = declared(verdict.revision)
    named = ", ".join(
        f"`{b.name}`" + (" (known)" if b.name in known else " **(new)**") for b in broken
    )
    return f"{held}; violated: {named}"


def _messages(count: int) -> str:
    return f"{count} message" + ("s" if count != 1 else "")


def _tolerated(verdict: RevisionVerdict) -> str:
    """How the properties fare with lost messages: those that still hold, and those a loss
    breaks (one broken without any loss is in the column before)."""
    if not verdict.losses:
        return "not checked"
    holding = sum(1 for _, most in verdict.tolerance if most is not None and most >= verdict.losses)
    held = f"{holding}/{len(verdict.tolerance)} hold"
    lost = verdict.lost_to()
    if lost:
        return held + "; a loss breaks " + ", ".join(f"`{name}`" for name in lost)
    return held + ("; a loss breaks nothing more" if holding < len(verdict.tolerance) else "")


def _known(verdict: RevisionVerdict) -> str:
    return ", ".join(f"`{name}`" for name in declared(verdict.revision)) or "nothing"


def _reasons(verdicts: Sequence[RevisionVerdict]) -> list[str]:
    """Why each revision declares what it declares, once per revision."""
    revisions = dict.fromkeys(v.revision for v in verdicts)
    return [
        f"- `{revision}` declares `{name}` known: {reason}."
        for revision in revisions
        for name, reason in declared(revision).items()
    ]


def _in_revisions(name: str, revisions: Sequence[str], paired: bool) -> str:
    """A name a difference breaks or fixes, with the revisions (when several are compared)."""
    return f"`{name}`" + (f" ({', '.join(revisions)})" if paired else "")


def _change_line(change: Change) -> str:
    report, verdict = change.report, change.verdict
    count = len(report.differences)
    paired = len(verdict.b) > 1
    title = f"`{report.a}` → `{report.b}`"
    if not count:
        return f"- {title}: [no behaviour difference]({change.link})."
    parts = []
    for number in range(1, count + 1):
        breaks, fixes = verdict.of_difference(number)
        target = change.differences[number - 1] if change.differences else change.link
        words = [
            f"{verb} "
            + ", ".join(
                _in_revisions(named, revisions, paired) for named, revisions in found.items()
            )
            for verb, found in (("breaks", breaks), ("fixes", fixes))
            if found
        ]
        parts.append(f"[{number}]({target}) " + (" and ".join(words) or "breaks nothing"))
    elsewhere = [x for x in verdict.breaks if x.difference is None]
    tail = ""
    if elsewhere:
        tail = "; not from a reply that differs: " + ", ".join(
            f"`{x.broken.name}` ({x.revision})" for x in elsewhere
        )
    return (
        f"- {title}: [{count} behaviour difference{'s' if count != 1 else ''}]({change.link}): "
        + "; ".join(parts)
        + tail
        + "."
    )

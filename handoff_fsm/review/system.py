"""The review's "System" section: each revision's system check, its verdicts, its drawings.

Rule kept here: every verdict, count and counterexample comes from
:func:`~handoff_fsm.verify.system.check_system` run with its defaults (DESIGN §10) when
the review is written, once per process; each counterexample's lifecycle is its trace
drawn the one way (:func:`~handoff_fsm.verify.system.system_lifecycle`) and written
beside the review with the trace (:func:`system_files`). Every verdict is printed under
the assumptions it rests on, and the matrix (:func:`~handoff_fsm.verify.system.check_matrix`)
shows which verdict changes with them. Nothing is timed, so the same code gives the same
bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Final

from handoff_fsm.io.lifecycle import Lifecycle
from handoff_fsm.model import Revision
from handoff_fsm.render.sequence import render_sequence
from handoff_fsm.verify.system import (
    STATEMENTS,
    Property,
    SystemMatrix,
    SystemReport,
    check_matrix,
    default_report,
    system_lifecycle,
)
from handoff_fsm.verify.system.matrix import cell_words, column_label

HEADING: Final = "System"


def system_reports() -> dict[Revision, SystemReport]:
    """``check_system(revision)`` with its defaults, for every revision (each computed once
    per process, :func:`~handoff_fsm.verify.system.default_report`)."""
    return {revision: default_report(revision) for revision in Revision}


def system_file(revision: Revision, name: str, suffix: str) -> str:
    """Where a counterexample's file goes (``seed/system_no_kv_leak.svg``)."""
    return f"{revision.value}/system_{name}.{suffix}"


SYSTEM_FILES: Final = re.compile(
    rf"(?:{'|'.join(re.escape(r.value) for r in Revision)})/system_[a-z_]+\.(?:jsonl|svg)"
)
"""Every name :func:`system_file` gives: a property that holds now leaves none, so a
writer removes those it did not write (:func:`stale_system_files`)."""


def stale_system_files(folder: Path, written: Iterable[str]) -> list[Path]:
    """The counterexample files in ``folder``'s revision folders that ``written`` (the
    names just written) does not hold: what an earlier review left of a property that
    has been fixed since."""
    kept = set(written)
    stale = []
    for revision in Revision:
        where = folder / revision.value
        if where.is_dir():
            for entry in sorted(where.iterdir()):
                name = f"{revision.value}/{entry.name}"
                if SYSTEM_FILES.fullmatch(name) and name not in kept and entry.is_file():
                    stale.append(entry)
    return stale


def system_files() -> dict[str, Callable[[], bytes]]:
    """Each counterexample's trace and lifecycle, by path (drawn only when called)."""
    files: dict[str, Callable[[], bytes]] = {}
    for revision, report in system_reports().items():
        for verdict in report.verdicts:
            example = verdict.counterexample
            if example is None:
                continue
            name = verdict.name.value
            trace = example.jsonl().encode("utf-8")
            files[system_file(revision, name, "jsonl")] = partial(bytes, trace)
            title = f"{name}: shortest counterexample ({revision.value})"
            files[system_file(revision, name, "svg")] = partial(
                _drawn, system_lifecycle(example, title=title)
            )
    return files


def _drawn(lifecycle: Lifecycle) -> bytes:
    return render_sequence(lifecycle, "svg")


def system_markdown(number: int) -> list[str]:
    """The section: what the world is, then per revision its settings, verdicts, drawings."""
    out = [
        f"## {number}. {HEADING}",
        "",
        "`handoff-fsm check --system` explores the coordinator of each revision inside the "
        "real session policy, with an honest source and destination, a client that may "
        "cancel once, workers that may fail once and a network that may deliver every "
        "message in any order (docs/verification.md, DESIGN §10). Each property is judged in "
        "every reachable world state; a violated one is shown by its shortest run: the world "
        "steps, and the coordinator's inputs as a trace (`handoff-fsm replay` and "
        "`handoff-fsm lifecycle` take it as it is), drawn with the world's steps marked "
        "(notes for what the workers, the client and the policy's timers did). Each "
        "verdict is stated with what the world assumes about what the project does not "
        "control, and a matrix explores the same world under every set of assumptions "
        'that can be varied: a verdict marked "rests on the assumptions" is no promise '
        "for workers that behave otherwise.",
        "",
    ]
    for index, (revision, report) in enumerate(system_reports().items(), start=1):
        out += [
            f"### {number}.{index}. `{revision.value}`",
            "",
            f"Settings: {report.settings.describe()}. Explored: {report.states:,} world "
            f"states, {report.transitions:,} steps ({report.session_states:,} session states).",
            "",
            "Assumptions (settings can be varied with `check --system`; limits cannot):",
            "",
            *(
                f"- `{item.key} = {item.shown}` ({item.role}): {item.text}."
                for item in report.settings.assumptions.items()
            ),
            "",
            "| Property | Statement | Verdict |",
            "| --- | --- | --- |",
        ]
        for verdict in report.verdicts:
            name = verdict.name.value
            if verdict.counterexample is None:
                shown = "holds"
            else:
                steps = len(verdict.counterexample.world)
                shown = f"**violated** ([{steps} steps](#{_anchor(revision, name)}))"
            out.append(f"| `{name}` | {STATEMENTS[verdict.name]} | {shown} |")
        out += ["", *matrix_markdown(check_matrix(revision)), ""]
        for verdict in report.verdicts:
            example = verdict.counterexample
            if example is None:
                continue
            name = verdict.name.value
            trace = system_file(revision, name, "jsonl")
            out += [
                f'<a id="{_anchor(revision, name)}"></a>',
                "",
                f"#### `{name}` under `{revision.value}` ({example.order.value})",
                "",
                f"{example.message[0].upper()}{example.message[1:]}. Trace: [{trace}]({trace}).",
                "",
                *(
                    f"{position}. {step.kind}: {step.text}"
                    for position, step in enumerate(example.world, start=1)
                ),
                "",
                f"![{name} under {revision.value}]({system_file(revision, name, 'svg')})",
                "",
            ]
    return out


def matrix_markdown(table: SystemMatrix) -> list[str]:
    """The matrix as a Markdown table: a row per property, a column per set of
    assumptions (the default first), the last column saying whether the verdict rests
    on them."""
    losses = table.reports[0].settings.assumptions.losses
    heads = [f"`{column_label(c, i == 0)}`" for i, c in enumerate(table.columns)]
    out = [
        f"Under every set of assumptions (`handoff-fsm check --system --matrix --revision "
        f"{table.revision.value}`; columns: answers, workers):",
        "",
        f"| Property | {' | '.join(heads)} | Rests on the assumptions |",
        f"| --- |{' --- |' * len(heads)} --- |",
    ]
    for name in Property:
        cells = (cell_words(table.cell(name, c), losses) for c in range(len(heads)))
        rests = "**yes**" if table.rests_on(name) else "no"
        out.append(f"| `{name.value}` | {' | '.join(cells)} | {rests} |")
    return out


def _anchor(revision: Revision, name: str) -> str:
    return f"system-{revision.value}-{name.replace('_', '-')}"

"""The review of a change: ``handoff-fsm diff A B -o DIR`` and the review's "Revisions".

Rule kept here: everything is written from one :class:`~handoff_fsm.verify.diff.DiffReport`
(and the charts it carries), as ``name -> bytes`` first, then to disk, so the
folder, the Markdown and the pictures cannot disagree. A difference is shown
three ways from the same trace: a row of the table (the shortest trace in
words), a side-by-side Mermaid sequence diagram (A's lane, the inputs, B's
lane; the divergence boxed), drawn as SVG too (:mod:`handoff_fsm.render.difference`,
the same steps and words), and JSONL files (the trace, and each side's
replies, which ``handoff-fsm replay`` reproduces line for line). The charts'
structural diff is listed and drawn in the chart's own layout and words, each
change in its status's colour (:mod:`handoff_fsm.render.chartdiff`). The folder is
written file by file atomically, and the files of an earlier review there
(:data:`OWNED`: its own names only, never anyone else's) that this one does not
write are removed, so a folder never holds a new verdict beside an old run's
differences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

from handoff_fsm.io.atomic import write_files
from handoff_fsm.io.inputs import Input
from handoff_fsm.render.chartdiff import chart_diff_dot
from handoff_fsm.render.difference import LaneStep, render_difference
from handoff_fsm.render.graphviz import render
from handoff_fsm.render.mermaid import mermaid_block, mermaid_text
from handoff_fsm.review.verdict import Change, Links, verdict_markdown
from handoff_fsm.structure.chartdiff import ChartDiff, Status, chart_diff
from handoff_fsm.verify.diff.behaviour import Difference, DiffReport, diff, input_words, reply_words
from handoff_fsm.verify.diff.driver import TRACE_KEY
from handoff_fsm.verify.diff.sides import known_revisions
from handoff_fsm.verify.verdicts import ChangeVerdict

DIFF_NAME: Final = "DIFF.md"
CHART_DIFF_NAME: Final = "chart_diff"
JSON_NAME: Final = "diff.json"
_DIVERGENCE_FILL: Final = "rgb(255, 235, 233)"
OWNED: Final = re.compile(
    rf"{re.escape(DIFF_NAME)}|{re.escape(JSON_NAME)}|{CHART_DIFF_NAME}\.(?:dot|svg)"
    r"|difference_[0-9]{2,}\.(?:jsonl|a\.jsonl|b\.jsonl|mmd|svg)"
)
"""The names of the files a diff review writes (``fullmatch``): the ones it may remove."""


def difference_file(number: int, suffix: str) -> str:
    return f"difference_{number:02d}.{suffix}"


def _code(text: str) -> str:
    return f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# ---------------------------------------------------------------------- a trace in words


def step_words(line: str) -> str:
    """One trace line in words (``new`` lines name the coordinator they create)."""
    parsed = json.loads(line)
    if parsed.get("op") == "new":
        return f"new coordinator {parsed['coordinator']} ({parsed['order']})"
    text = input_words(Input.from_wire(parsed))
    key = parsed.get("coordinator")
    return text if key == TRACE_KEY else f"{text} [to {key}]"


def trace_steps(difference: Difference) -> list[tuple[str, str, str]]:
    """``(input, A's reply, B's reply)`` in words for every line after the first ``new``."""
    return [
        (step_words(line), reply_words(reply_a), reply_words(reply_b))
        for line, reply_a, reply_b in zip(
            difference.trace[1:],
            difference.replies_a[1:],
            difference.replies_b[1:],
            strict=True,
        )
    ]


def trace_sentence(difference: Difference) -> str:
    """The shortest trace on one line: inputs joined by arrows, the diverging one in bold."""
    inputs = [step_words(line) for line in difference.trace[1:]]
    return " → ".join([*inputs[:-1], f"**{inputs[-1]}**"])


# ---------------------------------------------------------------------- mermaid


def _arrow_reply(reply: dict[str, Any]) -> str:
    return "--x" if "error" in reply or "crash" in reply else "-->>"


def _short_reply(reply: dict[str, Any]) -> str:
    return reply_words(reply).removeprefix("issues ")


def _difference_title(number: int, difference: Difference) -> str:
    # Mermaid does not wrap a title: the events only (the kind in full heads DIFF.md's section).
    events = difference.kind.partition(": ")[0]
    return f"Difference {number}: {events} ({difference.inputs} inputs)"


def _same_inputs(difference: Difference) -> str:
    return f"{difference.order.value}: the same inputs to both"


def difference_svg(report: DiffReport, number: int, difference: Difference) -> bytes:
    """:func:`difference_mermaid` drawn by Graphviz: the same lanes, steps and words."""
    steps = [
        LaneStep(
            input=words,
            reply_a=_short_reply(reply_a),
            reply_b=_short_reply(reply_b),
            refused_a=_arrow_reply(reply_a) == "--x",
            refused_b=_arrow_reply(reply_b) == "--x",
        )
        for (words, _, _), reply_a, reply_b in zip(
            trace_steps(difference),
            difference.replies_a[1:],
            difference.replies_b[1:],
            strict=True,
        )
    ]
    title = _difference_title(number, difference)
    return render_difference(title, report.a, report.b, _same_inputs(difference), steps)


def difference_mermaid(report: DiffReport, number: int, difference: Difference) -> str:
    """Both coordinators' lanes on the same inputs, the diverging step boxed."""
    title = _difference_title(number, difference)
    out = [
        "---",
        f"title: {json.dumps(title, ensure_ascii=False)}",
        "---",
        "sequenceDiagram",
        "    %% Generated by `handoff-fsm diff -o`; do not edit. #35; is '#' (an action id).",
        f"    participant A as {mermaid_text('A: ' + report.a)}",
        "    participant I as Inputs",
        f"    participant B as {mermaid_text('B: ' + report.b)}",
        f"    Note over A,B: {mermaid_text(_same_inputs(difference))}",
    ]
    steps = trace_steps(difference)
    for index, ((words, _, _), reply_a, reply_b) in enumerate(
        zip(steps, difference.replies_a[1:], difference.replies_b[1:], strict=True), start=1
    ):
        last = index == len(steps)
        if last:
            out.append(f"    rect {_DIVERGENCE_FILL}")
        text = mermaid_text(f"{index}. {words}")
        out.append(f"    I->>A: {text}")
        out.append(f"    I->>B: {text}")
        out.append(f"    A{_arrow_reply(reply_a)}I: {mermaid_text(_short_reply(reply_a))}")
        out.append(f"    B{_arrow_reply(reply_b)}I: {mermaid_text(_short_reply(reply_b))}")
        if last:
            out.append(f"    Note over A,B: {mermaid_text('the replies differ here')}")
            out.append("    end")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------- markdown


def verdict_lines(report: DiffReport) -> list[str]:
    orders = sorted({d.order.value for d in report.differences}) or [
        "SourceFirst",
        "DestinationFirst",
    ]
    reach = "every pair the two reach together" if report.exhausted else "stopped early"
    explored = (
        f"{report.explored} pairs of states explored breadth-first, {reach}, with every "
        "input class of `handoff-fsm check` in each"
    )
    if report.equivalent:
        return [f"**Equivalent**: no input sequence tells them apart ({explored}).", ""]
    count = len(report.differences)
    return [
        f"**They differ in {count} way{'s' if count != 1 else ''}** ({explored}; differences "
        f"seen in {', '.join(orders)}). Each is shown by the shortest input sequence that "
        "leads to it; up to its last line both sides answer alike.",
        "",
    ]


def differences_table(report: DiffReport, *, files: bool) -> list[str]:
    if report.equivalent:
        return []
    out = [
        f"| # | Kind | Order | Inputs | Shortest trace | A ({_code(report.a)}) | "
        f"B ({_code(report.b)}) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, difference in enumerate(report.differences, start=1):
        link = f"[{number}](#{difference_anchor(number, difference)})"
        out.append(
            f"| {link} | {_cell(difference.kind)} | {difference.order.value} | "
            f"{difference.inputs} | {_cell(trace_sentence(difference))} | "
            f"{_cell(reply_words(difference.a))} | {_cell(reply_words(difference.b))} |"
        )
    out.append("")
    return out


def _heading(number: int, difference: Difference) -> str:
    return f"Difference {number}: {difference.kind}"


def difference_anchor(number: int, difference: Difference) -> str:
    words = _heading(number, difference).lower()
    kept = "".join(c for c in words if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def difference_sections(report: DiffReport, level: int, *, files: bool) -> list[str]:
    """One section per difference: summary, steps table, files, the sequence diagram."""
    hashes = "#" * level
    out: list[str] = []
    for number, difference in enumerate(report.differences, start=1):
        out += [
            f"{hashes} {_heading(number, difference)}",
            "",
            difference.summary,
            "",
            f"| Step | Input | A ({_code(report.a)}) | B ({_code(report.b)}) |",
            "| --- | --- | --- | --- |",
        ]
        steps = trace_steps(difference)
        for index, (words, answer_a, answer_b) in enumerate(steps, start=1):
            mark = "**" if index == len(steps) else ""
            out.append(
                f"| {index} | {mark}{_cell(words)}{mark} | {mark}{_cell(answer_a)}{mark} | "
                f"{mark}{_cell(answer_b)}{mark} |"
            )
        out.append("")
        if files:
            out += [
                f"Files: [trace]({difference_file(number, 'jsonl')}) · replies of "
                f"[A]({difference_file(number, 'a.jsonl')}) and "
                f"[B]({difference_file(number, 'b.jsonl')}) · "
                f"[sequence diagram]({difference_file(number, 'mmd')}) "
                f"([drawn]({difference_file(number, 'svg')})). Replay with each "
                "side's code: `handoff-fsm replay [--revision R] "
                f"{difference_file(number, 'jsonl')}`.",
                "",
            ]
        out += [*mermaid_block(difference_mermaid(report, number, difference)), ""]
    return out


def structure_lines(
    diff: ChartDiff | None, notes: tuple[str | None, str | None], level: int, *, picture: str | None
) -> list[str]:
    """The charts' structural diff: counts, the picture, and every change listed."""
    hashes = "#" * level
    out = [f"{hashes} Structure of the charts", ""]
    if diff is None:
        why = "; ".join(f"{side}: {note}" for side, note in zip("AB", notes, strict=True) if note)
        return [*out, f"Not available ({why or 'no chart description'}).", ""]
    if diff.same:
        out += ["The two charts are the same: every state and transition is unchanged.", ""]
        if picture is None:
            return out
    counts = diff.counts()
    out += [
        "| | added | removed | changed | unchanged |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {what} | " + " | ".join(str(counts[what][status]) for status in Status) + " |"
            for what in ("states", "transitions")
        ),
        "",
    ]
    if picture is not None:
        out += [f"![Structural diff of the charts]({picture})", ""]
    rows: list[str] = []
    for delta in diff.states:
        if delta.status is not Status.SAME:
            detail = "; ".join(delta.changes)
            rows.append(f"| state | {delta.status} | `{delta.id}` | {_cell(detail)} |")
    for edge in diff.edges:
        if edge.status is not Status.SAME:
            detail = "; ".join(edge.changes)
            rows.append(f"| transition | {edge.status} | `{_cell(str(edge))}` | {_cell(detail)} |")
    if rows:
        out += ["| | status | what | change |", "| --- | --- | --- | --- |", *rows, ""]
    return out


def report_chart_diff(report: DiffReport) -> ChartDiff | None:
    a, b = report.charts
    if a is None or b is None:
        return None
    return chart_diff(a, b)


def diff_markdown(report: DiffReport, *, command: str, judged: ChangeVerdict | None = None) -> str:
    """DIFF.md: the verdict (with ``judged``, both sides' invariants and system
    properties), the table of differences, one section each, the structural diff."""
    structure = report_chart_diff(report)
    out = [
        f"# Behavioural diff: {_code(report.a)} → {_code(report.b)}",
        "",
        f"<!-- Generated by `{command}`; do not edit. -->",
        "",
        *([] if judged is None else change_verdict_markdown(report, judged)),
        f"A = {_code(report.a)}, B = {_code(report.b)}: the replies of both to the same "
        "inputs (actions with ids and delays, error codes, completion), compared over every "
        "pair of states they can reach together.",
        "",
        "## Differences",
        "",
        *verdict_lines(report),
        *differences_table(report, files=True),
        *difference_sections(report, 3, files=True),
        *structure_lines(
            structure,
            report.chart_notes,
            2,
            picture=None if structure is None else f"{CHART_DIFF_NAME}.svg",
        ),
    ]
    if report.stopped is not None:
        out += [f"Not every pair of states was explored: {report.stopped}.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _jsonl(objects: list[Any]) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objects).encode("utf-8")


def change_verdict_markdown(report: DiffReport, judged: ChangeVerdict) -> list[str]:
    """The verdict DIFF.md opens with: each side's revisions, each difference's part in
    what B breaks or fixes; ``diff A B --check`` fails exactly when it says so."""
    anchors = [f"#{difference_anchor(n, d)}" for n, d in enumerate(report.differences, 1)]
    change = Change(report, judged, "#differences", anchors)
    return verdict_markdown(
        (*judged.a, *judged.b),
        Links(),
        changes=[change],
        gate=f"handoff-fsm diff {report.a} {report.b} --check",
        failures=change_failures(judged),
    )


def change_failures(judged: ChangeVerdict) -> list[str]:
    """Why ``diff A B --check`` fails, in words (empty: it passes)."""
    failures = [
        f"B ({x.revision}) breaks {x.broken.name} ({x.broken.kind}), which A keeps"
        for x in judged.breaks
    ]
    failures += [
        f"B ({v.revision}): not every state was explored" for v in judged.b if not v.exhausted
    ]
    return failures


def diff_review_files(
    report: DiffReport, *, command: str, judged: ChangeVerdict | None = None
) -> dict[str, bytes]:
    """Everything ``-o DIR`` writes, by file name (the SVGs need Graphviz's ``dot``)."""
    files = {
        DIFF_NAME: diff_markdown(report, command=command, judged=judged).encode("utf-8"),
        JSON_NAME: (json.dumps(report.to_json(), indent=2) + "\n").encode("utf-8"),
    }
    for number, difference in enumerate(report.differences, start=1):
        files[difference_file(number, "jsonl")] = difference.jsonl().encode("utf-8")
        files[difference_file(number, "a.jsonl")] = _jsonl(list(difference.replies_a))
        files[difference_file(number, "b.jsonl")] = _jsonl(list(difference.replies_b))
        files[difference_file(number, "mmd")] = difference_mermaid(
            report, number, difference
        ).encode("utf-8")
        files[difference_file(number, "svg")] = difference_svg(report, number, difference)
    structure = report_chart_diff(report)
    if structure is not None:
        title = f"Structural diff of the charts: A = {report.a}, B = {report.b}"
        dot = chart_diff_dot(structure, title)
        files[f"{CHART_DIFF_NAME}.dot"] = dot.encode("utf-8")
        files[f"{CHART_DIFF_NAME}.svg"] = render(dot, "svg")
    return dict(sorted(files.items()))


def write_diff_review(
    report: DiffReport,
    outdir: Path,
    *,
    command: str = "handoff-fsm diff",
    judged: ChangeVerdict | None = None,
) -> list[Path]:
    """Write the review of the change into ``outdir`` (created if missing), each file
    atomically, and remove what an earlier review left there that this one does not
    write (only names :data:`OWNED` matches)."""
    files = diff_review_files(report, command=command, judged=judged)
    return write_files(outdir, files, owns=OWNED.fullmatch)


# ---------------------------------------------------------------------- the design review

REVISIONS_HEADING: Final = "Revisions"


@cache
def revision_reports() -> tuple[DiffReport, ...]:
    """``diff seed R`` for every other protocol revision this package offers (run once)."""
    first, *others = known_revisions()
    return tuple(diff(first, other, charts=True) for other in others)


def _change_lines(report: DiffReport, level: int) -> list[str]:
    """A diff inside the review: verdict, table, each difference, the charts' structure."""
    structure = report_chart_diff(report)
    return [
        *verdict_lines(report),
        *differences_table(report, files=False),
        *difference_sections(report, level + 1, files=False),
        *structure_lines(structure, report.chart_notes, level + 1, picture=None),
    ]


def revisions_markdown(
    number: int,
    *,
    revisions: Sequence[tuple[str, list[str]]] = (),
    against: str | None = None,
    cwd: Path | None = None,
    against_report: DiffReport | None = None,
) -> list[str]:
    """The review's "Revisions" section: ``revisions`` (each one's title and body, written by
    the review), then every revision against the seed, and optionally the working tree
    against a git revision (``handoff-fsm review --against git:REV``; ``against_report``:
    that diff, when the caller has it)."""
    out = [
        f"## {number}. {REVISIONS_HEADING}",
        "",
        "The protocol revisions this package offers (docs/revisions.md): each "
        "one's own chart, size and invariants, then each compared with the seed by "
        "`handoff-fsm diff`: both coordinators are given the same "
        "inputs (the input classes of `handoff-fsm check`) in every pair of states they reach "
        "together, breadth-first, and their replies compared as `handoff-fsm replay` prints "
        "them. Each kind of difference is shown by its shortest trace.",
        "",
    ]
    index = 0
    for index, (title, body) in enumerate(revisions, start=1):
        out += [f"### {number}.{index}. {title}", "", *body]
    reports = revision_reports()
    if not reports:
        out += [
            f"This package offers one revision, `{known_revisions()[0]}`: there is nothing to "
            "compare it with.",
            "",
        ]
    for offset, report in enumerate(reports, start=index + 1):
        out += [
            f"### {number}.{offset}. `{report.a}` → `{report.b}`",
            "",
            *_change_lines(report, 3),
        ]
    if against is not None:
        report = against_report or diff(against, "worktree", cwd=cwd, charts=True)
        out += [
            f"### {number}.{index + len(reports) + 1}. The working tree against `{against}`",
            "",
            f"`handoff-fsm review --against {against}`: the files of this working tree (B) "
            f"against the project committed at `{against.removeprefix('git:')}` (A).",
            "",
            *_change_lines(report, 3),
        ]
    return out

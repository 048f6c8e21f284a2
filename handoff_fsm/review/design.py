"""The design review: one Markdown document generated from the chart, runs and explorations.

Rule kept here: every figure, table and diagram in the review is computed
from the code when the review is written: the chart's structure (the
:class:`~handoff_fsm.structure.ChartModel`), its compiled state space (:func:`compiled_chart`),
the scripted lifecycles (real coordinator runs), the conformance
expectations, the error-code table, the exhaustive exploration
(:func:`handoff_fsm.verify.exploration.explore`) and the improvements text the docs show.
Each protocol revision gets its own part: its chart and transition table
(:mod:`~handoff_fsm.structure.revisions`), its size, the invariants it promises
as its exploration judged them, and for ``a976b2bf`` a simulated request
canceled while decoding under each revision, side by side
(:mod:`~handoff_fsm.simulate.decode_cancel`); and the system check of every revision
(:mod:`~handoff_fsm.review.system`).
Nothing is timed and nothing is dated, so the same code gives the same bytes.
Links point at files ``handoff-fsm diagrams`` writes into the review's folder
(:func:`~handoff_fsm.review.files.write_review` writes them beside the review);
what it says about regenerating names the command, which works from any install,
not the project's ``make``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cache
from typing import Final

from handoff_fsm.chart import REJECTIONS
from handoff_fsm.conformance import expected_normalized_handoff
from handoff_fsm.engines.compiled import CompiledChart, compiled_chart
from handoff_fsm.io.lifecycle import Lifecycle, MessageKind
from handoff_fsm.model import (
    VERDICT_LOSSES,
    HandoffCompletion,
    HandoffOrder,
    NormalizedHandoffEvent,
    Revision,
)
from handoff_fsm.render.mermaid import mermaid_block, statechart_mermaid
from handoff_fsm.render.sequence import sequence_mermaid
from handoff_fsm.review.codes import error_conditions
from handoff_fsm.review.diffreview import (
    difference_anchor,
    revision_reports,
    revisions_markdown,
)
from handoff_fsm.review.improvements import IMPROVEMENTS_MARKDOWN, KEPT_QUIRKS_MARKDOWN
from handoff_fsm.review.invariant_table import invariants_markdown
from handoff_fsm.review.loss_table import losses_markdown
from handoff_fsm.review.loss_table import stalls as stalls_of
from handoff_fsm.review.provenance import Provenance, provenance
from handoff_fsm.review.system import HEADING as SYSTEM_HEADING
from handoff_fsm.review.system import system_markdown, system_reports
from handoff_fsm.review.tables import inputs_markdown, transition_tables_markdown
from handoff_fsm.review.verdict import Change, Links, package_verdicts, verdict_markdown
from handoff_fsm.simulate.decode_cancel import NAME as DECODE_CANCEL
from handoff_fsm.simulate.decode_cancel import TITLE as DECODE_CANCEL_TITLE
from handoff_fsm.simulate.decode_cancel import DecodeCancelRun, decode_cancel_runs, simulate_command
from handoff_fsm.simulate.scenarios import ScenarioRun, scenario_runs
from handoff_fsm.structure.describe import ChartModel, describe_chart
from handoff_fsm.structure.revisions import revision_chart
from handoff_fsm.verify.diff import DiffReport, diff
from handoff_fsm.verify.diff.sides import WORKTREE
from handoff_fsm.verify.exploration import ExplorationReport, explored
from handoff_fsm.verify.losses import LossReport, lost_messages
from handoff_fsm.verify.verdicts import (
    RevisionVerdict,
    change_verdict,
    judge_change,
    tolerance_answer,
)

_N = NormalizedHandoffEvent
NORMALIZED_EVENTS: Final[dict[str, NormalizedHandoffEvent]] = {
    "source_held": _N.SOURCE_HELD,
    "reservation_accepted": _N.DESTINATION_ACCEPTED,
    "destination_reserved": _N.DESTINATION_RESERVED,
    "activation_applied": _N.DESTINATION_ACTIVATED,
    "release_confirmed": _N.SOURCE_RELEASED,
}
"""Which chart event the endpoints observe as which normalized lifecycle step."""
_COMPLETED_ACTION: Final = "Complete"
TABLES_NAME: Final = "transitions.md"
SIDE_BY_SIDE_FILE: Final = f"{DECODE_CANCEL}_by_revision.svg"
"""The decode-phase cancel under every revision, side by side (at the top of the folder)."""


def _folder(revision: Revision | None) -> str:
    """Where a revision's own files go (``seed/``); the chart family's stay at the top."""
    return "" if revision is None else f"{revision.value}/"


def statechart_file(suffix: str, revision: Revision | None = None) -> str:
    return f"{_folder(revision)}statechart.{suffix}"


def tables_file(revision: Revision | None = None) -> str:
    return f"{_folder(revision)}{TABLES_NAME}"


def decode_cancel_file(revision: Revision, suffix: str) -> str:
    return f"{_folder(revision)}lifecycle_{DECODE_CANCEL}.{suffix}"


def lifecycle_file(run: ScenarioRun, suffix: str) -> str:
    return f"lifecycle_{run.scenario.name}.{suffix}"


def observed_lifecycle(lifecycle: Lifecycle) -> tuple[NormalizedHandoffEvent, ...]:
    """The normalized lifecycle a scripted run shows (from the events the chart took)."""
    seen: list[NormalizedHandoffEvent] = []
    for message in lifecycle.messages:
        if message.event in NORMALIZED_EVENTS:
            seen.append(NORMALIZED_EVENTS[message.event])
        if message.kind is MessageKind.ACTION and message.action == _COMPLETED_ACTION:
            seen.append(_N.COMPLETED)
    return tuple(seen)


# ---------------------------------------------------------------------- state space


@dataclass(frozen=True, slots=True)
class ChartSpace:
    """Figures of the compiled chart for one order."""

    order: HandoffOrder
    states: int
    """Reachable chart states (configuration + declared fields)."""
    configurations: int
    """Distinct active-leaf configurations among them."""
    steps: int
    """(state, event) pairs the chart handles (each one compiled step)."""
    rejecting: int
    completing: dict[HandoffCompletion, int]
    shortest: dict[HandoffCompletion, int]
    """Fewest inputs from ``start`` state to each completion."""


def chart_space(order: HandoffOrder, compiled: CompiledChart | None = None) -> ChartSpace:
    """Count the compiled chart's states and steps for ``order``; shortest paths by BFS."""
    compiled = compiled or compiled_chart()
    mine = {s.index for s in compiled.states if s.order is order}
    steps = [step for step in compiled.steps if step.source in mine]
    completing = dict.fromkeys(HandoffCompletion, 0)
    for step in steps:
        target = compiled.states[step.target]
        source = compiled.states[step.source]
        if target.is_complete and not source.is_complete and target.completion is not None:
            completing[target.completion] += 1
    start = compiled.initial[order].index
    distance = {start: 0}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        for step in steps:
            if step.source == here and step.target not in distance:
                distance[step.target] = distance[here] + 1
                queue.append(step.target)
    shortest = {
        completion: min(
            distance[s]
            for s in mine
            if compiled.states[s].completion is completion and s in distance
        )
        for completion in HandoffCompletion
    }
    return ChartSpace(
        order=order,
        states=len(mine),
        configurations=len({compiled.states[s].leaves for s in mine}),
        steps=len(steps),
        rejecting=sum(1 for step in steps if any(v in REJECTIONS for v in step.validators)),
        completing=completing,
        shortest=shortest,
    )


# ---------------------------------------------------------------------- sections


def _inputs(count: int) -> str:
    return f"{count} input" if count == 1 else f"{count} inputs"


def _statechart_section(model: ChartModel) -> list[str]:
    return [
        "## 1. The statechart",
        "",
        f"![The handoff statechart]({statechart_file('svg')})",
        "",
        f"Files: [SVG]({statechart_file('svg')}) · [PNG]({statechart_file('png')}) · "
        f"[DOT]({statechart_file('dot')}) · [Mermaid]({statechart_file('mmd')}).",
        "",
        "How to read it (the legend inside the picture says the same): clusters with a "
        "solid border are parallel states, each dashed cluster inside one is a region running "
        "concurrently with its siblings (regions stand side by side, later phases below "
        "earlier ones); a dot marks where a region starts, a double border a final state. A "
        "label reads what raises the transition, `[guard]`, `check …` and `/ effect`, and "
        "tells facts (`fact source_held`) from acknowledgements (`ack prefill_submitted: "
        "Submitted`: the outcome of the action the state issued); dashed arrows are "
        "eventless (taken as soon as the guard holds), bold ones fire when every region of a "
        "parallel state is final (`done.state`). `entry / Action` rows name the action a "
        "state issues on entry; red `fact x / ✗ code` rows are inputs the state rejects with "
        "that error code, changing nothing.",
        "",
        "The same chart as Mermaid (GitHub draws it):",
        "",
        *mermaid_block(statechart_mermaid(model)),
        "",
    ]


def _tables_section(model: ChartModel) -> list[str]:
    return [
        "## 2. Transitions",
        "",
        "Every declared transition, by the region that owns it (also in "
        "[transitions.md](transitions.md)).",
        "",
        transition_tables_markdown(model, heading_level=3),
        "### Inputs and the events they become",
        "",
        inputs_markdown(model),
    ]


def _lifecycles_section(runs: tuple[ScenarioRun, ...]) -> list[str]:
    out = [
        "## 3. Lifecycles",
        "",
        "Each scripted environment is written as a `handoff-fsm replay` trace "
        "(`lifecycle_<name>.jsonl`), and each diagram is drawn from that trace by "
        "`handoff-fsm lifecycle`, as any trace is: the action ids (`#n`), delays, rejections "
        "and states are what replaying it produced. Notes on the Coordinator's lifeline give "
        "its active leaf states after each input; the note across every lifeline says how "
        "the run ended.",
        "",
    ]
    for number, run in enumerate(runs, start=1):
        scenario, lifecycle = run.scenario, run.lifecycle
        issued = len(lifecycle.issued)
        completion = lifecycle.completion
        ended = completion.value if completion is not None else "not complete"
        out += [
            f"### 3.{number}. {scenario.title}",
            "",
            f"{scenario.summary} Order `{scenario.order.value}`; {issued} actions issued; "
            f"completion **{ended}**. Trace: [`{lifecycle_file(run, 'jsonl')}`]"
            f"({lifecycle_file(run, 'jsonl')}).",
            "",
            f"![{scenario.title}]({lifecycle_file(run, 'svg')})",
            "",
            *mermaid_block(sequence_mermaid(lifecycle)),
            "",
        ]
    return out


def _normalized_section(runs: tuple[ScenarioRun, ...]) -> list[str]:
    out = [
        "## 4. Expected normalized lifecycles",
        "",
        "What the endpoints of a successful handoff observe, per order "
        "(`expected_normalized_handoff`), and what the scripted success run of that order "
        "showed.",
        "",
        "| Order | Expected lifecycle | Scripted run |",
        "| --- | --- | --- |",
    ]
    for order in HandoffOrder:
        expected = expected_normalized_handoff(order)
        run = next(
            r
            for r in runs
            if r.scenario.order is order and r.lifecycle.completion is HandoffCompletion.SUCCESS
        )
        observed = observed_lifecycle(run.lifecycle)
        verdict = "same" if observed == expected else " → ".join(e.value for e in observed)
        out.append(
            f"| `{order.value}` | {' → '.join(e.value for e in expected)} | "
            f"{verdict} ([{run.scenario.title}](#{_anchor(run)})) |"
        )
    out.append("")
    return out


def _anchor(run: ScenarioRun) -> str:
    number = next(i for i, r in enumerate(scenario_runs(), start=1) if r is run)
    words = f"3{number} {run.scenario.title}".lower()
    kept = "".join(c for c in words if c.isalnum() or c in " -")
    return kept.replace(" ", "-")


def _errors_section(model: ChartModel) -> list[str]:
    out = [
        "## 5. Error codes",
        "",
        "Every `HandoffErrorCode`, the `HandoffError` subclass raised with it, and the "
        "condition that raises it (the chart's part read from the chart). A rejected call "
        "changes nothing.",
        "",
        "| Code | Raised as | Condition |",
        "| --- | --- | --- |",
    ]
    for entry in error_conditions(model):
        condition = entry.condition.replace("|", "\\|")
        out.append(f"| `{entry.code.value}` | `{entry.family}` | {condition} |")
    out.append("")
    return out


def _improvements_section() -> list[str]:
    return [
        "## 6. Improvements over the reference",
        "",
        IMPROVEMENTS_MARKDOWN,
        KEPT_QUIRKS_MARKDOWN,
    ]


def _space_section(reports: dict[Revision, tuple[ExplorationReport, ...]]) -> list[str]:
    out = [
        "## 7. State space",
        "",
        "### The chart",
        "",
        "From each revision's compiled chart (`engines.compiled.compiled_chart(revision)`): "
        "python-statemachine ran every input event in every reachable chart state once. A "
        "chart state is an active configuration plus the declared fields guards read (order, "
        "revision, which owners were engaged, completion).",
        "",
        "| Revision | Order | Chart states | Configurations | Steps | of which rejecting "
        "| completing Success | completing Canceled | Shortest Success | Shortest Canceled |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    success, canceled = HandoffCompletion.SUCCESS, HandoffCompletion.CANCELED
    for revision in Revision:
        for order in HandoffOrder:
            space = chart_space(order, compiled_chart(revision))
            out.append(
                f"| `{revision.value}` | `{space.order.value}` | {space.states} | "
                f"{space.configurations} | {space.steps} | {space.rejecting} | "
                f"{space.completing[success]} | {space.completing[canceled]} | "
                f"{_inputs(space.shortest[success])} | {_inputs(space.shortest[canceled])} |"
            )
    out += [
        "",
        "### The coordinator, explored",
        "",
        "From `handoff-fsm check --revision R` (`explore.explore(order, revision=R)`): "
        "breadth-first over every reachable coordinator state (snapshot plus what an observer "
        "must remember), giving every input class in every state and judging every invariant "
        "the revision promises (section 8).",
        "",
        "| Revision | Order | States | Inputs tried | Rejected | Max depth | Invariants held "
        "| Chart states covered | Steps covered | Transitions covered | Verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    every = [report for revision in Revision for report in reports[revision]]
    for report in every:
        held = sum(1 for verdict in report.verdicts if verdict.holds)
        figures = report.coverage.figures([report.order]) if report.coverage else {}
        covered = [
            "{}/{}".format(*figures[key]) if key in figures else "—"
            for key in ("chart_states", "steps", "transitions")
        ]
        verdict = "ok" if report.ok else f"**{len(report.violations)} violations**"
        out.append(
            f"| `{report.revision.value}` | `{report.order.value}` | {report.states} | "
            f"{report.transitions} | {report.rejected} | {report.max_depth} | "
            f"{held}/{len(report.verdicts)} | {' | '.join(covered)} | {verdict} |"
        )
    out.append("")
    for report in every:
        compiled = compiled_chart(report.revision)
        which = f"`{report.revision.value}` `{report.order.value}`"
        figures = report.coverage.figures([report.order]) if report.coverage else {}
        uncovered = figures.get("uncovered_transitions", [])
        if uncovered:
            listed = "; ".join(f"`{t}`" for t in uncovered)
            out += [f"Transitions no {which} input fires: {listed}.", ""]
        untaken = figures.get("untaken_steps", [])
        if untaken:
            listed = "; ".join(
                f"`{event}` in ({', '.join(compiled.states[index].leaves)})"
                for index, event in untaken
            )
            out += [
                f"Chart steps no {which} input reaches (the compiler sends every event in every "
                f"chart state; the journal never lets these through): {listed}.",
                "",
            ]
        for violation in report.violations:
            out.append(f"- {which} violation: {violation}")
    return out


def explorations() -> dict[Revision, tuple[ExplorationReport, ...]]:
    """``explore(order, revision=R)`` for every revision and order, each explored once per
    process by its owner (:func:`~handoff_fsm.verify.exploration.explored`), which the
    verdicts read too."""
    return {
        revision: tuple(explored(order, revision) for order in HandoffOrder)
        for revision in Revision
    }


# ---------------------------------------------------------------------- revisions


@cache
def loss_reports() -> dict[Revision, tuple[LossReport, ...]]:
    """``lost_messages(order)`` for every revision and order, run once per process."""
    return {
        revision: tuple(lost_messages(order, revision=revision) for order in HandoffOrder)
        for revision in Revision
    }


def _files(revision: Revision) -> str:
    chart = " · ".join(
        f"[{label}]({statechart_file(suffix, revision)})"
        for label, suffix in (("SVG", "svg"), ("PNG", "png"), ("DOT", "dot"), ("Mermaid", "mmd"))
    )
    return f"its chart {chart}; its transitions [{tables_file(revision)}]({tables_file(revision)})"


def _only_here(revision: Revision) -> list[str]:
    """What this revision's chart has that no other revision's has (states, transitions)."""
    mine = revision_chart(revision)
    others = [revision_chart(other) for other in Revision if other is not revision]
    states = [
        f"`{s.id}`"
        for s in mine.states
        if all(s.id not in {o.id for o in other.states} for other in others)
    ]
    edges = [
        edge
        for edge in mine.edges
        if all(edge.index not in {e.index for e in other.edges} for other in others)
    ]
    words = [
        f"`{edge.source} → {edge.target}`"
        + (f" on `{edge.event_text}`" if edge.events else "")
        + (f" [{edge.guard.text}]" if edge.guard is not None else "")
        for edge in edges
    ]
    if not states and not words:
        return []
    parts = []
    if states:
        parts.append(f"the state{'s' if len(states) > 1 else ''} {', '.join(states)}")
    if words:
        parts.append(f"the transition{'s' if len(words) > 1 else ''} {'; '.join(words)}")
    return [f"Only in `{revision.value}`: {' and '.join(parts)}.", ""]


def _size_line(revision: Revision, reports: tuple[ExplorationReport, ...]) -> list[str]:
    chart = revision_chart(revision)
    family = describe_chart()
    compiled = compiled_chart(revision)
    steps = ", ".join(
        f"{space.states} chart states and {space.steps} steps for `{space.order.value}`"
        for space in (chart_space(order, compiled) for order in HandoffOrder)
    )
    explored = ", ".join(f"{r.states:,} coordinator states for `{r.order.value}`" for r in reports)
    return [
        f"**Size**: the chart draws {len(chart.states)} of the family's {len(family.states)} "
        f"states and {len(chart.edges)} of its {len(family.edges)} transitions; compiled: "
        f"{steps}; explored: {explored} (section 7).",
        "",
    ]


def _decode_cancel_lines(runs: tuple[DecodeCancelRun, ...]) -> list[str]:
    first = runs[0]
    command = " ".join(simulate_command(first.revision))
    out = [
        "#### A request canceled while decoding",
        "",
        f"The same simulated handoff (coordinator `{first.coordinator}` of `handoff-fsm "
        f"{command.replace(f'--revision {first.revision.value}', '--revision R')}`, one run "
        "per revision) got a `Canceled` fact while its destination decoded the request, after "
        "the handoff had completed with Success. Each revision's trace keeps that "
        "coordinator's lines only; each drawing is drawn from its trace the one way "
        "(`handoff-fsm lifecycle`).",
        "",
        f"![{DECODE_CANCEL_TITLE}]({SIDE_BY_SIDE_FILE})",
        "",
        "| Revision | What the coordinator did | The destination | The whole run | Files |",
        "| --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        files = " · ".join(
            f"[{label}]({decode_cancel_file(run.revision, suffix)})"
            for label, suffix in (("trace", "jsonl"), ("SVG", "svg"), ("Mermaid", "mmd"))
        )
        out.append(
            f"| `{run.revision.value}` | {run.after_success} | {run.destination} | "
            f"{'; '.join(run.totals)} | {files} |"
        )
    out.append("")
    return out


def _revision_body(
    revision: Revision, reports: tuple[ExplorationReport, ...], family: ChartModel
) -> list[str]:
    out = [
        f"Files: {_files(revision)}. The chart is the family of section 1 as `{revision.value}` "
        "runs it, read off its compiled table: states no run enters and transitions no run "
        "takes are left out, and the parts of a guard that are the same in every chart state "
        "it reaches are decided, not written.",
        "",
        *_size_line(revision, reports),
        *_only_here(revision),
        "#### Invariants",
        "",
        *invariants_markdown(reports),
    ]
    if revision is Revision.A976B2BF:
        out += _decode_cancel_lines(decode_cancel_runs())
    return out


def _losses_section(model: ChartModel) -> list[str]:
    return ["## 9. One lost message", "", *losses_markdown(model, loss_reports())]


# ---------------------------------------------------------------------- the document


def review_verdicts(losses: int = 0) -> tuple[RevisionVerdict, ...]:
    """This package's verdict per revision: its exploration's invariants and its default
    system check's properties (what ``review --check`` gates on); with ``losses``, each
    property's tolerance of up to that many lost messages too."""
    tolerance = None
    if losses:
        answers = [tolerance_answer(revision, losses) for revision in Revision]
        tolerance = {"results": [result for a in answers for result in a["results"]]}
    return package_verdicts(explorations(), system_reports(), tolerance)


def review_verdict(against: DiffReport | None = None, losses: int = VERDICT_LOSSES) -> list[str]:
    """The verdict the review opens with (:mod:`~handoff_fsm.review.verdict`): each
    revision (with its tolerance of ``losses`` lost messages), each revision against the
    seed and the work tree against ``against``'s side, and where one lost message stalls
    the handoff."""
    verdicts = review_verdicts(losses)
    by_revision = {verdict.revision: verdict for verdict in verdicts}
    changes = []
    for number, report in enumerate(revision_reports(), start=len(Revision) + 1):
        judged = change_verdict(report, [by_revision[report.a]], [by_revision[report.b]])
        anchors = [f"#{difference_anchor(n, d)}" for n, d in enumerate(report.differences, 1)]
        changes.append(Change(report, judged, f"#8{number}-{_slug(report)}", anchors))
    if against is not None:
        judged = judge_change(against, losses=losses)
        changes.append(Change(against, judged, "#8-revisions"))
    stalls = {revision.value: stalls_of(reports) for revision, reports in loss_reports().items()}
    links = Links("#8-revisions", "#10-system", "#9-one-lost-message")
    return verdict_markdown(verdicts, links, changes=changes, stalls=stalls)


def _slug(report: DiffReport) -> str:
    """The GitHub anchor words of a revision change's heading (``seed--a976b2bf``)."""
    return f"{report.a}--{report.b}".lower()


def review_markdown(
    model: ChartModel | None = None,
    *,
    against: str | None = None,
    stamp: Provenance | None = None,
    losses: int = VERDICT_LOSSES,
) -> str:
    """The whole design review as Markdown (deterministic without ``against``, for a ``stamp``).

    ``against`` (``git:REV``) adds the behavioural diff of the working tree against
    that revision to the "Revisions" section. ``stamp`` defaults to the code's own
    (:func:`~.provenance.provenance` without git), which is what the committed review
    carries. ``losses``: the lost messages the verdict judges each property's tolerance
    with (0: none).
    """
    model = model or describe_chart()
    stamp = stamp or provenance(model)
    runs = scenario_runs()
    reports = explorations()
    revisions = [
        (f"`{revision.value}`", _revision_body(revision, reports[revision], model))
        for revision in Revision
    ]
    against_report = None if against is None else diff(against, WORKTREE, charts=True)
    out = [
        "# Design review: the prefill-to-decode handoff statechart",
        "",
        "<!-- Generated by `handoff-fsm review` from the code; do not edit. -->",
        "",
        "Generated from `handoff_fsm.chart.HandoffChart`, runs of `HandoffCoordinator` and an "
        "exhaustive exploration: regenerate it with `handoff-fsm review -o FILE`, which writes "
        "the figures, tables and traces it links beside FILE. The project's own copy is "
        "checked by a test, which fails when it is stale.",
        "",
        *stamp.markdown(),
        "",
        *review_verdict(against_report, losses),
        "1. [The statechart](#1-the-statechart)",
        "2. [Transitions](#2-transitions)",
        "3. [Lifecycles](#3-lifecycles)",
        "4. [Expected normalized lifecycles](#4-expected-normalized-lifecycles)",
        "5. [Error codes](#5-error-codes)",
        "6. [Improvements over the reference](#6-improvements-over-the-reference)",
        "7. [State space](#7-state-space)",
        "8. [Revisions](#8-revisions)",
        "9. [One lost message](#9-one-lost-message)",
        f"10. [{SYSTEM_HEADING}](#10-system)",
        "",
        *_statechart_section(model),
        *_tables_section(model),
        *_lifecycles_section(runs),
        *_normalized_section(runs),
        *_errors_section(model),
        *_improvements_section(),
        *_space_section(reports),
        "",
        *revisions_markdown(8, revisions=revisions, against=against, against_report=against_report),
        *_losses_section(model),
        *system_markdown(10),
    ]
    return "\n".join(out).rstrip("\n") + "\n"

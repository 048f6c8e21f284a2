"""The design review: every section present, every figure computed from the code."""

from __future__ import annotations

import re

import pytest

from handoff_fsm import HandoffOrder
from handoff_fsm.conformance import expected_normalized_handoff
from handoff_fsm.engines.compiled import compiled_chart
from handoff_fsm.errors import error_codes
from handoff_fsm.model import HandoffCompletion, Revision
from handoff_fsm.review import chart_space, review_markdown
from handoff_fsm.review.design import loss_reports, observed_lifecycle
from handoff_fsm.simulate.decode_cancel import decode_cancel_runs
from handoff_fsm.simulate.scenarios import scenario_runs
from handoff_fsm.structure import describe_chart, revision_chart
from handoff_fsm.verify.exploration import explore
from handoff_fsm.verify.losses import Fate
from handoff_fsm.verify.rules import JUDGED_BY, Invariant, invariants_of, statement
from handoff_fsm.verify.system import Property, SystemAssumptions, check_matrix


@pytest.mark.slow
def test_the_review_has_every_section_in_order() -> None:
    review = review_markdown()
    headings = re.findall(r"^## (.+)$", review, re.MULTILINE)
    assert headings == [
        "Verdict",
        "1. The statechart",
        "2. Transitions",
        "3. Lifecycles",
        "4. Expected normalized lifecycles",
        "5. Error codes",
        "6. Improvements over the reference",
        "7. State space",
        "8. Revisions",
        "9. One lost message",
        "10. System",
    ]
    assert "![The handoff statechart](statechart.svg)" in review
    for run in scenario_runs():
        assert f"(lifecycle_{run.scenario.name}.svg)" in review
        assert f"(lifecycle_{run.scenario.name}.jsonl)" in review
    for code in error_codes():
        assert f"| `{code.value}` |" in review


@pytest.mark.slow
def test_the_review_is_deterministic() -> None:
    assert review_markdown() == review_markdown()


def test_chart_space_counts_the_compiled_chart() -> None:
    compiled = compiled_chart()
    spaces = [chart_space(order) for order in HandoffOrder]
    assert sum(s.states for s in spaces) == len(compiled.states)
    assert sum(s.steps for s in spaces) == len(compiled.steps)
    source_first = spaces[0]
    # start, Submitted, SourceHeld, Accepted, DestinationReserved, Scheduled,
    # TransferCompleted, Applied, release Applied: nine inputs to Success.
    assert source_first.shortest[HandoffCompletion.SUCCESS] == 9
    assert source_first.shortest[HandoffCompletion.CANCELED] == 1  # Failed before start
    assert source_first.completing[HandoffCompletion.SUCCESS] == 1


@pytest.mark.slow
def test_the_review_shows_the_state_space_figures_of_every_revision() -> None:
    section = review_markdown().split("## 7. State space", 1)[1].split("## 8.", 1)[0]
    for revision in Revision:
        for order in HandoffOrder:
            space = chart_space(order, compiled_chart(revision))
            which = f"| `{revision.value}` | `{order.value}` |"
            assert f"{which} {space.states} | {space.configurations} | {space.steps} |" in section
            report = explore(order, revision=revision)
            assert f"{which} {report.states} | {report.transitions} |" in section
    assert section.count("\n| `") == 2 * 2 * len(Revision)


@pytest.mark.slow
def test_the_scripted_success_runs_show_the_expected_normalized_lifecycles() -> None:
    for order in HandoffOrder:
        run = next(
            r
            for r in scenario_runs()
            if r.scenario.order is order and r.lifecycle.completion is HandoffCompletion.SUCCESS
        )
        assert observed_lifecycle(run.lifecycle) == expected_normalized_handoff(order)
    review = review_markdown()
    assert review.count(" | same ([") == 2


def _revision_part(revision: Revision) -> str:
    """The review's part on one revision (section 8.n, up to the next part)."""
    parts = re.split(r"^### 8\.\d+\. ", review_markdown(), flags=re.MULTILINE)
    return next(part for part in parts if part.startswith(f"`{revision.value}`\n"))


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision), ids=str)
def test_each_revision_states_its_invariants_with_what_judges_them(revision: Revision) -> None:
    section = _revision_part(revision).split("#### Invariants", 1)[1].split("\n#### ", 1)[0]
    reports = [explore(order, revision=revision) for order in HandoffOrder]
    promised = invariants_of(revision)
    for invariant in promised:
        checked = " / ".join(
            f"{next(v for v in r.verdicts if v.invariant is invariant).checked:,}" for r in reports
        )
        row = (
            f"| `{invariant.value}` | {statement(invariant, revision)} | "
            f"{JUDGED_BY[invariant]} | {checked} | holds |"
        )
        assert row in section, invariant
    assert section.count("\n| `") == len(promised)
    assert f"as revision `{revision.value}` promises them" in section
    assert set(JUDGED_BY) == set(Invariant)


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision), ids=str)
def test_each_revision_links_its_chart_and_table_and_gives_its_size(revision: Revision) -> None:
    part = _revision_part(revision)
    folder = revision.value
    for name in ("statechart.svg", "statechart.png", "statechart.dot", "statechart.mmd"):
        assert f"]({folder}/{name})" in part
    assert f"[{folder}/transitions.md]({folder}/transitions.md)" in part
    chart, family = revision_chart(revision), describe_chart()
    assert (
        f"the chart draws {len(chart.states)} of the family's {len(family.states)} states and "
        f"{len(chart.edges)} of its {len(family.edges)} transitions" in part
    )
    for order in HandoffOrder:
        space = chart_space(order, compiled_chart(revision))
        assert f"{space.states} chart states and {space.steps} steps for `{order.value}`" in part


@pytest.mark.slow
def test_only_the_a976b2bf_part_shows_the_decode_phase_cancel_side_by_side() -> None:
    figure = "(decode_cancel_by_revision.svg)"
    assert figure not in _revision_part(Revision.SEED)
    part = _revision_part(Revision.A976B2BF)
    assert figure in part
    for run in decode_cancel_runs():
        row = f"| `{run.revision.value}` | {run.after_success} | {run.destination} | "
        assert row in part
        assert f"({run.revision.value}/lifecycle_decode_cancel.jsonl)" in part
    # What is only in a976b2bf is named there, read off the two revisions' charts.
    assert "Only in `a976b2bf`: the states `decoding`, `canceling_decode`" in part
    assert "Only in `seed`: the transition `active → complete`" in _revision_part(Revision.SEED)
    # The diff of the two revisions follows the revisions' own parts.
    review = review_markdown()
    assert review.index("### 8.2. `a976b2bf`") < review.index("### 8.3. `seed` → `a976b2bf`")


@pytest.mark.slow
def test_the_lost_message_section_names_every_stall_with_its_shortest_trace() -> None:
    section = review_markdown().split("## 9. One lost message", 1)[1]
    reports = loss_reports()
    for revision, order_reports in reports.items():
        for report in order_reports:
            for situation in report.situations:
                for awaited, fate in situation.fates:
                    if fate is not Fate.STALLS:
                        continue
                    row = f"| `{report.order.value}` | `{', '.join(situation.state)}` | {awaited} |"
                    assert row in section, (revision, row)
    seed = reports[Revision.SEED]
    stalled = sum(s.states for r in seed for s in r.situations if s.worst is Fate.STALLS)
    waiting = sum(r.waiting for r in seed)
    assert f"Under `seed`, {stalled} of the {waiting} states that wait" in section
    assert "all of them are in `cleaning_up`" in section
    cancel = "| CancelSource's acknowledgement | `cleaning_up` | **never completes** ("
    assert cancel in section
    assert "| `seed` | `SourceFirst` | `canceling_source, destination_untouched` | " in section
    assert "CancelSource's acknowledgement | start → Failed |" in section
    # a976b2bf reopens a successful handoff to cancel the destination: one more stall.
    assert (
        "| CancelDestination's acknowledgement | `canceling_decode` | — | **never completes**"
        in section
    )


@pytest.mark.slow
def test_the_system_section_states_its_assumptions_and_the_matrix() -> None:
    section = review_markdown().split("## 10. System", 1)[1]
    for index, revision in enumerate(Revision, start=1):
        part = section.split(f"### 10.{index}. `{revision.value}`", 1)[1].split("\n### 10.", 1)[0]
        for item in SystemAssumptions().items():
            assert f"- `{item.key} = {str(item.value).lower()}`" in part.lower(), item.key
        table = check_matrix(revision)
        assert f"--matrix --revision {revision.value}`" in part
        rows = {
            cells[0]: cells[1:]
            for line in part.splitlines()
            if line.startswith("| `")
            and len(cells := [c.strip() for c in line.strip("|").split("|")])
            == len(table.reports) + 2  # the matrix's rows, not the verdict table's
        }
        for name in Property:
            *verdicts, rests = rows[f"`{name.value}`"]
            assert [v == "holds" for v in verdicts] == [
                table.cell(name, c).holds for c in range(len(table.reports))
            ]
            assert rests == ("**yes**" if table.rests_on(name) else "no")

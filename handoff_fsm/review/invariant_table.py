"""The review's invariants: each one's name, its statement, what judges it, and the count.

Rule kept here: the words come from :mod:`handoff_fsm.verify.invariants`
(:data:`~handoff_fsm.verify.rules.STATEMENTS`,
:data:`~handoff_fsm.verify.rules.JUDGED_BY`) and the figures from the
explorations the review already ran; nothing is written twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from handoff_fsm.verify.exploration import ExplorationReport
from handoff_fsm.verify.rules import JUDGED_BY, invariants_of, statement


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def invariants_markdown(reports: Sequence[ExplorationReport]) -> list[str]:
    """One row per invariant the explored revision promises (the reports share a revision)."""
    revision = reports[0].revision
    orders = " / ".join(f"`{report.order.value}`" for report in reports)
    out = [
        "Every reply of every input the exploration gives (section 7) is judged against "
        f"these properties of the protocol as revision `{revision.value}` promises them, "
        "stated about what an observer of one coordinator sees, not about its internals. "
        "*Judgements* counts the inputs judged (for "
        "`liveness`, the states; for `deterministic`, the fresh replays). The checker is "
        "itself tested against deliberately broken coordinators "
        "(`tests/test_explore_mutants.py`), each caught by the right invariant.",
        "",
        f"| Invariant | Statement | Judged by | Judgements ({orders}) | Verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for invariant in invariants_of(revision):
        verdicts = [
            next(v for v in report.verdicts if v.invariant is invariant) for report in reports
        ]
        checked = " / ".join(f"{verdict.checked:,}" for verdict in verdicts)
        broken = sum(verdict.violated for verdict in verdicts)
        verdict = "holds" if broken == 0 else f"**violated {broken} times**"
        out.append(
            f"| `{invariant.value}` | {_cell(statement(invariant, revision))} | "
            f"{_cell(JUDGED_BY[invariant])} | {checked} | {verdict} |"
        )
    out.append("")
    return out

"""What the system check assumes, stated and varied (issue 31).

Every verdict here comes from a real exploration. The assumptions record is the one
place the world's choices live: these tests read it field by field against what the
reports print, show that the two ways a worker may answer a repeated action differ on a
world state the exploration reaches, and that a policy feeding every answer (the one
before issue 31) breaks ``no_refusal`` under realistic workers only.
"""

from __future__ import annotations

import html
import json
from dataclasses import fields
from functools import cache
from pathlib import Path

import pytest

from handoff_fsm import HandoffOrder, Revision, cli
from handoff_fsm.errors import HandoffError
from handoff_fsm.policy import SessionPolicy
from handoff_fsm.verify.system import (
    Answers,
    Property,
    SystemAssumptions,
    SystemReport,
    Workers,
    check_matrix,
    check_system,
    search,
    world,
)
from handoff_fsm.verify.system.properties import SystemSettings
from handoff_fsm.verify.system.report import ACK_TIMEOUT, CLEANUP_TIMEOUT, DEADLINE_AFTER
from handoff_fsm.verify.system.session import Session

pytestmark = pytest.mark.slow  # system checks (tests/quick.py)

SEED, A976 = Revision.SEED, Revision.A976B2BF
ONE_ORDER = (HandoffOrder.SOURCE_FIRST,)
ONE_ORDER_ARGS = ["check", "--system", "--revision", "a976b2bf", "--order", "SourceFirst"]


class FeedsEveryAnswer(SessionPolicy):
    """The policy before issue 31: a later, different answer to an action (a re-send's
    or a duplicate's) is a rejection, as if the worker had contradicted itself."""

    def _answers_a_repeat(self, error: HandoffError) -> bool:
        return False


@cache
def mutant(answers: Answers) -> SystemReport:
    return check_system(A976, orders=ONE_ORDER, answers=answers, policy=FeedsEveryAnswer)


# ---------------------------------------------------------------------- the record


def test_every_assumption_is_printed_first_in_the_text_and_in_the_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(ONE_ORDER_ARGS) == 0
    out = capsys.readouterr().out
    assert out.startswith("assumptions")
    header = out[: out.index("a976b2bf: ")]
    items = SystemAssumptions().items()
    assert {f.name for f in fields(SystemAssumptions)} <= {item.key for item in items}
    for item in items:
        assert f"{item.key} = " in header and item.text in header, item.key
        assert ("(setting)" if item.varied else "(limit)") in header
    assert cli.main([*ONE_ORDER_ARGS, "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]
    assert result["assumptions"] == {item.key: item.value for item in items}
    assert result["assumptions"]["answers"] == "by-state"  # the realistic default


def test_the_defaults_are_the_weaker_assumptions() -> None:
    default = SystemAssumptions()
    assert (default.answers, default.workers) == (Answers.BY_STATE, Workers.REMEMBERING)
    assert (default.losses, default.duplicates) == (0, 0)
    assert SystemSettings().assumptions == default
    report = check_system(A976, orders=ONE_ORDER)
    assert report.settings.assumptions == default
    chosen = check_system(A976, orders=ONE_ORDER, answers="by-id", workers="forgetful")
    assert chosen.to_json()["assumptions"]["answers"] == "by-id"
    assert chosen.to_json()["assumptions"]["workers"] == "forgetful"


# ---------------------------------------------------------------------- answers


def test_by_id_and_by_state_answer_differently_in_a_reached_world_state() -> None:
    """Explored under ``by-id``, some reached world has a copy in flight of an action its
    worker already answered; delivering it there under ``by-state`` gives another answer."""
    settings = SystemSettings(
        revision=SEED, orders=ONE_ORDER, assumptions=SystemAssumptions(answers=Answers.BY_ID)
    )
    factory = SessionPolicy.factory(
        deadline=DEADLINE_AFTER, ack_timeout=ACK_TIMEOUT, cleanup_ack_timeout=CLEANUP_TIMEOUT
    )
    session = Session(SEED, factory)
    graph = search.explore_graph(settings, session, None)
    by_state = SystemAssumptions(answers=Answers.BY_STATE)
    differ = 0
    for state in graph.worlds:
        memory, net = state[3], state[4]
        remembered = dict(memory)
        for message in net:
            if message[0] != world.ACTION or message[1] not in remembered:
                continue
            step = (search.DELIVER, message)
            after_id, _ = search.apply(session, state, step, settings.assumptions)
            after_state, _ = search.apply(session, state, step, by_state)
            action_id = message[1]
            answer_id = {m[2] for m in after_id[4] if m[0] == world.ACK and m[1] == action_id}
            answer_state = {m[2] for m in after_state[4] if m[0] == world.ACK and m[1] == action_id}
            if answer_id:  # (a final session's answers are taken out of the world)
                assert remembered[action_id] in answer_id  # by-id: the first answer again
            if answer_state and answer_state != answer_id:
                differ += 1
    assert differ > 0


def test_a_policy_that_feeds_every_answer_breaks_no_refusal_under_by_state_workers() -> None:
    broken = mutant(Answers.BY_STATE)
    example = broken.verdict(Property.NO_REFUSAL).counterexample
    assert example is not None
    texts = [step.text for step in example.world]
    assert any("(again)" in text for text in texts), texts  # the cleanup re-send
    assert "conflicting_outcome" in example.message
    assert mutant(Answers.BY_ID).verdict(Property.NO_REFUSAL).holds  # the idempotent world hides it
    assert check_system(A976, orders=ONE_ORDER).verdict(Property.NO_REFUSAL).holds


def test_duplicates_and_resends_in_every_order_keep_no_refusal() -> None:
    """By-state workers, a duplicated message and the policy's re-sends, every order the
    network allows: the real policy never feeds a refused answer."""
    for revision in Revision:
        report = check_system(revision, orders=ONE_ORDER, duplicates=1, cleanup_retries=1)
        assert report.verdict(Property.NO_REFUSAL).holds, revision
        assert report.verdict(Property.SINGLE_COMPLETION).holds, revision


# ---------------------------------------------------------------------- the matrix


def test_the_matrix_is_every_combination_each_a_real_exploration() -> None:
    table = check_matrix(A976, orders=ONE_ORDER, cleanup_retries=1)
    columns = table.columns
    assert columns[0] == SystemAssumptions()
    assert {(c.answers, c.workers) for c in columns} == {(a, w) for a in Answers for w in Workers}
    for column, report in zip(columns, table.reports, strict=True):
        again = check_system(
            A976,
            orders=ONE_ORDER,
            cleanup_retries=1,
            answers=column.answers,
            workers=column.workers,
        )
        assert [v.holds for v in again.verdicts] == [v.holds for v in report.verdicts]
    forgetful = next(i for i, c in enumerate(columns) if c.workers is Workers.FORGETFUL)
    assert table.rests_on(Property.NO_KV_LEAK)
    assert not table.cell(Property.NO_KV_LEAK, forgetful).holds
    data = table.to_json()
    assert [c["answers"] for c in data["columns"]] == [c.answers.value for c in columns]
    assert [p["name"] for p in data["properties"]] == [p.value for p in Property]
    assert all(len(p["cells"]) == len(columns) for p in data["properties"])


def test_the_matrix_command_prints_one_table_per_revision(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [*ONE_ORDER_ARGS, "--cleanup-retries", "1", "--matrix"]
    assert cli.main(argv) == 0  # the default column holds for a976b2bf
    out = capsys.readouterr().out
    assert out.startswith("assumptions")
    for column in check_matrix(A976, orders=ONE_ORDER, cleanup_retries=1).columns:
        assert column.label() in out
    assert "no_kv_leak *" in out and "VIOLATED" in out
    assert cli.main([*argv, "--json"]) == 0
    [table] = json.loads(capsys.readouterr().out)["matrix"]
    assert table["revision"] == "a976b2bf" and len(table["columns"]) == 4


# ---------------------------------------------------------------------- files


@pytest.mark.requires("dot")
def test_each_counterexample_file_states_the_assumptions(tmp_path: Path) -> None:
    folder = tmp_path / "examples"
    argv = [*ONE_ORDER_ARGS, "--workers", "forgetful", "--counterexamples", str(folder)]
    assert cli.main(argv) == 1
    texts = sorted(folder.glob("*.txt"))
    assert texts
    for text in texts:
        body = text.read_text()
        for item in SystemAssumptions(workers=Workers.FORGETFUL).items():
            assert f"{item.key} = {item.value}".lower() in body.lower(), (text.name, item.key)
    pages = sorted(folder.glob("*.html"))
    assert [p.stem for p in pages] == [t.stem for t in texts]
    for page in pages:
        body = page.read_text()
        assert '<details id="about">' in body
        for line in SystemAssumptions(workers=Workers.FORGETFUL).header():
            assert html.escape(line) in body, (page.name, line)

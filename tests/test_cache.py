"""Kept verdicts (handoff_fsm.verify.cache): read only under the key they were computed
under; a package edited by a byte, another question or a broken file means computing.
A side's own package is asked each question once (a stand-in package that logs what
it is asked), and its tolerances are read as it prints them."""

from __future__ import annotations

import errno
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from handoff_fsm.model import Revision
from handoff_fsm.review.verdict import Links, verdict_markdown
from handoff_fsm.verify import cache, exploration, verdicts
from handoff_fsm.verify.system import report as system_report
from handoff_fsm.verify.system.properties import report_from_record, report_record
from tests.support.git import git


@pytest.fixture
def kept_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "kept"
    monkeypatch.setenv(cache.ENVIRONMENT, str(where))
    return where


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package root with a two-file ``handoff_fsm`` package."""
    root = tmp_path / "side"
    (root / "handoff_fsm" / "sub").mkdir(parents=True)
    (root / "handoff_fsm" / "__init__.py").write_text("VALUE = 1\n")
    (root / "handoff_fsm" / "sub" / "page.css").write_text("p {}\n")
    return root


class Counted:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return self.answer


def test_an_answer_is_computed_once_and_then_read(kept_in: Path, package: Path) -> None:
    compute = Counted({"results": [1, 2]})
    first = cache.kept("system", {"losses": 1}, compute, package)
    second = cache.kept("system", {"losses": 1}, compute, package)
    assert first == second == {"results": [1, 2]}
    assert compute.calls == 1
    [kept_file] = kept_in.glob("*.json")
    assert json.loads(kept_file.read_text())["answer"] == {"results": [1, 2]}


def test_another_question_or_an_edited_package_is_computed_again(
    kept_in: Path, package: Path
) -> None:
    compute = Counted({"orders": []})
    cache.kept("check", {"revision": "seed"}, compute, package)
    cache.kept("check", {"revision": "a976b2bf"}, compute, package)
    cache.kept("system", {"revision": "seed"}, compute, package)
    assert compute.calls == 3
    (package / "handoff_fsm" / "sub" / "page.css").write_text("p { }\n")  # one byte more
    cache.kept("check", {"revision": "seed"}, compute, package)
    assert compute.calls == 4
    (package / "handoff_fsm" / "extra.py").write_text("")  # a new, empty file
    cache.kept("check", {"revision": "seed"}, compute, package)
    assert compute.calls == 5


def test_bytecode_does_not_change_the_key(package: Path) -> None:
    before = cache.package_digest(package)
    (package / "handoff_fsm" / "__pycache__").mkdir()
    (package / "handoff_fsm" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    assert cache.package_digest(package) == before


@pytest.mark.parametrize("broken", [b"", b"{not json", b'{"key": "other", "answer": {}}', b"[]"])
def test_a_file_that_is_no_answer_is_computed_again_and_rewritten(
    kept_in: Path, package: Path, broken: bytes
) -> None:
    compute = Counted({"orders": [3]})
    cache.kept("check", {}, compute, package)
    [kept_file] = kept_in.glob("*.json")
    kept_file.write_bytes(broken)
    assert cache.kept("check", {}, compute, package) == {"orders": [3]}
    assert compute.calls == 2
    assert json.loads(kept_file.read_text())["answer"] == {"orders": [3]}


def test_off_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: Path) -> None:
    monkeypatch.setenv(cache.ENVIRONMENT, "off")
    monkeypatch.chdir(tmp_path)
    compute = Counted({"orders": []})
    cache.kept("check", {}, compute, package)
    cache.kept("check", {}, compute, package)
    assert compute.calls == 2
    assert cache.folder() is None


def test_the_default_folder_is_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(cache.ENVIRONMENT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.folder() == tmp_path / "xdg" / "handoff-fsm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.folder() == tmp_path / "home" / ".cache" / "handoff-fsm"


def test_a_folder_that_cannot_be_written_only_costs_the_computation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(cache.ENVIRONMENT, str(blocked / "kept"))
    compute = Counted({"orders": [4]})
    assert cache.kept("check", {}, compute, package) == {"orders": [4]}
    assert cache.kept("check", {}, compute, package) == {"orders": [4]}
    assert compute.calls == 2
    assert blocked.read_text() == "not a folder"


def test_a_lock_that_cannot_be_taken_only_costs_the_wait(
    kept_in: Path, monkeypatch: pytest.MonkeyPatch, package: Path
) -> None:
    """A file system without locks (``flock``: ENOLCK) still answers, and still keeps."""
    import fcntl  # noqa: PLC0415 - POSIX, as the cache's locks

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    compute = Counted({"orders": [5]})
    assert cache.kept("check", {}, compute, package) == {"orders": [5]}
    assert cache.kept("check", {}, compute, package) == {"orders": [5]}
    assert compute.calls == 1


def test_a_package_file_that_cannot_be_read_only_costs_the_computation(
    kept_in: Path, monkeypatch: pytest.MonkeyPatch, package: Path
) -> None:
    """A file gone between listing the package and reading it: no key, nothing kept."""
    vanished = package / "handoff_fsm" / "sub" / "page.css"
    read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == vanished:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(self))
        return read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    compute = Counted({"orders": [6]})
    assert cache.kept("check", {}, compute, package) == {"orders": [6]}
    assert cache.kept("check", {}, compute, package) == {"orders": [6]}
    assert compute.calls == 2
    assert not list(kept_in.glob("*.json"))


@pytest.mark.slow
def test_a_kept_verdict_is_what_judging_gives(
    kept_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running package judged twice: the second time nothing is explored."""
    verdicts._answer_here.cache_clear()
    exploration._explored.cache_clear()
    first = verdicts.judge("seed", system=False)
    verdicts._answer_here.cache_clear()
    exploration._explored.cache_clear()

    def explored(*args: object, **kwargs: object) -> None:
        raise AssertionError("explored again")

    monkeypatch.setattr(exploration, "explore", explored)
    assert verdicts.judge("seed", system=False) == first
    assert [v.violated for v in first] == [frozenset()]


@pytest.mark.slow
@pytest.mark.parametrize("revision", list(Revision))
def test_a_system_report_is_kept_whole(revision: Revision) -> None:
    """What the review draws (counterexamples, their world steps and marks) comes back
    equal from the record, through JSON text."""
    report = system_report.default_report(revision)
    assert any(v.counterexample is not None for v in report.verdicts) == (revision is Revision.SEED)
    record = json.loads(json.dumps(report_record(report)))
    assert report_from_record(record) == report


@pytest.mark.slow
def test_the_default_system_report_is_read_back_not_explored_again(
    kept_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_report.default_report.cache_clear()
    first = system_report.default_report(Revision.SEED)
    system_report.default_report.cache_clear()

    def explored(*args: object, **kwargs: object) -> None:
        raise AssertionError("explored again")

    monkeypatch.setattr(system_report, "check_system", explored)
    try:
        assert system_report.default_report(Revision.SEED) == first
        [kept_file] = kept_in.glob("*.json")
        kept_file.write_text('{"key": "x"}')  # a file that is no record: explored after all
        system_report.default_report.cache_clear()
        with pytest.raises(AssertionError, match="explored again"):
            system_report.default_report(Revision.SEED)
    finally:
        system_report.default_report.cache_clear()


# ---------------------------------------------------------------------- a side's own answers

FAKE_CLI = """
import json, os, sys

def main(argv):
    with open(os.environ["FAKE_SIDE_LOG"], "a") as log:
        log.write(json.dumps(argv) + "\\n")
    if "--system" not in argv:
        report = {"revision": "seed", "invariants": ["a"], "exhausted": True, "violations": []}
        print(json.dumps({"ok": True, "orders": [report]}))
        return 0
    losses = int(argv[argv.index("--losses") + 1]) if "--losses" in argv else 0
    if losses and os.environ.get("FAKE_NO_LOSSES"):
        print("handoff-fsm check: unrecognized arguments: --losses", file=sys.stderr)
        return 2
    broken = {"world": [], "trace": []}
    properties = [
        {"name": "p", "holds": True, "counterexample": None, "tolerance": losses},
        {"name": "q", "holds": not losses, "counterexample": broken if losses else None,
         "tolerance": 0},
    ]
    if not os.environ.get("FAKE_TOLERANCE"):  # a package from before tolerances were printed
        for p in properties:
            del p["tolerance"]
    result = {"revision": "seed", "settings": {"losses": losses}, "properties": properties}
    print(json.dumps({"results": [result]}))
    return 1 if losses else 0
"""


@pytest.fixture
def fake_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A work tree whose ``handoff_fsm`` answers ``check`` from canned JSON, logging each
    command line it is asked."""
    repo = tmp_path / "fake"
    (repo / "handoff_fsm").mkdir(parents=True)
    (repo / "handoff_fsm" / "__init__.py").write_text("")
    (repo / "handoff_fsm" / "cli.py").write_text(FAKE_CLI)
    git(repo, "init", "--quiet")
    monkeypatch.setenv("FAKE_SIDE_LOG", str(tmp_path / "asked.jsonl"))
    monkeypatch.setenv(cache.ENVIRONMENT, str(tmp_path / "kept"))
    return repo


def _asked(fake_side: Path) -> list[list[str]]:
    log = fake_side.parent / "asked.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.slow
@pytest.mark.parametrize("printed", ["tolerance", "holds only"])
def test_a_side_is_asked_each_question_once_and_its_tolerance_read(
    fake_side: Path, monkeypatch: pytest.MonkeyPatch, printed: str
) -> None:
    if printed == "tolerance":
        monkeypatch.setenv("FAKE_TOLERANCE", "1")
    [verdict] = verdicts.judge("worktree:seed", losses=1, cwd=fake_side)
    assert sorted(_asked(fake_side)) == [
        ["check", "--revision", "seed", "--json"],
        ["check", "--revision", "seed", "--system", "--json"],
        ["check", "--revision", "seed", "--system", "--losses", "1", "--json"],
    ]
    assert (verdict.invariants, verdict.properties, verdict.broken) == (("a",), ("p", "q"), ())
    assert (verdict.losses, verdict.tolerance) == (1, (("p", 1), ("q", 0)))
    assert verdict.lost_to() == ("q",)
    again = verdicts.judge("worktree:seed", losses=1, cwd=fake_side)
    assert again == (verdict,) and len(_asked(fake_side)) == 3  # kept: nobody was asked
    (fake_side / "handoff_fsm" / "__init__.py").write_text("# edited\n")
    verdicts.judge("worktree:seed", losses=1, cwd=fake_side)
    assert len(_asked(fake_side)) == 6  # another package: asked afresh


@pytest.mark.slow
def test_a_side_that_cannot_check_with_losses_has_no_tolerance(
    fake_side: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NO_LOSSES", "1")
    [verdict] = verdicts.judge("worktree:seed", losses=1, cwd=fake_side)
    assert (verdict.properties, verdict.losses, verdict.tolerance) == (("p", "q"), 0, ())
    lines = verdict_markdown([verdict, replace(verdict, side="x", losses=1)], Links())
    row = next(line for line in lines if line.startswith("| `worktree:seed`"))
    assert " | not checked | " in row

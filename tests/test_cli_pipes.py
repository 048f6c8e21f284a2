"""Every command's exit status is its verdict, whoever reads its output.

The rule (handoff_fsm/cli/__init__.py): 0 ok, 1 a failed check or a violation, 2 a usage
or input error, also when standard output is closed early (``| true``, ``| head -1``);
an error message goes to standard error as one line (after argparse's usage, for
argparse's own errors), and a ``--json`` error object, where a command prints one, to
standard output with the rest of its JSON. Each case below runs as a user runs it (a
fresh interpreter, :func:`tests.support.cli.run_cli`) once with its output read and once
into a pipe whose reader is gone before it starts, and both statuses must be the
case's. The commands are read from the parser, so a new one fails
:func:`test_every_command_has_its_cases` until it is given its cases here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from handoff_fsm import cli
from handoff_fsm.review import design, files, verdict
from tests.support.cli import COMMAND, run_cli

HID: Final = "01234567-89ab-cdef-0123-456789abcdef"
NEW: Final = {"coordinator": "c", "op": "new", "handoff_id": HID, "order": "SourceFirst"}
TRACE: Final = [NEW, {"coordinator": "c", "op": "start"}]
REFUSED: Final = [*TRACE, {"coordinator": "nobody", "op": "start"}]
"""A trace whose last line is refused (``unknown_coordinator``): ``replay --strict`` fails."""
STUCK: Final = ("--fault-rate", "0.5", "--deadline-ms", "off", "--ack-timeout-ms", "off")
"""Faults with nothing to time them out: some handoffs never complete (a problem)."""
SWEEP: Final = ("--seeds", "0", "--workers", "1")


@dataclass(frozen=True)
class Case:
    """A command line, the status it must exit with, and the code of the JSON error
    object it prints on stdout (``None``: it prints none)."""

    args: tuple[str, ...]
    status: int
    json_error: str | None = None
    needs_dot: bool = False

    @property
    def command(self) -> str:
        return self.args[0]

    def __str__(self) -> str:
        return " ".join(self.args)


CASES: Final = (
    Case(("replay", "trace.jsonl"), 0),
    Case(("replay", "refused.jsonl", "--strict"), 1),
    Case(("replay", "missing.jsonl"), 2),
    Case(("diagrams", "trace.jsonl"), 2),  # a file where the folder goes
    Case(("diagram", "trace.jsonl", "-o", "overlay.dot"), 0),
    Case(("diagram", "trace.jsonl", "-o", "overlay.txt"), 2),
    Case(("review", "-o", "-"), 2),
    Case(("check", "--revision", "seed", "--order", "SourceFirst", "--json"), 0),
    Case(("check", "--system", "--revision", "seed", "--cleanup-retries", "0", "--json"), 1),
    Case(("check", "no-such-side", "--json"), 2),
    Case(("simulate", "--handoffs", "5", "--json"), 0),
    Case(("simulate", "--handoffs", "20", *STUCK, "--json"), 1),
    Case(("simulate", "--backend", "trtllm", "--json"), 2, json_error="unsupported_backend"),
    Case(("sweep", "--handoffs", "5", *SWEEP, "-o", "cells"), 0),
    Case(("sweep", "--handoffs", "20", *SWEEP, *STUCK, "-o", "cells"), 1),
    Case(("sweep", "--handoffs", "5", *SWEEP, "-o", "-"), 2),
    Case(("diff", "seed", "seed", "--json"), 0),
    Case(("diff", "seed", "a976b2bf", "--json"), 1),
    Case(("diff", "seed", "no-such-revision", "--json"), 2),
    Case(("lifecycle", "trace.jsonl", "--list"), 0),
    Case(("lifecycle", "trace.jsonl"), 2),  # no -o and no --list
    Case(("inspect", "trace.jsonl", "-o", "page.html"), 0, needs_dot=True),
    Case(("inspect", "trace.jsonl", "-o", "page.txt"), 2),
    Case(("export", "--format", "scxml", "--revision", "seed"), 0),
    Case(("export", "--format", "xstate", "-o", "chart.json"), 0),
    Case(("export", "--format", "dot"), 2),
)
"""The cases run as processes, cheap ones (a second or two each)."""

IN_PROCESS: Final = {
    ("diagrams", "out"): 0,
    ("review", "-o", "REVIEW.md"): 0,
    ("review", "--check", "-o", "REVIEW.md"): 1,
}
"""What would take a minute as a process (drawing every diagram, writing the review and
exploring the state spaces behind its verdict), run by :func:`cli.main` in this process
with that work stubbed out, into the same kind of closed pipe."""

NO_VERDICT: Final = {
    "diagrams": "it writes files; nothing is judged",
    "diagram": "it draws a trace; nothing is judged",
    "lifecycle": "it draws a trace; nothing is judged",
    "inspect": "it writes a page; nothing is judged",
    "export": "it writes the chart as a document; nothing is judged",
}
"""The commands that never exit 1, and why."""


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def _takes_json(parser: argparse.ArgumentParser) -> bool:
    return any("--json" in action.option_strings for action in parser._actions)


def _usage_cases() -> list[Case]:
    """A usage error argparse finds, for every command the parser has (``--json`` too
    where the command takes it)."""
    return [
        Case((name, "--no-such-option", *(["--json"] if _takes_json(sub) else [])), 2)
        for name, sub in sorted(_subcommands().items())
    ]


def _param(case: Case) -> object:
    marks = [pytest.mark.requires("dot")] if case.needs_dot else []
    return pytest.param(case, id=str(case), marks=marks)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name, lines in (("trace.jsonl", TRACE), ("refused.jsonl", REFUSED)):
        text = "".join(json.dumps(line) + "\n" for line in lines)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _run(case: Case, cwd: Path, *, closed: bool) -> subprocess.CompletedProcess[str]:
    """``handoff-fsm ARGS`` with its stdout read (``closed=False``), or written into a pipe
    whose reader closed before the command started (as ``| true`` can); stderr is read."""
    if not closed:
        return run_cli(*case.args, cwd=cwd, timeout=300)
    read, write = os.pipe()
    os.close(read)
    try:
        return run_cli(*case.args, cwd=cwd, stdout=write, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(write)


def _check_stderr(case: Case, stderr: str) -> None:
    """No traceback; an error is one line ``handoff-fsm COMMAND: ...`` at the end (argparse
    puts its usage before it)."""
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if case.status != 2:
        return
    *before, message = stderr.splitlines()
    assert message.startswith(f"handoff-fsm {case.command}: "), stderr
    if message.startswith(f"handoff-fsm {case.command}: error: "):  # argparse's
        assert before and before[0].startswith("usage: handoff-fsm "), stderr
        assert all(line.startswith(" ") for line in before[1:]), stderr
    else:
        assert before == [], stderr


def test_every_command_has_its_cases() -> None:
    commands = _subcommands()
    cases = [*CASES, *(Case(args, status) for args, status in IN_PROCESS.items())]
    assert {case.command for case in cases} == set(commands)
    for name in commands:
        statuses = {case.status for case in cases if case.command == name}
        assert 0 in statuses and 2 in statuses, name
        assert (1 in statuses) != (name in NO_VERDICT), name  # a verdict, or why none
    for case in CASES:  # --json wherever the command has it
        assert ("--json" in case.args) == _takes_json(commands[case.command]), case


@pytest.mark.slow
@pytest.mark.parametrize("case", [_param(case) for case in [*CASES, *_usage_cases()]])
def test_the_status_is_the_same_through_a_closed_pipe(case: Case, work: Path) -> None:
    read = _run(case, work, closed=False)
    assert read.returncode == case.status, read.stderr
    _check_stderr(case, read.stderr)
    if case.json_error is not None:  # the error object, where the rest of its JSON goes
        [line] = read.stdout.splitlines()
        error = json.loads(line)["error"]
        assert error["code"] == case.json_error
        assert read.stderr.splitlines()[-1].endswith(f"{error['code']}: {error['message']}")
    closed = _run(case, work, closed=True)
    assert closed.returncode == case.status, closed.stderr
    _check_stderr(case, closed.stderr)
    if case.status == 2:  # the message still reaches stderr, whoever reads stdout
        assert closed.stderr.splitlines()[-1] == read.stderr.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        Case(("simulate", "--backend", "trtllm", "--json"), 2),
        Case(("diff", "seed", "a976b2bf", "--json"), 1),
        Case(("replay", "trace.jsonl", "--remember", "x"), 2),
    ],
    ids=str,
)
def test_the_status_stays_when_stderr_is_closed_too(case: Case, work: Path) -> None:
    """``handoff-fsm ... 2>&1 | true``: nowhere to say anything, and the status stays."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = run_cli(*case.args, cwd=work, stdout=write, stderr=write, timeout=300)
    finally:
        os.close(write)
    assert result.returncode == case.status


@pytest.mark.slow
def test_a_reader_that_leaves_early_does_not_cut_the_verdict_short(work: Path) -> None:
    """``replay --strict BIG | head -c 100``: the refused line comes after the reader
    left, and still decides the status (the replay runs on to its end, printing nothing)."""
    big = work / "big.jsonl"
    lines = [json.dumps(line) for line in TRACE * 20_000 + [REFUSED[-1]]]
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    reader = subprocess.Popen(
        [*COMMAND, "replay", str(big), "--strict"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert len(reader.stdout.read(100)) == 100
    reader.stdout.close()  # as `| head -c 100` does
    stderr = reader.stderr.read().decode()
    reader.stderr.close()
    assert reader.wait(timeout=300) == 1, stderr
    assert stderr == ""


@contextmanager
def _closed_stdout() -> Iterator[None]:
    """``sys.stdout`` writes into a pipe whose reader is gone, for the block."""
    read, write = os.pipe()
    os.close(read)
    stream = open(write, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    stdout, sys.stdout = sys.stdout, stream
    try:
        yield
    finally:
        sys.stdout = stdout
        try:
            stream.close()
        except BrokenPipeError:
            pytest.fail("main() left text for the closed pipe, to fail at the interpreter's exit")


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The minute of work behind ``diagrams`` and ``review`` replaced: every diagram and
    the review are "written" at once, and ``review --check``'s gate finds one failure."""
    monkeypatch.chdir(tmp_path)
    written = [tmp_path / "out" / f"figure{n}.svg" for n in range(3)]
    monkeypatch.setattr(files, "write_diagrams", lambda outdir: written)
    monkeypatch.setattr(files, "write_review", lambda output, **options: [output])
    monkeypatch.setattr(design, "review_verdicts", lambda: ())
    failing = ["seed: no_kv_leak (property) is violated"]
    monkeypatch.setattr(verdict, "gate_failures", lambda verdicts: failing)


@pytest.mark.slow
@pytest.mark.usefixtures("stubbed")
@pytest.mark.parametrize(
    ("args", "status"), [pytest.param(*item, id=" ".join(item[0])) for item in IN_PROCESS.items()]
)
def test_the_costly_commands_keep_their_status_through_a_closed_pipe(
    args: tuple[str, ...], status: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(list(args)) == status
    read = capsys.readouterr()
    assert read.out.startswith("wrote ") and read.err == ""
    with _closed_stdout():
        assert cli.main(list(args)) == status
    assert capsys.readouterr() == ("", "")  # nothing reached stdout, nothing to complain of

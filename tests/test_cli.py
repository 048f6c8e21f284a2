"""The command line: every ordinary mistake is one line on stderr and exit status 2.

Each case runs ``python -m handoff_fsm`` in a subprocess, as a user would, and
demands exactly one stderr line ``handoff-fsm <command>: ...`` and no traceback.
"""

from __future__ import annotations

import argparse
import builtins
import errno
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import handoff_fsm
from handoff_fsm import cli
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES
from handoff_fsm.model import Revision
from tests.support.cli import COMMAND, run_cli

HID = "01234567-89ab-cdef-0123-456789abcdef"
TRACE_LINES = [
    json.dumps({"coordinator": "c", "op": "new", "handoff_id": HID, "order": "SourceFirst"}),
    json.dumps({"coordinator": "c", "op": "start"}),
]
HAS_DEV_FULL = Path("/dev/full").exists()


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "trace.jsonl").write_text("\n".join(TRACE_LINES) + "\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir.svg").mkdir()
    (tmp_path / "dir.dot").mkdir()
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # unreadable for everyone, root too
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(command: str, cwd: Path, *, shell_redirect: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m handoff_fsm COMMAND`` in ``cwd``, optionally with a shell redirection."""
    python = f"{sys.executable} -m handoff_fsm {command}"
    return subprocess.run(
        ["sh", "-c", f"exec {python} {shell_redirect}"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], command: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"handoff-fsm {command}: "), lines[0]
    return lines[0]


CASES = [
    ("replay dir", "replay", "dir: Is a directory"),
    ("replay trace.jsonl -o dir", "replay", "dir: Is a directory"),
    ("replay missing.jsonl", "replay", "missing.jsonl: No such file or directory"),
    ("replay loop", "replay", "loop: Too many levels of symbolic links"),
    ("replay trace.jsonl -o trace.jsonl", "replay", "would overwrite the trace"),
    ("replay trace.jsonl -o missing/out.jsonl", "replay", "No such file or directory"),
    ("review -o dir", "review", "dir: Is a directory"),
    ("review -o trace.jsonl/x.md", "review", "trace.jsonl"),
    ("diagrams trace.jsonl", "diagrams", "trace.jsonl: not a directory"),
    ("diagram --trace dir -o out.dot", "diagram", "dir: Is a directory"),
    ("diagram --trace loop -o out.dot", "diagram", "loop: Too many levels of symbolic links"),
    ("diagram --trace missing.jsonl -o out.dot", "diagram", "No such file or directory"),
    ("diagram --trace trace.jsonl -o dir.dot", "diagram", "dir.dot: Is a directory"),
    ("simulate --handoffs 5 --trace dir", "simulate", "dir: Is a directory"),
    ("simulate --handoffs 5 --trace missing/t.jsonl", "simulate", "No such file or directory"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "name", "says"), CASES, ids=[c[0] for c in CASES])
def test_file_mistakes_are_one_line(work: Path, command: str, name: str, says: str) -> None:
    line = assert_one_line_error(run(command, work), name)
    assert says in line


@pytest.mark.slow
@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full")
@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("replay trace.jsonl -o /dev/full", "replay"),
        ("review -o /dev/full --losses 0", "review"),  # tolerances: tests/test_gate.py
        ("simulate --handoffs 5 --trace /dev/full", "simulate"),
    ],
)
def test_a_full_disk_is_one_line(work: Path, command: str, name: str) -> None:
    line = assert_one_line_error(run(command, work), name)
    assert line.endswith("/dev/full: No space left on device")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_DEV_FULL, reason="needs /dev/full")
@pytest.mark.parametrize(
    ("command", "name"),
    [("replay trace.jsonl", "replay"), ("check --order SourceFirst", "check")],
)
def test_a_full_stdout_is_one_line(work: Path, command: str, name: str) -> None:
    line = assert_one_line_error(run(command, work, shell_redirect="> /dev/full"), name)
    assert "No space left on device" in line


@pytest.mark.slow
def test_closed_stdin_is_one_line(work: Path) -> None:
    line = assert_one_line_error(run("replay -", work, shell_redirect="<&-"), "replay")
    assert line == "handoff-fsm replay: <stdin>: closed (the command was started without it)"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "name"), [("replay trace.jsonl", "replay"), ("check --order SourceFirst", "check")]
)
def test_closed_stdout_is_one_line(work: Path, command: str, name: str) -> None:
    line = assert_one_line_error(run(command, work, shell_redirect=">&-"), name)
    assert line.endswith("<stdout>: closed (the command was started without it)")


@pytest.mark.slow
def test_closed_stderr_keeps_the_status_and_stdout_clean(work: Path) -> None:
    result = run("replay missing.jsonl", work, shell_redirect="2>&-")
    assert (result.returncode, result.stdout) == (2, "")


@pytest.mark.slow
def test_closed_stdout_does_not_matter_when_writing_a_file(work: Path) -> None:
    result = run("replay trace.jsonl -o out.jsonl", work, shell_redirect=">&-")
    assert result.returncode == 0, result.stderr
    assert len((work / "out.jsonl").read_text().splitlines()) == 2


NOBODY = 65534


@contextmanager
def refused_to_read(path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Inside, opening ``path`` fails with EACCES, as it does for a user without the right.

    ``path`` has mode 0. That is enough for any user but root, who reads anything: as root,
    the effective user id is ``nobody``'s inside (the real and saved ids stay root's, so it
    is restored after). Where root cannot become nobody (a user namespace mapping only
    root), ``open`` refuses ``path`` the way the kernel would.
    """
    if os.geteuid() != 0:
        yield
        return
    try:
        os.seteuid(NOBODY)
    except OSError:
        real_open = builtins.open

        def refusing_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(file) == str(path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", refusing_open)
        monkeypatch.setattr(io, "open", refusing_open)
        yield
        return
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_unreadable_file_is_one_line(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command as a user runs it, in this process (through :func:`cli.main`), so the
    check does not depend on whether another user could import the package from where
    the clone sits."""
    secret = work / "secret.jsonl"
    secret.write_text("\n".join(TRACE_LINES) + "\n")
    secret.chmod(0)
    # Import everything the command and its error path use, while the clone is readable.
    assert cli.main(["replay", "trace.jsonl", "-o", os.devnull]) == 0
    assert cli.main(["replay", "missing.jsonl"]) == 2
    capsys.readouterr()
    with refused_to_read(secret, monkeypatch):
        status = cli.main(["replay", str(secret)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    assert captured.err == f"handoff-fsm replay: {secret}: Permission denied\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("replay trace.jsonl --remember ²", "argument --remember: expected a count or 'all'"),
        ("replay trace.jsonl --remember -1", "argument --remember: expected a count or 'all'"),
        ("replay trace.jsonl --max-line-bytes 0", "argument --max-line-bytes: expected a whole"),
        ("replay trace.jsonl --max-line-bytes ٣", "argument --max-line-bytes: expected a whole"),
        ("simulate --engine sglang", "argument --engine: invalid choice: 'sglang'"),
        ("simulate --handoffs ²", "argument --handoffs: expected a whole number"),
        ("check --engine vllm", "argument --engine: invalid choice: 'vllm'"),
    ],
)
def test_argument_mistakes_are_usage_errors(work: Path, command: str, says: str) -> None:
    result = run(command, work)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert says in result.stderr.splitlines()[-1]


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(work: Path) -> None:
    """The reader leaves after 100 bytes; the replay runs on, printing nothing (every
    command's status through a closed pipe: tests/test_cli_pipes.py)."""
    big = work / "big.jsonl"
    big.write_text("\n".join(TRACE_LINES * 50_000) + "\n")
    reader = subprocess.Popen(
        [*COMMAND, "replay", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(100)
    reader.stdout.close()  # as `| head -c 100` does
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=300) == 0
    assert stderr == ""


@pytest.mark.slow
def test_the_max_line_bytes_option_bounds_lines(work: Path) -> None:
    result = run("replay trace.jsonl --max-line-bytes 60", work)
    assert result.returncode == 0
    codes = [json.loads(line).get("error", {}).get("code") for line in result.stdout.splitlines()]
    assert codes == ["line_too_long", "unknown_coordinator"]


@pytest.mark.slow
def test_version(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run("--version", work)
    assert result.returncode == 0
    assert result.stdout == f"handoff-fsm {metadata.version('handoff-fsm')}\n"

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert cli.version() == handoff_fsm.__version__


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def test_every_subcommand_and_argument_has_help() -> None:
    parser = cli.build_parser()
    for action in _actions(parser):
        assert action.help and action.help != argparse.SUPPRESS, action.dest
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    assert set(helps) == set(subparsers.choices)
    assert set(helps) == {
        "replay",
        "diagrams",
        "diagram",
        "review",
        "export",
        "check",
        "simulate",
        "sweep",
        "diff",
        "lifecycle",
        "inspect",
    }
    for sub in subparsers.choices.values():
        assert callable(sub.get_default("run"))  # each parser names its runner
    for name, sub in subparsers.choices.items():
        assert helps[name], name
        assert sub.description, name
        for action in _actions(sub):
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)


def test_engine_means_one_thing_everywhere() -> None:
    subparsers = next(
        a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            if "--engine" in action.option_strings and name == "sweep":  # a comma list of them
                assert action.type("statechart,compiled") == ("statechart", "compiled")
            elif "--engine" in action.option_strings:
                assert action.choices == ("compiled", "statechart"), name
            if "--backend" in action.option_strings:
                assert name in ("simulate", "sweep")


@pytest.mark.slow
def test_the_cli_module_and_help_stay_light() -> None:
    probe = (
        "import sys\n"
        "from handoff_fsm.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        # The parsers read their defaults from the protocol and the trace reader (io);
        # nothing above them loads until a command runs.
        "heavy = ('handoff_fsm.verify', 'handoff_fsm.structure', 'handoff_fsm.render', "
        "'handoff_fsm.review', 'handoff_fsm.simulate', 'handoff_fsm.io.follow', "
        "'handoff_fsm.io.lifecycle', 'rich', 'graphviz', 'matplotlib')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert "usage: handoff-fsm" in result.stdout
    assert result.stderr.strip() == "[]"


def test_the_default_line_limit_is_the_library_s() -> None:
    args = cli.build_parser().parse_args(["replay", "-"])
    assert args.max_line_bytes == DEFAULT_MAX_LINE_BYTES == 1 << 20


def test_revision_means_one_thing_everywhere() -> None:
    """Every --revision takes the same names and hands the library a Revision."""
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    taking = []
    for name, sub in subparsers.choices.items():
        if not any("--revision" in a.option_strings for a in sub._actions):
            continue
        taking.append(name)
        needed = ["-"] if name in ("replay", "lifecycle") else []
        needed += ["--trace", "-", "-o", "x.svg"] if name == "diagram" else []
        needed += ["-", "-o", "x.html"] if name == "inspect" else []
        needed += ["-o", "out"] if name == "sweep" else []
        needed += ["--format", "json"] if name == "export" else []
        for revision in Revision:
            args = parser.parse_args([name, *needed, "--revision", revision.value])
            assert args.revision == ((revision,) if name == "sweep" else revision), name
            assert (args.revision[0] if name == "sweep" else args.revision) is revision, name
        default = parser.parse_args([name, *needed]).revision
        default = default[0] if name == "sweep" else default  # sweep: a list of them
        assert default is Revision.SEED or (name == "check" and default == "both"), name
        with pytest.raises(SystemExit):
            parser.parse_args([name, *needed, "--revision", "A976B2BF"])
    assert sorted(taking) == [
        "check",
        "diagram",
        "export",
        "inspect",
        "lifecycle",
        "replay",
        "simulate",
        "sweep",
    ]


@pytest.mark.slow
def test_diagram_reads_hostile_traces_like_replay(work: Path) -> None:
    hostile = work / "hostile.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    hostile.write_text(
        "\n".join(
            [
                TRACE_LINES[0],
                deep,
                '{"coordinator": "c", "op": "start", "x": ' + deep + "}",
                TRACE_LINES[1],
                "x" * (DEFAULT_MAX_LINE_BYTES + 10),
            ]
        )
        + "\n"
    )
    result = run("diagram --trace hostile.jsonl -o out.dot", work)
    assert result.returncode == 0, result.stderr
    dot = (work / "out.dot").read_text()
    assert "1 inputs" in dot and "line_too_long" in dot and "invalid_input" in dot


@pytest.mark.slow
def test_replay_refuses_to_overwrite_its_trace_through_standard_streams(work: Path) -> None:
    trace = work / "trace.jsonl"
    before = trace.read_bytes()
    with trace.open("rb") as stdin:
        result = run_cli("replay", "-", "-o", str(trace), stdin=stdin)
    assert result.returncode == 2 and "would overwrite the trace" in result.stderr
    assert trace.read_bytes() == before
    with trace.open("rb") as stdin:  # another file of the same content is fine
        ok = run_cli("replay", "-", "-o", str(work / "out.jsonl"), stdin=stdin, text=False)
    assert ok.returncode == 0 and (work / "out.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("bound", ["9223372036854775807", str(2**64), "0"])
def test_an_unreadable_line_bound_is_a_usage_error(work: Path, bound: str) -> None:
    result = run(f"replay trace.jsonl --max-line-bytes {bound}", work)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--max-line-bytes" in result.stderr.splitlines()[-1]


@pytest.mark.slow
def test_replay_strict_fails_when_a_line_was_refused(work: Path) -> None:
    good = "\n".join(TRACE_LINES) + "\n"
    (work / "good.jsonl").write_text(good)
    (work / "bad.jsonl").write_text(good + "{not json\n")
    assert run("replay good.jsonl --strict", work).returncode == 0
    strict = run("replay bad.jsonl --strict", work)
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[-1].startswith('{"coordinator": null, "error": ')
    assert run("replay bad.jsonl", work).returncode == 0  # without --strict: as before


@pytest.mark.slow
def test_an_extra_argument_is_said_with_the_subcommands_usage(work: Path) -> None:
    result = run("diagrams a b", work)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: handoff-fsm diagrams ")
    assert result.stderr.splitlines()[-1] == (
        "handoff-fsm diagrams: error: unrecognized arguments: b"
    )
    assert not (work / "a").exists()  # nothing ran

"""Every output of every command follows one rule, and a failed write never spoils a file.

The rule (``handoff_fsm/cli/files.py``, written by ``handoff_fsm/io/atomic.py``): ``-``
is standard output only where the output is a stream; a file's folder must exist while
a folder output is created; a folder output onto a file is "not a directory"; two
outputs that are one file, or an output that is an input, are refused; every file is
replaced atomically, so a write that fails (``ulimit -f``, a full disk) leaves the
previous file byte for byte, and no temporary file behind. The failed writes here are
real: the command runs in a child process whose file-size limit (``RLIMIT_FSIZE``, what
``ulimit -f`` sets) is smaller than its output.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import resource
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_fsm import cli
from handoff_fsm.cli import main
from handoff_fsm.io import atomic
from handoff_fsm.review import diagram_files
from tests.support.cli import run_cli

HID = "01234567-89ab-cdef-0123-456789abcdef"
TRACE_LINES = [
    json.dumps({"coordinator": "c", "op": "new", "handoff_id": HID, "order": "SourceFirst"}),
    json.dumps({"coordinator": "c", "op": "start"}),
]
OLD = b"a previously good output\n"
LIMIT = 4096
"""The child's largest file, in bytes: every output below is larger."""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "t.jsonl").write_text("\n".join(TRACE_LINES) + "\n", encoding="utf-8")
    # A trace whose replies are longer than LIMIT: many coordinators, each created and started.
    lines = []
    for number in range(100):
        key = f"c{number}"
        hid = f"01234567-89ab-cdef-0123-{number:012x}"
        new = {"coordinator": key, "op": "new", "handoff_id": hid, "order": "SourceFirst"}
        lines += [json.dumps(new), json.dumps({"coordinator": key, "op": "start"})]
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "D").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def _limited() -> None:
    """In the child: files of at most LIMIT bytes, and a write past it raises EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel's signal kills the child
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def _run_limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(
        *args,
        cwd=cwd,
        preexec_fn=_limited,  # only sets a limit and a signal disposition
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=600,
    )


FAILED_WRITES = [
    pytest.param(["replay", "big.jsonl", "-o", "keep.jsonl"], "keep.jsonl", id="replay -o"),
    pytest.param(["diagram", "t.jsonl", "-o", "keep.dot"], "keep.dot", id="diagram -o"),
    pytest.param(["export", "--format", "scxml", "-o", "keep.scxml"], "keep.scxml", id="export -o"),
    pytest.param(
        ["lifecycle", "big.jsonl", "-o", "keep.svg"],
        "keep.svg",
        id="lifecycle -o",
        marks=pytest.mark.requires("dot"),
    ),
    pytest.param(
        ["inspect", "t.jsonl", "-o", "keep.html"],
        "keep.html",
        id="inspect -o",
        marks=pytest.mark.requires("dot"),
    ),
    pytest.param(
        ["simulate", "--handoffs", "50", "--trace", "keep.jsonl"],
        "keep.jsonl",
        id="simulate --trace",
    ),
    pytest.param(
        ["simulate", "--handoffs", "50", "--plots", "D"], "D/holds.svg", id="simulate --plots"
    ),
    pytest.param(
        ["review", "-o", "D/REVIEW.md", "--losses", "0"],  # the write is what is tested
        "D/REVIEW.md",
        id="review -o",
        marks=pytest.mark.requires("dot"),
    ),
    pytest.param(
        ["diff", "seed", "a976b2bf", "-o", "D", "--losses", "0"],
        "D/DIFF.md",
        id="diff -o",
        marks=pytest.mark.requires("dot"),
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "kept"), FAILED_WRITES)
def test_a_failed_write_leaves_the_previous_file_whole(
    work: Path, args: list[str], kept: str
) -> None:
    """``ulimit -f``: the write fails past the limit; the old file is untouched."""
    previous = work / kept
    previous.parent.mkdir(parents=True, exist_ok=True)
    previous.write_bytes(OLD)
    result = _run_limited(args, work)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"handoff-fsm {args[0]}: "), lines[0]
    assert lines[0].endswith(": File too large"), lines[0]
    assert previous.read_bytes() == OLD
    assert _temporaries(work) == []


@pytest.mark.requires("dot")
def test_a_failed_write_into_a_folder_leaves_every_file_old_or_new(work: Path) -> None:
    """``diagrams D`` over an earlier run: each file is the old one or the new one, whole."""
    new = diagram_files()
    for name in new:
        (work / "D" / name).parent.mkdir(parents=True, exist_ok=True)
        (work / "D" / name).write_bytes(OLD)
    result = _run_limited(["diagrams", "D"], work)
    assert result.returncode == 2, result.stderr
    assert result.stderr.endswith(": File too large\n"), result.stderr
    kept = {name for name in new if (work / "D" / name).read_bytes() == OLD}
    replaced = {name for name in new if (work / "D" / name).read_bytes() == new[name]}
    assert kept | replaced == set(new)  # nothing cut short
    assert kept and any(len(new[name]) > LIMIT for name in kept)
    assert _temporaries(work) == []


def test_a_failed_stream_names_the_file_not_the_temporary_one(
    work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process: the replies' stream fails halfway (a full disk); the old output stays."""
    out = work / "keep.jsonl"
    out.write_bytes(OLD)
    real = os.fdopen

    class Full:
        def __init__(self, stream: object) -> None:
            self.stream = stream
            self.written = 0

        def write(self, text: str) -> int:
            self.written += len(text)
            if self.written > 1000:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.stream.write(text)  # type: ignore[attr-defined, no-any-return]

        def __getattr__(self, name: str) -> object:
            return getattr(self.stream, name)

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real(*a, **k)))
    assert main(["replay", "big.jsonl", "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"handoff-fsm replay: {out}: No space left on device\n"
    assert out.read_bytes() == OLD
    assert _temporaries(work) == []


# ---------------------------------------------------------------------- `-`, per output option

DASH = {
    ("replay", "-o"): (["replay", "t.jsonl", "-o", "-"], None),
    ("simulate", "--trace"): (["simulate", "--handoffs", "3", "--trace", "-"], "summary"),
    ("simulate", "--plots"): (["simulate", "--handoffs", "3", "--plots", "-"], "folder"),
    ("review", "-o"): (["review", "-o", "-"], "links"),
    ("diagram", "-o"): (["diagram", "t.jsonl", "-o", "-"], "suffix"),
    ("lifecycle", "-o"): (["lifecycle", "t.jsonl", "-o", "-"], "suffix"),
    ("inspect", "-o"): (["inspect", "t.jsonl", "-o", "-"], "summary"),
    ("diff", "-o"): (["diff", "seed", "seed", "-o", "-"], "folder"),
    ("diagrams", "OUTDIR"): (["diagrams", "-"], "folder"),
    ("export", "-o"): (["export", "--format", "yaml", "-o", "-"], None),
    ("sweep", "-o"): (["sweep", "-o", "-"], "folder"),
}
"""Each output option of each subcommand, with ``-``: what it means there (``None``: standard
output; else a word of the usage error's reason)."""

_OUTPUT_DESTS = {"output", "trace", "plots", "outdir"}


def _output_options() -> set[tuple[str, str]]:
    """Every (subcommand, option) that names where something is written."""
    parser = cli.build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = set()
    for name, sub in commands.choices.items():
        for action in sub._actions:
            writes = action.dest in _OUTPUT_DESTS and action.metavar in ("OUT", "DIR", "OUTDIR")
            if writes:
                found.add((name, action.option_strings[0] if action.option_strings else "OUTDIR"))
    return found


def test_the_table_covers_every_output_option() -> None:
    assert _output_options() == set(DASH)


@pytest.mark.parametrize("key", DASH, ids=[" ".join(k) for k in DASH])
def test_dash_is_stdout_for_a_stream_and_a_usage_error_elsewhere(
    work: Path, capsys: pytest.CaptureFixture[str], key: tuple[str, str]
) -> None:
    args, reason = DASH[key]
    status = main(args)
    captured = capsys.readouterr()
    assert not (work / "-").exists()  # never a file named '-'
    if reason is None:  # what the same command writes into a file
        assert status == 0
        assert captured.out
        to_file = [*args[:-1], "out.txt"]
        assert main(to_file) == 0
        assert (work / "out.txt").read_text(encoding="utf-8") == captured.out
        return
    assert status == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    command, option = key
    coded = command in ("simulate", "sweep")
    prefix = f"handoff-fsm {command}: " + ("invalid_argument: " if coded else "")
    assert lines[0].startswith(f"{prefix}{option} -: "), lines[0]
    assert lines[0].endswith("not - (standard output)") and reason in lines[0], lines[0]


# ---------------------------------------------------------------------- folders of outputs

MISSING_FOLDER = [
    ["replay", "t.jsonl", "-o", "nd/out.jsonl"],
    ["diagram", "t.jsonl", "-o", "nd/x.dot"],
    ["lifecycle", "t.jsonl", "-o", "nd/x.mmd"],
    ["inspect", "t.jsonl", "-o", "nd/x.html"],
    ["simulate", "--handoffs", "3", "--trace", "nd/t.jsonl"],
    ["review", "-o", "nd/REVIEW.md"],
    ["export", "--format", "json", "-o", "nd/x.json"],
]


@pytest.mark.parametrize("args", MISSING_FOLDER, ids=[a[0] for a in MISSING_FOLDER])
def test_a_file_in_a_missing_folder_is_one_line_and_creates_nothing(
    work: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"handoff-fsm {args[0]}: {args[-1]}: No such file or directory "
        "(the folder nd does not exist)\n"
    )
    assert not (work / "nd").exists()


@pytest.mark.slow
def test_a_folder_output_is_created(work: Path) -> None:
    assert main(["diff", "seed", "seed", "-o", "new/review"]) == 0
    assert (work / "new" / "review" / "DIFF.md").is_file()
    assert main(["simulate", "--handoffs", "5", "--trace", "p/run.jsonl", "--plots", "p"]) == 0
    assert {"run.jsonl", "summary.md", "latency.svg"} <= {x.name for x in (work / "p").iterdir()}


NOT_A_DIRECTORY = [
    (["diagrams", "t.jsonl"], "t.jsonl"),
    (["diff", "seed", "seed", "-o", "t.jsonl"], "t.jsonl"),
    (["simulate", "--handoffs", "3", "--plots", "t.jsonl"], "t.jsonl"),
    (["diff", "seed", "seed", "-o", "t.jsonl/sub"], "t.jsonl"),
    (["lifecycle", "t.jsonl", "-o", "t.jsonl/x.mmd"], "t.jsonl"),
    (["review", "-o", "t.jsonl/REVIEW.md"], "t.jsonl"),
]


@pytest.mark.parametrize(
    ("args", "named"), NOT_A_DIRECTORY, ids=[" ".join(a[0][:2]) for a in NOT_A_DIRECTORY]
)
def test_an_output_folder_that_is_a_file_is_not_a_directory(
    work: Path, capsys: pytest.CaptureFixture[str], args: list[str], named: str
) -> None:
    before = (work / "t.jsonl").read_bytes()
    assert main(args) == 2
    assert capsys.readouterr().err == f"handoff-fsm {args[0]}: {named}: not a directory\n"
    assert (work / "t.jsonl").read_bytes() == before


# ---------------------------------------------------------------------- one file, two names


def _same_file_cases(work: Path) -> Iterator[tuple[list[str], str, str]]:
    """(arguments, the file that must stay as it was, what the message says)."""
    (work / "P").mkdir()
    (work / "P" / "summary.md").write_bytes(OLD)
    yield (
        ["simulate", "--handoffs", "3", "--trace", "P/summary.md", "--plots", "P"],
        "P/summary.md",
        "P/summary.md: --trace and --plots would both write this file",
    )
    (work / "t.md").write_text("\n".join(TRACE_LINES) + "\n", encoding="utf-8")
    yield (
        ["lifecycle", "t.md", "-o", "t.md"],
        "t.md",
        "t.md: -o would overwrite the trace it reads",
    )
    (work / "t.dot").write_text("\n".join(TRACE_LINES) + "\n", encoding="utf-8")
    yield (["diagram", "t.dot", "-o", "t.dot"], "t.dot", "t.dot: -o would overwrite the trace")
    (work / "t.html").write_text("\n".join(TRACE_LINES) + "\n", encoding="utf-8")
    yield (["inspect", "t.html", "-o", "t.html"], "t.html", "t.html: -o would overwrite the trace")
    (work / "link.jsonl").symlink_to(work / "t.jsonl")
    yield (
        ["replay", "t.jsonl", "-o", "link.jsonl"],
        "t.jsonl",
        "link.jsonl: -o would overwrite the trace it reads",
    )
    yield (
        ["replay", "t.jsonl", "-o", "./D/../t.jsonl"],
        "t.jsonl",
        "./D/../t.jsonl: -o would overwrite the trace it reads",
    )


def test_one_file_named_twice_is_refused_and_left_alone(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, kept, says in _same_file_cases(work):
        before = (work / kept).read_bytes()
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(f"handoff-fsm {args[0]}: {says}"), err
        assert (work / kept).read_bytes() == before, args


def test_a_trace_beside_the_plots_is_fine(work: Path) -> None:
    assert main(["simulate", "--handoffs", "5", "--trace", "D/run.jsonl", "--plots", "D"]) == 0
    assert (work / "D" / "run.jsonl").stat().st_size > 0


# ---------------------------------------------------------------------- a folder's stale files


@pytest.mark.requires("dot")
def test_diff_clears_what_an_earlier_review_left_and_nothing_else(work: Path) -> None:
    review = work / "D"
    assert main(["diff", "seed", "a976b2bf", "-o", str(review)]) == 1
    assert (review / "difference_01.jsonl").is_file()
    foreign = {
        "notes.txt": b"mine\n",
        "difference_1.jsonl": b"not the review's name\n",
        "DIFF.md.orig": b"a backup\n",
    }
    for name, data in foreign.items():
        (review / name).write_bytes(data)
    (review / "difference_17.mmd").write_bytes(b"stale\n")  # the review's name, an old run
    assert main(["diff", "seed", "seed", "-o", str(review)]) == 0
    left = {p.name for p in review.iterdir()}
    assert left == {"DIFF.md", "diff.json", "chart_diff.dot", "chart_diff.svg", *foreign}
    assert "**Equivalent**" in (review / "DIFF.md").read_text(encoding="utf-8")
    for name, data in foreign.items():
        assert (review / name).read_bytes() == data


# ---------------------------------------------------------------------- standard output


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["check", "--order", "SourceFirst"], ["diff", "seed", "seed"]])
def test_a_failing_stdout_is_named(work: Path, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        result = run_cli(*args, stdout=full, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode == 2
    assert result.stderr == f"handoff-fsm {args[0]}: <stdout>: No space left on device\n"


# ---------------------------------------------------------------------- the writer itself


def _write_half_then_fail(path: Path) -> None:
    with atomic.replacing_text(path) as out:
        out.write("half of it")
        raise RuntimeError("the producer failed")


def test_the_writer_keeps_modes_and_links_and_writes_devices_in_place(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_bytes(OLD)
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic.write_bytes(link, b"new\n")
    assert link.is_symlink() and target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o640
    atomic.write_bytes(os.devnull, b"anything")  # not replaced: /dev/null stays a device
    assert Path(os.devnull).is_char_device()
    with pytest.raises(RuntimeError, match="the producer failed"):
        _write_half_then_fail(target)
    assert target.read_bytes() == b"new\n"
    assert _temporaries(tmp_path) == []
    with pytest.raises(FileNotFoundError) as missing:
        atomic.write_bytes(tmp_path / "nd" / "x", b"x")
    assert missing.value.filename == str(tmp_path / "nd" / "x")
    with pytest.raises(IsADirectoryError):
        atomic.write_bytes(tmp_path, b"x")


def test_write_files_removes_only_what_it_owns(tmp_path: Path) -> None:
    (tmp_path / "own_1.txt").write_bytes(b"stale")
    (tmp_path / "other.txt").write_bytes(b"keep")
    written = atomic.write_files(
        tmp_path,
        {"own_2.txt": b"new", "sub/own_3.txt": b"deep"},
        owns=lambda n: n.startswith("own"),
    )
    assert written == [tmp_path / "own_2.txt", tmp_path / "sub" / "own_3.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.txt", "own_2.txt", "sub"]
    with pytest.raises(NotADirectoryError):
        atomic.write_files(tmp_path / "other.txt", {"x": b"x"})


# ---------------------------------------------------------------------- diagram's trace


def test_diagram_takes_its_trace_like_replay_and_lifecycle(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diagram", "t.jsonl", "-o", "a.dot"]) == 0
    assert main(["diagram", "--trace", "t.jsonl", "-o", "b.dot"]) == 0  # the old spelling
    assert (work / "a.dot").read_bytes() == (work / "b.dot").read_bytes()
    capsys.readouterr()
    for args, says in [
        (["diagram", "t.jsonl", "--trace", "t.jsonl", "-o", "c.dot"], "give the trace once"),
        (["diagram", "-o", "c.dot"], "the following arguments are required: TRACE"),
    ]:
        with pytest.raises(SystemExit) as usage:
            main(args)
        assert usage.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("usage: handoff-fsm diagram [-h] TRACE -o OUT"), err
        assert says in err.splitlines()[-1]
    assert not (work / "c.dot").exists()

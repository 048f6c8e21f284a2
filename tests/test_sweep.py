"""``handoff-fsm sweep`` on real Dask clusters: cells are ``simulate --json``, results never
depend on who ran them.

Every cluster here is real and has worker *processes*: the embedded ``LocalCluster`` the
command starts, one the test starts to kill a worker of, and a ``dask scheduler`` with two
``dask worker`` processes started as commands (each in its own session, on 127.0.0.1 only,
with time-outs so a crashed test leaves nothing running; stopped by PID, workers first).
The grids are small (200 handoffs a cell) so the file stays quick. Dask is in the ``dev``
extra: without it these tests fail, they are never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster

from handoff_fsm.cli import build_parser, main
from handoff_fsm.render.plots import read_stamp
from handoff_fsm.render.sweep_plots import digest, sweep_plot
from handoff_fsm.simulate.summary import WALL_CLOCK_KEYS
from handoff_fsm.simulate.sweep import Cell, CellStore, grid, run_cells
from handoff_fsm.simulate.sweep_report import (
    METRICS,
    estimate,
    groups,
    series,
    t_quantile,
)
from tests.support.cli import COMMAND

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GRID = [
    "--backend",
    "vllm,sglang",
    "--revision",
    "seed,a976b2bf",
    "--decode-cancel-rate",
    "0,0.2",
    "--fault-rate",
    "0.05",
    "--cleanup-retries",
    "10",
    "--handoffs",
    "200",
    "--seeds",
    "0-1",
]
"""16 cells: both backends and revisions, a swept rate, a session option, two seeds."""
OPTIONS: dict[str, tuple[Any, ...]] = {
    "backend": ("vllm", "sglang"),
    "handoffs": (200,),
    "concurrency": (64,),
    "fault_rate": (0.05,),
    "decode_cancel_rate": (0.0, 0.2),
    "revision": ("seed", "a976b2bf"),
    "cleanup_retries": (10,),
    "engine": ("compiled",),
}
"""The grid of :data:`GRID` as the sweep reads it (simulate's defaults filled in)."""
FILES = {"sweep.json", "summary.md"} | {f"{m.name}-vs-decode_cancel_rate.svg" for m in METRICS}


def sweep(folder: Path, *extra: str, grid_options: list[str] = GRID) -> int:
    return main(["sweep", *grid_options, "-o", str(folder), *extra])


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grid, run once on the embedded LocalCluster (two worker processes)."""
    folder = tmp_path_factory.mktemp("embedded") / "out"
    assert sweep(folder, "--workers", "2", "--no-progress") == 0
    return folder


def cells_of(folder: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads((folder / "sweep.json").read_text())["cells"]
    return cells


# ---------------------------------------------------------------------- what a sweep writes


@pytest.mark.slow
def test_the_sweep_writes_its_files_and_drops_the_cells(embedded: Path) -> None:
    assert set(files_of(embedded)) == FILES  # no cells/ left once sweep.json is written
    document = json.loads((embedded / "sweep.json").read_text())
    assert document["left_out"] == sorted(WALL_CLOCK_KEYS)
    assert document["grid"] == {**{k: list(v) for k, v in OPTIONS.items()}, "seeds": [0, 1]}
    cells = document["cells"]
    assert [(c["configuration"], c["seed"]) for c in cells] == [
        (dict(cell.configuration), cell.seed) for cell in grid(OPTIONS, [0, 1])
    ]
    for cell in cells:
        assert not set(cell["summary"]) & WALL_CLOCK_KEYS


@pytest.mark.slow
def test_a_cell_is_what_simulate_prints_with_json(
    embedded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = cells_of(embedded)
    for entry in (cells[0], cells[7], cells[-1]):  # vllm seed; vllm a976b2bf; sglang a976b2bf
        cell = Cell(tuple(entry["configuration"].items()), entry["seed"])
        words = cell.command().split()
        assert words[:2] == ["handoff-fsm", "simulate"] and "--cleanup-retries" in words
        capsys.readouterr()
        main(words[1:])
        printed = json.loads(capsys.readouterr().out)
        assert {k: v for k, v in printed.items() if k not in WALL_CLOCK_KEYS} == entry["summary"]


@pytest.mark.slow
def test_summary_md_gives_every_metric_per_configuration(embedded: Path) -> None:
    text = (embedded / "summary.md").read_text()
    assert text.startswith("# Sweep: 16 cells (8 configurations \N{MULTIPLICATION SIGN} 2 seeds)")
    for metric in METRICS:
        assert f"`{metric.name}` in each cell's summary." in text
        assert f"]({metric.name}-vs-decode_cancel_rate.svg)" in text
    cells = cells_of(embedded)
    held = [c["summary"]["destination_held_after_cancel_ms"] for c in cells[4:6]]  # vllm 0.2 seed
    mean = sum(held) / 2
    assert f"| vllm | 0.2 | seed | {mean:,.3f} | " in text


@pytest.mark.slow
def test_the_plots_are_stamped_with_the_data_of_the_cells(embedded: Path) -> None:
    finished = [
        (Cell(tuple(c["configuration"].items()), c["seed"]), c["summary"])
        for c in cells_of(embedded)
    ]
    found = groups(finished)
    for metric in METRICS:
        panels = series(found, OPTIONS, metric.name, "decode_cancel_rate")
        assert [len(panel.lines) for panel in panels] == [4]  # backend x revision
        plot = sweep_plot(metric, "decode_cancel_rate", panels, 2)
        assert read_stamp((embedded / plot.name).read_bytes()) == digest(plot), plot.name


@pytest.mark.slow
def test_one_worker_gives_the_same_bytes(embedded: Path, tmp_path: Path) -> None:
    assert sweep(tmp_path / "one", "--workers", "1", "--no-progress") == 0
    assert files_of(tmp_path / "one") == files_of(embedded)


@pytest.mark.slow
def test_a_finished_sweep_resumed_runs_nothing_and_writes_the_same(
    embedded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(embedded, copy)
    (copy / "summary.md").write_text("stale")
    assert sweep(copy, "--resume") == 0  # every cell from sweep.json: no cluster started
    err = capsys.readouterr().err
    assert "16 reused" in err and "nothing to run" in err
    assert files_of(copy) == files_of(embedded)


@pytest.mark.slow
def test_resume_reuses_only_the_cells_of_the_same_configuration(
    embedded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(embedded, copy)
    grid_options = [*GRID[:-1], "0-2"]  # one seed more: 8 cells to run
    assert sweep(copy, "--resume", "--workers", "1", grid_options=grid_options) == 0
    err = capsys.readouterr().err
    assert "24 cells (8 configurations x 3 seeds), 16 reused" in err and "8 to run" in err
    old = {(json.dumps(c["configuration"]), c["seed"]): c["summary"] for c in cells_of(embedded)}
    new = {(json.dumps(c["configuration"]), c["seed"]): c["summary"] for c in cells_of(copy)}
    assert {key: new[key] for key in old} == old


# ---------------------------------------------------------------------- clusters


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1: the address."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    log = (tmp_path / "dask.log").open("wb")
    started = []
    scheduler_words = ["--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
    worker_words = [address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
    worker_words += ["--host", "127.0.0.1", "--death-timeout", "60"]

    def start(*words: str) -> subprocess.Popen[bytes]:
        # its own session: a signal to the test's process group does not reach it
        return subprocess.Popen(
            [str(BIN / "dask"), *words], stdout=log, stderr=log, start_new_session=True
        )

    scheduler = start("scheduler", *scheduler_words, "--idle-timeout", "120")
    try:
        for n in range(2):
            started.append(start("worker", *worker_words, "--name", f"test-worker-{n}"))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for worker in started:  # workers first, then the scheduler
            _stop(worker)
        _stop(scheduler)
        log.close()


@pytest.mark.slow
def test_a_running_scheduler_with_two_dask_workers_gives_the_embedded_result(
    embedded: Path, dask_cluster: str, tmp_path: Path
) -> None:
    out = tmp_path / "remote"
    assert sweep(out, "--scheduler", dask_cluster, "--no-progress") == 0
    assert files_of(out) == files_of(embedded)


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_changes_nothing(embedded: Path) -> None:
    cells = grid(OPTIONS, [0, 1])
    results: dict[Cell, dict[str, Any]] = {}
    killed: list[int] = []
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        Client(cluster) as client,
    ):
        pids: dict[str, int] = client.run(os.getpid)
        before = set(pids)

        def on_done(cell: Cell, summary: dict[str, Any]) -> None:
            results[cell] = summary
            if killed:
                return
            busy = [worker for worker, keys in client.processing().items() if keys]
            if busy:  # a worker with cells assigned: it dies with them
                killed.append(pids[busy[0]])
                os.kill(pids[busy[0]], signal.SIGKILL)

        run_cells(client, cells, on_done)
        client.wait_for_workers(2, timeout=60)  # the nanny started another in its place
        after = set(client.scheduler_info()["workers"])
    assert killed and after != before
    expected = {
        (json.dumps(c["configuration"]), c["seed"]): c["summary"] for c in cells_of(embedded)
    }
    assert {
        (json.dumps(dict(cell.configuration)), cell.seed): summary
        for cell, summary in results.items()
    } == expected


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_cells_and_resume_finishes_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    words = ["--fault-rate", "0,0.05", "--handoffs", "1000", "--seeds", "0-3"]
    command = [str(BIN / "handoff-fsm"), "sweep", *words, "-o", str(out), "--workers", "2"]
    # At a lower priority than this test (its workers too), so that on a busy machine the
    # test still sees the first cells land, and interrupts, before the last ones do.
    process = subprocess.Popen(
        ["nice", "-n", "10", *command],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=tmp_path,
    )
    cells = out / "cells"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(cells.glob("*.json"))) < 2:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C at a terminal: the whole group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    kept = sorted(cells.glob("*.json"))
    assert 2 <= len(kept) < 8
    assert f"stopped: {len(kept)} of the 8 cells to run finished, kept in {cells}" in err
    assert not (out / "sweep.json").exists()
    saved = {path.name: json.loads(path.read_text()) for path in kept}
    assert main(["sweep", *words, "-o", str(out), "--workers", "1", "--resume"]) == 0
    err = capsys.readouterr().err
    assert f", {len(kept)} reused from {out}; {8 - len(kept)} to run" in err
    assert not cells.exists()  # sweep.json holds them now
    store = CellStore(out)
    final = {Cell(tuple(c["configuration"].items()), c["seed"]): c for c in cells_of(out)}
    assert len(final) == 8
    for cell, entry in final.items():
        record = saved.get(store.path(cell).name)
        if record is not None:  # a kept cell is in sweep.json as it was kept
            assert {k: record[k] for k in ("configuration", "seed", "summary")} == entry


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--backend", "trtllm"], "unsupported_backend"),
        (["--fault-rate", "0,2"], "invalid_argument"),
        (["--concurrency", "0"], "invalid_argument"),
        (["--workers", "2", "--scheduler", "tcp://127.0.0.1:9"], "invalid_argument"),
        (["--metrics", "leaked,nope"], "invalid_argument"),
        (["--timeout", "0", "--scheduler", "tcp://127.0.0.1:9"], "invalid_argument"),
    ],
)
def test_a_bad_grid_is_one_coded_line_and_writes_nothing(
    extra: list[str], code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["sweep", "--handoffs", "10", "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"handoff-fsm sweep: {code}: ") and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize(
    "extra",
    [
        ["--fault-rate", "0,,1"],
        ["--fault-rate", "0,0.0"],
        ["--backend", "vllm,tgi"],
        ["--engine", "compiled,fast"],
        ["--seeds", "3-1"],
        ["--seeds", "0-2,1"],
        ["--workers", "0"],
    ],
)
def test_a_bad_option_value_is_a_usage_error(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "-o", str(tmp_path / "out"), *extra])
    assert stop.value.code == 2
    assert "handoff-fsm sweep: error: argument" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_outputs_follow_the_one_output_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", "-o", "-"]) == 2
    assert "-o -: a sweep is several files, in a folder" in capsys.readouterr().err
    file = tmp_path / "file"
    file.write_text("kept")
    assert main(["sweep", "-o", str(file)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert file.read_text() == "kept"


def test_an_unreachable_scheduler_is_one_coded_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    out = tmp_path / "out"
    assert (
        main(
            [
                "sweep",
                "--handoffs",
                "10",
                "-o",
                str(out),
                "--scheduler",
                address,
                "--timeout",
                "0.5",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(
        f"handoff-fsm sweep: scheduler_unreachable: cannot reach the scheduler {address}"
    )
    assert not out.exists()


def test_without_dask_one_line_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError
    assert main(["sweep", "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "handoff-fsm sweep: missing_dependency: sweeps run on Dask, which is not installed: "
        "pip install 'handoff-fsm[sweep]'\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_command_line_does_not_load_dask() -> None:
    code = (
        "import sys, handoff_fsm.cli, handoff_fsm.simulate.sweep, handoff_fsm.cli.sweep; "
        "print(sorted(m for m in ('dask', 'distributed', 'matplotlib') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout == "[]\n"


# ---------------------------------------------------------------------- the numbers


def test_student_t_quantiles_are_the_tables() -> None:
    for df, expected in (
        (1, 12.7062047),
        (2, 4.3026527),
        (4, 2.7764451),
        (9, 2.2621572),
        (30, 2.0422725),
        (1000, 1.9623391),
    ):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)


def test_an_estimate_is_the_mean_and_its_interval_clipped_at_zero() -> None:
    e = estimate([10.0, 11.0, 12.0])  # sample standard deviation 1
    assert e.mean == 11.0 and e.n == 3
    assert e.high is not None and e.high == pytest.approx(11.0 + 4.3026527 / 3**0.5, abs=1e-6)
    assert e.low is not None and e.low == pytest.approx(11.0 - 4.3026527 / 3**0.5, abs=1e-6)
    assert estimate([0.0, 0.0, 3.0]).low == 0.0
    assert (estimate([5.0]).mean, estimate([5.0]).low) == (5.0, None)
    assert estimate([]).mean is None


def test_the_seeds_option_takes_ranges_and_lists(tmp_path: Path) -> None:
    args = build_parser().parse_args(["sweep", "-o", str(tmp_path), "--seeds", "0-2,7,9-10"])
    assert args.seeds == (0, 1, 2, 7, 9, 10)
    assert build_parser().parse_args(["sweep", "-o", str(tmp_path)]).seeds == (0,)


def test_the_docs_show_the_committed_sweep_s_table() -> None:
    page = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    summary = (ROOT / "docs" / "figures" / "sweep" / "summary.md").read_text(encoding="utf-8")
    (metric,) = [m for m in METRICS if m.name == "destination_held_after_cancel_ms"]
    section = summary.split(f"`{metric.name}` in each cell's summary.\n\n", 1)[1]
    table = section.split("\n\n", 1)[0].strip()
    assert table.startswith("| decode-cancel-rate | revision | mean |")
    assert table in page
    assert "](figures/sweep/destination_held_after_cancel_ms-vs-decode_cancel_rate.svg)" in page
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    (run,) = [line for line in makefile.splitlines() if line.startswith("SWEEP_RUN := ")]
    recipe = f"handoff-fsm sweep {run.removeprefix('SWEEP_RUN := ')} -o docs/figures/sweep"
    assert f"\n{recipe}\n" in page  # the command the page shows is the recipe's


def _progress_of(tmp_path: Path, name: str, *, terminal: bool) -> str:
    """What a real ``handoff-fsm sweep`` of two small cells writes on stderr, to a
    terminal (a pseudo-terminal) or to a pipe."""
    import pty  # noqa: PLC0415  # POSIX only, as the whole suite

    argv = [*COMMAND, "sweep", "--handoffs", "50"]
    argv += ["--seeds", "0-1", "--workers", "1", "-o", str(tmp_path / name)]
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    if not terminal:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        return done.stderr
    primary, secondary = pty.openpty()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=secondary, env=env)
    os.close(secondary)
    said = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the other end closed: the process is done writing
            break
        if not chunk:
            break
        said += chunk
    os.close(primary)
    assert process.wait(timeout=120) == 0, said
    return said.decode("utf-8", "replace")


@pytest.mark.slow
def test_progress_is_a_bar_on_a_terminal_and_plain_lines_off_one(tmp_path: Path) -> None:
    plain = _progress_of(tmp_path, "plain", terminal=False)
    lines = [line for line in plain.splitlines() if "/2 " in line]
    assert [line.split()[2] for line in lines] == ["1/2", "2/2"], plain
    assert "\x1b[" not in plain  # no terminal codes into a file or a pipe
    bar = _progress_of(tmp_path, "bar", terminal=True)
    assert "sweeping" in bar and "\x1b[" in bar, bar  # rich's bar, drawn with escapes
    assert not any(line.startswith("handoff-fsm sweep: 1/2") for line in bar.splitlines())

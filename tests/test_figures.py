"""Drift check of docs/figures/: the simulation guide's figures are what ``make figures`` makes.

The test reads the ``figures`` recipe from the Makefile, runs each of its
``handoff-fsm`` commands into a temporary folder (in this process, through
:func:`handoff_fsm.cli.main`), and compares the result with docs/figures/: text
(the trace, ``summary.md``, the Mermaid lifecycle) byte for byte; the plots by
their data stamp, which must also equal the digest of the plot data a fresh run
gives (so any matplotlib or font draws a current figure, and a figure of other
numbers is stale); the lifecycle SVG by the stamp of the DOT it was drawn from.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the figures need matplotlib: pip install '.[plots]'")

from handoff_fsm.cli import main
from handoff_fsm.render.plots import PLOT_NAMES, digest, plots, read_stamp
from handoff_fsm.render.stamp import comparable
from handoff_fsm.simulate.config import command_config
from handoff_fsm.simulate.phases import simulate_times

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = ROOT / "Makefile"
FIGURES = "docs/figures"
COMMITTED = ROOT / FIGURES

_ASSIGNMENT = re.compile(r"^([A-Z_]+)\s*[:?]?=\s*(.*)$")
_REFERENCE = re.compile(r"\$\(([A-Z_]+)\)")


def recipe(target: str, overrides: dict[str, str]) -> list[str]:
    """The recipe lines of ``target`` with the Makefile's ``$(VAR)``s expanded."""
    text = MAKEFILE.read_text(encoding="utf-8")
    variables = {m[1]: m[2] for m in map(_ASSIGNMENT.match, text.splitlines()) if m}
    variables.update(overrides)

    def expand(line: str) -> str:
        for _ in range(10):
            line = _REFERENCE.sub(lambda m: variables[m[1]], line)
        assert "$(" not in line, line
        return line

    lines = text.split(f"\n{target}:", 1)[1].split("\n")[1:]
    return [expand(line[1:]) for line in lines[: next(i for i, s in enumerate(lines) if not s)]]


def make_figures(folder: Path) -> list[list[str]]:
    """Run the ``figures`` recipe's commands with ``FIGURES`` = ``folder``; returns them."""
    ran = []
    for line in recipe("figures", {"FIGURES": str(folder), "BIN": "BIN"}):
        words = shlex.split(line)
        if words[:2] == ["mkdir", "-p"]:
            Path(words[2]).mkdir(parents=True, exist_ok=True)
            continue
        assert words[0] == "BIN/handoff-fsm", f"the figures recipe runs only handoff-fsm: {line}"
        assert main(words[1:]) == 0, line
        ran.append(words[1:])
    return ran


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("figures")
    make_figures(folder)
    return folder


def drift(committed: Path, regenerated: Path) -> list[str]:
    """The files of ``committed`` that differ from ``regenerated`` (or exist in one only); a
    folder in them (docs/figures/sweep) is another recipe's, checked on its own."""
    names = {p.name for p in (*committed.iterdir(), *regenerated.iterdir()) if not p.is_dir()}
    stale = []
    for name in sorted(names):
        old, new = committed / name, regenerated / name
        if not (old.is_file() and new.is_file()):
            stale.append(name)
            continue
        old_bytes, new_bytes = old.read_bytes(), new.read_bytes()
        if read_stamp(new_bytes) is not None:  # a plot: the data it draws
            same = read_stamp(old_bytes) == read_stamp(new_bytes)
        else:  # text byte for byte, a Graphviz figure by its DOT
            same = comparable(name, old_bytes) == comparable(name, new_bytes)
        if not same:
            stale.append(name)
    return stale


@pytest.mark.requires("dot")
def test_docs_figures_are_what_make_figures_makes(regenerated: Path) -> None:
    assert drift(COMMITTED, regenerated) == [], "docs/figures is out of date: run `make figures`"


@pytest.mark.requires("dot")
def test_the_committed_plots_carry_the_digest_of_a_fresh_run_s_data() -> None:
    (simulate_words, *_) = [
        shlex.split(line)
        for line in recipe("figures", {"FIGURES": FIGURES, "BIN": "BIN"})
        if " simulate " in line
    ]
    options = dict(zip(simulate_words[2::2], simulate_words[3::2], strict=False))
    config = command_config(
        handoffs=int(options["--handoffs"]),
        fault_rate=float(options["--fault-rate"]),
        seed=int(options["--seed"]),
    )
    assert set(options) == {"--handoffs", "--fault-rate", "--seed", "--trace", "--plots"}
    result, run = simulate_times(config)
    for plot in plots(run, result.config):
        assert read_stamp((COMMITTED / plot.name).read_bytes()) == digest(plot), plot.name


@pytest.mark.requires("dot")
def test_the_recipe_makes_the_documented_files(regenerated: Path) -> None:
    commands = [
        shlex.split(line)[1]
        for line in recipe("figures", {"FIGURES": FIGURES, "BIN": "BIN"})
        if line.startswith("BIN/")
    ]
    assert commands == ["simulate", "lifecycle", "lifecycle"]
    assert {p.name for p in regenerated.iterdir()} == {
        "run.jsonl",
        "summary.md",
        *PLOT_NAMES,
        "lifecycle.mmd",
        "lifecycle.svg",
    }
    keys = {
        json.loads(line)["coordinator"]
        for line in (regenerated / "run.jsonl").read_text(encoding="utf-8").splitlines()
    }
    assert len(keys) <= 300  # the committed trace stays small


@pytest.mark.requires("dot")
def test_the_drift_check_catches_a_stale_plot_and_stale_text(
    regenerated: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "figures"
    shutil.copytree(COMMITTED, copy)
    assert drift(copy, regenerated) == []
    # Another run's phases plot: drawn fine, from other numbers.
    other = tmp_path / "other"
    assert main(["simulate", "--handoffs", "50", "--seed", "8", "--plots", str(other)]) == 0
    shutil.copy(other / "phases.svg", copy / "phases.svg")
    summary = copy / "summary.md"
    summary.write_bytes(summary.read_bytes() + b"\n")
    assert drift(copy, regenerated) == ["phases.svg", "summary.md"]
    # The same data drawn by another matplotlib (other bytes, same stamp) is current.
    svg = (regenerated / "latency.svg").read_bytes()
    redrawn = svg.replace(b"<svg ", b"<svg data-other-renderer='1' ", 1)
    assert redrawn != svg and read_stamp(redrawn) == read_stamp(svg)
    (copy / "latency.svg").write_bytes(redrawn)
    assert drift(copy, regenerated) == ["phases.svg", "summary.md"]


def test_the_guide_shows_the_figures_and_the_commands() -> None:
    guide = ROOT / "docs" / "simulation.md"
    section = guide.read_text(encoding="utf-8")
    assert section.startswith("# Simulation: `handoff-fsm simulate`\n")
    for figure in ("phases.svg", "lifecycle.svg"):
        link = (ROOT / FIGURES / figure).relative_to(guide.parent).as_posix()  # figures/...
        assert f"]({link})" in section
        assert (guide.parent / link).is_file()
    assert "make figures" in section
    commands = [
        line.removeprefix("BIN/")
        for line in recipe("figures", {"FIGURES": FIGURES, "BIN": "BIN"})
        if line.startswith("BIN/")
    ]
    for command in commands:
        assert command in section, command


@pytest.mark.slow
def test_docs_sweep_figures_are_what_make_sweep_figures_makes(tmp_path: Path) -> None:
    """docs/figures/sweep (docs/sweeps.md): the ``sweep-figures`` recipe, run on a real
    LocalCluster, gives summary.md and sweep.json byte for byte and the plot's data."""
    (line,) = recipe("sweep-figures", {"FIGURES": str(tmp_path), "BIN": "BIN"})
    words = shlex.split(line)
    assert words[:2] == ["BIN/handoff-fsm", "sweep"], line
    assert main(words[1:]) == 0, line
    committed, regenerated = COMMITTED / "sweep", tmp_path / "sweep"
    names = {p.name for p in regenerated.iterdir()}
    plot = "destination_held_after_cancel_ms-vs-decode_cancel_rate.svg"
    assert names == {"sweep.json", "summary.md", plot}
    assert drift(committed, regenerated) == [], (
        "docs/figures/sweep is out of date: make sweep-figures"
    )


@pytest.mark.requires("node")
def test_the_committed_lifecycle_passes_mermaid_s_parser() -> None:
    result = subprocess.run(
        [str(ROOT / "tools" / "mermaid-check" / "mermaid-check"), str(COMMITTED / "lifecycle.mmd")],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok ")

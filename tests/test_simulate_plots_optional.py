"""matplotlib stays optional: nothing but drawing imports it, and ``--plots`` without it is
one clear line naming the extra to install (these tests need no matplotlib)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from handoff_fsm.cli import main
from handoff_fsm.render.plots import EXTRA, PlotsUnavailableError, require_matplotlib

ROOT = Path(__file__).resolve().parents[1]

_NO_MATPLOTLIB = """
import sys
import handoff_fsm.simulate
import handoff_fsm.simulate.phases, handoff_fsm.render.plots, handoff_fsm.review.simulation
import handoff_fsm.cli.simulate
from handoff_fsm.cli import main
from handoff_fsm.simulate.phases import simulate_times
from handoff_fsm.render.plots import plots
from handoff_fsm.review.simulation import summary_markdown
from handoff_fsm.simulate import SimulationConfig
result, run = simulate_times(SimulationConfig(handoffs=20))
plots(run, result.config)  # the data of the plots, not their drawing
summary_markdown(result, run)
assert main(["simulate", "--handoffs", "20", "--json"]) == 0
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "matplotlib")
assert not loaded, loaded
"""


@pytest.mark.slow
def test_simulating_and_the_plots_data_never_import_matplotlib() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _NO_MATPLOTLIB],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr


@pytest.fixture
def without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import matplotlib`` fail as it does where the extra is not installed."""
    for name in [n for n in sys.modules if n.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.mark.usefixtures("without_matplotlib")
def test_plots_without_matplotlib_is_one_line_naming_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plots"
    trace = tmp_path / "run.jsonl"
    status = main(["simulate", "--handoffs", "5", "--trace", str(trace), "--plots", str(out)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err == (
        "handoff-fsm simulate: missing_dependency: --plots draws with matplotlib, which is not "
        f"installed: pip install '{EXTRA}'\n"
    )
    assert captured.out == ""
    assert not out.exists() and not trace.exists()  # checked before anything ran
    with pytest.raises(PlotsUnavailableError):
        require_matplotlib()


@pytest.mark.usefixtures("without_matplotlib")
def test_plots_without_matplotlib_under_json_is_an_error_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--json", "--plots", str(tmp_path / "p")]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "missing_dependency" and EXTRA in error["message"]


@pytest.mark.usefixtures("without_matplotlib")
def test_simulate_without_plots_needs_no_matplotlib(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--handoffs", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == 50


def test_plots_into_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    assert main(["simulate", "--handoffs", "5", "--plots", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and str(target) in captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert target.read_text(encoding="utf-8") == "x"


def test_the_plots_extra_is_declared_and_in_dev() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    (matplotlib,) = (r for r in extras["plots"] if r.startswith("matplotlib"))
    assert matplotlib in extras["dev"]  # `make install` (and so `make test`) draws
    assert EXTRA == "handoff-fsm[plots]"
    assert "matplotlib" not in " ".join(
        tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "dependencies"
        ]
    )

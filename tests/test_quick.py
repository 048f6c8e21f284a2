"""``make test-quick`` runs what needs no tool, no process and no exploration (tests/quick.py).

The guard itself is tested here: while it holds, starting a process or any of the three
explorations fails with the marker to add, and everything is as before once it ends; a
test over its CPU budget fails the same way; a test that requires a tool is ``slow``
without saying so, so ``-m "not slow"`` deselects it. None of these tests starts a
process or explores: the guard stops each attempt first.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from handoff_fsm import HandoffOrder, Revision
from handoff_fsm.verify import exploration
from handoff_fsm.verify.diff import behaviour
from handoff_fsm.verify.system import check_system, search
from tests import quick


def test_a_guarded_block_starts_no_process_and_no_exploration() -> None:
    popen, explore_graph, system = (
        subprocess.Popen._execute_child,  # type: ignore[attr-defined]
        exploration.explore_graph,
        search.explore_graph,
    )
    with quick.guarded():
        with pytest.raises(quick.SlowTestError, match="starts a process: mark it"):
            subprocess.run(["true"], check=False)
        with pytest.raises(quick.SlowTestError, match="coordinator's state space"):
            exploration.explore(HandoffOrder.SOURCE_FIRST)
        with pytest.raises(quick.SlowTestError, match="system's state space"):
            check_system(Revision.SEED)  # through the name report.py imported
        with pytest.raises(quick.SlowTestError, match="product"):
            behaviour._Search.explore(None, HandoffOrder.SOURCE_FIRST)  # type: ignore[arg-type]
    if not quick.quick():  # under make test-quick the session's own guard holds
        assert subprocess.Popen._execute_child is popen  # type: ignore[attr-defined]
        assert exploration.explore_graph is explore_graph
        assert search.explore_graph is system


def _spend(nodeid: str) -> None:
    """Some CPU time, however little, under :func:`quick.budgeted`."""
    with quick.budgeted(nodeid):
        began = time.process_time()
        while time.process_time() == began:
            pass


def test_a_test_over_its_cpu_budget_fails_naming_the_marker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(quick, "BUDGET_S", 0.0)
    with pytest.raises(quick.SlowTestError, match=r"test_y took .* of CPU .*@pytest\.mark\.slow"):
        _spend("tests/test_x.py::test_y")
    monkeypatch.setattr(quick, "BUDGET_S", 60.0)
    _spend("tests/test_x.py::test_y")  # within its budget: nothing to say


def test_a_test_that_requires_a_tool_is_left_to_make_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("pytest_plugins = ['tests.conftest']\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.requires("dot")
        def test_draws():
            pass

        @pytest.mark.slow
        def test_explores():
            pass

        def test_unit():
            pass
        """
    )
    result = pytester.runpytest_inprocess("-m", "not slow", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=2)

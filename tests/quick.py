"""What ``make test-quick`` runs, and how a test that belongs to the full run is caught.

Rule kept here: a test is marked ``slow`` when it starts a process (git, dot, chromium,
node, cargo, the command line in a fresh interpreter, a Dask cluster), explores a state
space (a coordinator's, the system's, two sides' product: review, check, diff), or takes
more than :data:`BUDGET_S` of CPU time; a test that requires a tool
(tests/requirements.py) is slow without saying so (tests/conftest.py marks it).
``make test`` runs every test; ``make test-quick`` sets :data:`QUICK_ENV` and deselects
the slow ones (``-m "not slow"``), and while the rest runs, starting a process or an
exploration, or going over the budget, fails the test with the reason and the marker it
lacks, so a slow test without its marker is caught the first time it runs there.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import pytest

QUICK_ENV: Final = "HANDOFF_FSM_QUICK"
"""Set to ``1`` (``make test-quick``) to guard the quick tests."""
MARKER: Final = "slow"
BUDGET_S: Final = 1.0
"""The CPU seconds a quick test may take (most take a few milliseconds)."""


class SlowTestError(AssertionError):
    """A test that ``make test-quick`` runs did what only a ``slow`` test may do."""


def quick() -> bool:
    return os.environ.get(QUICK_ENV, "") not in ("", "0")


def marker_description() -> str:
    return (
        f"{MARKER}: starts a process, explores a state space or takes more than "
        f"{BUDGET_S:g} s of CPU; make test-quick deselects it (tests/quick.py)"
    )


def _refusal(what: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise SlowTestError(
            f"this test {what}: mark it @pytest.mark.{MARKER} (tests/quick.py), "
            "so that make test-quick leaves it to make test"
        )

    return refused


def _explorers() -> list[tuple[Any, str, str]]:
    """Where every exploration starts: (owner, attribute, what it does)."""
    from handoff_fsm.verify import exploration  # noqa: PLC0415 - imported when guarding
    from handoff_fsm.verify.diff import behaviour  # noqa: PLC0415
    from handoff_fsm.verify.system import search  # noqa: PLC0415

    return [
        (exploration, "explore_graph", "explores a coordinator's state space"),
        (search, "explore_graph", "explores the system's state space"),
        (behaviour._Search, "explore", "explores two sides' product (a diff)"),
    ]


def warm_property_testing() -> None:
    """Run one throwaway property before the guarded tests, outside every budget.

    Hypothesis reads the literal constants of the code under test the first time a
    property draws in a process (and keeps them in ``.hypothesis/``): about a second on a
    fresh clone, which would be charged to whichever property test ran first and fail it
    for a cost that is not its own."""
    from hypothesis import given, settings  # noqa: PLC0415 - only under make test-quick
    from hypothesis import strategies as st  # noqa: PLC0415

    @settings(max_examples=100, database=None)
    @given(st.integers() | st.floats() | st.text())
    def draw(_: object) -> None:
        pass

    draw()


@contextmanager
def guarded() -> Iterator[None]:
    """While it lasts, starting a process or an exploration raises :class:`SlowTestError`.

    A function bound under another name before (``from search import explore_graph``)
    is replaced wherever a loaded module holds it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", _refusal("starts a process"))
        patch.setattr(multiprocessing.process.BaseProcess, "start", _refusal("starts a process"))
        for owner, name, what in _explorers():
            original = getattr(owner, name)
            refused = _refusal(what)
            for module in list(sys.modules.values()):
                if getattr(module, name, None) is original:
                    patch.setattr(module, name, refused)
            patch.setattr(owner, name, refused)
        yield


@contextmanager
def budgeted(nodeid: str) -> Iterator[None]:
    """The block may take :data:`BUDGET_S` of this process's CPU time, no more."""
    began = time.process_time()
    yield
    spent = time.process_time() - began
    if spent > BUDGET_S:
        raise SlowTestError(
            f"{nodeid} took {spent:.1f} s of CPU (a quick test takes at most "
            f"{BUDGET_S:g} s): mark it @pytest.mark.{MARKER} (tests/quick.py)"
        )

"""Shared fixtures (most behaviour tests run against both engines), the tool requirements
and the quick run.

``@pytest.mark.requires("cargo" | "node" | "dot")`` marks a test that runs an external
tool: it is skipped with the reason when the tool is missing, and under
``HANDOFF_FSM_REQUIRE_ALL=1`` (``make test``, ``.ci/run``) every skip fails the run
(see tests/requirements.py). Such a test is ``slow`` too: ``make test-quick`` leaves it,
and every test marked ``slow``, to ``make test``, and fails a test it runs that starts a
process, explores or overruns its CPU budget (see tests/quick.py).

Verdicts are kept (handoff_fsm.verify.cache) in one folder of this run, shared by its
pytest workers and every process they start, and never in the user's own cache: each
run judges every package it meets once, from nothing.
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from handoff_fsm.coordinator import ENGINES, Engine
from handoff_fsm.verify import cache
from tests import quick, requirements
from tests.support.traces import COUNTS_PROPERTY

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytest_plugins = ("pytester",)

__all__ = ["ENGINES"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", requirements.marker_description())


@pytest.hookimpl(tryfirst=True)  # before ``-m "not slow"`` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        requirements.check_names(item)
        requirements.skip_unless_available(item)
        if item.get_closest_marker(requirements.MARKER) is not None:
            item.add_marker(quick.MARKER)
    # The slow tests first (in their order): the workers start on the long ones side by
    # side and end on short ones, instead of one worker finishing a long test alone.
    items.sort(key=lambda item: item.get_closest_marker(quick.MARKER) is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every module, every test item) lives as long as the run:
    out of the cyclic collector's way, its passes over the run's own objects cost less."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    if not quick.quick():
        return (yield)
    with quick.budgeted(item.nodeid):
        return (yield)


@pytest.fixture(scope="session", autouse=True)
def quick_guard() -> Iterator[None]:
    """Under ``make test-quick``, no process and no exploration for the whole session."""
    if not quick.quick():
        yield
        return
    quick.warm_property_testing()
    with quick.guarded():
        yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    requirements.as_failure(report)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the runs of the exported documents checked (tests/test_export_run.py records one
    line per document and exploration), listed after the run, also from xdist workers."""
    lines = sorted(
        str(value)
        for report in terminalreporter.stats.get("passed", [])
        for name, value in getattr(report, "user_properties", ())
        if name == COUNTS_PROPERTY
    )
    if lines:
        terminalreporter.section("exported documents driven along the explored traces")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    requirements.as_failure(report)
    return report


@pytest.fixture(scope="session", autouse=True)
def kept_verdicts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``$HANDOFF_FSM_CACHE`` for this run: beside the workers' own temporary folders."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    before = os.environ.get(cache.ENVIRONMENT)
    os.environ[cache.ENVIRONMENT] = str(shared / "kept-verdicts")
    yield
    if before is None:
        del os.environ[cache.ENVIRONMENT]
    else:
        os.environ[cache.ENVIRONMENT] = before


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium (tests/support/browser.py), one per test module that asks for it."""
    from tests.support.browser import chromium  # noqa: PLC0415 - Playwright only where it is asked for

    with chromium() as launched:
        yield launched


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each test using this fixture runs once per engine."""
    value: Engine = request.param
    return value


@pytest.fixture
def handoff_id() -> uuid.UUID:
    return uuid.UUID(int=1)

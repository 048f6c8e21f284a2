"""Shared fixtures (most behaviour tests run against both engines) and the tool requirements.

``@pytest.mark.requires("cargo" | "node" | "dot")`` marks a test that runs an external
tool: it is skipped with the reason when the tool is missing, and under
``HANDOFF_FSM_REQUIRE_ALL=1`` (``make test``, ``.ci/run``) every skip fails the run
(see tests/requirements.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Generator

import pytest

from handoff_fsm.coordinator import ENGINES, Engine
from tests import requirements

pytest_plugins = ("pytester",)

__all__ = ["ENGINES"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", requirements.marker_description())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        requirements.check_names(item)
        requirements.skip_unless_available(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    requirements.as_failure(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    requirements.as_failure(report)
    return report


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each test using this fixture runs once per engine."""
    value: Engine = request.param
    return value


@pytest.fixture
def handoff_id() -> uuid.UUID:
    return uuid.UUID(int=1)

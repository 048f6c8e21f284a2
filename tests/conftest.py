"""Shared fixtures: most behaviour tests run against both engines."""

from __future__ import annotations

import uuid

import pytest

from handoff_fsm import Engine

ENGINES: tuple[Engine, ...] = ("compiled", "statechart")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each test using this fixture runs once per engine."""
    value: Engine = request.param
    return value


@pytest.fixture
def handoff_id() -> uuid.UUID:
    return uuid.UUID(int=1)

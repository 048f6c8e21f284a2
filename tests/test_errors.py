"""errors.py: one family of coded errors, every layer's codes registered, safe to ship."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from enum import StrEnum
from uuid import UUID

import pytest

import handoff_fsm as hf
from handoff_fsm.errors import (
    ConfigurationError,
    HandoffError,
    HandoffErrorCode,
    error_code,
    error_codes,
    handoff_error,
    register_codes,
)
from handoff_fsm.io.errors import TraceError, TraceErrorCode
from handoff_fsm.verify.diff.errors import DiffError, DiffErrorCode


def test_every_layer_registers_its_codes_with_its_family() -> None:
    codes = error_codes()
    assert codes[: len(HandoffErrorCode)] == tuple(HandoffErrorCode)  # the protocol's first
    assert set(TraceErrorCode) | set(DiffErrorCode) <= set(codes)
    assert len({code.value for code in codes}) == len(codes)
    assert type(handoff_error(TraceErrorCode.LINE_TOO_LONG, "x")) is TraceError
    assert type(handoff_error(DiffErrorCode.DIFF_TOO_LARGE, "x")) is DiffError
    assert type(handoff_error(HandoffErrorCode.INVALID_ORDER, "x")) is ConfigurationError
    assert error_code("invalid_input") is TraceErrorCode.INVALID_INPUT
    assert error_code("no_such_code") is None


def test_a_code_value_cannot_belong_to_two_layers() -> None:
    class Clash(StrEnum):
        INVALID_ORDER = "invalid_order"

    with pytest.raises(ValueError, match="already HandoffErrorCode's"):
        register_codes(Clash, HandoffError)
    assert error_code("invalid_order") is HandoffErrorCode.INVALID_ORDER


@pytest.mark.parametrize("code", error_codes(), ids=str)
def test_every_error_survives_pickle_copy_and_deepcopy(code: StrEnum) -> None:
    error = handoff_error(
        code,
        f"message of {code.value}",
        handoff_id=UUID(int=7),
        action_id=3,
        state=("source_held", "reserved"),
    )
    error.extra = {"kept": [1, 2]}  # type: ignore[attr-defined]  # an attribute set later
    for twin in (
        pickle.loads(pickle.dumps(error)),
        copy.copy(error),
        copy.deepcopy(error),
    ):
        assert type(twin) is type(error)
        assert twin.code is code
        assert (twin.message, str(twin), twin.args) == (error.message, str(error), error.args)
        assert (twin.handoff_id, twin.action_id, twin.state) == (UUID(int=7), 3, error.state)
        assert twin.extra == {"kept": [1, 2]}  # type: ignore[attr-defined]
        assert repr(twin) == repr(error)


def test_an_error_raised_by_the_coordinator_crosses_a_process_boundary() -> None:
    coordinator = hf.HandoffCoordinator(UUID(int=1), hf.HandoffOrder.SOURCE_FIRST)
    coordinator.start()
    with pytest.raises(hf.HandoffError) as raised:
        coordinator.on_action_outcome(99, hf.HandoffActionOutcome.SUBMITTED)
    twin = pickle.loads(pickle.dumps(raised.value))
    assert type(twin) is type(raised.value) and twin.code is HandoffErrorCode.UNKNOWN_ACTION
    assert (twin.handoff_id, twin.action_id, twin.state) == (
        raised.value.handoff_id,
        raised.value.action_id,
        raised.value.state,
    )


@pytest.mark.slow
def test_the_list_of_codes_does_not_depend_on_which_layer_was_imported_first() -> None:
    """The review's code table is written from error_codes(): importing the layers in
    another order (a test run, a CLI command) must not reorder it."""
    layers = [
        "handoff_fsm.io.errors",
        "handoff_fsm.verify.diff.errors",
        "handoff_fsm.verify.system",
    ]
    listings = set()
    for order in (layers, layers[::-1]):
        program = "".join(f"import {name}\n" for name in order) + (
            "from handoff_fsm.errors import error_codes\nprint([c.value for c in error_codes()])\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True
        )
        listings.add(result.stdout)
    assert len(listings) == 1, listings

"""The error-code table covers every code, and what it claims about the chart is true."""

from __future__ import annotations

import math

import pytest

from handoff_fsm import (
    HandoffCoordinator,
    HandoffError,
    HandoffErrorCode,
    HandoffOrder,
    HandoffTransferTiming,
    SourceHeld,
    TransferTimingMode,
)
from handoff_fsm.chart import REJECTIONS, VALIDATORS
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.model import HandoffActionOutcome
from handoff_fsm.review import error_conditions
from handoff_fsm.review.codes import VALIDATOR_CODES
from handoff_fsm.verify.diff.errors import DiffErrorCode
from handoff_fsm.verify.system.errors import SystemErrorCode

ID = "00000000-0000-4000-8000-0000000000c0"


def test_every_code_has_a_condition_and_its_family() -> None:
    conditions = error_conditions()
    assert [c.code for c in conditions] == [
        *HandoffErrorCode,
        *TraceErrorCode,
        *DiffErrorCode,
        *SystemErrorCode,
    ]
    for entry in conditions:
        assert entry.condition.endswith(".")
        assert entry.family.endswith("Error")
    family = {c.code: c.family for c in conditions}
    assert family[HandoffErrorCode.CONFLICTING_OUTCOME] == "OutcomeError"
    assert family[HandoffErrorCode.INVALID_SNAPSHOT] == "ConfigurationError"
    assert family[TraceErrorCode.TIME_WENT_BACKWARDS] == "TraceError"
    assert family[DiffErrorCode.DIFF_SIDE_FAILED] == "DiffError"
    assert family[SystemErrorCode.INVALID_SYSTEM_SETTING] == "SystemCheckError"


def test_rejections_name_the_states_the_chart_rejects_them_in() -> None:
    by_code = {c.code: c.condition for c in error_conditions()}
    assert (
        "`source_held` is rejected in `source_idle`, `submitting`."
        in by_code[HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT]
    )
    assert "`CancelSource`, `CancelDestination`" in by_code[HandoffErrorCode.CLEANUP_ACTION_FAILED]
    assert "none for `trtllm`" in by_code[HandoffErrorCode.UNSUPPORTED_BACKEND]


def test_every_non_rejecting_validator_has_its_codes() -> None:
    assert set(VALIDATOR_CODES) == set(VALIDATORS) - set(REJECTIONS)


@pytest.mark.parametrize(
    ("bandwidth", "kv", "code"),
    [
        (-1.0, 1024, HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH),
        (math.nan, 1024, HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH),
        (5e-324, 2**60, HandoffErrorCode.INVALID_TRANSFER_DELAY),
    ],
)
def test_the_timing_validator_raises_only_the_codes_listed_for_it(
    bandwidth: float, kv: int, code: HandoffErrorCode
) -> None:
    coordinator = HandoffCoordinator(ID, HandoffOrder.SOURCE_FIRST)
    submit = coordinator.start()[0]
    coordinator.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    timing = HandoffTransferTiming(
        mode=TransferTimingMode.FULL_PROMPT,
        full_prompt_tokens=2**40,
        kv_bytes_per_token=kv,
        bandwidth_gb_s=bandwidth,
    )
    with pytest.raises(HandoffError) as raised:
        coordinator.on_fact(SourceHeld(handoff_id=ID, transfer_timing=timing))
    assert raised.value.code is code
    assert code in VALIDATOR_CODES["validate_transfer_timing"]

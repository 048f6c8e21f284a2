"""Transfer-delay arithmetic is the reference's f64 arithmetic, bit for bit."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handoff_fsm import (
    FactError,
    HandoffErrorCode,
    HandoffTransferTiming,
    TransferTimingMode,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff_fsm.model import transfer_delay_ms

U64 = st.integers(min_value=0, max_value=2**64 - 1)


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


def reference_delay(tokens: int, kv: int | None, bandwidth: float | None) -> float | None:
    """The seed's formula, written out as the issue states it."""
    if kv is None or bandwidth is None or bandwidth <= 0.0:
        return None
    return float(tokens) * float(kv) / (bandwidth * 1e9) * 1000.0


@given(U64, st.none() | U64, st.none() | st.floats(allow_nan=True, allow_infinity=True))
def test_delay_is_bit_identical_to_the_reference_formula(
    tokens: int, kv: int | None, bandwidth: float | None
) -> None:
    expected = reference_delay(tokens, kv, bandwidth)
    actual = transfer_delay_ms(tokens, kv, bandwidth)
    if expected is None:
        assert actual is None
    else:
        assert actual is not None
        assert bits(actual) == bits(expected)


@given(U64, U64, st.floats(min_value=1e-12, max_value=1e6))
def test_zero_state_bytes_keeps_bits_and_state_bytes_add_to_the_payload(
    tokens: int, kv: int, bandwidth: float
) -> None:
    plain = transfer_delay_ms(tokens, kv, bandwidth)
    assert plain is not None
    zero = transfer_delay_ms(tokens, kv, bandwidth, state_bytes=0)
    assert zero is not None and bits(zero) == bits(plain)
    with_state = transfer_delay_ms(tokens, kv, bandwidth, state_bytes=4096)
    expected = (float(tokens) * float(kv) + 4096.0) / (bandwidth * 1e9) * 1000.0
    assert with_state is not None and bits(with_state) == bits(expected)


def test_known_values() -> None:
    assert transfer_delay_ms(10, 1024, 1.0) == 10.0 * 1024.0 / 1e9 * 1000.0
    assert transfer_delay_ms(1, 2_500_000, 1.0) == 2.5
    assert transfer_delay_ms(0, 1024, 1.0) == 0.0
    assert transfer_delay_ms(10, 1024, 0.0) is None
    assert transfer_delay_ms(10, 1024, -1.0) is None
    assert transfer_delay_ms(10, None, 1.0) is None
    assert transfer_delay_ms(10, 1024, None) is None
    nan = transfer_delay_ms(10, 1024, math.nan)
    assert nan is not None and math.isnan(nan)  # NaN is not <= 0.0, as in the reference
    assert transfer_delay_ms(10, 1024, math.inf) == 0.0
    # state bytes alone (newer upstream model): charged even without a per-token size
    assert transfer_delay_ms(5, None, 1.0, state_bytes=1_000_000) == 1.0
    assert transfer_delay_ms(5, None, 1.0, state_bytes=0) is None


def test_modes_pick_the_token_count() -> None:
    full = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 100, 1_000, 1.0)
    missing = full.model_copy(update={"mode": TransferTimingMode.DESTINATION_MISSING})
    assert full.delay_ms(20) == 0.1
    assert missing.delay_ms(20) == 0.02
    assert missing.full_prompt_delay_ms() == 0.1
    affine = HandoffTransferTiming(
        TransferTimingMode.DESTINATION_MISSING, 4096, 4444, 100.0, 21_479_424
    )
    for tokens in (0, 64, 512, 4096):
        expected = (tokens * 4444 + 21_479_424) / 100_000_000.0
        delay = affine.delay_ms(tokens)
        assert delay is not None and abs(delay - expected) < 1e-12


@pytest.mark.parametrize("bandwidth", [-1.0, -0.0001, math.nan, math.inf, -math.inf])
def test_invalid_bandwidth_is_rejected(bandwidth: float) -> None:
    timing = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, 1024, bandwidth)
    with pytest.raises(FactError, match="invalid handoff transfer bandwidth") as error:
        validate_transfer_timing(timing)
    assert error.value.code is HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH


def test_valid_timings_pass() -> None:
    for timing in (
        HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10),
        HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, 1024, 0.0),
        HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 10, None, 1.0),
        HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 10, 1024, 1.0),
        HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 0, 2**64 - 1, 1e-300),
    ):
        validate_transfer_timing(timing)


def test_overflowing_full_prompt_delay_is_an_invalid_delay() -> None:
    timing = HandoffTransferTiming(TransferTimingMode.FULL_PROMPT, 2**64 - 1, 2**64 - 1, 1e-300)
    with pytest.raises(FactError, match="invalid handoff transfer delay") as error:
        validate_transfer_timing(timing)
    assert error.value.code is HandoffErrorCode.INVALID_TRANSFER_DELAY


@pytest.mark.parametrize("delay", [-1.0, math.nan, math.inf, -math.inf])
def test_validate_transfer_delay_rejects_unusable_delays(delay: float) -> None:
    with pytest.raises(FactError) as error:
        validate_transfer_delay_ms(delay)
    assert error.value.code is HandoffErrorCode.INVALID_TRANSFER_DELAY


def test_validate_transfer_delay_accepts_none_zero_and_positive() -> None:
    for delay in (None, 0.0, 1e-300, 1e300):
        validate_transfer_delay_ms(delay)

"""Transfer-delay arithmetic and validation, bit-identical to the reference's f64 math.

Rule kept here: the order of floating-point operations is the reference's
(``tokens * kv / (bandwidth * 1e9) * 1000``); Python floats are IEEE-754 doubles
and ``float(int)`` rounds like Rust's ``as f64``, so results match bit for bit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from handoff_fsm.errors import HandoffErrorCode, handoff_error

if TYPE_CHECKING:
    from handoff_fsm.model import HandoffTransferTiming


def transfer_delay_ms(
    tokens: int,
    kv_bytes_per_token: int | None,
    bandwidth_gb_s: float | None,
    state_bytes: int = 0,
) -> float | None:
    """Milliseconds to move ``tokens`` of KV cache (plus ``state_bytes``), or ``None``.

    ``None`` when the model is incomplete (no bandwidth; neither per-token bytes nor
    state bytes) or the bandwidth is ``<= 0.0``; the coordinator then uses its fallback.
    """
    if bandwidth_gb_s is None or (kv_bytes_per_token is None and state_bytes == 0):
        return None
    if bandwidth_gb_s <= 0.0:
        return None
    payload = float(tokens) * float(kv_bytes_per_token or 0)
    if state_bytes:
        payload += float(state_bytes)
    return payload / (bandwidth_gb_s * 1e9) * 1000.0


def validate_transfer_delay_ms(transfer_delay_ms: float | None) -> None:
    """Reject a delay that is negative, NaN or infinite (``None`` means "no model": fine)."""
    if transfer_delay_ms is None:
        return
    if not math.isfinite(transfer_delay_ms) or transfer_delay_ms < 0.0:
        raise handoff_error(
            HandoffErrorCode.INVALID_TRANSFER_DELAY,
            f"invalid handoff transfer delay {transfer_delay_ms!r} ms (must be finite and >= 0)",
        )


def validate_transfer_timing(transfer_timing: HandoffTransferTiming) -> None:
    """Reject a timing whose bandwidth is negative or non-finite, or whose delay is invalid."""
    bandwidth = transfer_timing.bandwidth_gb_s
    if bandwidth is not None and (not math.isfinite(bandwidth) or bandwidth < 0.0):
        raise handoff_error(
            HandoffErrorCode.INVALID_TRANSFER_BANDWIDTH,
            f"invalid handoff transfer bandwidth {bandwidth!r} GB/s (must be finite and >= 0)",
        )
    validate_transfer_delay_ms(transfer_timing.full_prompt_delay_ms())

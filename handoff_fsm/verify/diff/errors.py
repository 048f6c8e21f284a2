"""The behavioural diff's own refusals: a side that names nothing, misbehaves, or is too big.

Rule kept here: these codes belong to ``handoff-fsm diff``, so they live with it, not
with the protocol's (:mod:`handoff_fsm.errors`); this module declares them and
registers them there (:func:`~handoff_fsm.errors.register_codes`), so
:func:`~handoff_fsm.errors.handoff_error` raises each as a :class:`DiffError`.
"""

from __future__ import annotations

from enum import StrEnum

from handoff_fsm.errors import HandoffError, register_codes


class DiffErrorCode(StrEnum):
    """Why a behavioural diff could not run."""

    UNKNOWN_DIFF_SIDE = "unknown_diff_side"
    DIFF_SIDE_FAILED = "diff_side_failed"
    DIFF_TOO_LARGE = "diff_too_large"


class DiffError(HandoffError):
    """A behavioural diff could not run: a side names nothing loadable, or misbehaves."""


register_codes(DiffErrorCode, DiffError)

"""The system check's own refusals: settings it cannot explore, a world it cannot drive.

Rule kept here: these codes belong to ``handoff-fsm check --system``, so they live with
it, not with the protocol's (:mod:`handoff_fsm.errors`); this module declares them and
registers them there (:func:`~handoff_fsm.errors.register_codes`), so
:func:`~handoff_fsm.errors.handoff_error` raises each as a :class:`SystemCheckError`.
"""

from __future__ import annotations

from enum import StrEnum

from handoff_fsm.errors import HandoffError, register_codes


class SystemErrorCode(StrEnum):
    """Why a system check could not run."""

    INVALID_SYSTEM_SETTING = "invalid_system_setting"
    """A count that is not an int >= 0, an unknown revision or order, no order at all."""
    WORLD_REFUSED = "world_refused"
    """The session policy refused an input the world gave it (a policy or model bug)."""


class SystemCheckError(HandoffError):
    """A system check could not run: its settings, or a policy that refused the world."""


register_codes(SystemErrorCode, SystemCheckError)

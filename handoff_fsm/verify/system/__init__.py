"""The whole system explored: workers, the session policy and a lossy network (DESIGN §10).

``from handoff_fsm.verify.system import check_system``; see docs/verification.md.
``check_system(revision, losses=..., duplicates=..., cleanup_retries=..., deadline=...)``
explores every reachable state of the world breadth-first and judges each of the
:class:`Property` s, each violated one with its shortest :class:`Counterexample`.
"""

from handoff_fsm.verify.system.annotate import system_lifecycle
from handoff_fsm.verify.system.errors import SystemCheckError, SystemErrorCode
from handoff_fsm.verify.system.properties import (
    STATEMENTS,
    Counterexample,
    Property,
    PropertyVerdict,
    SystemReport,
    SystemSettings,
    WorldStep,
)
from handoff_fsm.verify.system.report import check_system, default_report

__all__ = [
    "STATEMENTS",
    "Counterexample",
    "Property",
    "PropertyVerdict",
    "SystemCheckError",
    "SystemErrorCode",
    "SystemReport",
    "SystemSettings",
    "WorldStep",
    "check_system",
    "default_report",
    "system_lifecycle",
]

"""The whole system explored: workers, the session policy and a lossy network (DESIGN §10).

``from handoff_fsm.verify.system import check_system``; see docs/verification.md.
``check_system(revision, losses=..., duplicates=..., cleanup_retries=..., deadline=...,
workers=..., answers=...)`` explores every reachable state of the world breadth-first and
judges each of the :class:`Property` s, each violated one with its shortest
:class:`Counterexample`, under the :class:`SystemAssumptions` every report states;
``check_matrix`` explores it under every set of assumptions that can be varied.
"""

from handoff_fsm.verify.system.annotate import system_lifecycle
from handoff_fsm.verify.system.assumptions import Answers, Assumption, SystemAssumptions, Workers
from handoff_fsm.verify.system.errors import SystemCheckError, SystemErrorCode
from handoff_fsm.verify.system.matrix import SystemMatrix, check_matrix
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
    "Answers",
    "Assumption",
    "Counterexample",
    "Property",
    "PropertyVerdict",
    "SystemCheckError",
    "SystemAssumptions",
    "SystemErrorCode",
    "SystemMatrix",
    "SystemReport",
    "SystemSettings",
    "Workers",
    "WorldStep",
    "check_matrix",
    "check_system",
    "default_report",
    "system_lifecycle",
]

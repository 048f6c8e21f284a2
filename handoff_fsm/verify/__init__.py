"""Verification: exhaustive exploration, the protocol's invariants, chart coverage.

``from handoff_fsm.verify import explore``; see docs/verification.md. Each protocol
revision is explored on its own (``explore(order, revision=...)``) and judged by the
invariants it promises (:data:`RULES`).
"""

from handoff_fsm.verify.exploration import ExplorationReport, InvariantVerdict, Violation, explore
from handoff_fsm.verify.rules import RULES, Invariant, Rule, invariants_of

__all__ = [
    "RULES",
    "ExplorationReport",
    "Invariant",
    "InvariantVerdict",
    "Rule",
    "Violation",
    "explore",
    "invariants_of",
]

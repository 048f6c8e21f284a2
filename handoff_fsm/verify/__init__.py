"""Verification: exhaustive exploration, the protocol's invariants, chart coverage.

``from handoff_fsm.verify import explore``; see README, "Verification".
"""

from handoff_fsm.verify.exploration import ExplorationReport, InvariantVerdict, Violation, explore
from handoff_fsm.verify.invariants import Invariant

__all__ = ["ExplorationReport", "Invariant", "InvariantVerdict", "Violation", "explore"]

"""The behavioural diff of two sides (revisions, engines, git revisions, the work tree).

Public API only (no logic here): :func:`diff` explores both sides in lock step
(:mod:`.behaviour`), a side is spelled and opened by :mod:`.sides`, and
:mod:`.driver` is the one module a side's process runs, in the package of any git
revision: the cross-version contract.
"""

from handoff_fsm.verify.diff.behaviour import Difference, DiffReport, diff, diff_sides
from handoff_fsm.verify.diff.sides import SideSpec, parse_side

__all__ = ["DiffReport", "Difference", "SideSpec", "diff", "diff_sides", "parse_side"]

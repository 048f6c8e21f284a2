"""The wire format (serde-compatible JSON) and streaming trace replay.

``from handoff_fsm.io import replay``; see docs/replay.md.
"""

from handoff_fsm.io.replay import TraceReplayer, replay

__all__ = ["TraceReplayer", "replay"]

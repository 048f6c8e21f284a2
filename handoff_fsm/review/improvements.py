"""The deliberate improvements over the Rust reference, in the words the docs use.

Rule kept here: this text exists once. The docs' "Improvements over the
reference" (docs/coordinator.md) and the design review (``handoff-fsm review``)
both show exactly these strings; a test fails when the docs and this module disagree.
"""

from __future__ import annotations

from typing import Final

IMPROVEMENTS_MARKDOWN: Final = """\
1. **A rejected call leaves the coordinator exactly as it was.** The reference records
   an outcome before validating it: after one wrong outcome (say `Applied` for
   `SubmitPrefill`) the right one is refused as "conflicting" and the handoff is
   wedged; a failed cancel is remembered as if accepted. Here nothing is recorded
   unless accepted, so the caller can retry.
2. **`start()` on a completed handoff issues nothing.** The reference would issue
   `SubmitPrefill`/`ReserveDestination` if the handoff was failed before it started.
3. **An invalid fallback delay is rejected at construction** (`invalid_fallback`);
   the reference only `debug_assert!`s it, so release builds emit NaN or negative
   transfer delays.
"""
"""The numbered list of behaviours that differ from the reference on purpose."""

KEPT_QUIRKS_MARKDOWN: Final = """\
Everything else matches the reference output for output, including its quirks: facts
after cleanup began are ignored (even malformed timings), only the *full-prompt*
delay is validated (a `DestinationMissing` delay can still come out infinite), NaN
bandwidth yields a NaN delay from `delay_ms`, and late acknowledgements after
completion are silently accepted.
"""
"""What stays as the reference does it, quirks included."""

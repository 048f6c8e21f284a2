"""Every error code with the condition that raises it, derived from the code where it can be.

Rule kept here: what the chart and the input vocabulary already say is read
from them (which states reject which event, which validator guards which
transition, which outcomes each action accepts, which actions may not fail,
which backends have an order); only what lives in plain Python checks
(journal, timing, conformance, replay) is described in words, in
:data:`_DESCRIPTIONS`, one entry per code of every layer (a test holds it to every
code :func:`~handoff_fsm.errors.error_codes` knows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from handoff_fsm.chart import ACKNOWLEDGEMENTS
from handoff_fsm.errors import ErrorCode, HandoffErrorCode, error_codes, handoff_error
from handoff_fsm.io.errors import TraceErrorCode
from handoff_fsm.io.lines import DEFAULT_MAX_LINE_BYTES
from handoff_fsm.model import ENGINE_ORDER, Backend
from handoff_fsm.structure.describe import ChartModel, EdgeKind, describe_chart
from handoff_fsm.verify.diff.errors import DiffErrorCode
from handoff_fsm.verify.system.errors import SystemErrorCode

_C = HandoffErrorCode
_T = TraceErrorCode
_D = DiffErrorCode
_S = SystemErrorCode

VALIDATOR_CODES: Final[dict[str, tuple[HandoffErrorCode, ...]]] = {
    "validate_transfer_timing": (_C.INVALID_TRANSFER_BANDWIDTH, _C.INVALID_TRANSFER_DELAY),
    "validate_scheduled_delay": (_C.INVALID_TRANSFER_DELAY,),
}
"""The codes each non-rejecting validator of the chart may raise (the timing checks of
``model.py`` raise them)."""

_DESCRIPTIONS: Final[dict[ErrorCode, str]] = {
    _C.FOREIGN_HANDOFF: "A fact carries another handoff's id (checked first, also after "
    "completion).",
    _C.SOURCE_HELD_BEFORE_SUBMIT: "`SourceHeld` arrives before the prefill submission was "
    "acknowledged.",
    _C.DESTINATION_RESERVED_BEFORE_ACCEPT: "`DestinationReserved` arrives before the destination "
    "accepted ownership.",
    _C.TRANSFER_COMPLETED_BEFORE_SCHEDULED: "`TransferCompleted` arrives before the transfer was "
    "scheduled.",
    _C.INVALID_TRANSFER_BANDWIDTH: "`SourceHeld`'s transfer timing has a negative or non-finite "
    "bandwidth.",
    _C.INVALID_TRANSFER_DELAY: "The full-prompt delay computed from `SourceHeld`'s timing is "
    "negative, NaN or infinite.",
    _C.UNKNOWN_ACTION: "An outcome quotes an action id this coordinator never issued.",
    _C.CONFLICTING_OUTCOME: "A second, different outcome for an action id (an identical repeat "
    "is a no-op).",
    _C.CLEANUP_ACTION_FAILED: "A cleanup action reports `Failed(..)`.",
    _C.INVALID_OUTCOME: "An outcome the action cannot have.",
    _C.INVALID_HANDOFF_ID: "A coordinator is built with a handoff id that is not a UUID "
    "(or its canonical string form).",
    _C.INVALID_ORDER: "A coordinator is built with an order that is not `SourceFirst` or "
    "`DestinationFirst`.",
    _C.INVALID_REVISION: "A coordinator is built with a protocol revision the library does "
    "not know.",
    _C.INVALID_ENGINE: "A coordinator is built or restored with an engine other than "
    "`compiled` or `statechart`.",
    _C.INVALID_FALLBACK: "`fallback_transfer_delay_ms` is negative, NaN or infinite "
    "(construction, `restore`, trace `new`).",
    _C.INVALID_SNAPSHOT: "`restore()` gets a snapshot that is no reachable chart state, or whose "
    "journal, timing or tokens do not fit it.",
    _C.INVALID_SESSION_OPTION: "A session policy or `HandoffSession` is given no coordinator, "
    "an executor without an `async` `perform`, or a deadline, timeout or retry count out of "
    "range; or a policy call gets a time, reason, send number or timer it cannot use, or a "
    "timer before it is due (the call changes nothing).",
    _C.UNSUPPORTED_BACKEND: "A backend without a handoff order.",
    _C.CONFORMANCE_ORDER_MISMATCH: "A conformance record's order is not its backend's.",
    _C.CONFORMANCE_LIFECYCLE_MISMATCH: "A conformance record's lifecycle is not "
    "`expected_normalized_handoff(order)`.",
    _C.CONFORMANCE_COUNTS_MISMATCH: "Output or completion counts differ from the fixture "
    "(1 source token, 2 destination tokens, 1 completed request).",
    _C.CONFORMANCE_KV_VISIBILITY: "Destination KV is visible before activation, not on "
    "activation, or repeated after it.",
    _C.CONFORMANCE_NOT_DRAINED: "The source, destination or driver did not drain.",
    _T.INVALID_INPUT: "A trace line is not JSON, not an object with a known `op` and exactly its "
    "keys, or carries a malformed wire value.",
    _T.DUPLICATE_COORDINATOR: "A trace `new` names a coordinator key that already exists "
    "(or existed: replay never forgets a key).",
    _T.UNKNOWN_COORDINATOR: "A trace line names a coordinator key no `new` created.",
    _T.FORGOTTEN_COORDINATOR: "A trace line names a coordinator that completed before the "
    "last `--remember` completions; replay kept only its key and completion.",
    _T.LINE_TOO_LONG: "A trace line is longer than `--max-line-bytes` (default "
    f"{DEFAULT_MAX_LINE_BYTES} bytes); it is skipped unread.",
    _T.INVALID_TIME: "A trace line's `at_ms` is negative, NaN or infinite (a number beyond f64 "
    "is infinite); the line is skipped.",
    _T.TIME_WENT_BACKWARDS: "A trace line's `at_ms` is less than the last time replay accepted "
    "in the file (any coordinator's); the line is skipped.",
    _D.UNKNOWN_DIFF_SIDE: "A `handoff-fsm diff` side names no known revision or engine, or a "
    "git revision that does not exist or holds no `handoff_fsm` package.",
    _D.DIFF_SIDE_FAILED: "A diff side's process died or left the protocol, or the side answered "
    "the same inputs differently where no single trace can show it.",
    _D.DIFF_TOO_LARGE: "The product of the two sides has more states than the diff's bound "
    "allows, and no difference was found within it.",
    _S.INVALID_SYSTEM_SETTING: "A `check --system` setting it cannot explore: a count that is "
    "not an int >= 0, no handoff order, an order that is none.",
    _S.WORLD_REFUSED: "The session policy under `check --system` refused an input the world "
    "gave it (a policy that breaks its own contract).",
}


@dataclass(frozen=True, slots=True)
class ErrorCondition:
    code: ErrorCode
    family: str
    """The :class:`~handoff_fsm.HandoffError` subclass raised with this code."""
    condition: str


def _states(model: ChartModel, code: ErrorCode) -> list[str]:
    return [
        f"`{edge.source}`"
        for edge in model.edges
        if edge.kind is EdgeKind.REJECTION and edge.rejection is code
    ]


def _derived(model: ChartModel, code: ErrorCode) -> str:
    """What the chart and the vocabulary add to the description of ``code``."""
    rejecting = _states(model, code)
    if rejecting:
        event = next(e.event_text for e in model.edges if e.rejection is code)
        return f"Chart: `{event}` is rejected in {', '.join(rejecting)}."
    guarded = [
        f"`{edge.source}` → `{edge.target}` on `{edge.event_text}`"
        for edge in model.edges
        for name in edge.validators
        if code in VALIDATOR_CODES.get(name, ())
    ]
    if guarded:
        return f"Chart: checked by the validator of {', '.join(guarded)}."
    if code is _C.CLEANUP_ACTION_FAILED:
        kinds = [kind.__name__ for kind, ack in ACKNOWLEDGEMENTS.items() if not ack.may_fail]
        return f"Cleanup actions: {', '.join(f'`{k}`' for k in kinds)}."
    if code is _C.INVALID_OUTCOME:
        accepted = [
            f"`{kind.__name__}` ← {' or '.join(sorted(o.value for o in ack.accepted))}"
            for kind, ack in ACKNOWLEDGEMENTS.items()
        ]
        return f"Accepted: {'; '.join(accepted)} (and `Failed(..)` except for cleanup actions)."
    if code in (_C.UNSUPPORTED_BACKEND, _C.CONFORMANCE_ORDER_MISMATCH):
        orders = [f"{b.value} → {ENGINE_ORDER[b].value}" for b in Backend if b in ENGINE_ORDER]
        missing = [f"`{b.value}`" for b in Backend if b not in ENGINE_ORDER]
        return f"Orders: {', '.join(orders)}; none for {', '.join(missing)}."
    return ""


def error_conditions(model: ChartModel | None = None) -> tuple[ErrorCondition, ...]:
    """Every error code of every layer (:func:`~handoff_fsm.errors.error_codes`), the
    protocol's first, each in declaration order, with its condition."""
    model = model or describe_chart()
    result = []
    for code in error_codes():
        condition = " ".join(part for part in (_DESCRIPTIONS[code], _derived(model, code)) if part)
        family = type(handoff_error(code, "")).__name__
        result.append(ErrorCondition(code=code, family=family, condition=condition))
    return tuple(result)

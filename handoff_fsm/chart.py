"""THE handoff statechart: the single source of truth for control flow.

Rule kept here: everything that decides *what may happen next* is declared in
:class:`HandoffChart` (states, events, guards) and in the input vocabulary below
(which fact or outcome becomes which event). Guards read only ``In(...)`` and the
declared finite fields (:class:`ChartFields`); event data never steers a transition,
it only feeds validators (which may reject an input before anything changes) and
the payloads of actions. Everything the chart *does* is a named effect on its
model (:class:`HandoffEffects`), so a faster engine can replay the chart's
decisions (see :mod:`handoff_fsm.engines.compiled`) and diagrams can draw them.
Why these rules make compilation sound: docs/architecture.md §4.

The chart reads its vocabulary from :mod:`handoff_fsm.model` and the model knows
nothing of the chart. :data:`ACKNOWLEDGEMENTS` is the acknowledgement table: for each
action kind, the event its acknowledgement becomes and whether a ``Failed`` outcome
starts cleanup; the outcomes that acknowledge it are the action type's own
``acknowledged_by`` (declared once, in the model, beside ``owner``).

The behaviour is the Rust reference ``HandoffCoordinatorCore``:

* ``active`` runs three regions. The order decides which owner ``start``
  engages; the other owner is engaged once the first one is ready (source
  held, or destination reserved). The transfer starts when the source is held
  and the destination reserved; its completion activates the destination, whose
  activation releases the source; the release completes the handoff (Success).
* Any failure fact, time-out, cancel, or failed action outcome moves to
  ``cleaning_up``, which cancels each owner that was engaged and completes the
  handoff (Canceled) once every cancel is confirmed. A confirmed release of the
  source counts as its cleanup, as in the reference.

Protocol revisions (:class:`~handoff_fsm.model.Revision`) are a declared field, read
by two guards, so one chart shows every revision and each compiled table is built
for one revision:

* ``reopens_after_success`` (a976b2bf): a successful handoff goes to ``decoding``
  (complete, Success) instead of the final ``complete``; a terminal fact there
  cancels the decoding destination (``canceling_decode``) and completes again
  (Canceled).
* ``validates_scheduled_delay`` (a976b2bf): the fact that makes the transfer start
  (the second of source held / destination reserved) is also checked by
  ``validate_scheduled_delay``: the delay ``StartTransfer`` would carry must be
  finite and non-negative.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

from statemachine import State, StateChart
from statemachine.orderedset import OrderedSet

from handoff_fsm.display import Pretty, draw, pretty
from handoff_fsm.errors import HandoffErrorCode
from handoff_fsm.model import (
    ActivateDestination,
    CancelDestination,
    Canceled,
    CancelSource,
    DestinationReserved,
    Failed,
    HandoffAction,
    HandoffCompletion,
    HandoffOrder,
    OutcomeKind,
    ReleaseSource,
    ReserveDestination,
    Revision,
    SourceHeld,
    StartTransfer,
    SubmitPrefill,
    TimedOut,
    TransferCompleted,
)


class HandoffEffects(Protocol):
    """What the chart asks of its model. Every callback the chart names is here.

    Validators run before anything changes and may raise; the other effects are
    plain and replayable. A method with a parameter receives the event's payload.
    """

    # validators
    def validate_transfer_timing(self, fact: SourceHeld) -> None: ...
    def validate_scheduled_delay(self, fact: SourceHeld | DestinationReserved) -> None: ...
    def reject_source_held_before_submit(self) -> None: ...
    def reject_destination_reserved_before_accept(self) -> None: ...
    def reject_transfer_completed_before_scheduled(self) -> None: ...

    # payload bookkeeping
    def store_transfer_timing(self, fact: SourceHeld) -> None: ...
    def store_transferable_tokens(self, fact: DestinationReserved) -> None: ...

    # actions (each returns the issued action, collected in order by the engine)
    def issue_submit_prefill(self) -> Any: ...
    def issue_reserve_destination(self) -> Any: ...
    def issue_start_transfer(self) -> Any: ...
    def issue_activate_destination(self) -> Any: ...
    def issue_release_source(self) -> Any: ...
    def issue_cancel_source(self) -> Any: ...
    def issue_cancel_destination(self) -> Any: ...
    def issue_complete(self) -> Any: ...


PLAIN_ISSUES: Final[Mapping[str, type[HandoffAction]]] = MappingProxyType(
    {
        "issue_submit_prefill": SubmitPrefill,
        "issue_reserve_destination": ReserveDestination,
        "issue_activate_destination": ActivateDestination,
        "issue_release_source": ReleaseSource,
        "issue_cancel_source": CancelSource,
        "issue_cancel_destination": CancelDestination,
    }
)
"""The issuing effects whose whole work is issuing an action of one kind that carries only
the handoff id (``issue_start_transfer`` carries a delay, ``issue_complete`` also ends the
journal). The compiled engine decides the kind once per step it generates and calls the
run's ``issue(kind)`` with it (:class:`~handoff_fsm.run.HandoffRun`), so such an effect
costs one call at run time."""


@dataclass(frozen=True, slots=True)
class RejectionRule:
    """An input the chart turns down in some states: its error code and what to tell people."""

    code: HandoffErrorCode
    message: str


REJECTIONS: Final[dict[str, RejectionRule]] = {
    "reject_source_held_before_submit": RejectionRule(
        HandoffErrorCode.SOURCE_HELD_BEFORE_SUBMIT,
        "source held before prefill submission was acknowledged",
    ),
    "reject_destination_reserved_before_accept": RejectionRule(
        HandoffErrorCode.DESTINATION_RESERVED_BEFORE_ACCEPT,
        "destination reserved before ownership was accepted",
    ),
    "reject_transfer_completed_before_scheduled": RejectionRule(
        HandoffErrorCode.TRANSFER_COMPLETED_BEFORE_SCHEDULED,
        "transfer completed before it was scheduled",
    ),
}
"""Validators that always raise: the event is an error in the states whose transitions name them.

The one table of these codes and messages: engines raise them, diagrams draw them."""

VALIDATORS: Final = frozenset({"validate_transfer_timing", "validate_scheduled_delay", *REJECTIONS})
"""Effects that only check (and may raise); they always run before any other effect."""


class HandoffChart(StateChart[Any]):
    """One prefill-to-decode handoff. ``model`` provides :class:`HandoffEffects`."""

    # A misspelt or inapplicable event is simply ignored (the reference returns no
    # actions); an error in an effect must surface, never be swallowed.
    allow_event_without_transition = True
    catch_errors_as_events = False

    class active(State.Parallel):  # noqa: N801
        class source(State.Compound):  # noqa: N801
            source_idle = State("idle", initial=True)
            submitting = State(enter=["engage_source", "issue_submit_prefill"])
            submitted = State()
            held = State()
            releasing = State(enter="issue_release_source")
            released = State(final=True)

            source_idle.to(submitting, event="start", cond="source_first")
            source_idle.to(submitting, cond="destination_first and In('reserved')")
            submitting.to(submitted, event="prefill_submitted")
            # Validators run before their transition's guard, so the unchecked transition
            # comes first and the checked one is only considered when it applies.
            submitted.to(
                held,
                event="source_held",
                validators="validate_transfer_timing",
                cond="not (validates_scheduled_delay and In('reserved'))",
                on="store_transfer_timing",
            )
            submitted.to(
                held,
                event="source_held",
                validators=["validate_transfer_timing", "validate_scheduled_delay"],
                cond="validates_scheduled_delay and In('reserved')",
                on="store_transfer_timing",
            )
            held.to(releasing, cond="In('activated')")
            releasing.to(released, event="release_confirmed")
            # A source cannot be held before its prefill submission was acknowledged.
            source_idle.to.itself(
                event="source_held",
                validators="reject_source_held_before_submit",
                internal=True,
            )
            submitting.to.itself(
                event="source_held",
                validators="reject_source_held_before_submit",
                internal=True,
            )

        class destination(State.Compound):  # noqa: N801
            destination_idle = State("idle", initial=True)
            reserving = State(enter=["engage_destination", "issue_reserve_destination"])
            accepted = State()
            reserved = State()
            activating = State(enter="issue_activate_destination")
            activated = State(final=True)

            destination_idle.to(reserving, event="start", cond="destination_first")
            destination_idle.to(reserving, cond="source_first and In('held')")
            reserving.to(accepted, event="reservation_accepted")
            accepted.to(
                reserved,
                event="destination_reserved",
                cond="not (validates_scheduled_delay and In('held'))",
                on="store_transferable_tokens",
            )
            accepted.to(
                reserved,
                event="destination_reserved",
                validators="validate_scheduled_delay",
                cond="validates_scheduled_delay and In('held')",
                on="store_transferable_tokens",
            )
            reserved.to(activating, cond="In('transferred')")
            activating.to(activated, event="activation_applied")
            # A destination cannot be reserved before it accepted ownership.
            destination_idle.to.itself(
                event="destination_reserved",
                validators="reject_destination_reserved_before_accept",
                internal=True,
            )
            reserving.to.itself(
                event="destination_reserved",
                validators="reject_destination_reserved_before_accept",
                internal=True,
            )

        class transfer(State.Compound):  # noqa: N801
            transfer_idle = State("idle", initial=True)
            transfer_issued = State("issued", enter="issue_start_transfer")
            in_flight = State("in flight")
            transferred = State(final=True)

            transfer_idle.to(transfer_issued, cond="In('held') and In('reserved')")
            transfer_issued.to(in_flight, event="transfer_scheduled")
            in_flight.to(transferred, event="transfer_completed")
            # A transfer cannot complete before it was scheduled.
            transfer_idle.to.itself(
                event="transfer_completed",
                validators="reject_transfer_completed_before_scheduled",
                internal=True,
            )
            transfer_issued.to.itself(
                event="transfer_completed",
                validators="reject_transfer_completed_before_scheduled",
                internal=True,
            )

    class cleaning_up(State.Parallel):  # noqa: N801
        class source_cleanup(State.Compound):  # noqa: N801
            source_pending = State("pending", initial=True)
            canceling_source = State("canceling", enter="issue_cancel_source")
            source_canceled = State("canceled", final=True)
            source_untouched = State("untouched", final=True)

            source_pending.to(canceling_source, cond="source_engaged")
            source_pending.to(source_untouched, unless="source_engaged")
            canceling_source.to(
                source_canceled, event=["source_cancel_confirmed", "release_confirmed"]
            )

        class destination_cleanup(State.Compound):  # noqa: N801
            destination_pending = State("pending", initial=True)
            canceling_destination = State("canceling", enter="issue_cancel_destination")
            destination_canceled = State("canceled", final=True)
            destination_untouched = State("untouched", final=True)

            destination_pending.to(canceling_destination, cond="destination_engaged")
            destination_pending.to(destination_untouched, unless="destination_engaged")
            canceling_destination.to(destination_canceled, event="destination_cancel_confirmed")

    decoding = State(enter="issue_complete")
    """Complete with Success, the destination decoding (a976b2bf: a cancel can still come)."""
    canceling_decode = State("canceling decode", enter="issue_cancel_destination")
    complete = State(final=True, enter="issue_complete")

    active.to(cleaning_up, event=["failed", "timed_out", "canceled", "action_failed"])
    # The framework's transition lists support `|`; its stubs do not say so.
    done_state_active = active.to(  # type: ignore[operator]
        complete, unless="reopens_after_success", on="mark_success"
    ) | (active.to(decoding, cond="reopens_after_success", on="mark_success"))
    done_state_cleaning_up = cleaning_up.to(complete, on="mark_canceled")
    decoding.to(canceling_decode, event=["failed", "timed_out", "canceled"])
    canceling_decode.to(complete, event="destination_cancel_confirmed", on="mark_canceled")

    def __init__(
        self,
        model: HandoffEffects,
        order: HandoffOrder,
        revision: Revision = Revision.SEED,
        *,
        fields: ChartFields | None = None,
        configuration: tuple[str, ...] | None = None,
        state_field: str = "state",
    ) -> None:
        # Declared fields: the only non-configuration state guards may read.
        self.source_first = order is HandoffOrder.SOURCE_FIRST
        self.revision = revision
        self.source_engaged = False
        self.destination_engaged = False
        self.completion: HandoffCompletion | None = None
        if fields is not None:
            self.load_fields(fields)
        if configuration is not None:
            # A preset configuration starts the chart there without entering anything.
            setattr(model, state_field, OrderedSet(configuration))
        super().__init__(model=model, state_field=state_field)

    # -- guards ------------------------------------------------------------------
    @property
    def destination_first(self) -> bool:
        """The destination is engaged first (SGLang)."""
        return not self.source_first

    @property
    def reopens_after_success(self) -> bool:
        """A terminal fact after Success cancels the decoding destination (a976b2bf)."""
        return self.revision in REVISION_GUARDS["reopens_after_success"]

    @property
    def validates_scheduled_delay(self) -> bool:
        """The delay StartTransfer would carry is checked where it is scheduled (a976b2bf)."""
        return self.revision in REVISION_GUARDS["validates_scheduled_delay"]

    # -- field updates (the chart's own bookkeeping; not effects) ----------------
    def engage_source(self) -> None:
        self.source_engaged = True

    def engage_destination(self) -> None:
        self.destination_engaged = True

    def mark_success(self) -> None:
        self.completion = HandoffCompletion.SUCCESS

    def mark_canceled(self) -> None:
        self.completion = HandoffCompletion.CANCELED

    # -- the declared fields as a value -------------------------------------------
    def fields(self) -> ChartFields:
        """The declared fields, which with the configuration make up the chart's state."""
        return ChartFields(
            source_first=self.source_first,
            revision=self.revision,
            source_engaged=self.source_engaged,
            destination_engaged=self.destination_engaged,
            completion=self.completion,
        )

    def load_fields(self, fields: ChartFields) -> None:
        self.source_first = fields.source_first
        self.revision = fields.revision
        self.source_engaged = fields.source_engaged
        self.destination_engaged = fields.destination_engaged
        self.completion = fields.completion

    # -- in a notebook -------------------------------------------------------------
    def _repr_svg_(self) -> str | None:
        """Jupyter's picture: the revision's chart with the live active states marked.

        Replaces the framework's own drawing, which needs pydot (not a dependency here).
        Drawn by the drawing :mod:`handoff_fsm.display` holds (the package names it on
        import); ``None``, no picture, where it cannot draw (Graphviz's ``dot`` missing).
        """
        active = tuple(state.id for state in self.configuration if state.is_atomic)
        return draw(self.revision, active)

    def _repr_pretty_(self, printer: Pretty, cycle: bool) -> None:
        """Jupyter's text (shown where there is no picture): the framework's ``repr``, and
        why there is no picture when there is none."""
        pretty(repr(self), printer)

    def _repr_html_(self) -> str | None:
        """No HTML (``None``): the framework's wraps its pydot drawing; the SVG above is the
        picture."""
        return None


REVISION_GUARDS: Final[dict[str, frozenset[Revision]]] = {
    "reopens_after_success": frozenset({Revision.A976B2BF}),
    "validates_scheduled_delay": frozenset({Revision.A976B2BF}),
}
"""The guards by which revisions differ, and the revisions in which each holds."""


@dataclass(frozen=True, slots=True)
class ChartFields:
    """The finite fields :class:`HandoffChart` guards may read besides ``In(...)``."""

    source_first: bool
    revision: Revision = Revision.SEED
    source_engaged: bool = False
    destination_engaged: bool = False
    completion: HandoffCompletion | None = None


# ----------------------------------------------------------------- input vocabulary

START: Final = "start"

FACT_EVENTS: Final[dict[type, str]] = {
    SourceHeld: "source_held",
    DestinationReserved: "destination_reserved",
    TransferCompleted: "transfer_completed",
    Failed: "failed",
    TimedOut: "timed_out",
    Canceled: "canceled",
}
"""Which chart event each fact becomes."""

PAYLOAD: Final = "fact"
"""Fact events carry their fact; effects that declare this parameter receive it."""


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """How outcomes of one action kind are judged and which event an accepted one becomes."""

    event: str
    accepted: frozenset[OutcomeKind]
    may_fail: bool = True
    """A ``Failed`` outcome starts cleanup; for cleanup actions themselves it is an error."""


ACKNOWLEDGEMENTS: Final[dict[type, Acknowledgement]] = {
    action: Acknowledgement(event, action.acknowledged_by, may_fail)
    for action, event, may_fail in (
        (SubmitPrefill, "prefill_submitted", True),
        (ReserveDestination, "reservation_accepted", True),
        (StartTransfer, "transfer_scheduled", True),
        (ActivateDestination, "activation_applied", True),
        (ReleaseSource, "release_confirmed", True),
        (CancelSource, "source_cancel_confirmed", False),
        (CancelDestination, "destination_cancel_confirmed", False),
    )
}
"""Per action kind: the event an acknowledgement becomes, whether a ``Failed`` outcome
starts cleanup (``may_fail``; a cleanup action's failure is an error instead), and the
outcomes that acknowledge it (``accepted``).

``accepted`` is the action type's own ``acknowledged_by``
(:mod:`handoff_fsm.model`, the one table of which outcome acknowledges which action,
where ``expected_outcomes`` is derived from it too); only the events and ``may_fail``
are declared here. ``Complete`` has no entry: it is never acknowledged, the journal is
cleared when it is issued.
"""

ACTION_FAILED: Final = "action_failed"
"""The event a ``Failed`` outcome of a non-cleanup action becomes."""

INPUT_EVENTS: Final[tuple[str, ...]] = (
    START,
    *FACT_EVENTS.values(),
    *(ack.event for ack in ACKNOWLEDGEMENTS.values()),
    ACTION_FAILED,
)
"""Every event an input can become, in a stable order (what engines must handle)."""

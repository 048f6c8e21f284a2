"""HandoffCoordinator: the public facade over the chart and the journal.

Rule kept here: every public call either returns the actions the chart issued,
or raises and leaves the coordinator exactly as it was. All checks (types,
handoff id, journal, validators) run before the first change; effects never
fail. The facade holds one private :class:`~handoff_fsm.run.HandoffRun`, the
object the chart's effects act on, so no effect is callable from outside. This
module knows nothing of I/O, clocks or threads, and decides no control flow: the
chart does (through the compiled table, or the framework's interpreter with
``engine="statechart"``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args
from uuid import UUID

from pydantic import ValidationError

from handoff_fsm.admission import FACT_ADMISSIONS, admitted_outcome
from handoff_fsm.chart import FACT_EVENTS, START, HandoffChart
from handoff_fsm.consistency import Shape, reachable_shapes, same_float
from handoff_fsm.display import Pretty, draw, pretty
from handoff_fsm.engines.compiled import ChartState, CompiledChart, compiled_chart
from handoff_fsm.engines.statechart import LiveChartState, live_state
from handoff_fsm.errors import HandoffError, HandoffErrorCode, handoff_error, listed, quoted
from handoff_fsm.journal import SHARED_ACCEPTANCES, ActionJournal
from handoff_fsm.model import (
    ORDERS,
    OUTCOME_PREFERENCE,
    HandoffActionOutcome,
    HandoffCompletion,
    HandoffFact,
    HandoffOrder,
    IssuedHandoffAction,
    Revision,
    StartTransfer,
    builder,
    checked_revision,
    read_handoff_id,
    validate_transfer_delay_ms,
    validate_transfer_timing,
)
from handoff_fsm.run import HandoffRun, scheduled_delay_ms, timing_inputs
from handoff_fsm.snapshot import HandoffSnapshot, RecordedOutcome

Engine = Literal["compiled", "statechart"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

_FACT_ROUTES: dict[type, tuple[str, Callable[[Any], Any] | None]] = {
    kind: (event, FACT_ADMISSIONS.get(kind)) for kind, event in FACT_EVENTS.items()
}
"""Each fact type's chart event, and its admission when it carries a payload the coordinator
keeps (:data:`~handoff_fsm.admission.FACT_ADMISSIONS`; an id-only fact is judged by its
``handoff_id``, compared in :meth:`HandoffCoordinator.on_fact`): one look-up per fact."""

_SNAPSHOT = builder(HandoffSnapshot)
_RECORDED = builder(RecordedOutcome)
"""The snapshot's types built through their validators, as ``cls(**values)`` validates them
(the same checks, without the constructor's frame): replay takes a snapshot of every
retired coordinator that can still change."""

_SHARED_OUTCOMES: frozenset[int] = frozenset(
    id(getattr(HandoffActionOutcome, kind.name)) for kind in OUTCOME_PREFERENCE
)
"""The outcome constants (``HandoffActionOutcome.APPLIED`` ...), by identity: validated
once, shared by every caller, admitted without a look."""


class HandoffCoordinator:
    """Coordinates one prefill-to-decode handoff: facts and outcomes in, actions out.

    ``engine="compiled"`` (default) runs the table compiled from the chart;
    ``engine="statechart"`` runs python-statemachine's interpreter on the same
    chart (slow; for debugging and live diagrams). Both behave identically.
    ``revision`` picks the protocol revision (:class:`~handoff_fsm.Revision`, default
    ``seed``). Mistakes in the arguments raise :class:`~handoff_fsm.ConfigurationError`
    (``invalid_handoff_id``, ``invalid_order``, ``invalid_revision``, ``invalid_engine``,
    ``invalid_fallback``).
    """

    __slots__ = ("_run",)

    _run: HandoffRun

    def __init__(
        self,
        handoff_id: UUID | str,
        order: HandoffOrder | str,
        fallback_transfer_delay_ms: float = 0.0,
        *,
        revision: Revision | str = Revision.SEED,
        engine: Engine = "compiled",
    ) -> None:
        handoff_id = handoff_id if type(handoff_id) is UUID else _checked_handoff_id(handoff_id)
        order = order if type(order) is HandoffOrder else _checked_order(order, handoff_id)
        revision = (
            revision if type(revision) is Revision else checked_revision(revision, handoff_id)
        )
        _check_engine(engine, handoff_id)
        fallback = _checked_fallback(fallback_transfer_delay_ms, handoff_id)
        run = HandoffRun(handoff_id, order, fallback, ActionJournal())
        initial = _initial_state(order, revision)
        run.state = initial if engine == "compiled" else live_state(run, initial)
        self._run = run

    # ------------------------------------------------------------------ reading

    @property
    def handoff_id(self) -> UUID:
        return self._run.handoff_id

    @property
    def order(self) -> HandoffOrder:
        return self._run.order

    @property
    def revision(self) -> Revision:
        """The protocol revision this coordinator follows."""
        return self._run.state.fields.revision

    @property
    def fallback_transfer_delay_ms(self) -> float:
        return self._run.fallback

    @property
    def engine(self) -> Engine:
        return "compiled" if type(self._run.state) is ChartState else "statechart"

    @property
    def chart(self) -> HandoffChart | None:
        """The live python-statemachine chart with ``engine="statechart"`` (``None`` otherwise).

        For debugging: attach listeners (``chart.add_listener``) or draw the live
        configuration. Sending it events directly bypasses the coordinator's checks. A
        listener that raises undoes the step it interrupted; when that step had reached
        the final state the chart is a new instance afterwards (same listeners), so read
        this property again rather than keeping the chart.
        """
        state = self._run.state
        return state.chart if isinstance(state, LiveChartState) else None

    @property
    def is_complete(self) -> bool:
        """True once ``Complete`` was issued; every later input is answered with no actions."""
        return self._run.state.is_complete

    @property
    def is_final(self) -> bool:
        """True when no input can change this coordinator any more: it may be dropped.

        Under ``seed`` this is ``is_complete``. Under ``a976b2bf`` a handoff that
        completed with Success can still be reopened by a terminal fact, so it is final
        only once it completed with ``Canceled``.
        """
        return self._run.state.is_final

    @property
    def completion(self) -> HandoffCompletion | None:
        """``Success``, ``Canceled``, or ``None`` while the handoff is still running."""
        return self._run.state.completion

    @property
    def state(self) -> tuple[str, ...]:
        """The chart's active atomic states, e.g. ``("held", "accepted", "transfer_idle")``."""
        return self._run.state.leaves

    @property
    def outstanding(self) -> tuple[IssuedHandoffAction, ...]:
        """Issued actions still awaiting their outcome, in issue order.

        ``Complete`` is never among them: it is not acknowledged. Empty once complete.
        """
        run = self._run
        return tuple(
            IssuedHandoffAction.trusted(i, run.rebuild(kind)) for i, kind in run.journal.awaiting()
        )

    # ------------------------------------------------------------------ inputs

    def start(self) -> list[IssuedHandoffAction]:
        """Engage the first owner (by order). A second ``start`` issues nothing."""
        run = self._run
        step = run.state.steps.get(START)
        return step(run, None) if step is not None else []

    def on_fact(self, fact: HandoffFact) -> list[IssuedHandoffAction]:
        """Apply a fact; returns the actions it causes (possibly none).

        A fact whose fields skipped validation (``model_construct``,
        ``model_copy(update=...)``) is judged by its class's validator first: a
        ``ValidationError`` then, with nothing changed (see :mod:`handoff_fsm.admission`).
        """
        route = _FACT_ROUTES.get(type(fact))
        if route is None:
            raise TypeError(
                "on_fact() takes a HandoffFact (SourceHeld, DestinationReserved, "
                f"TransferCompleted, Failed, TimedOut, Canceled), not {type(fact).__name__}"
            )
        run = self._run
        handoff_id = fact.__dict__.get("handoff_id")
        if handoff_id is not run.handoff_id and handoff_id != run.handoff_id:
            raise run.error(
                HandoffErrorCode.FOREIGN_HANDOFF,
                f"fact belongs to a different handoff: {type(fact).__name__} for "
                f"{quoted(handoff_id)}, this coordinator is {run.handoff_id}",
            )
        event, admission = route
        if admission is not None:
            fact = admission(fact)
        step = run.state.steps.get(event)
        return step(run, fact) if step is not None else []

    def on_action_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        """Apply the outcome of an issued action; duplicates are no-ops, contradictions errors.

        An outcome whose fields skipped validation is judged as :meth:`on_fact` judges a fact.
        """
        if type(action_id) is not int:
            raise TypeError(f"action_id must be an int, not {type(action_id).__name__}")
        run = self._run
        journal = run.journal
        # The common case, decided once (SHARED_ACCEPTANCES): a shared outcome constant
        # that acknowledges the kind issued under this id, the first outcome for it, in a
        # running handoff. Anything else is judged in full below.
        event = SHARED_ACCEPTANCES.get((journal.issued.get(action_id), id(outcome)))  # type: ignore[arg-type]
        state = run.state
        if event is None or action_id in journal.outcomes or state.is_complete:
            return self._judged_outcome(action_id, outcome)
        journal.outcomes[action_id] = outcome
        step = state.steps.get(event)
        if step is None:
            return []
        try:
            return step(run, None)
        except BaseException:
            del journal.outcomes[action_id]  # as in _stepped
            raise

    def _judged_outcome(
        self, action_id: int, outcome: HandoffActionOutcome
    ) -> list[IssuedHandoffAction]:
        if type(outcome) is not HandoffActionOutcome:
            raise TypeError(f"outcome must be a HandoffActionOutcome, not {type(outcome).__name__}")
        if id(outcome) not in _SHARED_OUTCOMES:
            outcome = admitted_outcome(outcome)
        run = self._run
        if run.state.is_complete:
            return []  # late acknowledgements after completion are ignored
        try:
            event = run.journal.acknowledge(action_id, outcome)
        except HandoffError as error:
            raise run.with_context(error) from None
        if event is None:
            return []  # an exact duplicate
        return self._stepped(event, action_id)

    def _stepped(self, event: str, action_id: int) -> list[IssuedHandoffAction]:
        """The step of an accepted outcome's ``event``; its outcome (recorded under
        ``action_id``) goes when the step raises."""
        run = self._run
        step = run.state.steps.get(event)
        if step is None:
            return []
        try:
            return step(run, None)
        except BaseException:
            # Only the interpreted engine's step can raise here (a listener did), and it
            # took back its own changes; the outcome recorded above goes with them.
            del run.journal.outcomes[action_id]
            raise

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> HandoffSnapshot:
        """Everything needed to continue this handoff later (see :meth:`restore`)."""
        run = self._run
        journal = run.journal
        fields = run.state.fields
        return _SNAPSHOT(
            {
                "handoff_id": run.handoff_id,
                "order": run.order,
                "revision": fields.revision,
                "fallback_transfer_delay_ms": run.fallback,
                "state": run.state.leaves,
                "source_engaged": fields.source_engaged,
                "destination_engaged": fields.destination_engaged,
                "completion": fields.completion,
                "transfer_timing": run.timing_model(),
                "transferable_prompt_tokens": run.tokens,
                "next_action_id": journal.next_id,
                "issued": tuple(
                    IssuedHandoffAction.trusted(i, run.rebuild(kind))
                    for i, kind in sorted(journal.issued.items())
                ),
                "outcomes": tuple(
                    _RECORDED({"action_id": i, "outcome": o})
                    for i, o in sorted(journal.outcomes.items())
                ),
            }
        )

    @classmethod
    def restore(
        cls,
        snapshot: HandoffSnapshot | str | bytes | Mapping[str, Any],
        *,
        engine: Engine = "compiled",
    ) -> HandoffCoordinator:
        """A coordinator that continues exactly where ``snapshot`` was taken.

        ``snapshot`` is a :class:`~handoff_fsm.snapshot.HandoffSnapshot`, its JSON text
        (``str`` or ``bytes``, as ``snapshot().model_dump_json()`` writes it) or its
        ``dict`` form, each validated the same way. Accepts exactly the snapshots of
        reachable states (see :mod:`handoff_fsm.consistency`); anything else is
        ``invalid_snapshot``.
        """
        if not isinstance(snapshot, HandoffSnapshot | str | bytes | Mapping):
            raise TypeError(
                "restore() takes a HandoffSnapshot, its JSON text or its dict, "
                f"not {type(snapshot).__name__}"
            )
        snapshot = _revalidated(snapshot)
        _check_engine(engine, snapshot.handoff_id)
        run, chart_state = _checked_run(snapshot)
        run.state = chart_state if engine == "compiled" else live_state(run, chart_state)
        self = cls.__new__(cls)
        self._run = run
        return self

    # ------------------------------------------------------------------ copies

    def __copy__(self) -> HandoffCoordinator:
        """An independent coordinator in the same state (nothing changeable is shared).

        The compiled engine's state is an entry of its revision's table, so its run is
        copied as it is (the exhaustive searches copy many coordinators); the
        interpreted engine's live chart is rebuilt through a snapshot."""
        if self.engine != "compiled":
            return type(self).restore(self.snapshot(), engine=self.engine)
        copy = type(self).__new__(type(self))
        copy._run = self._run.replica()
        return copy

    def __deepcopy__(self, memo: dict[int, Any]) -> HandoffCoordinator:
        return self.__copy__()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles through the snapshot, so a coordinator crosses process boundaries."""
        return (_unpickle, (self.snapshot().model_dump_json(), self.engine))

    def __repr__(self) -> str:
        return (
            f"HandoffCoordinator({self.handoff_id}, {self.order.value}, {self.revision.value}, "
            f"state={list(self.state)}, completion={self.completion})"
        )

    def _repr_svg_(self) -> str | None:
        """Jupyter's picture: the revision's chart with :attr:`state` marked, drawn by the
        drawing :mod:`handoff_fsm.display` holds (the package names it on import);
        ``None``, no picture, where it cannot draw (Graphviz's ``dot`` missing)."""
        return draw(self.revision, self.state)

    def _repr_pretty_(self, printer: Pretty, cycle: bool) -> None:
        """Jupyter's text (shown where there is no picture): the ``repr``, and why there is
        no picture when there is none."""
        pretty(repr(self), printer)


def _unpickle(snapshot_json: str, engine: Engine) -> HandoffCoordinator:
    return HandoffCoordinator.restore(snapshot_json, engine=engine)


# ---------------------------------------------------------------------- construction


def _checked_handoff_id(value: object) -> UUID:
    if isinstance(value, str):
        try:
            handoff_id: UUID = read_handoff_id(value)
            return handoff_id
        except ValidationError:
            pass
    raise handoff_error(
        HandoffErrorCode.INVALID_HANDOFF_ID,
        f"invalid handoff id {quoted(value)}: expected a uuid.UUID or its string form",
    )


def _checked_order(value: object, handoff_id: UUID) -> HandoffOrder:
    order = ORDERS.get(value) if isinstance(value, str) else None
    if order is None:
        raise handoff_error(
            HandoffErrorCode.INVALID_ORDER,
            f"invalid handoff order {quoted(value)}: expected one of "
            f"{', '.join(ORDERS)} (or a HandoffOrder)",
            handoff_id=handoff_id,
        )
    return order


def _check_engine(value: object, handoff_id: UUID) -> None:
    if not (isinstance(value, str) and value in ENGINES):
        raise handoff_error(
            HandoffErrorCode.INVALID_ENGINE,
            f"invalid engine {quoted(value)}: expected one of {', '.join(ENGINES)}",
            handoff_id=handoff_id,
        )


def _checked_fallback(value: object, handoff_id: UUID) -> float:
    """Improvement over the reference: an unusable fallback fails at construction."""
    if type(value) is float:
        number = value
    elif type(value) is int:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
    else:
        raise handoff_error(
            HandoffErrorCode.INVALID_FALLBACK,
            f"invalid fallback transfer delay {quoted(value)}: expected a float (ms)",
            handoff_id=handoff_id,
        )
    if not math.isfinite(number) or number < 0.0:
        raise handoff_error(
            HandoffErrorCode.INVALID_FALLBACK,
            f"invalid fallback transfer delay {quoted(value)} ms (must be finite and >= 0)",
            handoff_id=handoff_id,
        )
    return number


_INITIAL: dict[tuple[HandoffOrder, Revision], ChartState] = {}


def _initial_state(order: HandoffOrder, revision: Revision) -> ChartState:
    state = _INITIAL.get((order, revision))
    if state is None:
        initial = compiled_chart(revision).initial
        _INITIAL.update({(o, revision): s for o, s in initial.items()})
        state = _INITIAL[order, revision]
    return state


# ---------------------------------------------------------------------- restore


def _invalid(snapshot: HandoffSnapshot | None, reason: str) -> HandoffError:
    return handoff_error(
        HandoffErrorCode.INVALID_SNAPSHOT,
        f"invalid snapshot: {reason}",
        handoff_id=None if snapshot is None else snapshot.handoff_id,
        state=None if snapshot is None else snapshot.state,
    )


def _revalidated(snapshot: HandoffSnapshot | str | bytes | Mapping[str, Any]) -> HandoffSnapshot:
    """The snapshot validated field by field (``model_construct``/``model_copy`` skip that),
    from any form :meth:`HandoffCoordinator.restore` takes."""
    try:
        if isinstance(snapshot, str | bytes):
            return HandoffSnapshot.model_validate_json(snapshot)
        if isinstance(snapshot, HandoffSnapshot):
            with warnings.catch_warnings():
                # Dumping a snapshot built without validation warns about its raw values.
                warnings.simplefilter("ignore")
                snapshot = snapshot.model_dump(mode="python", round_trip=True)
        return HandoffSnapshot.model_validate(snapshot)
    except ValidationError as error:
        # The first error by where it is and what is wrong; never the input itself.
        first = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(
            part if isinstance(part, str) else quoted(part, 40) for part in first["loc"]
        )
        more = error.error_count() - 1
        reason = f"{where[:120] or 'snapshot'}: {first['msg'][:200]}"
        raise _invalid(None, reason + (f" (and {more:,} more)" if more else "")) from None
    except (ValueError, TypeError, AttributeError, RecursionError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise _invalid(None, quoted(message, 200)) from None


def _checked_run(snapshot: HandoffSnapshot) -> tuple[HandoffRun, ChartState]:
    """The run a snapshot continues, and its chart state; ``invalid_snapshot`` if unreachable."""
    fallback = snapshot.fallback_transfer_delay_ms
    if not math.isfinite(fallback) or fallback < 0.0:
        raise _invalid(snapshot, f"fallback transfer delay {fallback!r} ms is not finite and >= 0")
    compiled = compiled_chart(snapshot.revision)
    chart_state = compiled.lookup(snapshot.state, snapshot.chart_fields())
    if chart_state is None or chart_state.order is not snapshot.order:
        raise _invalid(
            snapshot,
            f"[{listed(snapshot.state)}] with {snapshot.chart_fields()} is not a chart state",
        )
    issued = {entry.id: entry for entry in snapshot.issued}
    outcomes = {record.action_id: record.outcome for record in snapshot.outcomes}
    if len(issued) != len(snapshot.issued) or len(outcomes) != len(snapshot.outcomes):
        raise _invalid(snapshot, "an action id appears twice")
    if not set(outcomes) <= set(issued):
        raise _invalid(
            snapshot,
            f"outcomes for actions never issued: {listed(sorted(set(outcomes) - set(issued)))}",
        )
    shape = Shape(
        chart_state=chart_state.index,
        next_action_id=snapshot.next_action_id,
        journal=tuple(
            (i, type(issued[i].action), outcomes[i].kind if i in outcomes else None)
            for i in sorted(issued)
        ),
        timing_stored=snapshot.transfer_timing is not None,
        tokens_stored=snapshot.transferable_prompt_tokens is not None,
    )
    if shape not in reachable_shapes(snapshot.revision):
        raise _invalid(
            snapshot,
            "no sequence of inputs reaches this combination of chart state, issued actions, "
            "outcomes, next_action_id and stored payloads",
        )
    timing = snapshot.transfer_timing
    if timing is not None:
        try:
            validate_transfer_timing(timing)  # what the chart's validator checked when it arrived
        except HandoffError as error:
            raise _invalid(snapshot, f"stored transfer timing: {error.message}") from None
    tokens = snapshot.transferable_prompt_tokens
    if timing is not None and tokens is not None and _checks_scheduled_delay(compiled):
        try:
            validate_transfer_delay_ms(scheduled_delay_ms(timing_inputs(timing), tokens, fallback))
        except HandoffError as error:
            raise _invalid(snapshot, f"stored timing and tokens: {error.message}") from None
    journal = ActionJournal(snapshot.next_action_id)
    journal.issued = {i: type(entry.action) for i, entry in issued.items()}
    journal.outcomes = outcomes
    run = HandoffRun(
        snapshot.handoff_id,
        snapshot.order,
        fallback,
        journal,
        None if timing is None else timing_inputs(timing),
        snapshot.transferable_prompt_tokens,
    )
    for entry in snapshot.issued:
        action = entry.action
        expected = run.rebuild(type(action))
        same = (
            same_float(action.delay_ms, expected.delay_ms)
            and action.handoff_id == expected.handoff_id
            if isinstance(action, StartTransfer) and isinstance(expected, StartTransfer)
            else action == expected
        )
        if not same:
            raise _invalid(
                snapshot,
                f"action {entry.id} ({action!r}) is not the action this handoff issues there",
            )
    return run, chart_state


def _checks_scheduled_delay(compiled: CompiledChart) -> bool:
    """Whether this revision's chart validated the scheduled delay when both were stored."""
    return any("validate_scheduled_delay" in step.validators for step in compiled.steps)

"""What a coordinator's run reads of its engine: the :class:`EngineState` protocol.

Rule kept here: the facade (:mod:`handoff_fsm.coordinator`) and the run
(:mod:`handoff_fsm.run`) know an engine only through this protocol. Both engines
implement it, the compiled one with a table row
(:class:`~handoff_fsm.engines.compiled.ChartState`) and the interpreted one with a live
chart (:class:`~handoff_fsm.engines.statechart.LiveChartState`), so neither the run nor
the facade imports an engine to type its state, and a new engine needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from handoff_fsm.chart import ChartFields
from handoff_fsm.model import HandoffCompletion

StepFunction = Callable[[Any, Any], list[Any]]
"""``step(run, payload) -> issued actions``; raises (changing nothing) on rejection.

``run`` is the handoff's :class:`~handoff_fsm.run.HandoffRun` (the chart's effects and
the ``state`` they move), never the public coordinator."""


class Steps(Protocol):
    """The steps an engine state offers, by event name."""

    def get(self, event: str, /) -> StepFunction | None: ...


class EngineState(Protocol):
    """The chart state a run is in, as the engine that moves it presents it."""

    @property
    def steps(self) -> Steps:
        """Event name -> step; an event without a step is ignored in this state."""
        ...

    @property
    def leaves(self) -> tuple[str, ...]:
        """The active atomic states, document order."""
        ...

    @property
    def fields(self) -> ChartFields:
        """The declared fields the chart's guards read."""
        ...

    @property
    def is_complete(self) -> bool: ...

    @property
    def is_final(self) -> bool:
        """No input changes this state any more."""
        ...

    @property
    def completion(self) -> HandoffCompletion | None: ...


class EngineRun(Protocol):
    """What an engine's step needs of the run it moves: the state it is in.

    The run (:class:`~handoff_fsm.run.HandoffRun`) also carries the chart's effects,
    which an engine calls by name, so an engine needs no import of the run.
    """

    state: EngineState

    def checkpoint(self) -> object:
        """Everything a step may change in the run (not the engine's state), as a value."""
        ...

    def rollback(self, checkpoint: object, /) -> None:
        """Put the run back as it was when ``checkpoint`` was taken."""
        ...

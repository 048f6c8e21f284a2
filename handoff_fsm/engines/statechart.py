"""The interpreted engine: python-statemachine's own interpreter runs the chart live.

Rule kept here: this engine adds no behaviour. It gives the coordinator the same
face as a compiled :class:`~handoff_fsm.engines.compiled.ChartState` (``steps``,
``is_complete``, ``completion``, ``leaves``, ``fields``), but each step sends the
event to a live :class:`~handoff_fsm.chart.HandoffChart`, whose model forwards
every effect to the coordinator. Slow (the framework runs per event); for
debugging, listeners and live diagrams. Both engines agree on every reachable
input (``tests/test_engines.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handoff_fsm.chart import PAYLOAD, ChartFields, HandoffChart, HandoffEffects
from handoff_fsm.engines.compiled import (
    ChartState,
    StepFunction,
    configuration_of,
    effect_names,
    leaves_of,
)
from handoff_fsm.model import HandoffCompletion, IssuedHandoffAction

if TYPE_CHECKING:
    from handoff_fsm.coordinator import HandoffCoordinator


class LiveChartState:
    """The ``_state`` of a coordinator run by the framework's interpreter.

    It offers what the facade reads from a compiled :class:`ChartState`
    (``steps``, ``is_complete``, ``completion``, ``leaves``, ``fields``), read live
    from a :class:`HandoffChart` instance whose model is an :class:`_EffectsAdapter`.
    """

    __slots__ = ("adapter", "chart", "steps")

    def __init__(self, chart: HandoffChart, adapter: _EffectsAdapter) -> None:
        self.chart = chart
        self.adapter = adapter
        self.steps = _SendSteps()

    @property
    def leaves(self) -> tuple[str, ...]:
        return leaves_of(configuration_of(self.chart))

    @property
    def fields(self) -> ChartFields:
        return self.chart.fields()

    @property
    def is_complete(self) -> bool:
        return any(s.id == "complete" for s in self.chart.configuration)

    @property
    def completion(self) -> HandoffCompletion | None:
        return self.chart.completion


class _SendSteps:
    """``steps.get(event)``: a step that sends the event through the framework."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, StepFunction] = {}

    def get(self, event: str) -> StepFunction:
        step = self._cache.get(event)
        if step is None:
            step = self._cache[event] = _sending(event)
        return step


def _sending(event: str) -> StepFunction:
    def step(coordinator: HandoffCoordinator, payload: Any) -> list[Any]:
        live = coordinator._state
        assert isinstance(live, LiveChartState)
        live.adapter.outbox = []
        live.chart.send(event, **({PAYLOAD: payload} if payload is not None else {}))
        return live.adapter.outbox

    return step


class _EffectsAdapter:
    """The framework's model: forwards each effect to the coordinator, collects actions."""

    def __init__(self, coordinator: HandoffCoordinator) -> None:
        self.coordinator = coordinator
        self.outbox: list[IssuedHandoffAction] = []
        self.configuration: Any = None  # the framework's state field


def _forwarding(name: str) -> Callable[..., None]:
    def forward(self: _EffectsAdapter, *args: Any, **kwargs: Any) -> None:
        result = getattr(self.coordinator, name)(*args, **kwargs)
        if result is not None:
            self.outbox.append(result)

    forward.__name__ = name
    return forward


def _install_forwarders() -> None:
    for name in effect_names():
        parameters = list(inspect.signature(getattr(HandoffEffects, name)).parameters)[1:]
        forward = _forwarding(name)
        # The framework injects arguments by parameter name, reading the signature of
        # the bound method and caching it by qualified name: declare both.
        forward.__qualname__ = f"_EffectsAdapter.{name}"
        forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in parameters]
        )
        setattr(_EffectsAdapter, name, forward)


_install_forwarders()


def live_state(coordinator: HandoffCoordinator, engine: str, start: ChartState) -> LiveChartState:
    if engine != "statechart":
        raise ValueError(f"engine must be 'compiled' or 'statechart', not {engine!r}")
    adapter = _EffectsAdapter(coordinator)
    chart = HandoffChart(
        adapter,  # type: ignore[arg-type]
        start.order,
        fields=start.fields,
        configuration=start.configuration,
        state_field="configuration",
    )
    return LiveChartState(chart, adapter)

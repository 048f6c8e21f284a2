"""The interpreted engine: python-statemachine's own interpreter runs the chart live.

Rule kept here: this engine adds no behaviour. It gives the coordinator the same
face as a compiled :class:`~handoff_fsm.engines.compiled.ChartState` (``steps``,
``is_complete``, ``completion``, ``leaves``, ``fields``), but each step sends the
event to a live :class:`~handoff_fsm.chart.HandoffChart`, whose model forwards
every effect to the handoff's :class:`~handoff_fsm.run.HandoffRun`. Slow (the
framework runs per event); for debugging, listeners and live diagrams. A step is
all or nothing: when anything raises during it (a listener, too), the chart and
the run are put back as they were before it. Both
engines agree on every reachable input (``tests/test_engines.py``).
"""

from __future__ import annotations

from typing import Any

from handoff_fsm.chart import PAYLOAD, ChartFields, HandoffChart
from handoff_fsm.engines.compiled import (
    ChartState,
    completing_states,
    configuration_of,
    leaves_of,
)
from handoff_fsm.engines.harness import effects_model
from handoff_fsm.engines.state import EngineRun, StepFunction
from handoff_fsm.model import HandoffCompletion, HandoffOrder


class LiveChartState:
    """The ``_state`` of a coordinator run by the framework's interpreter.

    It offers what the facade reads from a compiled :class:`ChartState`
    (``steps``, ``is_complete``, ``completion``, ``leaves``, ``fields``), read live
    from a :class:`HandoffChart` instance whose model forwards effects to the run.
    """

    __slots__ = ("adapter", "chart", "steps")

    def __init__(self, chart: HandoffChart, adapter: Any) -> None:
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
        completing = completing_states()
        return any(s.id in completing for s in self.chart.configuration)

    @property
    def is_final(self) -> bool:
        return bool(self.chart.is_terminated)

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
    def step(run: EngineRun, payload: Any) -> list[Any]:
        live = run.state
        assert isinstance(live, LiveChartState)
        outbox: list[Any] = []
        live.adapter.outbox = outbox
        chart = live.chart
        # The framework calls code it does not own (listeners) between the changes of one
        # step; whatever raises, the step takes back every change it made, chart and run.
        configuration, fields, saved = chart.current_state_value, chart.fields(), run.checkpoint()
        try:
            chart.send(event, **({PAYLOAD: payload} if payload is not None else {}))
        except BaseException:
            run.rollback(saved)
            if chart.is_terminated:
                # It raised after entering a final state, where the framework's engine
                # stops for good: the chart goes on as a new instance, listeners and all.
                live.chart = _chart(live.adapter, fields, configuration)
                live.chart.add_listener(*chart.active_listeners)  # type: ignore[no-untyped-call]
            else:
                chart.current_state_value = configuration
                chart.load_fields(fields)
            raise
        return outbox

    return step


def _forward(adapter: Any, name: str, args: tuple[Any, ...]) -> None:
    """Run the effect on the handoff; collect the action it issued, if any."""
    result = getattr(adapter.run, name)(*args)
    if result is not None:
        adapter.outbox.append(result)


_EffectsAdapter = effects_model("_EffectsAdapter", _forward, state_field="configuration")
"""The framework's model: forwards each effect to the run, collects the actions issued."""


def live_state(run: EngineRun, start: ChartState) -> LiveChartState:
    """Run ``run`` on the framework's interpreter, starting in compiled state ``start``."""
    adapter = _EffectsAdapter()
    adapter.run = run
    adapter.outbox = []
    chart = HandoffChart(
        adapter,
        start.order,
        start.revision,
        fields=start.fields,
        configuration=start.configuration,
        state_field="configuration",
    )
    return LiveChartState(chart, adapter)


def _chart(adapter: Any, fields: ChartFields, configuration: Any) -> HandoffChart:
    """A new chart on ``adapter`` with these fields, in ``configuration`` (the raw value
    the framework keeps: one state id, or an ordered set of them)."""
    chart = HandoffChart(
        adapter,
        HandoffOrder.SOURCE_FIRST if fields.source_first else HandoffOrder.DESTINATION_FIRST,
        fields.revision,
        fields=fields,
        configuration=(configuration,) if isinstance(configuration, str) else tuple(configuration),
        state_field="configuration",
    )
    return chart

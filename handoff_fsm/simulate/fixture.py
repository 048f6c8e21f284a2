"""The single-request conformance fixture, played by the simulator.

Rule kept here: a :class:`~handoff_fsm.NormalizedHandoffConformance` is built
only from what one real simulated run observed: the lifecycle as the fake
endpoints (and, for ``Completed``, the driver) saw it, the tokens they emitted,
the KV hashes the destination made visible, and whether everything drained.
Nothing is filled in from the expectations it is checked against.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from handoff_fsm.conformance import NormalizedHandoffConformance, checked_backend
from handoff_fsm.model import Backend
from handoff_fsm.simulate.config import SimulationConfig
from handoff_fsm.simulate.driver import simulate
from handoff_fsm.simulate.faults import FaultPlan
from handoff_fsm.simulate.result import SimulationResult

FIXTURE_DESTINATION_OUTPUT_TOKENS = 2
"""The fixture's destination decodes two tokens (the source's prefill emits the first)."""


def conformance_record(result: SimulationResult) -> NormalizedHandoffConformance:
    """The normalized conformance record of a single-handoff run kept with its lifecycle."""
    if result.lifecycles is None or result.config.handoffs != 1 or len(result.lifecycles) != 1:
        raise ValueError(
            "a conformance record describes one handoff: run handoffs=1 with keep_lifecycles=True"
        )
    obs = result.observations
    return NormalizedHandoffConformance(
        engine_type=result.config.backend,
        order=result.order,
        lifecycle=result.lifecycles[0],
        source_output_tokens=obs.source_output_tokens,
        destination_output_tokens=obs.destination_output_tokens,
        completed_requests=obs.completed_requests,
        destination_stored=obs.destination_stored,
        source_drained=obs.source_drained,
        destination_drained=obs.destination_drained,
        driver_drained=obs.driver_drained,
    )


def conformance_run(
    backend: Backend | str,
    *,
    faults: FaultPlan | None = None,
    seed: int = 0,
    config: SimulationConfig | None = None,
    **overrides: Any,
) -> NormalizedHandoffConformance:
    """Simulate the fixture (one request, two destination tokens) and return its record.

    ``config`` (default: the defaults) and keyword ``overrides`` adjust the
    engines; the fixture's own settings (one handoff, ``backend``, ``faults``,
    ``seed``) are applied last. TRT-LLM, or a name that is no backend, raises
    ``unsupported_backend``.
    """
    base = config if config is not None else SimulationConfig()
    fixture = replace(
        base,
        **{"destination_output_tokens": FIXTURE_DESTINATION_OUTPUT_TOKENS, **overrides},
        backend=checked_backend(backend),
        handoffs=1,
        concurrency=1,
        seed=seed,
        faults=faults if faults is not None else FaultPlan(),
    )
    return conformance_record(simulate(fixture, keep_lifecycles=True))

"""The public facade: only the documented API, coded construction errors, independent copies."""

from __future__ import annotations

import copy
import math
import pickle
import uuid
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import pytest
from pydantic import ValidationError

from handoff_fsm import (
    ConfigurationError,
    DestinationReserved,
    Engine,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffErrorCode,
    HandoffOrder,
    SourceHeld,
    TransferCompleted,
)
from tests.support import HANDOFF_ID, kinds, timing

PUBLIC_API = {
    "chart",
    "completion",
    "engine",
    "fallback_transfer_delay_ms",
    "handoff_id",
    "is_complete",
    "is_final",
    "on_action_outcome",
    "on_fact",
    "order",
    "outstanding",
    "restore",
    "revision",
    "snapshot",
    "start",
    "state",
}


def test_dir_shows_only_the_documented_api() -> None:
    public = {name for name in dir(HandoffCoordinator) if not name.startswith("_")}
    assert public == PUBLIC_API
    coordinator = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    assert {name for name in dir(coordinator) if not name.startswith("_")} == PUBLIC_API


@pytest.mark.parametrize(
    "effect", ["issue_complete", "issue_start_transfer", "store_transfer_timing", "engage_source"]
)
def test_no_chart_effect_is_reachable_from_the_coordinator(effect: str) -> None:
    coordinator = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    with pytest.raises(AttributeError):
        getattr(coordinator, effect)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"handoff_id": 123}, HandoffErrorCode.INVALID_HANDOFF_ID),
        ({"handoff_id": "not-a-uuid"}, HandoffErrorCode.INVALID_HANDOFF_ID),
        ({"handoff_id": None}, HandoffErrorCode.INVALID_HANDOFF_ID),
        ({"handoff_id": HANDOFF_ID.bytes}, HandoffErrorCode.INVALID_HANDOFF_ID),
        ({"order": "sourcefirst"}, HandoffErrorCode.INVALID_ORDER),
        ({"order": "SOURCE_FIRST"}, HandoffErrorCode.INVALID_ORDER),
        ({"order": 0}, HandoffErrorCode.INVALID_ORDER),
        ({"order": None}, HandoffErrorCode.INVALID_ORDER),
        ({"engine": "fast"}, HandoffErrorCode.INVALID_ENGINE),
        ({"engine": None}, HandoffErrorCode.INVALID_ENGINE),
        ({"fallback_transfer_delay_ms": math.nan}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": -1.0}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": math.inf}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": "1.0"}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": True}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": None}, HandoffErrorCode.INVALID_FALLBACK),
        ({"fallback_transfer_delay_ms": 10**400}, HandoffErrorCode.INVALID_FALLBACK),
    ],
)
def test_constructor_mistakes_are_coded_configuration_errors(
    kwargs: dict[str, Any], code: HandoffErrorCode
) -> None:
    arguments: dict[str, Any] = {"handoff_id": HANDOFF_ID, "order": HandoffOrder.SOURCE_FIRST}
    arguments.update(kwargs)
    with pytest.raises(ConfigurationError) as error:
        HandoffCoordinator(**arguments)
    assert error.value.code is code
    assert len(str(error.value)) < 300  # a huge argument is never echoed whole


def test_constructor_accepts_the_documented_spellings() -> None:
    c = HandoffCoordinator(str(HANDOFF_ID), "DestinationFirst", 3)
    assert c.handoff_id == HANDOFF_ID
    assert c.order is HandoffOrder.DESTINATION_FIRST
    assert c.fallback_transfer_delay_ms == 3.0
    assert type(c.fallback_transfer_delay_ms) is float


def _midway(engine: Engine) -> HandoffCoordinator:
    c = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST, engine=engine)
    [submit] = c.start()
    c.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    [reserve] = c.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing(2.5)))
    c.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    return c


def _finish(c: HandoffCoordinator) -> list[str]:
    """Drive ``c`` to completion; the kinds of everything it issued."""
    issued = c.on_fact(DestinationReserved(handoff_id=c.handoff_id, transferable_prompt_tokens=4))
    seen = kinds(issued)
    [transfer] = issued
    c.on_action_outcome(transfer.id, HandoffActionOutcome.SCHEDULED)
    [activate] = c.on_fact(TransferCompleted(handoff_id=c.handoff_id))
    seen += kinds([activate])
    [release] = c.on_action_outcome(activate.id, HandoffActionOutcome.APPLIED)
    seen += kinds([release])
    done = c.on_action_outcome(release.id, HandoffActionOutcome.APPLIED)
    return seen + kinds(done)


@pytest.mark.parametrize(
    "duplicate", [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))]
)
def test_copies_are_independent_and_continue_identically(engine: Engine, duplicate: Any) -> None:
    original = _midway(engine)
    before = original.snapshot()
    twin = duplicate(original)
    assert twin is not original
    assert twin.engine == engine
    assert twin.snapshot() == before
    # Driving the copy to completion leaves the original where it was...
    twin_kinds = _finish(twin)
    assert twin.is_complete
    assert original.snapshot() == before
    assert not original.is_complete
    # ...and the original then does exactly what the copy did.
    assert _finish(original) == twin_kinds
    assert original.snapshot() == twin.snapshot()


def _continue_elsewhere(c: HandoffCoordinator) -> tuple[list[str], str]:
    return _finish(c), c.snapshot().model_dump_json()


@pytest.mark.slow
def test_a_coordinator_crosses_a_process_boundary() -> None:
    original = _midway("compiled")
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("fork")) as pool:
        remote_kinds, remote_snapshot = pool.submit(_continue_elsewhere, original).result()
    assert _finish(original) == remote_kinds
    assert original.snapshot().model_dump_json() == remote_snapshot


def test_copy_of_a_fresh_coordinator_gets_its_own_journal() -> None:
    a = HandoffCoordinator(uuid.uuid4(), HandoffOrder.DESTINATION_FIRST)
    b = copy.copy(a)
    [reserve] = a.start()
    assert b.start()[0].id == reserve.id  # b had issued nothing: the same first id
    a.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    assert b.snapshot().outcomes == ()


@pytest.mark.parametrize(
    "spelling",
    [
        "00000000-0000-4000-8000-000000000001",
        "00000000000040008000000000000001",
        "{00000000-0000-4000-8000-000000000001}",
        "urn:uuid:00000000-0000-4000-8000-000000000001",
        "+0000000-0000-4000-8000-000000000001",
        " 00000000-0000-4000-8000-000000000001",
        "0_000000-0000-4000-8000-000000000001",
        "\u06600000000-0000-4000-8000-000000000001",  # an Arabic-Indic zero
        "00000000-0000-4000-8000-0000000000011",
    ],
)
def test_the_constructor_reads_a_handoff_id_exactly_as_facts_do(spelling: str) -> None:
    try:
        fact_id = TransferCompleted.model_validate({"handoff_id": spelling}).handoff_id
    except ValidationError:
        with pytest.raises(ConfigurationError) as error:
            HandoffCoordinator(spelling, HandoffOrder.SOURCE_FIRST)
        assert error.value.code is HandoffErrorCode.INVALID_HANDOFF_ID
        return
    assert HandoffCoordinator(spelling, HandoffOrder.SOURCE_FIRST).handoff_id == fact_id

"""restore() accepts exactly the reachable states: tampered snapshots, judged by replay.

The oracle is independent of restore()'s own rules: a snapshot is reachable when
some input sequence produces it. For a tampered snapshot we take every explored
state with the same structure and replay its shortest input sequence with the
tampered values (handoff id, order, fallback, timing, tokens, failure reasons)
substituted; restore() must accept the snapshot exactly when one of those replays
reproduces it byte for byte, and must reject everything else with
``invalid_snapshot``, never another exception.
"""

from __future__ import annotations

import math
import random
import uuid
from collections import defaultdict
from collections.abc import Hashable, Iterator
from functools import cache
from typing import Any

import pytest
from pydantic import ValidationError

import handoff_fsm as hf
from handoff_fsm import (
    ConfigurationError,
    DestinationReserved,
    HandoffActionOutcome,
    HandoffCoordinator,
    HandoffError,
    HandoffErrorCode,
    HandoffOrder,
    HandoffSnapshot,
    HandoffTransferTiming,
    SourceHeld,
    TransferTimingMode,
)
from handoff_fsm.io.inputs import Input
from handoff_fsm.verify.exploration import HANDOFF_ID, explore_graph
from tests.support import OTHER_ID

Structure = Hashable


def _structure(s: HandoffSnapshot) -> Structure:
    return (
        s.order,
        s.state,
        s.source_engaged,
        s.destination_engaged,
        s.completion,
        s.next_action_id,
        tuple((i.id, type(i.action).__name__) for i in s.issued),
        tuple((r.action_id, r.outcome.kind) for r in s.outcomes),
        s.transfer_timing is None,
        s.transferable_prompt_tokens is None,
    )


@cache
def _explored() -> tuple[tuple[HandoffSnapshot, ...], dict[Structure, list[list[Input]]]]:
    snapshots: list[HandoffSnapshot] = []
    paths: dict[Structure, list[list[Input]]] = defaultdict(list)
    for order in HandoffOrder:
        for node in explore_graph(order, HandoffCoordinator, None).nodes:
            snapshot = node.snapshot
            assert isinstance(snapshot, HandoffSnapshot)
            snapshots.append(snapshot)
            paths[_structure(snapshot)].append(node.ops())
    return tuple(snapshots), dict(paths)


def _substituted(op: Input, target: HandoffSnapshot) -> Input:
    if op.kind == "fact":
        fact = op.fact
        assert fact is not None
        if fact.handoff_id != HANDOFF_ID:
            return op  # a foreign fact stays foreign
        update: dict[str, Any] = {"handoff_id": target.handoff_id}
        if isinstance(fact, SourceHeld) and target.transfer_timing is not None:
            update["transfer_timing"] = target.transfer_timing
        if isinstance(fact, DestinationReserved) and target.transferable_prompt_tokens is not None:
            update["transferable_prompt_tokens"] = target.transferable_prompt_tokens
        return Input("fact", fact=type(fact).model_validate({**dict(fact), **update}))
    if op.kind == "outcome":
        recorded = {r.action_id: r.outcome for r in target.outcomes}
        outcome = recorded.get(op.action_id, op.outcome)
        return Input("outcome", action_id=op.action_id, outcome=outcome)
    return op


def _reproducible(target: HandoffSnapshot) -> bool:
    """Some explored input sequence, with ``target``'s values, ends exactly in ``target``."""
    _, paths = _explored()
    wanted = target.model_dump_json()
    for ops in paths.get(_structure(target), []):
        try:
            c = HandoffCoordinator(
                target.handoff_id, target.order, target.fallback_transfer_delay_ms
            )
        except HandoffError:
            return False
        for explored in ops:
            try:
                op = _substituted(explored, target)
                if op.kind == "start":
                    c.start()
                elif op.kind == "fact":
                    assert op.fact is not None
                    c.on_fact(op.fact)
                else:
                    assert op.outcome is not None
                    c.on_action_outcome(op.action_id, op.outcome)
            except (HandoffError, ValidationError):
                pass
        if c.snapshot().model_dump_json() == wanted:
            return True
    return False


# ---------------------------------------------------------------------- tampering

_ODD_FLOATS = [math.nan, math.inf, -math.inf, -1.0, 0.0, -0.0, 5e-324, 2.5, 1e300]
_ODD_INTS = [0, 1, 2, 3, 9, 10, 11, 2**64 - 1, 2**64, -1]


def _tamper(data: dict[str, Any], rng: random.Random, others: list[dict[str, Any]]) -> None:
    other = rng.choice(others)
    field = rng.choice(
        [
            "version",
            "handoff_id",
            "order",
            "fallback",
            "state",
            "flags",
            "completion",
            "timing",
            "tokens",
            "next",
            "issued",
            "outcomes",
            "swap",
        ]
    )
    if field == "version":
        data["version"] = rng.choice([True, 1.0, 2, "1", 0])
    elif field == "handoff_id":
        data["handoff_id"] = rng.choice([str(OTHER_ID), other["handoff_id"]])
    elif field == "order":
        data["order"] = rng.choice(["SourceFirst", "DestinationFirst"])
    elif field == "fallback":
        data["fallback_transfer_delay_ms"] = rng.choice([*_ODD_FLOATS, 7])
    elif field == "state":
        state = list(data["state"])
        choice = rng.randrange(3)
        if choice == 0:
            data["state"] = other["state"]
        elif choice == 1 and state:
            state.pop(rng.randrange(len(state)))
            data["state"] = state
        else:
            data["state"] = [*state, rng.choice(list(other["state"]) or ["held"])]
    elif field == "flags":
        key = rng.choice(["source_engaged", "destination_engaged"])
        data[key] = not data[key]
    elif field == "completion":
        data["completion"] = rng.choice([None, "Success", "Canceled"])
    elif field == "timing":
        timing = data["transfer_timing"] or other["transfer_timing"]
        if timing is None or rng.random() < 0.2:
            data["transfer_timing"] = None
        else:
            timing = dict(timing)
            key = rng.choice(["bandwidth_gb_s", "full_prompt_tokens", "mode", "kv_bytes_per_token"])
            timing[key] = {
                "bandwidth_gb_s": rng.choice([*_ODD_FLOATS, None]),
                "full_prompt_tokens": rng.choice(_ODD_INTS),
                "mode": rng.choice(["full_prompt", "destination_missing"]),
                "kv_bytes_per_token": rng.choice([*_ODD_INTS, None]),
            }[key]
            data["transfer_timing"] = timing
    elif field == "tokens":
        data["transferable_prompt_tokens"] = rng.choice([None, *_ODD_INTS])
    elif field == "next":
        data["next_action_id"] = rng.choice(
            [data["next_action_id"] + rng.choice([-1, 1, 2]), *_ODD_INTS]
        )
    elif field == "issued":
        _tamper_list(data, "issued", rng, other)
    elif field == "outcomes":
        _tamper_list(data, "outcomes", rng, other)
    else:
        key = rng.choice(list(data))
        data[key] = other[key]


def _tamper_list(data: dict[str, Any], key: str, rng: random.Random, other: dict[str, Any]) -> None:
    entries = [dict(e) for e in data[key]]
    choice = rng.randrange(5)
    if choice == 0 and entries:
        entries.pop(rng.randrange(len(entries)))
    elif choice == 1 and entries:
        entries.append(dict(rng.choice(entries)))
    elif choice == 2 and other[key]:
        entries.append(dict(rng.choice(other[key])))
    elif choice == 3 and entries:
        entry = rng.choice(entries)
        id_key = "id" if key == "issued" else "action_id"
        entry[id_key] = entry[id_key] + rng.choice([-1, 1, 5])
    elif entries:
        entry = rng.choice(entries)
        if key == "issued":
            (tag, body), *_ = entry["action"].items()
            if tag == "StartTransfer" and rng.random() < 0.5:
                body = {**body, "delay_ms": rng.choice(_ODD_FLOATS)}
            else:
                tag = rng.choice(["SubmitPrefill", "ReleaseSource", "CancelSource", "Complete"])
                body = {"handoff_id": body["handoff_id"]}
            entry["action"] = {tag: body}
        else:
            entry["outcome"] = rng.choice(
                ["Submitted", "Accepted", "Scheduled", "Applied", "Noop", {"Failed": "x"}]
            )
    data[key] = entries


def _tampered(count: int, seed: int) -> Iterator[dict[str, Any]]:
    snapshots, _ = _explored()
    dumps = [s.model_dump(mode="python", round_trip=True) for s in snapshots]
    rng = random.Random(seed)
    for _ in range(count):
        data = dict(rng.choice(dumps))
        for _ in range(rng.randint(1, 3)):
            _tamper(data, rng, dumps)
        yield data


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_restore_accepts_exactly_the_reproducible_snapshots(seed: int) -> None:
    accepted = rejected = unparsable = 0
    for data in _tampered(600, seed):
        try:
            snapshot = HandoffSnapshot.model_validate(data)
        except ValidationError:
            unparsable += 1
            # The same data smuggled past validation must still be rejected by restore().
            smuggled = HandoffSnapshot.model_construct(**data)
            with pytest.raises(ConfigurationError) as error:
                HandoffCoordinator.restore(smuggled)
            assert error.value.code is HandoffErrorCode.INVALID_SNAPSHOT
            continue
        reproducible = _reproducible(snapshot)
        try:
            restored = HandoffCoordinator.restore(snapshot)
        except ConfigurationError as refusal:
            # Both verdicts are judged, so the refusal is caught rather than expected.
            assert refusal.code is HandoffErrorCode.INVALID_SNAPSHOT  # noqa: PT017
            assert not reproducible, f"restore() rejected a reachable snapshot: {data}"
            rejected += 1
            continue
        assert reproducible, f"restore() accepted an unreachable snapshot: {data}"
        assert restored.snapshot().model_dump_json() == snapshot.model_dump_json()
        accepted += 1
    # The tampering is not so crude that everything bounces off the parser.
    assert rejected > 100 and unparsable > 20


@pytest.mark.slow
def test_every_explored_snapshot_restores_on_both_engines() -> None:
    snapshots, _ = _explored()
    for snapshot in snapshots:
        for engine in ("compiled", "statechart"):
            restored = HandoffCoordinator.restore(snapshot, engine=engine)
            assert restored.snapshot() == snapshot


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"next_action_id": 2**64 - 1}, "next id beyond the issued ids"),
        ({"version": True}, "version is not the integer 1"),
    ],
)
def test_named_tamperings_are_rejected(change: dict[str, Any], why: str) -> None:
    snapshots, _ = _explored()
    base = next(s for s in snapshots if s.issued)
    data = {**base.model_dump(mode="python", round_trip=True), **change}
    with pytest.raises((ConfigurationError, ValidationError)):
        HandoffCoordinator.restore(HandoffSnapshot.model_validate(data))


def test_an_infinite_transfer_delay_survives_json() -> None:
    # destination_missing mode charges the destination's tokens: huge tokens over a tiny
    # bandwidth make the scheduled delay infinite although the full-prompt delay is finite.
    timing = HandoffTransferTiming(TransferTimingMode.DESTINATION_MISSING, 1, 2**40, 1e-300, 0)
    c = HandoffCoordinator(HANDOFF_ID, HandoffOrder.SOURCE_FIRST)
    [submit] = c.start()
    c.on_action_outcome(submit.id, HandoffActionOutcome.SUBMITTED)
    [reserve] = c.on_fact(SourceHeld(handoff_id=HANDOFF_ID, transfer_timing=timing))
    c.on_action_outcome(reserve.id, HandoffActionOutcome.ACCEPTED)
    [transfer] = c.on_fact(
        DestinationReserved(handoff_id=HANDOFF_ID, transferable_prompt_tokens=2**63)
    )
    assert transfer.action.delay_ms == math.inf  # type: ignore[union-attr]
    text = c.snapshot().model_dump_json()
    assert "Infinity" in text and "null" not in text.replace('"completion":null', "")
    back = HandoffSnapshot.model_validate_json(text)
    assert back == c.snapshot()
    assert HandoffCoordinator.restore(back).snapshot().model_dump_json() == text


def test_restore_takes_a_snapshot_its_json_text_or_its_dict_alike() -> None:
    coordinator = hf.HandoffCoordinator(uuid.UUID(int=3), hf.HandoffOrder.DESTINATION_FIRST)
    coordinator.start()
    snapshot = coordinator.snapshot()
    text = snapshot.model_dump_json()
    for form in (snapshot, text, text.encode(), snapshot.model_dump(mode="json")):
        restored = hf.HandoffCoordinator.restore(form)
        assert restored.snapshot() == snapshot
        assert restored.state == coordinator.state
    for bad in ("{", b"[]", "null", {"handoff_id": 1}, text.replace('"order"', '"ordre"')):
        with pytest.raises(hf.HandoffError) as raised:
            hf.HandoffCoordinator.restore(bad)
        assert raised.value.code is hf.HandoffErrorCode.INVALID_SNAPSHOT
    with pytest.raises(TypeError, match="its JSON text or its dict"):
        hf.HandoffCoordinator.restore(42)  # type: ignore[arg-type]


def test_a_snapshot_nested_beyond_the_recursion_limit_is_invalid_not_a_crash() -> None:
    coordinator = hf.HandoffCoordinator(uuid.UUID(int=4), hf.HandoffOrder.SOURCE_FIRST)
    snapshot = coordinator.snapshot()
    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    hostile = HandoffSnapshot.model_construct(**{**dict(snapshot), "outcomes": nested})
    with pytest.raises(hf.HandoffError) as raised:
        hf.HandoffCoordinator.restore(hostile)
    assert raised.value.code is hf.HandoffErrorCode.INVALID_SNAPSHOT
    deep_json = '{"handoff_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(hf.HandoffError) as text_raised:
        hf.HandoffCoordinator.restore(deep_json)
    assert text_raised.value.code is hf.HandoffErrorCode.INVALID_SNAPSHOT


def test_an_invalid_snapshot_says_which_field_and_why_in_a_bounded_message() -> None:
    coordinator = hf.HandoffCoordinator(uuid.UUID(int=5), hf.HandoffOrder.SOURCE_FIRST)
    form = coordinator.snapshot().model_dump(mode="json")
    cases = {
        "next_action_id": 10**400,
        "fallback_transfer_delay_ms": "x" * 1_000_000,
        "state": ["submitting"] * 100_000,
    }
    for field, value in cases.items():
        with pytest.raises(hf.HandoffError) as raised:
            hf.HandoffCoordinator.restore({**form, field: value})
        message = str(raised.value)
        assert raised.value.code is hf.HandoffErrorCode.INVALID_SNAPSHOT
        assert field in message and len(message) < 400, message

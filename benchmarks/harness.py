"""Measuring instruments: interleaved timing and tracemalloc bytes per live object.

Rule kept here: both sides of a comparison are measured the same way in the same
process, back to back (A B, B A, A B, ...), after a warm-up, with the garbage
collector collected before and disabled during every timed sample, and they are
summarised by medians. Time is the CPU time of this (single-threaded) process,
so other processes sharing the machine do not inflate it; on an idle machine it
equals wall time. The ratio reported is the median of the per-pair ratios,
so slow drift of the machine (another process, frequency scaling) cancels out
within each pair instead of biasing one side.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

clock = time.process_time
"""The clock every timed loop reads: CPU seconds of this process."""

Timed = Callable[[int], float]
"""``timed(n)``: do ``n`` operations and return the seconds spent doing them (setup excluded)."""

_IDS: list[UUID] = []
_WARMUP_ROUNDS = 3
_WARMUP_OPERATIONS = 200


def handoff_ids(count: int) -> list[UUID]:
    """``count`` distinct handoff ids, generated once and shared by both sides (user data)."""
    while len(_IDS) < count:
        _IDS.append(UUID(int=len(_IDS) + 1))
    return _IDS[:count]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear interpolation; ``q`` in [0, 1])."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Comparison:
    """Seconds per operation of each side, one sample per interleaved pair."""

    library: tuple[float, ...]
    baseline: tuple[float, ...]
    operations_per_sample: int

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(a / b for a, b in zip(self.library, self.baseline, strict=True))

    @property
    def library_median(self) -> float:
        return statistics.median(self.library)

    @property
    def baseline_median(self) -> float:
        return statistics.median(self.baseline)

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def ratio_spread(self) -> tuple[float, float]:
        """p10 and p90 of the per-pair ratios."""
        return quantile(self.ratios, 0.1), quantile(self.ratios, 0.9)


def _sample(timed: Timed, n: int) -> float:
    gc.collect()
    gc.disable()
    try:
        return timed(n)
    finally:
        gc.enable()


def calibrate(sides: Sequence[Timed], min_sample_s: float) -> int:
    """Operations per sample such that the slowest side takes at least ``min_sample_s``."""
    n = 1
    while True:
        slowest = max(_sample(timed, n) for timed in sides)
        if slowest >= min_sample_s:
            return n
        n = max(n * 2, int(n * min_sample_s / max(slowest, 1e-9) * 1.1))


def compare(
    library: Timed,
    baseline: Timed,
    *,
    pairs: int,
    min_sample_s: float = 0.0,
    operations: int | None = None,
) -> Comparison:
    """Time ``library`` against ``baseline``: warm-up, then ``pairs`` interleaved pairs.

    Each sample does ``operations`` operations, or, if that is ``None``, as many as
    make the slower side's sample last at least ``min_sample_s``.
    """
    for _ in range(_WARMUP_ROUNDS):
        _sample(library, _WARMUP_OPERATIONS)
        _sample(baseline, _WARMUP_OPERATIONS)
    n = operations if operations is not None else calibrate((library, baseline), min_sample_s)
    lib: list[float] = []
    base: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            lib.append(_sample(library, n) / n)
            base.append(_sample(baseline, n) / n)
        else:
            base.append(_sample(baseline, n) / n)
            lib.append(_sample(library, n) / n)
    return Comparison(tuple(lib), tuple(base), n)


def bytes_per_live_object(
    build: Callable[[list[object], Sequence[UUID]], None], count: int
) -> float:
    """Traced bytes per object that ``build`` leaves alive, for ``count`` objects.

    ``build(slots, ids)`` must store one object per id into ``slots``; the list
    itself and the ids are allocated before tracing starts, so only what the
    objects own is counted. Temporaries freed by the end of ``build`` are not.
    """
    ids = handoff_ids(count)
    warm: list[object] = [None] * 64
    build(warm, ids[:64])  # lazy caches and free lists, outside the traced window
    slots: list[object] = [None] * count
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        build(slots, ids)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    if any(obj is None for obj in slots):
        raise RuntimeError("build() left a slot empty")
    return (after - before) / count

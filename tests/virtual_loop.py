"""An asyncio event loop on virtual time: when nothing is ready, the clock jumps to the next timer.

Rule kept here: the loop never sleeps. Its selector polls without waiting; when
nothing is ready it moves the clock forward by exactly the time the loop would
have slept, so timers fire in the same order as on a real loop, instantly, and
a run depends on nothing but its inputs. Waiting with nothing scheduled is a
deadlock, reported as an error instead of hanging the test suite.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise RuntimeError("deadlock: the loop would wait forever (no timer, nothing ready)")
        self.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop whose ``time()`` is virtual (seconds from 0)."""

    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.now


def run_virtual(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())`` on a :class:`VirtualTimeLoop`."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main())

"""Sweeps: a grid of ``simulate`` runs, each cell computed on a Dask worker.

Rule kept here: a cell is plain data, its *configuration* (the options of
``handoff-fsm simulate`` under :func:`~handoff_fsm.simulate.config.command_config`'s
keyword names, as JSON values) and its *seed*, and its result is exactly the summary
``handoff-fsm simulate --json`` prints for those options, less the wall-clock keys
(:data:`~handoff_fsm.simulate.summary.WALL_CLOCK_KEYS`, the only ones that differ between
two runs of one seed). So a cell's result is a pure function of the cell: which worker ran
it, on which cluster, in which order, or how many times (Dask runs again the cells of a
worker that died) changes nothing. What crosses to a worker and back is those dicts of JSON
values (Dask pickles them; nothing here pickles anything). Each finished cell is written at
once, atomically, to ``cells/<key>.json`` in the sweep's folder (:class:`CellStore`), so a
stopped sweep keeps what it finished and a resumed one reuses it. Dask (the ``sweep``
extra) is imported only by the functions that run cells.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from handoff_fsm.io.atomic import write_bytes
from handoff_fsm.simulate.config import SimulationConfig, command_config
from handoff_fsm.simulate.driver import simulate
from handoff_fsm.simulate.summary import WALL_CLOCK_KEYS, summarize

if TYPE_CHECKING:
    from distributed import Client

Value: TypeAlias = str | int | float | None
"""One option's value in a configuration, as JSON holds it."""
Configuration: TypeAlias = tuple[tuple[str, Value], ...]
"""``(option, value)`` pairs, by :func:`~handoff_fsm.simulate.config.command_config`'s
keyword names, in the grid's order; the seed is not among them."""
Summary: TypeAlias = dict[str, Any]
"""``simulate --json``'s object without :data:`~handoff_fsm.simulate.summary.WALL_CLOCK_KEYS`."""

FORMAT: Final = 1
"""The version of the cell records and of ``sweep.json``; a cell of another is not reused."""
CELLS: Final = "cells"
"""The folder, in the sweep's folder, of the finished cells of a sweep not yet assembled."""
EXTRA: Final = "handoff-fsm[sweep]"
INSTALL_HINT: Final = f"pip install '{EXTRA}'"
LEFT_OUT: Final = tuple(sorted(WALL_CLOCK_KEYS))
"""The keys of ``simulate --json`` a cell's summary leaves out: they measure the machine."""
_CELL_FILE: Final = re.compile(r"[0-9a-f]{64}\.json")


class DaskUnavailableError(RuntimeError):
    """Dask's ``distributed``, which only sweeps need, is not installed."""

    def __init__(self) -> None:
        super().__init__(f"sweeps run on Dask, which is not installed: {INSTALL_HINT}")


def require_dask() -> None:
    """Raise :class:`DaskUnavailableError` unless ``distributed`` imports (check before work)."""
    try:
        import distributed  # noqa: F401, PLC0415  # optional: only sweeps need it
    except ImportError as error:
        raise DaskUnavailableError() from error


def plain(value: object) -> Value:
    """An option's value as JSON holds it: an enum member as its text (``Backend.VLLM`` ->
    ``"vllm"``), a number or ``None`` as it is."""
    if isinstance(value, StrEnum):
        return str(value.value)
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"not an option value: {value!r}")


def canonical(data: object) -> bytes:
    """``data`` as the one JSON text that names it (sorted keys, no spaces, ASCII)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True, slots=True)
class Cell:
    """One run of a sweep: a configuration and a seed."""

    configuration: Configuration
    seed: int

    @property
    def options(self) -> dict[str, Value]:
        """Every keyword of :func:`~handoff_fsm.simulate.config.command_config` it sets."""
        return {**dict(self.configuration), "seed": self.seed}

    @property
    def identity(self) -> dict[str, Any]:
        """What names the cell (its key is the SHA-256 of this as :func:`canonical` JSON)."""
        return {"format": FORMAT, "configuration": dict(self.configuration), "seed": self.seed}

    @property
    def key(self) -> str:
        return hashlib.sha256(canonical(self.identity)).hexdigest()

    def config(self) -> SimulationConfig:
        """The configuration ``simulate`` runs for these options (raises as it would)."""
        return command_config(**self.options)  # type: ignore[arg-type]  # checked values

    def command(self) -> str:
        """The ``handoff-fsm simulate`` command whose ``--json`` is this cell's summary
        (with the wall-clock keys)."""
        words = ["handoff-fsm simulate"]
        for name, value in self.configuration:
            words.append(f"--{name.replace('_', '-')} {option_text(value)}")
        words += [f"--seed {self.seed}", "--json"]
        return " ".join(words)


def option_text(value: Value) -> str:
    """``value`` as a command line gives it (``off`` for no such timer)."""
    if value is None:
        return "off"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def grid(options: Mapping[str, Sequence[Value]], seeds: Sequence[int]) -> list[Cell]:
    """Every configuration ``options`` spans (each option's values in the order given, the
    first option slowest), each with every seed (the fastest)."""
    names = list(options)
    configurations = [
        tuple(zip(names, values, strict=True)) for values in product(*options.values())
    ]
    return [Cell(configuration, seed) for configuration in configurations for seed in seeds]


def configurations(cells: Sequence[Cell]) -> list[Configuration]:
    """The distinct configurations of ``cells``, in their order."""
    return list(dict.fromkeys(cell.configuration for cell in cells))


def run_cell(configuration: Mapping[str, Value], seed: int) -> Summary:
    """One cell, computed: what ``simulate --json`` prints for it, without the wall clock.

    This is the task a Dask worker runs. Arguments and result are JSON values only: the
    result goes through JSON on the way out, so a cell computed here and one read back from
    a file are equal.
    """
    config = command_config(**configuration, seed=seed)  # type: ignore[arg-type]
    summary = summarize(simulate(config))
    kept = {name: value for name, value in summary.items() if name not in WALL_CLOCK_KEYS}
    loaded: Summary = json.loads(json.dumps(kept))
    return loaded


def record(cell: Cell, summary: Summary) -> dict[str, Any]:
    """A finished cell as ``sweep.json`` lists it and ``cells/<key>.json`` holds it."""
    return {"configuration": dict(cell.configuration), "seed": cell.seed, "summary": summary}


def document_bytes(data: object) -> bytes:
    """A JSON document as the sweep writes it (indented, the keys in their order)."""
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def sweep_document(
    cells: Sequence[tuple[Cell, Summary]],
    options: Mapping[str, Sequence[Value]],
    seeds: Sequence[int],
) -> bytes:
    """``sweep.json``: the grid, then every cell (configuration, seed, summary) in its order."""
    return document_bytes(
        {
            "format": FORMAT,
            "written_by": "handoff-fsm sweep",
            "left_out": list(LEFT_OUT),
            "about": "Each cell's summary is what `handoff-fsm simulate` with its configuration "
            "and seed prints with --json, less the keys in left_out (wall clock and "
            "throughput: they measure the machine, not the run), so the same sweep gives "
            "the same file whatever ran it.",
            "grid": {
                **{name: list(values) for name, values in options.items()},
                "seeds": list(seeds),
            },
            "cells": [record(cell, summary) for cell, summary in cells],
        }
    )


def summary_of(data: object, cell: Cell) -> Summary | None:
    """The summary of ``data`` (a record read back) if it is the record of ``cell``."""
    if not isinstance(data, dict) or data.get("seed") != cell.seed:
        return None
    if data.get("configuration") != dict(cell.configuration):
        return None
    summary = data.get("summary")
    return summary if isinstance(summary, dict) else None


class CellStore:
    """The finished cells of a sweep in progress: ``DIR/cells/<key>.json``, one each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder / CELLS

    def path(self, cell: Cell) -> Path:
        return self.folder / f"{cell.key}.json"

    def load(self, cell: Cell) -> Summary | None:
        """The cell's summary, if a record of it is here (of this format); else ``None``
        (a missing, unreadable or foreign file is computed again)."""
        try:
            data = json.loads(self.path(cell).read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        return summary_of(data, cell)

    def save(self, cell: Cell, summary: Summary) -> None:
        """Write the cell's record, atomically (a stopped sweep never leaves half a cell)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_bytes(self.path(cell), document_bytes({"format": FORMAT, **record(cell, summary)}))

    def clear(self) -> None:
        """Remove every cell record here, and the folder if nothing else is in it."""
        if not self.folder.is_dir():
            return
        for entry in sorted(self.folder.iterdir()):
            if _CELL_FILE.fullmatch(entry.name) and entry.is_file():
                entry.unlink()
        if not any(self.folder.iterdir()):
            self.folder.rmdir()


def assembled(path: Path) -> dict[str, Summary]:
    """The summaries a previous ``sweep.json`` at ``path`` holds, by cell key (of this format;
    nothing if it is missing or unreadable)."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    found: dict[str, Summary] = {}
    for entry in data.get("cells", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("configuration"), dict):
            continue
        seed = entry.get("seed")
        if not isinstance(seed, int):
            continue
        cell = Cell(tuple(entry["configuration"].items()), seed)
        summary = summary_of(entry, cell)
        if summary is not None:
            found[cell.key] = summary
    return found


# ---------------------------------------------------------------------- Dask


def default_workers() -> int:
    """One worker per core this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def dask_setup(worker: object) -> None:
    """Dask's preload hook, run in each worker process of :func:`local_client` as it starts:
    Ctrl-C at a terminal reaches the whole process group, and it is this process's to
    handle (a worker would die printing a traceback); the cluster stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def local_client(workers: int) -> Iterator[Client]:
    """A client of an embedded ``LocalCluster``: ``workers`` processes of one thread each, on
    the loopback interface, no dashboard, no log lines, ignoring Ctrl-C (:func:`dask_setup`);
    closed (its processes stopped) on the way out."""
    from distributed import Client, LocalCluster  # noqa: PLC0415  # the sweep extra

    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            # the scheduler's HTTP routes (health, metrics) still listen: on a free port,
            # never on the dashboard's 8787 that another cluster may hold
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            # Dask's own log lines stay quiet, errors too: a worker whose heartbeat meets
            # the scheduler closing at Ctrl-C logs a traceback; what matters is said by
            # the sweep (a lost worker is KilledWorker, a failed cell its exception)
            silence_logs=logging.CRITICAL,
            preload=[__name__],  # dask_setup
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@contextmanager
def remote_client(address: str, timeout_s: float) -> Iterator[Client]:
    """A client of the running scheduler at ``address``, once at least one worker has joined.

    Raises ``OSError`` when no scheduler answers and ``TimeoutError`` when no worker joins,
    each within ``timeout_s``.
    """
    from distributed import Client  # noqa: PLC0415  # the sweep extra

    with Client(address, timeout=timeout_s) as client:
        client.wait_for_workers(1, timeout=timeout_s)
        yield client


def run_cells(
    client: Client, cells: Sequence[Cell], on_done: Callable[[Cell, Summary], None]
) -> None:
    """Compute ``cells`` on ``client``'s cluster, calling ``on_done`` in this thread as each
    one finishes (in whatever order they finish).

    Each cell is one task, named by the cell's key, so a scheduler that already holds it
    shares it. A worker that dies takes its running task with it; the scheduler gives it to
    another worker (up to ``distributed.scheduler.allowed-failures`` times, then
    ``KilledWorker`` is raised here). If anything stops the loop (Ctrl-C, a failed task),
    the tasks not finished are canceled before the exception goes on.
    """
    from distributed import as_completed  # noqa: PLC0415  # the sweep extra

    pending = {
        client.submit(
            run_cell, dict(cell.configuration), cell.seed, key=f"handoff-fsm-cell-{cell.key}"
        ): cell
        for cell in cells
    }
    try:
        for future, summary in as_completed(list(pending), with_results=True):
            cell = pending.pop(future)
            on_done(cell, summary)
    finally:
        if pending:
            client.cancel(list(pending))

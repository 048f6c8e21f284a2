"""What the inspector and diff page tests compare a page against, found without the page's code.

Rule kept here: the expected states come from replaying the trace with the library's
replayer alone (:class:`~handoff_fsm.io.replay.TraceReplayer`, as ``handoff-fsm
replay`` does), reading each coordinator's own ``state`` after each of its lines; never
from :mod:`handoff_fsm.io.follow`, the diff's report or the page's JSON, which are what
is tested.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

from handoff_fsm.io.follow import follow_all
from handoff_fsm.io.replay import TraceReplayer
from handoff_fsm.model import IssuedHandoffAction, Revision
from handoff_fsm.render.inspector import inspector_html
from handoff_fsm.review.diffpage import diff_page
from handoff_fsm.verify.diff import DiffReport, diff

ROOT: Final = Path(__file__).resolve().parents[1]
COMMITTED_TRACES: Final = (
    *sorted((ROOT / "diagrams").rglob("*.jsonl")),
    ROOT / "docs" / "examples" / "trace.jsonl",
    ROOT / "docs" / "figures" / "run.jsonl",
)
"""Every lifecycle trace the repository commits (the diagrams' and the docs')."""
HOSTILE_TRACES: Final = (
    ROOT / "tests" / "oracle" / "examples" / "malformed.jsonl",
    ROOT / "tests" / "oracle" / "examples" / "revisions.jsonl",
)
"""Oracle inputs that a page must also survive: bad lines, and two revisions in one trace."""


def trace_lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@cache
def page_html(path: Path) -> str:
    """The inspector page of the trace ``path``, made once per test run (the test modules
    share it)."""
    return inspector_html(follow_all(trace_lines(path)), name=path.name)


@dataclass
class Replayed:
    """One coordinator as the replayer left it after each of its lines (index 0: created)."""

    key: str
    revision: Revision
    states: list[tuple[str, ...]] = field(default_factory=list)
    outstanding: list[tuple[IssuedHandoffAction, ...]] = field(default_factory=list)
    completions: list[str | None] = field(default_factory=list)
    replies: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def replayed(lines: list[bytes], revision: Revision = Revision.SEED) -> dict[str, Replayed]:
    """Each coordinator the trace creates, after its creating line and each later line naming it."""
    replayer = TraceReplayer(remember_completed=None, revision=revision)
    found: dict[str, Replayed] = {}
    for number, line in enumerate(lines, start=1):
        step = replayer.step(line, number)
        if step.key is None or (step.key not in found and not step.created):
            continue
        coordinator = replayer.coordinator(step.key)
        assert coordinator is not None, step.key
        if step.key not in found:
            found[step.key] = Replayed(step.key, coordinator.revision)
        else:
            found[step.key].replies.append(json.loads(step.text))
            found[step.key].lines.append(number)
        record = found[step.key]
        record.states.append(coordinator.state)
        record.outstanding.append(coordinator.outstanding)
        record.completions.append(
            coordinator.completion.value if coordinator.completion is not None else None
        )
    return found


_DATA: Final = re.compile(
    r'<script type="application/json" id="handoff-inspector-data">(.*?)</script>', re.DOTALL
)


def page_data(page: str) -> dict[str, Any]:
    """The JSON a page embeds (what its script displays)."""
    match = _DATA.search(page)
    assert match is not None, "the page embeds no data"
    data: dict[str, Any] = json.loads(match[1])
    return data


def trace_states(trace: tuple[str, ...], revision: Revision) -> list[tuple[str, ...]]:
    """The one coordinator of a diff's ``trace`` replayed on ``revision``: its own ``state``
    after each line (index 0: created)."""
    (only,) = replayed([f"{line}\n".encode() for line in trace], revision).values()
    return only.states


@cache
def seed_report() -> DiffReport:
    """``diff seed a976b2bf`` with both charts, made once per test run."""
    return diff("seed", "a976b2bf", charts=True)


@cache
def seed_diff_page() -> str:
    """The diff page of :func:`seed_report` (the test modules share it)."""
    return diff_page(seed_report())


_DIFF_DATA: Final = re.compile(
    r'<script type="application/json" id="handoff-diff-data">(.*?)</script>', re.DOTALL
)


def diff_page_data(page: str) -> dict[str, Any]:
    """The JSON a diff page embeds (what its script displays)."""
    match = _DIFF_DATA.search(page)
    assert match is not None, "the page embeds no data"
    data: dict[str, Any] = json.loads(match[1])
    return data


def assert_self_contained(page: str) -> None:
    """The page fetches nothing: its policy forbids it, and it names nothing to fetch."""
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\';' in page
    # The only URLs are XML namespaces, which name and fetch nothing.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}, urls
    assert not re.search(r"\b(?:src|href)\s*=", page)
    assert "@import" not in page and "url(" not in page

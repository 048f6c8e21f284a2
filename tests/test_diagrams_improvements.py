"""The coordinator guide and the design review show the same improvements text: it exists once."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_fsm.review import IMPROVEMENTS_MARKDOWN, KEPT_QUIRKS_MARKDOWN, review_markdown

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "coordinator.md"


def test_the_guide_quotes_the_improvements_verbatim() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    section = guide.split("## Improvements over the reference\n", 1)[1].split("\n## ", 1)[0]
    assert IMPROVEMENTS_MARKDOWN in section
    assert KEPT_QUIRKS_MARKDOWN in section


@pytest.mark.slow
def test_the_review_quotes_the_improvements_verbatim() -> None:
    review = review_markdown()
    assert IMPROVEMENTS_MARKDOWN in review
    assert KEPT_QUIRKS_MARKDOWN in review

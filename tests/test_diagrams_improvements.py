"""README and the design review show the same improvements text: it exists once."""

from __future__ import annotations

from pathlib import Path

from handoff_fsm.diagrams import IMPROVEMENTS_MARKDOWN, KEPT_QUIRKS_MARKDOWN, review_markdown

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quotes_the_improvements_verbatim() -> None:
    readme = README.read_text(encoding="utf-8")
    assert IMPROVEMENTS_MARKDOWN in readme
    assert KEPT_QUIRKS_MARKDOWN in readme


def test_the_review_quotes_the_improvements_verbatim() -> None:
    review = review_markdown()
    assert IMPROVEMENTS_MARKDOWN in review
    assert KEPT_QUIRKS_MARKDOWN in review

"""Opening the project's one-file pages in a real browser: Debian's Chromium, by Playwright.

Rule kept here: the browser is the system's ``chromium`` (tests/requirements.py finds
it), never one Playwright downloads; a page is opened from its file, and everything it
requests and every error it logs is recorded, so a test can say that nothing but the
page's own file was requested and nothing went wrong. Used by the inspector's and the
diff page's browser tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tests import requirements

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

VIEWPORT: Final = {"width": 1600, "height": 1000}


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium for the block (one serves a test module)."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - only where chromium is

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=requirements.chromium_path(),
            headless=True,
            args=["--no-sandbox"],  # root in CI; the pages are our own files
        )
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Opened:
    """A page, with every request it made and every error it logged."""

    page: Page
    url: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.page.close()

    def clean(self) -> None:
        """Nothing but the page's own file was requested, and nothing went wrong."""
        assert self.requests == [self.url.partition("#")[0]], self.requests
        assert self.errors == [], self.errors

    def run(self, script: str, arg: Any = None) -> Any:
        return self.page.evaluate(script, arg)


def open_page(browser: Browser, url: str) -> Opened:
    """``url`` in a new page of the :data:`VIEWPORT`'s size, its requests and errors recorded."""
    page = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
    opened = Opened(page, url)

    def route(request: Any) -> None:
        opened.requests.append(request.request.url)
        request.continue_()

    page.route("**/*", route)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(url)
    return opened


def shot(opened: Opened, path: Path, *, whole: bool = False) -> Path:
    """A screenshot of the page to ``path``, for people to look at."""
    opened.page.screenshot(path=str(path), full_page=whole)
    assert path.stat().st_size > 10_000  # a drawn page, not a blank one
    return path

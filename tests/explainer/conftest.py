"""Fixtures for the explainer tests: example content, a written page, headless Chromium.

Browser tests use Debian's chromium at /usr/bin/chromium through Playwright's Python API
(never ``playwright install``) and are skipped, with the reason, when it is absent.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.explainer.content import content_from_mapping
from bot.explainer.page_render import render_page

# The session's Chromium (the ``browser`` fixture) lives in tests/conftest.py, one per worker.
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "templates" / "explainer" / "examples"


def example(name: str) -> dict[str, Any]:
    """A fresh copy of an example content mapping (``spec`` or ``code``)."""
    return yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text("utf-8"))


@pytest.fixture
def spec_data() -> dict[str, Any]:
    """The spec example (standard depth, 3 questions, 3 options each)."""
    return example("spec")


@pytest.fixture
def code_data() -> dict[str, Any]:
    """The code example (deep depth, 5 questions)."""
    return example("code")


@pytest.fixture
def write_page(tmp_path: Path) -> Callable[..., Path]:
    """Render content mappings into ``tmp_path/<name>.html`` and return the path."""

    def write(*mappings: dict[str, Any], name: str = "explainer") -> Path:
        contents = [content_from_mapping(copy.deepcopy(m), f"test-{i}")
                    for i, m in enumerate(mappings)]
        path = tmp_path / f"{name}.html"
        path.write_text(render_page(contents), "utf-8")
        return path

    return write


class Watched:
    """A page plus every request and console error it produced."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.errors: list[str] = []

    def open(self, path: Path) -> Any:
        """Load ``path`` as a file:// URL and return the page."""
        self.page.goto(path.as_uri())
        return self.page


@pytest.fixture
def watched(browser: Any) -> Iterator[Callable[..., Watched]]:
    """Factory: a fresh browser context whose requests and console errors are recorded.

    Every request is recorded (``page.on("request")``) and routed through a handler that
    lets only file:// URLs through, so nothing can leave the machine even if a page tried.
    """
    contexts = []

    def make(width: int = 1000, height: int = 900, color_scheme: str = "light") -> Watched:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      color_scheme=color_scheme)
        contexts.append(context)
        page = context.new_page()
        watch = Watched(page)

        def route(route: Any) -> None:
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                route.abort()

        context.route("**/*", route)
        page.on("request", lambda r: watch.requests.append(r.url))
        page.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: watch.errors.append(f"pageerror: {e}"))
        return watch

    yield make
    for context in contexts:
        context.close()

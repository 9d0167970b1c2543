"""Render the example explainer page and capture the screenshots in docs/screenshots/.

Usage (from the repository root; needs Debian's chromium at /usr/bin/chromium)::

    .venv/bin/python docs/screenshots/make_screenshots.py

Writes spec-explainer-{light,dark,mobile}.png, spec-quiz-{light,dark}.png (question 1
answered right, question 2 answered wrong) and explainer-{light,dark}.png, rendered from
templates/explainer/examples/{spec,code}.yaml with the shipped template.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from bot.explainer.content import load_content  # noqa: E402
from bot.explainer.page_render import render_page  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
DESKTOP = {"width": 960, "height": 900}
MOBILE = {"width": 375, "height": 812}


def _page(browser: Any, url: str, viewport: dict[str, int], scheme: str) -> Any:
    context = browser.new_context(viewport=viewport, color_scheme=scheme, device_scale_factor=1)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                  else r.abort())
    page = context.new_page()
    page.goto(url)
    return page


def _shoot(page: Any, name: str) -> None:
    path = HERE / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.context.close()
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> int:
    """Render the examples and write the seven screenshots; returns the exit code."""
    contents = [load_content(ROOT / "templates/explainer/examples/spec.yaml"),
                load_content(ROOT / "templates/explainer/examples/code.yaml")]
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "explainer.html"
        page_file.write_text(render_page(contents), "utf-8")
        url = page_file.as_uri()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for scheme in ("light", "dark"):
                _shoot(_page(browser, url, DESKTOP, scheme), f"spec-explainer-{scheme}")
                quiz = _page(browser, url, DESKTOP, scheme)
                quiz.click("#tab-spec-quiz")
                quiz.check("#spec-quiz-q1 input[value='0']")  # right
                quiz.check("#spec-quiz-q2 input[value='0']")  # wrong
                _shoot(quiz, f"spec-quiz-{scheme}")
                code = _page(browser, url, DESKTOP, scheme)
                code.click("#tab-explainer")
                _shoot(code, f"explainer-{scheme}")
            _shoot(_page(browser, url, MOBILE, "light"), "spec-explainer-mobile")
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

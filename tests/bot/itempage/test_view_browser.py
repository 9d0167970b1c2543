"""Issue 22 §2 acceptance, in Chromium (Playwright): the details page as the route serves it
(``render_page`` of a walked item's model, with ``CONTENT_SECURITY_POLICY``), from a tiny
Flask server on 127.0.0.1 in this test: the content is there, the pending-only switch is
reached by keyboard and hides every done node, no request leaves the server, nothing
scrolls sideways at 375 px, dark mode changes the colours, and the CSP blocks nothing the
page needs (no console error).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask, Response, request
from werkzeug.serving import make_server

from bot.itempage.view import CONTENT_SECURITY_POLICY, render_page, render_status_page
from tests.bot.itempage.test_view_model import walked_model

pytestmark = pytest.mark.browser
PATH = "/items/acme/widgets/7"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The page at ``<base>/items/acme/widgets/7`` (``?pending=1`` for the pending-only
    view), anything else a 404 page; the base URL is yielded."""
    model = walked_model("waiting")
    app = Flask(__name__)

    @app.get(PATH)
    def item() -> Response:
        body = render_page(model, pending_only=request.args.get("pending") == "1",
                           viewer="alice")
        return Response(body, headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY},
                        mimetype="text/html")

    @app.errorhandler(404)
    def missing(_: Any) -> Response:
        return Response(render_status_page(404, "Not found", "No such work item."), 404,
                        headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY})

    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join(timeout=10)
    assert not thread.is_alive()


class Watched:
    """A page whose requests and console errors are recorded."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Watched]]:
    contexts = []

    def make(width: int = 1000, color_scheme: str = "light") -> Watched:
        context = browser.new_context(viewport={"width": width, "height": 800},
                                      color_scheme=color_scheme)
        contexts.append(context)
        return Watched(context.new_page())

    yield make
    for context in contexts:
        context.close()


def test_the_page_shows_the_gate_the_path_and_the_timeline(server: str,
                                                          open_page: Callable[..., Watched]
                                                          ) -> None:
    watch = open_page()
    page = watch.page
    response = page.goto(server + PATH)
    assert response is not None and response.status == 200
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert page.title() == "acme/widgets#7 — loopgate"
    assert page.locator("h1").inner_text() == "acme/widgets#7"
    gate = page.locator("#gate").inner_text()
    assert "Approvals: 1 of 2 — approved by @alice" in gate
    assert "May still approve: @bob, @carol" in gate
    assert page.locator("svg.graph g.n").count() == page.locator("#nodes li").count() > 20
    assert page.locator('svg.graph g.n-current[data-node="human-approval"]').count() == 1
    assert page.locator("svg.graph path.taken").count() >= 1
    assert "superseded by push bbbbbbb (#8)" in page.locator("main").inner_text()
    assert page.locator("#timeline-list li").count() > 10
    # the stylesheet applied (the CSP's hash matches): the skip link is off screen
    assert page.locator(".skip").bounding_box()["x"] < 0
    assert watch.errors == []


def test_the_pending_only_switch_is_reached_by_keyboard_and_hides_done_nodes(
        server: str, open_page: Callable[..., Watched]) -> None:
    watch = open_page()
    page = watch.page
    page.goto(server + PATH)
    done = page.locator('#nodes li[data-state="done"], #nodes li[data-state="skipped"], '
                        '#nodes li[data-state="forced-past"], '
                        '#nodes li[data-state="not-selected"]')
    assert done.count() >= 3
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for _ in range(10):  # skip link, the issue link, "Everything", "Pending only"
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "pending-switch":
            break
    switch = page.locator("#pending-switch")
    assert page.evaluate("document.activeElement.id") == "pending-switch"
    assert switch.get_attribute("aria-current") is None
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # visible focus
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == server + PATH + "?pending=1"
    assert page.locator("#pending-switch").get_attribute("aria-current") == "true"
    assert done.count() == 0
    assert page.locator('svg.graph g.n-done, svg.graph g.n-skipped').count() == 0
    assert page.locator('#nodes li[data-node="human-approval"]').count() == 1
    assert page.locator("#timeline").count() == 0
    page.get_by_role("link", name="Everything", exact=True).click()
    assert page.url == server + PATH and done.count() >= 3
    assert watch.errors == []


def test_no_request_leaves_the_server(server: str, open_page: Callable[..., Watched]) -> None:
    watch = open_page()
    watch.page.goto(server + PATH)
    watch.page.goto(server + PATH + "?pending=1")
    watch.page.goto(server + "/items/acme/widgets/404")
    assert watch.requests and all(url.startswith(server + "/") for url in watch.requests)
    assert len(watch.requests) == 3  # the documents only: no font, script, image or style


@pytest.mark.parametrize("query", ["", "?pending=1"])
def test_nothing_scrolls_sideways_at_375_px(server: str, open_page: Callable[..., Watched],
                                            query: str) -> None:
    page = open_page(width=375).page
    page.goto(server + PATH + query)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    box = page.locator("svg.graph").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375


def test_dark_mode_changes_the_colours(server: str, open_page: Callable[..., Watched]) -> None:
    def colours(scheme: str) -> tuple[str, str, str]:
        page = open_page(color_scheme=scheme).page
        page.goto(server + PATH)
        return page.evaluate("""() => {
            const body = getComputedStyle(document.body);
            const rect = document.querySelector('svg.graph g.n-current rect');
            return [body.backgroundColor, body.color, getComputedStyle(rect).stroke];
        }""")

    light, dark = colours("light"), colours("dark")
    assert light[0] == "rgb(255, 255, 255)" and dark[0] == "rgb(13, 17, 23)"
    assert light[1] != dark[1] and light[2] != dark[2]

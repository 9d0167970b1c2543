"""Issue 22 §2 acceptance in Chromium (Playwright): the sign-in round trip against the
fake GitHub's web flow, served by ``serve``'s own waitress server (``bot.web.server.Server``,
stopped and joined at teardown); the 403 for a person who cannot read the repository; no
page content without a session.

GitHub and loopgate are different sites here, as in production: the fake answers as
``localhost``, loopgate as ``127.0.0.1``, so the browser's SameSite rules are the ones a
real sign-in meets (the Lax state cookie must come back on GitHub's redirect)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bot.web.server import Server
from tests.bot.itempage.conftest import CLIENT_ID, Site, make_site
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub

pytestmark = pytest.mark.browser


class _Late:
    """A WSGI app set after the server is bound: ``publicUrl`` needs its port first."""

    app: Any = None

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self.app(environ, start_response)


@dataclass
class Served:
    site: Site
    public: str
    web: str  # the fake github.com, as another site

    def page_path(self, number: int) -> str:
        return f"/items/{REPO}/{number}"


@pytest.fixture
def served(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[Served]:
    late = _Late()
    http = Server(late, "127.0.0.1", 0, threads=4).start()
    web = fake.url.replace("127.0.0.1", "localhost")
    site = make_site(fake, tmp_path, monkeypatch,
                     {"publicUrl": http.url, "signIn": {"clientId": CLIENT_ID,
                                                        "webUrl": web}})
    late.app = site.app
    try:
        yield Served(site, http.url, web)
    finally:
        http.stop(grace=2.0)
        site.world.close()
    assert not http.running


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context()
    try:
        yield ctx
    finally:
        ctx.close()


def _session_cookie(context: Any, public: str) -> dict[str, Any] | None:
    found = [c for c in context.cookies(public) if c["name"] == "loopgate-session"]
    return found[0] if found else None


def _hosts(requests_seen: list[str]) -> set[str]:
    return {urlsplit(url).netloc for url in requests_seen}


def test_sign_in_round_trip_in_chromium(served: Served, context: Any) -> None:
    ref = served.site.item()
    served.site.fake.oauth_as("alice")
    page = context.new_page()
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    started = time.time()

    answer = page.goto(served.public + served.page_path(ref.number))

    assert answer is not None and answer.status == 200
    assert page.url == served.public + served.page_path(ref.number)
    text = page.inner_text("body")
    assert "@alice" in text and str(ref) in text
    assert [u for u in seen if "/login/oauth/authorize?" in u]  # it went through GitHub
    assert _hosts(seen) == {urlsplit(served.public).netloc, urlsplit(served.web).netloc}
    cookie = _session_cookie(context, served.public)
    assert cookie is not None
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Lax"
    assert cookie["secure"] is False and cookie["path"] == "/"  # http in this test
    assert started + 28740 - 5 <= cookie["expires"] <= time.time() + 28740 + 5
    assert page.evaluate("document.cookie") == ""  # no script can read the session
    assert not [c for c in context.cookies(served.public) if c["name"] == "loopgate-state"]
    # The session holds: the next visit asks GitHub nothing but the (cached) access.
    served.site.fake.reset_log()
    again = page.goto(served.public + served.page_path(ref.number) + "?pending=1")
    assert again is not None and again.status == 200
    assert served.site.fake.count(route="oauth") == 0


def test_a_person_who_cannot_read_the_repository_gets_403(served: Served,
                                                          context: Any) -> None:
    ref = served.site.item()
    served.site.fake.set_private(REPO, readers=["alice"])
    served.site.fake.oauth_as("mallory")
    page = context.new_page()
    answer = page.goto(served.public + served.page_path(ref.number))
    assert answer is not None and answer.status == 403
    text = page.inner_text("body")
    assert str(ref) not in text and "human-approval" not in text
    assert "cannot see this page" in text
    assert _session_cookie(context, served.public) is not None  # signed in, not allowed


def test_no_page_content_without_a_session(served: Served, context: Any) -> None:
    ref = served.site.item()
    url = served.public + served.page_path(ref.number)
    raw = context.request.get(url, max_redirects=0)
    assert raw.status == 302
    assert raw.headers["location"].startswith(f"{served.public}/auth/login?next=")
    assert str(ref) not in raw.text()
    as_json = context.request.get(url, max_redirects=0,
                                  headers={"Accept": "application/json"})
    assert as_json.status == 401 and set(as_json.json()) == {"error", "signIn"}

    served.site.fake.oauth_as(None)  # nobody signed in to GitHub: its sign-in form
    page = context.new_page()
    page.goto(url)
    assert page.url.startswith(served.web + "/login/oauth/authorize?")
    assert page.title() == "Sign in to GitHub · GitHub"
    assert _session_cookie(context, served.public) is None

    served.site.fake.oauth_as("alice", approve=False)  # they decline on GitHub
    answer = page.goto(url)
    assert answer is not None and answer.status == 403
    assert str(ref) not in page.inner_text("body")
    assert _session_cookie(context, served.public) is None

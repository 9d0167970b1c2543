"""Issue 22 §2, the details page's access and route, through ``serve``'s Flask app (the
test client) against the fake GitHub's web flow: sign-in round trip, cookies' flags, the
page and its JSON, 302/401 without a session, 403 for a person who cannot read the
repository (and the same 403 for one that does not exist), 404 for an unknown item, 403
when sign-in is refused, 503 when GitHub does not answer, and no open redirect."""

from __future__ import annotations

import json
import logging
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from bot.itempage import view
from engine.errors import ConfigError
from tests.bot.itempage.conftest import (
    CLIENT_ID,
    CLIENT_SECRET,
    PUBLIC,
    SESSION_SECRET,
    Site,
    callback_params,
    make_site,
    sign_in_config,
)
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub

SESSION_COOKIE = "loopgate-session"
STATE_COOKIE = "loopgate-state"


def _cookies(response) -> dict[str, SimpleCookie]:  # noqa: ANN001 - werkzeug TestResponse
    out = {}
    for header in response.headers.getlist("Set-Cookie"):
        jar = SimpleCookie()
        jar.load(header)
        for name in jar:
            out[name] = jar
    return out


def _flags(response, name: str) -> dict[str, str]:  # noqa: ANN001
    [header] = [h for h in response.headers.getlist("Set-Cookie") if h.startswith(name + "=")]
    parts = [p.strip() for p in header.split(";")[1:]]
    return {p.split("=", 1)[0].lower(): (p.split("=", 1)[1] if "=" in p else "") for p in parts}


def _page(ref) -> str:  # noqa: ANN001
    return f"/items/{ref.owner}/{ref.repo}/{ref.number}"


def _no_item(body: str, ref) -> None:  # noqa: ANN001
    # Nothing of the item: not its reference, not a node of its walk.
    assert str(ref) not in body
    assert "human-approval" not in body and "phase-selection" not in body


def test_sign_in_round_trip_sets_a_sealed_session_and_returns_to_the_page(
        site: Site) -> None:
    ref = site.item()
    site.fake.oauth_as("alice")
    start = site.client.get(f"/auth/login?next={quote(_page(ref))}")
    assert start.status_code == 302
    target = urlsplit(start.headers["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == (
        f"{site.fake.url}/login/oauth/authorize")
    query = {k: v[-1] for k, v in parse_qs(target.query).items()}
    assert query["client_id"] == CLIENT_ID
    assert query["redirect_uri"] == f"{PUBLIC}/auth/callback"
    assert len(query["state"]) >= 40  # 32 random bytes
    state_flags = _flags(start, STATE_COOKIE)
    assert state_flags["max-age"] == "600" and "httponly" in state_flags
    assert state_flags["samesite"] == "Lax" and state_flags["path"] == "/"
    assert query["state"] not in start.headers["Set-Cookie"]  # sealed, not readable

    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302
    returned = callback_params(back.headers["Location"])
    assert returned["state"] == query["state"] and len(returned["code"]) == 20

    done = site.client.get(back.headers["Location"])
    assert done.status_code == 302
    assert done.headers["Location"] == f"{PUBLIC}{_page(ref)}"
    flags = _flags(done, SESSION_COOKIE)
    assert "httponly" in flags and flags["samesite"] == "Lax" and flags["path"] == "/"
    assert "secure" not in flags  # http publicUrl
    assert flags["max-age"] == str(28800 - 60)  # the user token's lifetime, less a minute
    sealed = _cookies(done)[SESSION_COOKIE][SESSION_COOKIE].value
    [(login, token)] = site.fake.oauth.issued
    assert login == "alice" and token not in sealed and "alice" not in sealed
    assert _flags(done, STATE_COOKIE)["max-age"] == "0"  # the state is spent

    page = site.client.get(_page(ref))
    assert page.status_code == 200
    assert page.mimetype == "text/html"
    assert "@alice" in page.get_data(as_text=True)
    assert str(ref) in page.get_data(as_text=True)


def test_every_answer_carries_the_security_headers(site: Site) -> None:
    ref = site.item()
    answers = [site.client.get(_page(ref)), site.client.get("/auth/login")]
    site.sign_in("alice")
    answers += [site.client.get(_page(ref)), site.client.get(_page(ref) + "9"),
                site.client.get(_page(ref), headers={"Accept": "application/json"})]
    for answer in answers:
        assert answer.headers["Content-Security-Policy"] == view.CONTENT_SECURITY_POLICY
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
        assert answer.headers["Cache-Control"] == "no-store"
    assert [a.status_code for a in answers] == [302, 302, 200, 404, 200]


def test_json_at_the_same_url_is_the_page_model(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    answer = site.client.get(_page(ref), headers={"Accept": "application/json"})
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    expected = json.loads(json.dumps(view.page_model(site.world.services, ref), default=str))
    assert answer.get_json() == expected


def test_pending_only_is_passed_to_the_view(site: Site, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    ref = site.item()
    site.sign_in("alice")
    seen: list[tuple[bool, str | None]] = []
    real = view.render_page

    def spy(model, *, pending_only=False, viewer=None):  # noqa: ANN001, ANN202
        seen.append((pending_only, viewer))
        return real(model, pending_only=pending_only, viewer=viewer)

    monkeypatch.setattr(view, "render_page", spy)
    site.client.get(_page(ref) + "?pending=1")
    site.client.get(_page(ref))
    assert seen == [(True, "alice"), (False, "alice")]


def test_without_a_session_html_is_redirected_and_json_gets_401(site: Site) -> None:
    ref = site.item()
    html = site.client.get(_page(ref) + "?pending=1")
    assert html.status_code == 302
    assert html.headers["Location"] == (
        f"{PUBLIC}/auth/login?next={quote(_page(ref) + '?pending=1', safe='/')}")
    _no_item(html.get_data(as_text=True), ref)
    api = site.client.get(_page(ref), headers={"Accept": "application/json"})
    assert api.status_code == 401
    assert api.get_json() == {"error": "sign in with GitHub first",
                              "signIn": f"{PUBLIC}/auth/login?next={quote(_page(ref))}"}


def test_a_forged_or_foreign_cookie_is_no_session(site: Site) -> None:
    ref = site.item()
    site.client.set_cookie(SESSION_COOKIE, "gAAAAABforged-and-not-sealed-by-us")
    assert site.client.get(_page(ref)).status_code == 302
    # A sealed sign-in state is not a session: each purpose has its own key.
    start = site.client.get("/auth/login")
    state = _cookies(start)[STATE_COOKIE][STATE_COOKIE].value
    site.client.set_cookie(SESSION_COOKIE, state)
    assert site.client.get(_page(ref)).status_code == 302


def test_a_person_who_cannot_read_the_repository_gets_403_like_a_missing_one(
        site: Site) -> None:
    ref = site.item()
    site.fake.set_private(REPO, readers=["alice"])
    site.sign_in("mallory")
    hidden = site.client.get(_page(ref))
    assert hidden.status_code == 403
    _no_item(hidden.get_data(as_text=True), ref)
    missing = site.client.get(f"/items/acme/no-such-repo/{ref.number}")
    assert missing.status_code == 403
    assert missing.get_data() == hidden.get_data()  # no leak of which one exists
    as_json = site.client.get(_page(ref), headers={"Accept": "application/json"})
    assert as_json.status_code == 403 and set(as_json.get_json()) == {"error"}
    # a reader sees it
    site.sign_in("alice")
    assert site.client.get(_page(ref)).status_code == 200


def test_an_unknown_item_of_a_readable_repository_is_404(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    for path in (f"/items/acme/widgets/{ref.number + 40}", "/items/acme/widgets/0",
                 "/items/acme/../1", "/items/-x/widgets/1"):
        answer = site.client.get(path)
        assert answer.status_code == 404, path
        _no_item(answer.get_data(as_text=True), ref)


def test_sign_in_refused_on_github_is_a_403_with_nothing_of_the_item(site: Site) -> None:
    ref = site.item()
    site.fake.oauth_as("alice", approve=False)
    start = site.client.get(f"/auth/login?next={_page(ref)}")
    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    params = callback_params(back.headers["Location"])
    assert params["error"] == "access_denied"
    assert params["state"] == callback_params(start.headers["Location"])["state"]
    answer = site.client.get(back.headers["Location"])
    assert answer.status_code == 403
    assert SESSION_COOKIE not in _cookies(answer)
    _no_item(answer.get_data(as_text=True), ref)
    assert site.client.get(_page(ref)).status_code == 302  # still not signed in


def test_a_callback_not_started_by_this_browser_is_refused(site: Site) -> None:
    site.fake.oauth_as("alice")
    start = site.client.get("/auth/login")
    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    params = callback_params(back.headers["Location"])
    other = site.app.test_client()  # another browser: no state cookie
    assert other.get(back.headers["Location"]).status_code == 400
    forged = site.client.get(f"/auth/callback?code={params['code']}&state=guessed")
    assert forged.status_code == 403
    assert SESSION_COOKIE not in _cookies(forged)
    assert site.fake.oauth.issued == []  # the code was never traded


def test_a_reused_code_is_refused_by_github(site: Site) -> None:
    site.fake.oauth_as("alice")
    start = site.client.get("/auth/login")
    back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
    assert site.client.get(back.headers["Location"]).status_code == 200
    site.client.delete_cookie(SESSION_COOKIE)
    # The same callback again (a replayed URL) with a fresh state cookie for its state.
    again = site.client.get("/auth/login")
    state = callback_params(again.headers["Location"])["state"]
    code = callback_params(back.headers["Location"])["code"]
    replay = site.client.get(f"/auth/callback?code={code}&state={state}")
    assert replay.status_code == 403
    assert "bad_verification_code" in replay.get_data(as_text=True)
    assert SESSION_COOKIE not in _cookies(replay)


@pytest.mark.parametrize("target", ["//evil.example/items/a/b/1", "https://evil.example/",
                                    "/\\evil.example", "http:/evil.example", "items/a/b/1"])
def test_next_must_be_a_local_path(site: Site, target: str) -> None:
    done = site.sign_in("alice", quote(target, safe=""))
    assert done.status_code == 200  # the signed-in page, no redirect anywhere
    assert "Location" not in done.headers
    assert "@alice" in done.get_data(as_text=True)


def test_github_unreachable_during_the_check_is_503_and_not_cached(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    site.fake.fail_route("GET", "repo", 502)
    down = site.client.get(_page(ref))
    assert down.status_code == 503 and down.headers["Retry-After"] == "30"
    _no_item(down.get_data(as_text=True), ref)
    site.fake.rest_rate_limit(1, status=403)
    assert site.client.get(_page(ref)).status_code == 503  # a rate limit is no "no"
    assert site.client.get(_page(ref)).status_code == 200


def test_a_renamed_repository_s_page_follows_githubs_301(site: Site) -> None:
    # GitHub answers GET /repos/{old} with 301 to the repository's API address by id
    # (docs.github.com REST "Troubleshooting"): the page follows it, never a 503.
    ref = site.item()
    site.fake.set_private(REPO, readers=["alice"])
    site.fake.rename_repo(REPO, "acme/gadgets")
    site.sign_in("alice")
    assert site.client.get(_page(ref)).status_code == 200
    site.sign_in("mallory")  # the rule applies to the answer: she cannot see it
    hidden = site.client.get(_page(ref))
    assert hidden.status_code == 403
    _no_item(hidden.get_data(as_text=True), ref)


def test_access_answers_are_reused_per_person_and_repository(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    site.fake.reset_log()
    for _ in range(3):
        assert site.client.get(_page(ref)).status_code == 200
    assert site.fake.count(route="repo") == 1


def test_a_token_github_no_longer_accepts_signs_the_person_out(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    [(_, token)] = site.fake.oauth.issued
    del site.fake.user_tokens[token]  # revoked on GitHub
    answer = site.client.get(_page(ref))
    assert answer.status_code == 302 and "/auth/login?next=" in answer.headers["Location"]
    assert _flags(answer, SESSION_COOKIE)["max-age"] == "0"


def test_logout_revokes_the_token_and_drops_the_session(site: Site) -> None:
    ref = site.item()
    done = site.sign_in("alice")
    sealed = _cookies(done)[SESSION_COOKIE][SESSION_COOKIE].value
    assert site.client.get(_page(ref)).status_code == 200  # the access answer is cached
    assert site.client.get("/auth/logout").status_code == 405  # a link signs nobody out
    assert site.client.get(_page(ref)).status_code == 200
    out = site.client.post("/auth/logout")
    assert out.status_code == 200 and _flags(out, SESSION_COOKIE)["max-age"] == "0"
    [(_, token)] = site.fake.oauth.issued
    assert site.fake.oauth.revoked == [token] and token not in site.fake.user_tokens
    assert site.client.get(_page(ref)).status_code == 302
    # A copy of the signed-out cookie opens nothing: GitHub refuses its token (401).
    site.client.set_cookie(SESSION_COOKIE, sealed)
    replay = site.client.get(_page(ref))
    assert replay.status_code == 302 and "/auth/login?next=" in replay.headers["Location"]


def test_logout_still_signs_out_when_github_does_not_answer(site: Site) -> None:
    ref = site.item()
    site.sign_in("alice")
    site.fake.oauth.clients.clear()  # GitHub refuses the revocation (404)
    out = site.client.post("/auth/logout")
    assert out.status_code == 200 and _flags(out, SESSION_COOKIE)["max-age"] == "0"
    assert site.client.get(_page(ref)).status_code == 302


def test_secrets_never_reach_a_log_line(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    ref = site.item()
    caplog.set_level(logging.DEBUG)
    site.sign_in("alice", _page(ref))
    site.fake.fail_route("GET", "repo", 502)
    site.client.get(_page(ref))
    [(_, token)] = site.fake.oauth.issued
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "alice signed in" in text
    for secret in (token, CLIENT_SECRET, SESSION_SECRET):
        assert secret not in text


def test_https_public_url_makes_host_only_secure_cookies(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    public = "https://loopgate.example"
    site = make_site(fake, tmp_path, monkeypatch, sign_in_config(fake, public))
    try:
        start = site.client.get(f"{public}/auth/login")
        flags = _flags(start, "__Host-loopgate-state")
        assert "secure" in flags and flags["path"] == "/" and "domain" not in flags
        site.fake.oauth_as("alice")
        back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
        assert back.headers["Location"].startswith(f"{public}/auth/callback?code=")
        done = site.client.get(back.headers["Location"])
        flags = _flags(done, "__Host-loopgate-session")
        assert "secure" in flags and "httponly" in flags and flags["samesite"] == "Lax"
    finally:
        site.world.close()


def test_without_sign_in_the_routes_answer_404_and_never_content(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = make_site(fake, tmp_path, monkeypatch, {"publicUrl": PUBLIC}, oauth=False)
    try:
        ref = site.item()
        page = site.client.get(_page(ref))
        assert page.status_code == 404
        assert "server.signIn" in page.get_data(as_text=True)
        _no_item(page.get_data(as_text=True), ref)
        assert site.client.get("/auth/login").status_code == 404
        api = site.client.post("/api/simulate", json={"item": str(ref)})
        assert api.status_code == 404
    finally:
        site.world.close()


def test_without_public_url_or_sign_in_there_are_no_such_routes(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = make_site(fake, tmp_path, monkeypatch, {}, oauth=False)
    try:
        ref = site.item()
        answer = site.client.get(_page(ref))
        assert answer.status_code == 404
        assert "Content-Security-Policy" not in answer.headers  # Flask's own 404
    finally:
        site.world.close()


@pytest.mark.parametrize("variable", ["LOOPGATE_CLIENT_SECRET", "LOOPGATE_SESSION_SECRET"])
def test_a_missing_secret_is_a_config_error_at_start(
        fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        variable: str) -> None:
    from bot.web.server import build_wsgi_app
    from tests.bridges.conftest import SECRET, GitHubWorld

    world = GitHubWorld(fake, tmp_path, overrides={"server": sign_in_config(fake)}).build()
    try:
        for name, value in {"LOOPGATE_CLIENT_SECRET": CLIENT_SECRET,
                            "LOOPGATE_SESSION_SECRET": SESSION_SECRET}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv(variable)
        with pytest.raises(ConfigError) as raised:
            build_wsgi_app(world.services, world.dispatcher, webhook_secret=SECRET,
                           slack_routes=False)
        assert variable in str(raised.value)
        assert CLIENT_SECRET not in str(raised.value)
        assert SESSION_SECRET not in str(raised.value)
    finally:
        world.close()


def test_an_item_stored_unreadable_is_a_500_page_naming_it_never_its_value(
        site: Site, caplog: pytest.LogCaptureFixture) -> None:
    ref = site.item()
    site.sign_in("alice")
    error = site.unreadable(ref)
    with caplog.at_level(logging.WARNING, logger="bot.itempage"):
        page = site.client.get(_page(ref))
    assert page.status_code == 500 and page.mimetype == "text/html"
    assert "Retry-After" not in page.headers
    assert page.headers["Content-Security-Policy"] == view.CONTENT_SECURITY_POLICY
    text = page.get_data(as_text=True)
    assert f"loopgate cannot read its stored work item {ref}: " in text
    assert "column surface: not JSON (" in text
    assert "SECRET-SURFACE" not in text
    assert [r.getMessage() for r in caplog.records] == [f"item page: {error}"]
    as_json = site.client.get(_page(ref), headers={"Accept": "application/json"})
    assert as_json.status_code == 500
    assert as_json.get_json() == {"error": (
        f"loopgate cannot read its stored work item {ref}: {error.detail}; "
        "an operator must repair it (loopgate check names it)")}

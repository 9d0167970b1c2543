"""GitHub App authentication (issue 9 §2) against the loopback fake GitHub, through the real
PyGithub and gql clients: the App's JWT, installations found per repository (two
organisations), installation tokens refreshed before they expire and once after GitHub
refused one, a revoked installation failing closed, and loopgate's identity as the App's
bot. The fake's App side (JWT checks, token expiry) is exercised here too."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest
import requests

from bridges.github.app import AppCredentials, AppInstallations, repository_of
from bridges.github.client import GitHubClient
from bridges.github.errors import CredentialsError
from bridges.github.graphql import GraphQLClient
from bridges.github.tracker import GitHubTracker
from engine.identity import BOT, Actor
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from tests.bridges.conftest import GitHubWorld
from tests.fakes.github import FakeGitHub
from tests.fakes.github_app import (
    BAD_CREDENTIALS,
    JWT_EXPIRED,
    JWT_TOO_LONG,
    JWT_UNDECODABLE,
    FakeApp,
    generate_private_key,
)

APP_ID = 4242
KEY_ENV = "LOOPGATE_TEST_APP_KEY"
ACME = "acme/widgets"
GLOBEX = "globex/gadgets"
#: Short-lived tokens, so moving the fake's clock past one stays inside a JWT's lifetime.
TTL = 120


@pytest.fixture
def app() -> FakeApp:
    """The App registered on the fake (slug ``loopgate``), tokens valid for :data:`TTL` s."""
    return FakeApp(generate_private_key(), app_id=APP_ID, slug="loopgate", token_ttl=TTL)


@pytest.fixture
def gh(app: FakeApp) -> Iterator[FakeGitHub]:
    """The fake GitHub with the App installed on two organisations."""
    with FakeGitHub(app=app) as fake:
        fake.create_repo(ACME)
        fake.create_repo(GLOBEX)
        app.install("acme")
        app.install("globex")
        yield fake


def _source(gh: FakeGitHub, repos: tuple[str, ...] = (ACME, GLOBEX), **kwargs: object
            ) -> AppInstallations:
    return AppInstallations(gh.api_url, AppCredentials(APP_ID, generate_private_key(), KEY_ENV),
                            repos, **kwargs)  # type: ignore[arg-type]


def _clients(gh: FakeGitHub, source: AppInstallations) -> tuple[GitHubClient, GraphQLClient]:
    return (GitHubClient(gh.api_url, auth=source, seconds_between_writes=0),
            GraphQLClient(gh.graphql_url, auth=source))


def _installation(app: FakeApp, account: str) -> int:
    return next(i.id for i in app.installations.values() if i.account == account)


# -- the App through PyGithub and gql ---------------------------------------------------------
def test_an_app_posts_as_its_bot_and_reads_edits_through_graphql(gh: FakeGitHub,
                                                                  app: FakeApp) -> None:
    rest, graphql = _clients(gh, _source(gh))
    number = gh.create_issue(ACME, "t", author="alice")
    posted = rest.add_comment("acme", "widgets", number, "hello")
    assert (posted.author, posted.author_type) == ("loopgate[bot]", BOT)
    assert gh.comments[posted.id].author == "loopgate[bot]"
    found = graphql.comment_edits([posted.node_id])[posted.node_id]
    assert found.author_actor == Actor("loopgate", BOT, posted.author_id)  # GraphQL: no [bot]
    assert found.author_actor.same_as(posted.actor)
    assert [t.installation_id for t in app.minted] == [_installation(app, "acme")]


def test_loopgate_learns_its_identity_from_the_app(gh: FakeGitHub) -> None:
    client, _ = _clients(gh, _source(gh))
    me = client.viewer()
    assert me == Actor("loopgate[bot]", BOT, gh._user("loopgate[bot]", "Bot")["id"])
    assert gh.count(route="app") == 1 and gh.count(route="user-by-login") == 1
    assert gh.count(route="user") == 0  # an installation token cannot read /user


def test_the_credentials_declare_which_app_owns_loopgate_check_runs(gh: FakeGitHub) -> None:
    # Issue 20 §2: TokenSource.app_id is declared (a check run is loopgate's own only when
    # its app.id is this App's, platform-facts F2); a token has no App behind it.
    client, _ = _clients(gh, _source(gh))
    assert client.auth.app_id == APP_ID
    assert GitHubClient(gh.api_url, "a-token").auth.app_id is None


def test_repositories_in_two_organisations_use_their_own_installation(
        gh: FakeGitHub, app: FakeApp) -> None:
    source = _source(gh)
    rest, graphql = _clients(gh, source)
    a = rest.add_comment("acme", "widgets", gh.create_issue(ACME, "a"), "in acme")
    g = rest.add_comment("globex", "gadgets", gh.create_issue(GLOBEX, "g"), "in globex")
    assert gh.count(route="repo-installation") == 2
    assert sorted(t.installation_id for t in app.minted) == sorted(
        [_installation(app, "acme"), _installation(app, "globex")])
    assert source.scopes() == [ACME, GLOBEX]
    # one installation's token does not see the other's repositories; both are answered
    found = graphql.comment_edits([a.node_id, g.node_id])
    assert {e.body for e in found.values()} == {"in acme", "in globex"}
    assert len(rest.list_comments("globex", "gadgets", 1)) == 1
    assert app.refusals == []


def test_an_installation_token_sees_only_its_repositories(gh: FakeGitHub, app: FakeApp) -> None:
    minted = app.mint(_installation(app, "acme"))
    assert minted is not None
    headers = {"Authorization": f"token {minted['token']}"}
    gh.create_issue(GLOBEX, "g")
    own = requests.get(f"{gh.api_url}/repos/{ACME}", headers=headers, timeout=5)
    other = requests.get(f"{gh.api_url}/repos/{GLOBEX}/issues/1", headers=headers, timeout=5)
    me = requests.get(f"{gh.api_url}/user", headers=headers, timeout=5)
    assert (own.status_code, other.status_code, me.status_code) == (200, 404, 403)
    assert me.json()["message"] == "Resource not accessible by integration"


# -- tokens expire: refreshed before, and once after GitHub refused one -----------------------
def test_a_token_near_its_expiry_is_replaced_before_it_is_used(gh: FakeGitHub,
                                                               app: FakeApp) -> None:
    now = [datetime.now(UTC)]
    source = _source(gh, (ACME,), clock=lambda: now[0])
    rest, graphql = _clients(gh, source)
    number = gh.create_issue(ACME, "t")
    rest.add_comment("acme", "widgets", number, "one")
    now[0] += timedelta(seconds=TTL - 29)  # inside the last quarter: replace it now
    rest.add_comment("acme", "widgets", number, "two")
    graphql.closing_pull_requests("acme", "widgets", number)
    assert len(app.minted) == 2 and source.minted == 2
    assert app.refusals == []  # GitHub never saw an expired token


def test_an_expired_token_is_refreshed_once_and_nothing_is_lost(gh: FakeGitHub,
                                                                app: FakeApp) -> None:
    source = _source(gh, (ACME,), refresh_margin=0)
    rest, graphql = _clients(gh, source)
    number = gh.create_issue(ACME, "t")
    first = rest.add_comment("acme", "widgets", number, "before")
    gh.advance(TTL + 1)  # GitHub's clock: the token expired, loopgate's clock disagrees
    second = rest.add_comment("acme", "widgets", number, "after")
    assert [c.body for c in gh.comments_on(ACME, number)] == ["before", "after"]
    assert app.refusals == [("comment-create", BAD_CREDENTIALS)]
    gh.advance(TTL + 1)  # the GraphQL transport refreshes the same way
    found = graphql.comment_edits([first.node_id, second.node_id])
    assert [e.body for e in found.values()] == ["before", "after"]
    assert len(app.minted) == 3 and len(app.refusals) == 2


def test_a_revoked_installation_fails_closed_after_one_refresh(
        gh: FakeGitHub, app: FakeApp, caplog: pytest.LogCaptureFixture) -> None:
    source = _source(gh, (ACME,))
    rest, graphql = _clients(gh, source)
    tracker = GitHubTracker(rest, graphql, repos=(ACME,))
    ref = WorkItemRef("acme", "widgets", gh.create_issue(ACME, "t"))
    tracker.add_comment(ref, "posted")
    app.revoke(_installation(app, "acme"))
    with caplog.at_level(logging.INFO), pytest.raises(TrackerError) as refused:
        tracker.list_comments(ref)
    assert isinstance(refused.value.__cause__, CredentialsError)
    assert "the installation does not exist" in str(refused.value)
    assert tracker.failures == 1
    assert "token refused by GitHub; minting a new one" in caplog.text
    with pytest.raises(TrackerError):
        tracker.comment_edits([gh.comments_on(ACME, ref.number)[0].id])
    assert len(app.minted) == 1  # a revoked installation mints nothing more


# -- the fake checks JWTs like GitHub ---------------------------------------------------------
def _jwt(iat: int, exp: int, iss: object = APP_ID, key: str | None = None) -> str:
    return jwt.encode({"iat": iat, "exp": exp, "iss": str(iss)}, key or generate_private_key(),
                      algorithm="RS256")


@pytest.mark.parametrize(("claims", "status", "message"), [
    ((-60, 300, APP_ID), 200, None),
    ((-700, -100, APP_ID), 401, JWT_EXPIRED),
    ((-60, 600, APP_ID), 401, JWT_TOO_LONG),
    ((-60, 300, 999), 404, "Integration not found"),
])
def test_the_fake_checks_jwt_times_and_issuer(gh: FakeGitHub, claims: tuple[int, int, object],
                                              status: int, message: str | None) -> None:
    now = int(gh.now().timestamp())
    token = _jwt(now + claims[0], now + claims[1], claims[2])
    answer = requests.get(f"{gh.api_url}/app", headers={"Authorization": f"Bearer {token}"},
                          timeout=5)
    assert answer.status_code == status
    if message:
        assert answer.json()["message"] == message
    else:
        assert answer.json()["slug"] == "loopgate" and answer.json()["id"] == APP_ID


def test_the_fake_refuses_a_jwt_signed_with_another_key(gh: FakeGitHub) -> None:
    now = int(gh.now().timestamp())
    token = _jwt(now - 60, now + 300, key=generate_private_key(seed=1))
    answer = requests.get(f"{gh.api_url}/app", headers={"Authorization": f"Bearer {token}"},
                          timeout=5)
    assert (answer.status_code, answer.json()["message"]) == (401, JWT_UNDECODABLE)


def test_the_fake_refuses_a_token_where_a_jwt_is_needed_and_a_jwt_elsewhere(
        gh: FakeGitHub) -> None:
    now = int(gh.now().timestamp())
    as_pat = requests.get(f"{gh.api_url}/app", headers={"Authorization": f"token {gh.token}"},
                          timeout=5)
    as_jwt = requests.get(f"{gh.api_url}/repos/{ACME}",
                          headers={"Authorization": f"Bearer {_jwt(now - 60, now + 300)}"},
                          timeout=5)
    assert (as_pat.status_code, as_pat.json()["message"]) == (401, JWT_UNDECODABLE)
    assert (as_jwt.status_code, as_jwt.json()["message"]) == (401, BAD_CREDENTIALS)


def test_the_fake_mints_tokens_for_an_hour_by_default(gh: FakeGitHub) -> None:
    hourly = FakeApp(generate_private_key(), app_id=7)
    hourly.fake = gh
    installation = hourly.install("acme")
    minted = hourly.mint(installation)
    assert minted is not None and minted["token"].startswith("ghs_")
    expires = datetime.strptime(minted["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert expires - gh.now() == timedelta(hours=1)
    hourly.revoke(installation)
    assert hourly.mint(installation) is None


def test_repository_of_names_the_repository_of_a_path_or_link() -> None:
    assert repository_of("/repos/Acme/Widgets/issues/3/comments") == "acme/widgets"
    assert repository_of("https://ghe.example/api/v3/repos/a/b/issues?page=2") == "a/b"
    assert repository_of("/users/loopgate%5Bbot%5D") == ""


# -- the whole bridge in App mode --------------------------------------------------------------
@pytest.fixture
def app_world(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
              ) -> Iterator[GitHubWorld]:
    """The real services over the fake in App mode: no token variable at all."""
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv(KEY_ENV, generate_private_key())
    monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
    world = GitHubWorld(gh, tmp_path, {"github": {
        "repos": [ACME], "app": {"appId": APP_ID, "privateKeyEnv": KEY_ENV}}}).build()
    try:
        yield world
    finally:
        world.close()


def test_an_app_walks_to_the_spec_quiz_and_its_tick_passes_across_a_token_expiry(
        app_world: GitHubWorld, app: FakeApp) -> None:
    settings = app_world.services.settings
    assert (settings.bot_login, settings.bot_kind) == ("loopgate[bot]", BOT)
    assert settings.bot_id == app_world.fake._user("loopgate[bot]", "Bot")["id"]
    ref = app_world.issue()
    quiz = app_world.to_spec_quiz(ref)
    assert quiz.author == "loopgate[bot]" and quiz.author_type == BOT
    app_world.fake.advance(TTL + 1)  # the installation token expires mid-walk
    app_world.tick(quiz, "alice")
    app_world.poll()
    state = app_world.state(ref)
    assert state.current_node == "tasks-breakdown", state.parked
    assert state.decisions["spec-quiz"]["attestedBy"] == "@alice"
    assert len(app.refusals) >= 1 and all(r[1] == BAD_CREDENTIALS for r in app.refusals)


def test_the_learned_app_identity_is_cached_per_app(app_world: GitHubWorld) -> None:
    assert app_world.fake.count(route="app") == 1
    app_world.restart()
    assert app_world.services.settings.bot_login == "loopgate[bot]"
    assert app_world.fake.count(route="app") == 1


def test_a_refused_lookup_leaves_the_quiz_waiting_with_a_logged_reason(
        app_world: GitHubWorld, app: FakeApp, caplog: pytest.LogCaptureFixture) -> None:
    ref = app_world.issue()
    quiz = app_world.to_spec_quiz(ref)
    app_world.tick(quiz, "alice")
    app.revoke(_installation(app, "acme"))
    with caplog.at_level(logging.INFO):
        app_world.poll()
    assert app_world.state(ref).current_node == "spec-quiz"
    assert "the installation does not exist" in caplog.text


# -- secrets never leave ----------------------------------------------------------------------
def _secrets(app: FakeApp) -> list[str]:
    body = generate_private_key().splitlines()[1:-1]
    return ["".join(body), *body, *(t.value for t in app.minted)]


def _texts(caplog: pytest.LogCaptureFixture, world: GitHubWorld,
           raised: list[BaseException], ref: WorkItemRef) -> list[str]:
    texts = []
    for record in caplog.records:
        texts.append(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            texts.append(repr(record.exc_info[1]))
        texts.append(record.exc_text or "")
    for exc in raised:
        texts += [str(exc), repr(exc), str(exc.__cause__ or ""), repr(exc.__cause__)]
    texts += [c.body for c in world.fake.comments.values()]
    texts += [repr(e) for e in world.services.store.events(ref)]
    texts.append(repr(world.state(ref).to_document()))
    return texts


def test_the_key_and_the_tokens_never_reach_a_log_line_an_error_or_a_comment(
        app_world: GitHubWorld, app: FakeApp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub logs bodies at DEBUG
    raised: list[BaseException] = []
    ref = app_world.issue()
    quiz = app_world.to_spec_quiz(ref)
    app_world.fake.advance(TTL + 1)  # a refused token, then a fresh one
    app_world.tick(quiz, "alice")
    app_world.poll()
    app.revoke(_installation(app, "acme"))  # now every call fails
    for attempt in (lambda: app_world.services.ports.tracker.list_comments(ref),
                    lambda: app_world.services.ports.tracker.comment_edits([quiz.id]),
                    lambda: app_world.services.credentials.verify()):
        try:
            attempt()
        except Exception as exc:  # noqa: BLE001 - every failure's text is checked below
            raised.append(exc)
    app_world.poll()
    assert len(raised) == 3 and len(app.minted) >= 2
    assert any("access_tokens" in r.getMessage() for r in caplog.records)  # bodies logged
    texts = _texts(caplog, app_world, raised, ref)
    for secret in _secrets(app):
        assert not [t for t in texts if secret in t], "a secret leaked"
    assert "BEGIN" not in repr(AppCredentials(APP_ID, generate_private_key(), KEY_ENV))


def test_a_reinstalled_app_is_found_again_without_a_restart(gh: FakeGitHub, app: FakeApp) -> None:
    rest, _ = _clients(gh, _source(gh, (ACME,)))
    number = gh.create_issue(ACME, "t")
    rest.add_comment("acme", "widgets", number, "before")
    app.revoke(_installation(app, "acme"))
    with pytest.raises(CredentialsError):
        rest.add_comment("acme", "widgets", number, "while uninstalled")
    again = app.install("acme")
    rest.add_comment("acme", "widgets", number, "after")
    assert [c.body for c in gh.comments_on(ACME, number)] == ["before", "after"]
    assert app.minted[-1].installation_id == again
    assert gh.count(route="repo-installation") == 2


def test_a_signed_delivery_names_the_installation_so_no_lookup_is_needed(
        app_world: GitHubWorld, app: FakeApp) -> None:
    # Issue 9 §2: "Webhook deliveries carry installation.id: use it."
    app_world.serve()
    ref = app_world.issue()
    credentials = app_world.services.credentials
    credentials.learn(ACME, 0)  # forget what start-up found: the delivery must say it
    before = app_world.fake.count(route="repo-installation")
    comment = app_world.comment(ref, "hello")
    answered = app_world.webhook("issue_comment", "created", ref, comment_id=comment.id,
                                 sender="alice")
    assert answered.status_code == 202
    assert credentials.installation_for(ACME) == _installation(app, "acme")
    assert app_world.fake.count(route="repo-installation") == before  # no lookup made

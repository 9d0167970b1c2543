"""Issue 22 §2, the pieces of access: ``server.signIn`` read with its secrets, sealed
cookies, local-path ``next``, the access cache, and the calls made with a person's token
against the fake GitHub (which answers as GitHub does: platform-facts F6)."""

from __future__ import annotations

import pytest
import requests

from bot.config import validate_mapping
from bot.itempage.access import (
    AccessCache,
    Gatekeeper,
    GitHubUnavailable,
    GitHubUsers,
    Grant,
    Sealer,
    Session,
    SignIn,
    SignInRefused,
    TokenRejected,
    Verdict,
    safe_next,
)
from bot.ops.logging_setup import secret_values
from engine.errors import ConfigError
from tests.bot.itempage.conftest import (
    CLIENT_ID,
    CLIENT_SECRET,
    SESSION_SECRET,
    SIGN_IN_ENV,
    sign_in_config,
)
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub

PUBLIC = "http://127.0.0.1:9"


def _signin(fake: FakeGitHub, **extra: object) -> SignIn:
    config = validate_mapping({"github": {"apiUrl": fake.api_url},
                               "server": sign_in_config(fake, PUBLIC, **extra)})
    found = SignIn.from_config(config, SIGN_IN_ENV)
    assert found is not None
    return found


def _code(fake: FakeGitHub, login: str, signin: SignIn) -> str:
    fake.oauth_as(login)
    users = GitHubUsers(signin)
    answer = requests.get(users.authorize_url("s1"), allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    return answer.headers["Location"].split("code=")[1].split("&")[0]


def test_sign_in_config_reads_its_secrets_from_the_named_variables(fake: FakeGitHub) -> None:
    signin = _signin(fake, sessionHours=2, accessCacheSeconds=5)
    assert (signin.client_id, signin.client_secret) == (CLIENT_ID, CLIENT_SECRET)
    assert signin.session_secret == SESSION_SECRET
    assert (signin.web_url, signin.api_url) == (fake.url, fake.api_url)
    assert signin.redirect_uri == f"{PUBLIC}/auth/callback"
    assert (signin.session_seconds, signin.access_cache_seconds) == (7200.0, 5.0)
    assert not signin.secure and signin.origin == PUBLIC
    assert CLIENT_SECRET not in repr(signin) and SESSION_SECRET not in repr(signin)


def test_sign_in_is_off_without_a_client_id() -> None:
    assert SignIn.from_config(validate_mapping({"server": {"publicUrl": PUBLIC}}), {}) is None
    assert SignIn.from_config(validate_mapping({}), {}) is None


@pytest.mark.parametrize(("server", "env", "message"), [
    ({"signIn": {"clientId": "x"}}, SIGN_IN_ENV, "server.signIn needs server.publicUrl"),
    ({"publicUrl": PUBLIC, "signIn": {"clientId": "x"}},
     {"LOOPGATE_SESSION_SECRET": SESSION_SECRET}, "LOOPGATE_CLIENT_SECRET"),
    ({"publicUrl": PUBLIC, "signIn": {"clientId": "x", "sessionSecretEnv": "MY_KEY"}},
     {"LOOPGATE_CLIENT_SECRET": CLIENT_SECRET}, "MY_KEY (server.signIn.sessionSecretEnv)"),
    ({"publicUrl": PUBLIC, "signIn": {"clientId": "x"}},
     {"LOOPGATE_CLIENT_SECRET": CLIENT_SECRET, "LOOPGATE_SESSION_SECRET": "too-short"},
     "shorter than 32 characters"),
])
def test_sign_in_config_errors_name_the_key_never_a_value(
        server: dict, env: dict, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        SignIn.from_config(validate_mapping({"server": server}), env)
    assert message in str(raised.value)
    assert "too-short" not in str(raised.value) and CLIENT_SECRET not in str(raised.value)


def test_unknown_sign_in_keys_are_config_errors() -> None:
    with pytest.raises(ConfigError) as raised:
        validate_mapping({"server": {"signIn": {"clientId": "x", "clientSecret": "inline"}}})
    assert "server.signIn.clientSecret" in str(raised.value)


def test_the_sign_in_secrets_are_hidden_in_logs() -> None:
    config = validate_mapping({"server": {"publicUrl": PUBLIC, "signIn": {"clientId": "x"}}})
    assert set(secret_values(config, SIGN_IN_ENV)) == {CLIENT_SECRET, SESSION_SECRET}


def test_sealed_documents_open_only_for_their_purpose_and_key() -> None:
    sealer = Sealer(SESSION_SECRET)
    sealed = sealer.seal("session", {"l": "alice", "t": "ghu_secret"})
    assert "alice" not in sealed and "ghu_secret" not in sealed
    assert sealer.open("session", sealed, 60) == {"l": "alice", "t": "ghu_secret"}
    assert sealer.open("state", sealed, 60) is None
    assert Sealer(SESSION_SECRET + "x").open("session", sealed, 60) is None
    tampered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    assert sealer.open("session", tampered, 60) is None
    assert sealer.open("session", "", 60) is None and sealer.open("session", None, 60) is None


def test_a_session_ends_when_it_expires(fake: FakeGitHub) -> None:
    now = [1_000_000.0]
    gate = Gatekeeper(_signin(fake, sessionHours=1), clock=lambda: now[0])
    session, sealed, age = gate.new_session("alice", Grant("ghu_x", expires_in=28800))
    assert age == 3600 and session.expires == now[0] + 3600
    assert gate.session(sealed) == session
    now[0] += 3601
    assert gate.session(sealed) is None
    # a token that expires sooner than sessionHours ends the session sooner
    _, _, age = gate.new_session("alice", Grant("ghu_y", expires_in=600))
    assert age == 540
    assert Session.from_json({"l": "alice", "t": "", "x": now[0] + 60}, now[0]) is None


@pytest.mark.parametrize(("value", "safe"), [
    ("/items/acme/widgets/7", True), ("/items/acme/widgets/7?pending=1", True),
    ("//evil.example/x", False), ("https://evil.example/", False), ("/\\evil.example", False),
    ("http:/evil", False), ("items/x", False), ("/items/a b", False), ("/x\r\nSet-Cookie:", False),
    ("", False), (None, False), ("/" + "a" * 3000, False),
])
def test_next_is_a_local_path_only(value: str | None, safe: bool) -> None:
    assert safe_next(value) == (value if safe else None)


def test_the_access_cache_expires_and_stays_bounded() -> None:
    now = [0.0]
    cache = AccessCache(60, size=2, clock=lambda: now[0])
    cache.put("Alice", "acme", "widgets", True)
    assert cache.get("alice", "ACME", "widgets") is True
    cache.put("bob", "acme", "widgets", False)
    assert cache.get("bob", "acme", "widgets") is False
    cache.put("carol", "acme", "widgets", True)  # the oldest (alice) goes
    assert cache.get("alice", "acme", "widgets") is None
    now[0] = 61
    assert cache.get("bob", "acme", "widgets") is None
    cache.forget("CAROL")
    assert cache.get("carol", "acme", "widgets") is None
    off = AccessCache(0)
    off.put("alice", "acme", "widgets", True)
    assert off.get("alice", "acme", "widgets") is None


def test_the_code_exchange_and_the_login_follow_githubs_flow(fake: FakeGitHub) -> None:
    signin = _signin(fake)
    fake.add_oauth_client(CLIENT_ID, CLIENT_SECRET, signin.redirect_uri)
    users = GitHubUsers(signin)
    code = _code(fake, "Alice", signin)
    grant = users.exchange(code)
    assert grant.token.startswith("ghu_") and grant.expires_in == 28800
    assert users.login(grant.token) == "Alice"
    with pytest.raises(SignInRefused) as reused:
        users.exchange(code)  # one exchange per code
    assert reused.value.code == "bad_verification_code"


def test_a_wrong_client_secret_is_githubs_incorrect_client_credentials(
        fake: FakeGitHub) -> None:
    signin = _signin(fake)
    fake.add_oauth_client(CLIENT_ID, "another secret", signin.redirect_uri)
    with pytest.raises(SignInRefused) as refused:
        GitHubUsers(signin).exchange(_code(fake, "alice", signin))
    assert refused.value.code == "incorrect_client_credentials"
    assert CLIENT_SECRET not in str(refused.value)


def test_an_unregistered_redirect_uri_comes_back_as_redirect_uri_mismatch(
        fake: FakeGitHub) -> None:
    signin = _signin(fake)
    fake.add_oauth_client(CLIENT_ID, CLIENT_SECRET, "https://elsewhere.example/cb")
    fake.oauth_as("alice")
    answer = requests.get(GitHubUsers(signin).authorize_url("s1"), allow_redirects=False,
                          timeout=10)
    location = answer.headers["Location"]
    assert location.startswith("https://elsewhere.example/cb?error=redirect_uri_mismatch")
    assert "state=s1" in location and "code=" not in location


def test_can_read_asks_github_with_the_persons_token(fake: FakeGitHub) -> None:
    signin = _signin(fake)
    users = GitHubUsers(signin)
    alice, mallory = fake.add_user_token("alice"), fake.add_user_token("mallory")
    assert users.can_read(mallory, "acme", "widgets") is True  # public
    fake.set_private(REPO, readers=["Alice"])
    assert users.can_read(alice, "acme", "widgets") is True
    assert users.can_read(mallory, "acme", "widgets") is False  # 404 to her
    assert users.can_read(alice, "acme", "no-such-repo") is False
    with pytest.raises(TokenRejected):
        users.can_read("ghu_unknown", "acme", "widgets")
    fake.fail_route("GET", "repo", 502)
    with pytest.raises(GitHubUnavailable):
        users.can_read(alice, "acme", "widgets")
    fake.rest_rate_limit(1, status=403)
    with pytest.raises(GitHubUnavailable):
        users.can_read(alice, "acme", "widgets")
    fake.fail_route("GET", "repo", 403, message="Resource protected by organization SAML "
                                                "enforcement.")
    assert users.can_read(alice, "acme", "widgets") is False


def test_github_not_answering_is_unavailable_never_a_yes(fake: FakeGitHub) -> None:
    signin = _signin(fake)
    users = GitHubUsers(signin)
    token = fake.add_user_token("alice")
    fake.stop()
    with pytest.raises(GitHubUnavailable) as raised:
        users.can_read(token, "acme", "widgets")
    assert token not in str(raised.value)
    gate = Gatekeeper(signin, users)
    assert gate.verdict(Session("alice", token, 2e9), "acme", "widgets") is Verdict.UNAVAILABLE


# -- a renamed repository: GitHub answers 301 to its address by id ---------------------------
def test_a_renamed_repository_is_followed_once_and_the_rule_applied(fake: FakeGitHub) -> None:
    # docs.github.com REST "Troubleshooting" / "Best practices": GET /repos/{old} answers
    # 301 with a Location on the API (/repositories/<id>); the page follows it.
    signin = _signin(fake)
    users = GitHubUsers(signin)
    alice, mallory = fake.add_user_token("alice"), fake.add_user_token("mallory")
    fake.set_writers(REPO, ["alice"])
    repo = fake.rename_repo(REPO, "acme/gadgets")
    moved = requests.get(f"{fake.api_url}/repos/{REPO}", allow_redirects=False, timeout=10,
                         headers={"Authorization": f"Bearer {alice}"})
    assert moved.status_code == 301
    assert moved.headers["Location"] == f"{fake.api_url}/repositories/{repo.id}"
    assert users.access(alice, "acme", "widgets") == (True, True)
    assert users.access(mallory, "acme", "widgets") == (True, False)
    gate = Gatekeeper(signin, users)
    assert gate.verdict(Session("alice", alice, 2e9), "acme", "widgets") is Verdict.READ
    # the rule holds on the answer: a private repository she cannot see is no
    fake.set_private("acme/gadgets", readers=["alice"])
    assert users.can_read(mallory, "acme", "widgets") is False
    assert users.can_read(alice, "acme", "widgets") is True
    assert [r.route for r in fake.requests][-2:] == ["repo", "repository-by-id"]


@pytest.mark.parametrize("location", [
    "https://evil.example/repositories/1",  # another host: the token never goes there
    "/somewhere-else/repositories/1",  # the right host, off the API's path (GHES /api/v3)
    # Under the API's prefix as written, off it once dot segments are removed (requests
    # and RFC 3986 §5.2.4 remove them: /login/oauth/access_token is what would be asked).
    "/api/v3/../../login/oauth/access_token",
    "/api/v3/repos/%2e%2e/%2E%2E/%2e%2e/login",  # the same, percent-encoded
    "",  # no Location at all
])
def test_a_redirect_off_the_api_is_not_followed_and_answers_503(
        fake: FakeGitHub, location: str) -> None:
    signin = _signin(fake)
    ghes = SignIn(signin.client_id, signin.client_secret, signin.session_secret,
                  signin.web_url, f"{fake.api_url}/api/v3", signin.public_url)
    http = _Redirecting(location)
    users = GitHubUsers(ghes, http=http)
    with pytest.raises(GitHubUnavailable) as raised:
        users.can_read("ghu_alice", "acme", "widgets")
    assert "not followed" in str(raised.value) and "ghu_alice" not in str(raised.value)
    assert http.asked == [f"{fake.api_url}/api/v3/repos/acme/widgets"]  # asked nowhere else
    gate = Gatekeeper(ghes, GitHubUsers(ghes, http=_Redirecting(location)))
    assert gate.verdict(Session("alice", "ghu_alice", 2e9), "acme",
                        "widgets") is Verdict.UNAVAILABLE


def test_a_second_redirect_is_not_followed(fake: FakeGitHub) -> None:
    signin = _signin(fake)
    users = GitHubUsers(signin, http=_Redirecting(f"{fake.api_url}/repositories/9", times=2))
    with pytest.raises(GitHubUnavailable, match="redirected twice"):
        users.can_read("ghu_alice", "acme", "widgets")


class _Redirecting:
    """Answers every GET with a 301 to ``location`` (``times`` times), then 200; records
    where it was asked (a stand-in for a misbehaving or hostile redirect)."""

    def __init__(self, location: str, times: int = 1) -> None:
        self.location, self.times = location, times
        self.asked: list[str] = []

    def request(self, method: str, url: str, **kwargs: object) -> requests.Response:
        self.asked.append(url)
        answer = requests.Response()
        if len(self.asked) <= self.times:
            answer.status_code = 301
            if self.location:
                answer.headers["Location"] = self.location
        else:
            answer.status_code = 200
            answer._content = b'{"permissions": {"pull": true}}'
        return answer

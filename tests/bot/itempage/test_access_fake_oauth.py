"""The fake GitHub's web sign-in behaves as GitHub documents it (tests/fakes/github_oauth.py;
docs.github.com "Generating a user access token for a GitHub App", "Troubleshooting
authorization request errors", "Troubleshooting OAuth app access token request errors"),
independently of loopgate's client."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import requests

from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub

CALLBACK = "https://loopgate.example/auth/callback"


def _authorize(fake: FakeGitHub, **params: str) -> requests.Response:
    return requests.get(f"{fake.url}/login/oauth/authorize", params=params,
                        allow_redirects=False, timeout=10)


def _query(response: requests.Response) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(response.headers["Location"]).query).items()}


def test_authorize_pages(fake: FakeGitHub) -> None:
    fake.add_oauth_client("Iv1.a", "s3cret", CALLBACK)
    assert _authorize(fake, client_id="Iv1.unknown").status_code == 404
    nobody = _authorize(fake, client_id="Iv1.a", state="x")
    assert nobody.status_code == 200 and "Sign in to GitHub" in nobody.text
    fake.oauth_as("alice", approve=False)
    denied = _authorize(fake, client_id="Iv1.a", state="x")
    assert denied.status_code == 302 and denied.headers["Location"].startswith(CALLBACK + "?")
    assert _query(denied) == {
        "error": "access_denied", "state": "x",
        "error_description": "The user has denied your application access.",
        "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-"
                     "authorization-request-errors/#access-denied"}
    fake.oauth_as("alice")
    approved = _authorize(fake, client_id="Iv1.a")  # no state given: none comes back
    assert set(_query(approved)) == {"code"}


def test_the_token_exchange_answers_errors_with_200_and_form_encoding_by_default(
        fake: FakeGitHub) -> None:
    fake.add_oauth_client("Iv1.a", "s3cret", CALLBACK, expiring=False)
    fake.oauth_as("bob")
    code = _query(_authorize(fake, client_id="Iv1.a", redirect_uri=CALLBACK))["code"]
    url = f"{fake.url}/login/oauth/access_token"
    wrong = requests.post(url, data={"client_id": "Iv1.a", "client_secret": "nope",
                                     "code": code}, timeout=10)
    assert wrong.status_code == 200
    assert parse_qs(wrong.text)["error"] == ["incorrect_client_credentials"]
    moved = requests.post(url, data={"client_id": "Iv1.a", "client_secret": "s3cret",
                                     "code": code, "redirect_uri": "https://x.example/cb"},
                          headers={"Accept": "application/json"}, timeout=10)
    assert moved.json()["error"] == "redirect_uri_mismatch"
    good = requests.post(url, json={"client_id": "Iv1.a", "client_secret": "s3cret",
                                    "code": code}, headers={"Accept": "application/json"},
                         timeout=10)
    token = good.json()["access_token"]
    assert token.startswith("ghu_") and set(good.json()) == {"access_token", "scope",
                                                             "token_type"}
    again = requests.post(url, json={"client_id": "Iv1.a", "client_secret": "s3cret",
                                     "code": code}, headers={"Accept": "application/json"},
                          timeout=10)
    assert again.json()["error"] == "bad_verification_code"
    me = requests.get(f"{fake.api_url}/user", headers={"Authorization": f"Bearer {token}"},
                      timeout=10)
    assert me.json()["login"] == "bob"
    fake.set_private(REPO, readers=["alice"])
    hidden = requests.get(f"{fake.api_url}/repos/{REPO}/issues",
                          headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert hidden.status_code == 404 and hidden.json()["message"] == "Not Found"
    own = requests.get(f"{fake.api_url}/repos/{REPO}",
                       headers={"Authorization": f"token {fake.token}"}, timeout=10)
    assert own.status_code == 200 and own.json()["private"] is True


def test_an_app_token_is_revoked_with_the_clients_basic_credentials(fake: FakeGitHub) -> None:
    fake.add_oauth_client("Iv1.a", "s3cret", CALLBACK)
    fake.oauth_as("bob")
    code = _query(_authorize(fake, client_id="Iv1.a"))["code"]
    token = requests.post(f"{fake.url}/login/oauth/access_token",
                          data={"client_id": "Iv1.a", "client_secret": "s3cret", "code": code},
                          headers={"Accept": "application/json"},
                          timeout=10).json()["access_token"]
    url = f"{fake.api_url}/applications/Iv1.a/token"
    wrong = requests.delete(url, auth=("Iv1.a", "nope"), json={"access_token": token},
                            timeout=10)
    assert wrong.status_code == 404
    assert requests.get(f"{fake.api_url}/user", headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 200
    gone = requests.delete(url, auth=("Iv1.a", "s3cret"), json={"access_token": token},
                           timeout=10)
    assert gone.status_code == 204 and fake.oauth.revoked == [token]
    after = requests.get(f"{fake.api_url}/user", headers={"Authorization": f"Bearer {token}"},
                         timeout=10)
    assert after.status_code == 401 and after.json()["message"] == "Bad credentials"

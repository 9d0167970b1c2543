"""A GitHub token revoked while ``loopgate serve`` runs: ``/readyz`` and ``loopgate status``
fail the ``github_auth`` check (naming 401, when the first refusal came and the token's
variable) once the poller's last 3 requests were all answered ``401 Bad credentials``, and
pass again with GitHub's first accepted request (a new token). An effect GitHub refuses
with 401 waits without spending a try, and ``loopgate effects`` says why."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from tests import forkserver
from tests.e2e.stack import REPO, Home, ServeProcess, loopgate_argv, wait_until
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Home, ServeProcess]]:
    with FakeGitHub() as gh, FakeSlack() as slack:
        gh.create_repo(REPO)
        home = Home(tmp_path, gh, slack, poll_interval=1).write()
        server = ServeProcess(home).start()
        try:
            yield home, server
        finally:
            server.stop()


def _readyz(server: ServeProcess) -> tuple[int, dict]:
    answer = requests.get(f"{server.url}/readyz", timeout=10)
    return answer.status_code, answer.json()


def test_readyz_fails_github_auth_after_three_401s_and_recovers_with_an_accepted_call(
        served: tuple[Home, ServeProcess]) -> None:
    home, server = served
    gh = home.gh
    code, body = _readyz(server)
    assert code == 200, body
    assert body["checks"]["github_auth"] == {"ok": True, "detail": "credentials accepted"}
    assert gh.count(route="user") == 1  # the start-up identity probe asked once, not twice
    revoked_at = datetime.now(UTC).replace(microsecond=0)
    gh.revoke_token()
    code, body = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(_readyz(server)),
                            "/readyz 503", 60)
    assert body["failing"] == ["github_auth"]
    detail = body["checks"]["github_auth"]["detail"]
    found = re.fullmatch(r"GitHub answered 401 \(bad credentials\) to the last (\d+) "
                         r"requests, the first at (\S+); check the token in \$GITHUB_TOKEN",
                         detail)
    assert found, detail
    assert int(found[1]) >= 3
    first = datetime.strptime(found[2], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    refused = [r for r in gh.requests if r.status == 401]
    assert len(refused) >= 3 and revoked_at <= first <= datetime.now(UTC)
    assert gh.token not in detail
    status = home.cli("status", ok=False)
    assert status.returncode == 1
    assert status.stdout.splitlines()[0] == (
        f"NOT READY ({server.url}/readyz): failing github_auth")
    # the poller goes on being refused meanwhile: the count may have grown, not the first
    said = [line for line in status.stdout.splitlines()
            if line.startswith("  FAIL github_auth        ")]
    assert len(said) == 1
    again = re.fullmatch(r"  FAIL github_auth        GitHub answered 401 \(bad credentials\) to "
                         r"the last (\d+) requests, the first at (\S+); check the token in "
                         r"\$GITHUB_TOKEN", said[0])
    assert again and int(again[1]) >= int(found[1]) and again[2] == found[2], said[0]
    gh.revoke_token(False)  # a new token, as far as GitHub is concerned
    code, body = wait_until(lambda: (lambda r: r if r[0] == 200 else None)(_readyz(server)),
                            "/readyz 200 again", 60)
    assert body["checks"]["github_auth"] == {"ok": True, "detail": "credentials accepted"}


def test_an_effect_refused_with_401_waits_without_spending_a_try_and_effects_shows_it(
        tmp_path: Path) -> None:
    with FakeGitHub() as gh:
        gh.create_repo(REPO)
        number = gh.create_issue(REPO, "Add a widget", author="alice")
        (tmp_path / "loopgate.yaml").write_text(
            "authorizedUsers: [alice]\n"
            f"github: {{botLogin: loopgate-bot, repos: [{REPO}], apiUrl: '{gh.api_url}', "
            f"graphqlUrl: '{gh.graphql_url}', pollIntervalSeconds: 0}}\n")
        env = {k: v for k, v in os.environ.items()
               if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_TOKEN")}
        env["GITHUB_TOKEN"] = gh.token

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return forkserver.run([*loopgate_argv(), "--db", str(tmp_path / "loopgate.db"),
                                   "--config", str(tmp_path / "loopgate.yaml"), *args],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=60, check=False)

        gh.revoke_token()
        started = run("start", f"{REPO}#{number}")  # the item starts; its writes wait
        assert started.returncode == 0, started.stderr
        assert "effect waits for GitHub credentials" in started.stderr
        listed = run("effects", "list", "--format", "json")
        assert listed.returncode == 0, listed.stderr
        rows = json.loads(listed.stdout)
        tried = [r for r in rows if r["error"]]
        assert len(tried) == 1 and tried[0]["status"] == "pending"
        assert tried[0]["attempts"] == 0  # no try spent: it waits for a new token
        assert tried[0]["error"].startswith(
            "waiting for GitHub to accept loopgate's credentials (no try spent): ")
        assert "(401)" in tried[0]["error"] and gh.token not in listed.stdout
        waited = datetime.strptime(tried[0]["notBefore"], "%Y-%m-%dT%H:%M:%SZ")
        assert waited.replace(tzinfo=UTC) > datetime.now(UTC)  # deferred, not due now
        text = run("effects")
        assert "  error: waiting for GitHub to accept loopgate's credentials" in text.stdout
        assert all(r["status"] == "pending" for r in rows)  # nothing failed for good

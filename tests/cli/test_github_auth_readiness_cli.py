"""A GitHub token revoked while ``loopgate serve`` runs: ``/readyz`` and ``loopgate status``
fail the ``github_auth`` check (naming 401, when the first refusal came and the token's
variable) once the poller's last 3 requests were all answered ``401 Bad credentials``, and
pass again with GitHub's first accepted request (a new token)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from tests.e2e.stack import REPO, Home, ServeProcess, wait_until
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
    assert f"  FAIL github_auth        {detail}" in status.stdout.splitlines()
    gh.revoke_token(False)  # a new token, as far as GitHub is concerned
    code, body = wait_until(lambda: (lambda r: r if r[0] == 200 else None)(_readyz(server)),
                            "/readyz 200 again", 60)
    assert body["checks"]["github_auth"] == {"ok": True, "detail": "credentials accepted"}

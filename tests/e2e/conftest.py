"""Fixtures of the end-to-end suite: the two loopback fakes and a factory that writes a
loopgate.yaml, starts ``loopgate serve`` as a subprocess and hands back a :class:`Walk`.

The steps themselves live in :mod:`tests.e2e.stack`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.stack import REPO, SLACK_TOKEN, Home, ServeProcess, Walk
from tests.fakes.github import FakeGitHub
from tests.fakes.github_app import FakeApp, generate_private_key
from tests.fakes.slack import FakeSlack

MakeWalk = Callable[..., Walk]
#: The App id of the GitHub App runs.
APP_ID = 271828


@pytest.fixture(params=["token", "app"])
def gh(request: pytest.FixtureRequest) -> Iterator[FakeGitHub]:
    """The loopback fake GitHub with the watched repository; every scenario runs twice:
    loopgate holding a personal token (a ``User``), and loopgate as a GitHub App (installed
    on the repository's organisation; it posts as the ``Bot`` ``loopgate[bot]`` with
    installation tokens it mints itself). ``request.param`` may also be a dict of
    :class:`FakeApp` arguments (App mode), e.g. ``{"token_ttl": 240}``."""
    mode = request.param
    if mode == "token":
        fake = FakeGitHub()
    else:
        app = FakeApp(generate_private_key(), app_id=APP_ID, slug="loopgate",
                      **(mode if isinstance(mode, dict) else {}))
        fake = FakeGitHub(bot_login=app.bot_login, bot_type="Bot", app=app)
    with fake:
        fake.create_repo(REPO)
        if fake.app is not None:
            fake.app.install(REPO.split("/")[0])
        yield fake


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """The loopback fake Slack Web API."""
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def make_walk(tmp_path: Path, gh: FakeGitHub, slack: FakeSlack) -> Iterator[MakeWalk]:
    """``make_walk(poll_interval=0, webhooks=True)``: a started ``loopgate serve`` and the
    walk that drives it. On teardown the server gets SIGTERM; its log is printed (shown
    when the test fails) and checked for tracebacks and leaked secrets."""
    servers: list[ServeProcess] = []

    def make(poll_interval: int = 0, webhooks: bool = True) -> Walk:
        home = Home(tmp_path, gh, slack, poll_interval).write()
        server = ServeProcess(home).start()
        servers.append(server)
        return Walk(home, server, webhooks=webhooks)

    yield make
    for server in servers:
        code = server.stop()
        log = server.log()
        print(f"--- loopgate serve stderr (exit {code}) ---\n{log}")
        assert "Traceback" not in log
        for secret in (gh.token, SLACK_TOKEN, *_app_secrets(gh)) + tuple(
                server.home.env()[k] for k in ("GITHUB_WEBHOOK_SECRET", "SLACK_SIGNING_SECRET")):
            assert secret not in log


def _app_secrets(gh: FakeGitHub) -> list[str]:
    """App mode: the private key's PEM body lines and every installation token minted."""
    if gh.app is None:
        return []
    return [*generate_private_key().splitlines()[1:-1], *(t.value for t in gh.app.minted)]

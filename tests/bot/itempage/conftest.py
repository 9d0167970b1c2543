"""Fixtures of the details page's access tests (issue 22 §2, 24 §4): the real ``serve``
Flask app (``bot.web.server.build_wsgi_app``) over the real bridge and a loopback fake GitHub
that also plays github.com's sign-in pages (``tests/fakes/github_oauth.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient

from bot.web.server import build_wsgi_app
from engine.approvals import ApprovalRule
from engine.errors import UnreadableItemError
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.fakes.github import FakeGitHub

CLIENT_ID = "Iv1.5c8d0e1f2a3b4c5d"
CLIENT_SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f001234567"
SESSION_SECRET = "test-session-secret-Zq7Jx1Vb9Lr3Tn5Wc8Ym2Ks4Hd6Fg0P"
SIGN_IN_ENV = {"LOOPGATE_CLIENT_SECRET": CLIENT_SECRET,
               "LOOPGATE_SESSION_SECRET": SESSION_SECRET}
GATE = "human-approval"
PUBLIC = "http://localhost"


@pytest.fixture
def fake(fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """A started fake GitHub with ``acme/widgets``; loopgate's token in the environment."""
    with FakeGitHub() as gh:
        gh.create_repo(REPO)
        monkeypatch.setenv("GITHUB_TOKEN", gh.token)
        monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
        monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
        yield gh


def sign_in_config(fake: FakeGitHub, public: str = PUBLIC, **extra: Any) -> dict[str, Any]:
    """The ``server`` section: ``publicUrl`` and ``signIn`` against ``fake``."""
    return {"publicUrl": public,
            "signIn": {"clientId": CLIENT_ID, "webUrl": fake.url, **extra}}


@dataclass
class Site:
    """``serve``'s app with sign-in, the world behind it, and a Flask test client."""

    world: GitHubWorld
    app: Flask
    client: FlaskClient

    @property
    def fake(self) -> FakeGitHub:
        return self.world.fake

    def item(self, author: str = "alice") -> WorkItemRef:
        """A started work item on ``acme/widgets``."""
        ref = self.world.issue(author=author)
        self.world.services.runtime.start(ref)
        return ref

    def at_gate(self) -> WorkItemRef:
        """A started item forced to the human approval gate, whose rule needs two of
        alice, bob, carol and the team acme/reviewers (dave), no self-approval; a pull
        request by bob delivers it (the bridges' simulate test's set-up)."""
        self.fake.add_team("acme", "reviewers", ["dave"])
        rule = ApprovalRule(approvals=2, approvers=("alice", "bob", "carol", "acme/reviewers"),
                            prevent_self_approval=True)
        runtime = self.world.services.runtime
        runtime.settings = replace(runtime.settings, gate_rules={GATE: rule})
        self.world.services.settings = runtime.settings
        ref = self.world.issue(author="alice")
        self.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
        runtime.start(ref)
        runtime.force(ref, GATE, "test", "tester")
        return ref

    def unreadable(self, ref: WorkItemRef) -> UnreadableItemError:
        """Make ``ref``'s stored ``surface`` column text that is not JSON (holding a
        marker, ``SECRET-SURFACE``, that no answer may quote); returns the store's error."""
        store = self.world.services.store
        with store.writing() as db:
            db.execute("UPDATE items SET surface = ? WHERE item = ?",
                       ('{"note": "SECRET-SURFACE"', str(ref)))
        with pytest.raises(UnreadableItemError) as raised:
            store.load(ref)
        return raised.value

    def sign_in(self, login: str, next_path: str = "", *, client: FlaskClient | None = None
                ) -> Any:
        """The whole web flow through the fake for ``login`` (who authorizes); returns
        the callback's response."""
        client = client or self.client
        self.fake.oauth_as(login)
        start = client.get("/auth/login" + (f"?next={next_path}" if next_path else ""))
        assert start.status_code == 302, start.data
        back = requests.get(start.headers["Location"], allow_redirects=False, timeout=10)
        assert back.status_code == 302, back.text
        return client.get(back.headers["Location"])


def callback_params(location: str) -> dict[str, str]:
    """The query of a redirect's ``Location``, one value per key."""
    return {k: v[-1] for k, v in parse_qs(urlsplit(location).query).items()}


def make_site(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              server: dict[str, Any] | None = None, *, oauth: bool = True) -> Site:
    """Build the world and ``serve``'s app; ``server`` = the ``server`` section."""
    for name, value in SIGN_IN_ENV.items():
        monkeypatch.setenv(name, value)
    section = sign_in_config(fake) if server is None else server
    world = GitHubWorld(fake, tmp_path, overrides={"server": section}).build()
    public = str(section.get("publicUrl") or PUBLIC)
    if oauth:
        fake.add_oauth_client(CLIENT_ID, CLIENT_SECRET, f"{public}/auth/callback")
    app = build_wsgi_app(world.services, world.dispatcher, webhook_secret=SECRET,
                         slack_routes=False)
    return Site(world, app, app.test_client())


@pytest.fixture
def site(fake: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    """``serve``'s app with sign-in against the fake (publicUrl ``http://localhost``)."""
    built = make_site(fake, tmp_path, monkeypatch)
    try:
        yield built
    finally:
        built.world.close()

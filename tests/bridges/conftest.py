"""Fixtures for the GitHub bridge: the loopback fake GitHub, the GitHub schema, and a
``GitHubWorld`` wiring the real services (SQLite store, runtime, shipped graph, hooks,
GitHubTracker over PyGithub/gql, contents artifact store) to the fake."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from gql import Client

from bot.config import validate_mapping
from bot.ops.supervisor import Supervisor
from bot.services import Services
from bot.web.server import Server, build_wsgi_app, inbox_replay
from bridges.github.poller import CycleReport, Poller
from bridges.ingress.dispatcher import Dispatcher
from engine.hooks.markers import attestation_line
from engine.perform import InlinePerformer
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.state import ItemState
from tests.fakes.github import FakeComment, FakeGitHub, github_schema

REPO = "acme/widgets"
OWNER, NAME = REPO.split("/")
#: GitHub Docs' example secret (headers.computed.json is signed with it).
SECRET = "It's a Secret to Everybody"
SPEC_CHAIN = (
    "brainstorming", "requirements-definition", "requirements-approval", "design",
    "test-planning", "design-approval",
)  # fmt: skip
EXPLAINER_NODES = ("spec-explainer", "spec-quiz", "code-explainer", "code-quiz")
RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | docs/specs/issue-{n}/explainer/explainer.html |
| Published as | committed HTML |
| Questions | 3 |
"""


@pytest.fixture(scope="session")
def schema_client() -> Client:
    """A gql client holding GitHub's public schema (built once per session, ~1 s)."""
    return Client(schema=github_schema())


@pytest.fixture
def fake(fixtures_dir: Path) -> Iterator[FakeGitHub]:
    """A started loopback fake GitHub with repository ``acme/widgets``.

    It answers from the shared fixtures' payloads, so it asks for ``fixtures_dir`` first:
    without ``../shared`` every test using it fails with the suite's "shared fixtures not
    found" message, not with an unrelated error from inside the fake.
    """
    with FakeGitHub() as gh:
        gh.create_repo(REPO)
        yield gh


@dataclass
class GitHubWorld:
    """The real bridge and engine over the fake, on one SQLite file."""

    fake: FakeGitHub
    tmp: Path
    overrides: dict[str, Any] = field(default_factory=dict)
    services: Any = None
    dispatcher: Dispatcher = None  # type: ignore[assignment]
    poller: Poller = None  # type: ignore[assignment]
    server: Server | None = None
    supervisor: Supervisor | None = None

    # -- wiring ----------------------------------------------------------------------
    def config(self) -> Any:
        github = {"repos": [REPO], "apiUrl": self.fake.api_url,
                  "graphqlUrl": self.fake.graphql_url, "pollIntervalSeconds": 0,
                  **self.overrides.get("github", {})}
        data = {"authorizedUsers": ["alice", "bob"], "github": github,
                **{k: v for k, v in self.overrides.items() if k != "github"}}
        return validate_mapping(data, "test loopgate.yaml")

    def build(self) -> GitHubWorld:
        self.services = Services.build(self.config(), db_path=str(self.tmp / "loopgate.db"))
        self.dispatcher = Dispatcher(self.services)
        self.poller = Poller.from_services(self.services, self.dispatcher, initial_lookback=3600)
        return self

    def restart(self) -> GitHubWorld:
        """Stop everything and build it again on the same database (a process restart)."""
        self.close()
        return self.build()

    def close(self) -> None:
        """Stop every thread (the served stack through its supervisor, which joins them
        all before it closes the inbox and the store), then close what is left."""
        if self.supervisor is not None:
            report, self.supervisor, self.server = self.supervisor.stop(), None, None
            assert report.clean, report
        if self.server is not None:
            self.server.stop(grace=1.0)
            self.server = None
        if self.dispatcher is not None:
            self.dispatcher.stop(timeout=5)
            self.dispatcher.close()
        if self.services is not None:
            self.services.close()

    def serve(self, *, secret: str | None = SECRET, insecure: bool = False,
              replay_every: float | None = None) -> str:
        """Start the stack ``loopgate serve`` runs for GitHub (dispatcher, inbox replay,
        HTTP server) under one supervisor, as serve does; returns the server's URL.

        Args:
            secret: the webhook secret.
            insecure: accept unsigned deliveries.
            replay_every: seconds between inbox replays (default serve's 60).
        """
        app = build_wsgi_app(self.services, self.dispatcher, webhook_secret=secret,
                             insecure_webhooks=insecure, slack_routes=False)
        supervisor = Supervisor(stop_timeout=5)
        supervisor.on_close("store", self.services.close)
        supervisor.on_close("inbox", self.dispatcher.close)
        supervisor.add("dispatcher", self.dispatcher)
        replay = inbox_replay(self.services, self.dispatcher, every=replay_every)
        assert replay is not None
        supervisor.add_loop("inbox-replay", replay)
        self.server = Server(app, "127.0.0.1", 0, threads=4)
        supervisor.add("http", self.server)
        self.supervisor = supervisor.start()
        return self.server.url

    # -- GitHub-side actions -----------------------------------------------------------
    def issue(self, title: str = "Add a widget", author: str = "alice") -> WorkItemRef:
        return WorkItemRef(OWNER, NAME, self.fake.create_issue(REPO, title, author=author))

    def comment(self, ref: WorkItemRef, body: str, as_user: str = "alice") -> FakeComment:
        return self.fake.add_comment(REPO, ref.number, body, as_user=as_user)

    def write(self, ref: WorkItemRef, name: str, text: str, branch: str | None = None) -> None:
        self.fake.put_file(REPO, f"docs/specs/issue-{ref.number}/{name}", text, branch)

    def write_spec(self, ref: WorkItemRef, design: str = "design v1\n") -> None:
        self.write(ref, "requirements.md", "requirements v1\n")
        self.write(ref, "design.md", design)
        self.write(ref, "testing-plan.md", "plan v1\n")
        self.write(ref, "explainer/explainer.html", "<html>quiz</html>")
        self.write(ref, "evidence/spec-explainer.md", RECORD.format(n=ref.number))

    def quiz_comments(self, ref: WorkItemRef, node: str = "spec-quiz") -> list[FakeComment]:
        return [c for c in self.fake.comments_on(REPO, ref.number)
                if f"the-loop:quiz {node}" in c.body]

    def tick(self, comment: FakeComment, editor: str | None, editor_type: str = "User") -> None:
        body = comment.body.replace(attestation_line("spec"), attestation_line("spec", True))
        self.fake.edit_comment(comment.id, body, editor, editor_type=editor_type)

    def post(self, headers: dict[str, str], body: bytes) -> requests.Response:
        assert self.server is not None, "serve() first"
        return requests.post(f"{self.server.url}/github/webhook", data=body, headers=headers,
                             timeout=10)

    def webhook(self, event: str, action: str, ref: WorkItemRef, **kwargs: Any
                ) -> requests.Response:
        headers, body = self.fake.webhook(event, action, repo=REPO, number=ref.number,
                                          secret=SECRET, **kwargs)
        response = self.post(headers, body)
        assert self.dispatcher.wait_idle(10)
        return response

    def performer_later(self) -> InlinePerformer:
        """A performer whose clock runs an hour ahead: every claim and back-off is over,
        so it carries out what is owed now (as the next performer would, later)."""
        ports = self.services.ports
        later = Ports(ports.tracker, ports.artifacts, ports.notifier, _HourAhead())
        return InlinePerformer(self.services.store, later, self.services.settings)

    # -- engine-side reads -----------------------------------------------------------
    def poll(self) -> CycleReport:
        return self.poller.poll_once()

    def state(self, ref: WorkItemRef) -> ItemState:
        state = self.services.store.load(ref)
        assert state is not None, f"{ref} was never started"
        return state

    def events(self, ref: WorkItemRef, kind: str) -> list[dict[str, Any]]:
        return [e["data"] for e in self.services.store.events(ref) if e["kind"] == kind]

    # -- walking -------------------------------------------------------------------------
    def to_spec_quiz(self, ref: WorkItemRef) -> FakeComment:
        """Start ``ref``, skip the spec chain, write the spec and claim the explainer."""
        self.comment(ref, "the-loop start")
        self.poll()
        rows = "\n".join(f"- [ ] {token}" for token in SPEC_CHAIN)
        self.comment(ref, f"the-loop execute\n{rows}")
        self.poll()
        assert self.state(ref).current_node == "spec-explainer", self.state(ref).parked
        self.write_spec(ref)
        state = self.services.runtime.complete(ref, "spec-explainer", "agent")
        assert state.current_node == "spec-quiz", state.parked
        [comment] = self.quiz_comments(ref)
        return comment


class _HourAhead:
    """The wall clock plus an hour."""

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(hours=1)


@pytest.fixture
def github_env(monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub) -> FakeGitHub:
    """Token variable set for the fake; writes not spaced (tests only)."""
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
    monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
    return fake


@pytest.fixture
def world(github_env: FakeGitHub, tmp_path: Path) -> Iterator[GitHubWorld]:
    """The real stack over the fake; poller ready, server started on demand."""
    w = GitHubWorld(github_env, tmp_path).build()
    try:
        yield w
    finally:
        w.close()

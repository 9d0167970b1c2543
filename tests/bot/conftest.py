"""Fixtures for the Slack bot tests: a loopback fake Slack, wired services over a fresh
SQLite database per test (in-memory tracker and artifacts), the Bolt app, the worker,
and payload builders for block_actions / slash commands."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient

from bot.config import validate_mapping
from bot.ops.supervisor import Supervisor, ThreadPool
from bot.services import Services
from bot.slack.blocks import ids
from bot.slack.blocks.card import phase_selection_card
from bot.slack.bolt_app import build_app, build_web_client
from bot.slack.notifier import OutboxNotifier
from bot.slack.worker import SlackWorker
from engine.graph.compiler import shipped_graph
from engine.hooks.markers import attestation_line
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.state import ItemState
from engine.store.sqlite import SqliteStore
from tests.fakes.slack import FakeSlack

REF = WorkItemRef("acme", "widgets", 7)
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_TOKEN = "xoxb-test-token"
CHANNEL = "C0CARDS"
#: Slack users: alice and carol are authorized, bob is linked but not authorized, eve is
#: not linked at all.
IDENTITIES = {"UALICE": "alice", "UBOB": "bob", "UCAROL": "carol"}
EXPLAINER_NODES = ("spec-explainer", "spec-quiz", "code-explainer", "code-quiz")
SPEC_CHAIN = ("brainstorming", "requirements-definition", "requirements-approval", "design",
              "test-planning", "design-approval")
SPEC_RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | docs/specs/issue-7/explainer/explainer.html |
| Published as | committed HTML |
| Questions | 3 |
"""


LOCKED_REQUIREMENTS = "---\nstatus: approved\n---\n# R\n\n## Requirements\n\n- x\n"


class MutableClock:
    """A clock the test moves by hand (starts 2026-03-01T12:00:00Z)."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    """The loopback fake Slack Web API."""
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def slack_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bot token and signing secret in the environment; no app token (HTTP mode)."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    monkeypatch.setenv("LOOPGATE_SLACK_PACE_SECONDS", "0")


def slack_config(fake: FakeSlack, **extra: Any) -> Any:
    """A validated config pointing ``slack.apiUrl`` at the fake."""
    raw: dict[str, Any] = {
        "authorizedUsers": ["alice", "carol"],
        "github": {"repos": ["acme/widgets"]},
        "slack": {"channel": CHANNEL, "apiUrl": fake.base_url, "identities": dict(IDENTITIES)},
    }
    raw.update(extra)
    return validate_mapping(raw, "test loopgate.yaml")


@dataclass
class SlackWorld:
    """Everything one test drives."""

    services: Services
    tracker: MemoryTracker
    artifacts: MemoryArtifactStore
    clock: MutableClock
    fake: FakeSlack
    client: WebClient
    worker: SlackWorker
    app: Any = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> SqliteStore:
        return self.services.store

    def state(self, ref: WorkItemRef = REF) -> ItemState:
        state = self.services.store.load(ref)
        assert state is not None
        return state

    def start(self, ref: WorkItemRef = REF) -> ItemState:
        """Start the item (its entry chain queues ``phase-selection-pending``)."""
        return self.services.runtime.start(ref)

    def drain(self) -> int:
        return self.worker.drain_once()

    def comments(self, needle: str) -> list[Comment]:
        return [c for c in self.tracker.comments_on(REF) if needle in c.body]

    def events(self, kind: str, ref: WorkItemRef = REF) -> list[dict[str, Any]]:
        return [e["data"] for e in self.store.events(ref) if e["kind"] == kind]

    def outbox(self) -> list[tuple[str, str]]:
        rows = self.store.db().execute("SELECT event, item FROM slack_outbox ORDER BY id")
        return [(e, i) for e, i in rows]

    def reply_on_github(self, author: str, body: str) -> ItemState:
        comment = self.tracker.add_comment_as(REF, author, body)
        return self.services.runtime.advance(REF, {"comments": [comment]})

    def walk_to_spec_quiz(self) -> Comment:
        """Select (on GitHub, by alice) with the spec chain skipped, write the spec, claim
        the explainer: the item enters spec-quiz. Returns the quiz comment."""
        rows = "\n".join(f"- [ ] {token}" for token in SPEC_CHAIN)
        state = self.reply_on_github("alice", f"the-loop execute\n{rows}")
        assert state.current_node == "spec-explainer", state.parked
        for name, text in (("requirements.md", "r\n"), ("design.md", "d\n"),
                           ("testing-plan.md", "t\n"), ("explainer/explainer.html", "<p>q</p>"),
                           ("evidence/spec-explainer.md", SPEC_RECORD)):
            self.artifacts.write(REF, name, text)
        state = self.services.runtime.complete(REF, "spec-explainer", "agent")
        assert state.current_node == "spec-quiz", state.parked
        [comment] = self.comments("the-loop:quiz spec-quiz")
        return comment

    def walk_to_requirements_approval(self) -> ItemState:
        """Start, select on GitHub (alice) without brainstorming, write a locked
        requirements.md: the item waits at requirements-approval."""
        self.start()
        self.reply_on_github("alice", "the-loop execute\n- [ ] brainstorming")
        self.artifacts.write(REF, "requirements.md", LOCKED_REQUIREMENTS)
        state = self.services.runtime.complete(REF, "requirements-definition", "agent")
        assert state.current_node == "requirements-approval", state.parked
        return state

    def approval_message(self) -> Any:
        """The posted approval message of requirements-approval (after a drain)."""
        posts = [c for c in self.fake.calls_to("chat.postMessage")
                 if "` waits for an approval" in str(c.args.get("text"))]
        assert posts, [c.method for c in self.fake.calls]
        return posts[-1]

    def tick_quiz(self, comment: Comment, editor: str) -> ItemState:
        body = comment.body.replace(attestation_line("spec"), attestation_line("spec", True))
        self.tracker.edit_comment(comment.id, body, editor)
        event = {"attestation": {"comment_id": comment.id, "url": comment.url}}
        return self.services.runtime.advance(REF, event)


def build_world(tmp_path: Path, fake: FakeSlack, config: Any = None) -> SlackWorld:
    """Wire services the way ``Services.build`` does, with in-memory GitHub ports."""
    config = config or slack_config(fake)
    store = SqliteStore(tmp_path / "loopgate.db")
    tracker, artifacts, clock = MemoryTracker(), MemoryArtifactStore(), MutableClock()
    tracker.set_issue(REF, "Add a <widget> & more", author="carol")
    ports = Ports(tracker, artifacts, OutboxNotifier(store), clock)
    settings = config.engine_settings()
    graph = shipped_graph()
    runtime = Runtime(graph, store, ports, settings)
    services = Services(config, settings, graph, store, ports, runtime)
    client = build_web_client(config, token=BOT_TOKEN)
    worker = SlackWorker(services, client=client, pace_seconds=0, retry_base=0)
    return SlackWorld(services, tracker, artifacts, clock, fake, client, worker)


@pytest.fixture
def world(tmp_path: Path, fake_slack: FakeSlack, slack_env: None) -> Iterator[SlackWorld]:
    """Services + worker + Bolt app over a fresh database and the fake Slack.

    Bolt runs listeners after the ack in a pool owned by a supervisor, as in ``serve``,
    so at teardown those threads (and the worker's, when a test started it) are joined
    before the store closes."""
    w = build_world(tmp_path, fake_slack)
    listeners = ThreadPool("slack-listener")
    supervisor = Supervisor()
    supervisor.on_close("store", w.services.close)
    supervisor.add("slack-listeners", listeners)
    supervisor.start()
    w.app = build_app(w.services, client=w.client, executor=listeners.executor)
    yield w
    w.worker.stop()
    assert not w.worker.running
    report = supervisor.stop()
    assert report.clean and report.closed == ("store",), report


# -- payload builders ------------------------------------------------------------------
def card_message(world: SlackWorld, revision: int = 0, ts: str = "1503435956.000001") -> dict:
    """The card message as Slack would hold it (blocks as posted)."""
    info = world.tracker.issue_info(REF)
    blocks = phase_selection_card(world.services.graph, info, revision=revision)
    return {"type": "message", "ts": ts, "blocks": [b.to_dict() for b in blocks]}


def state_values(
    phases: Mapping[int, Sequence[str]] | None = None,
    opt_ins: Sequence[str] | None = None,
    explainer: bool | None = None,
    revision: int = 0,
) -> dict[str, Any]:
    """``state.values`` for chosen blocks; a block left out is one the test treats as
    missing from the state (it must keep its default)."""

    def checked(values: Sequence[str], action: str) -> dict[str, Any]:
        opts = [{"text": {"type": "plain_text", "text": v}, "value": v} for v in values]
        return {action: {"type": "checkboxes", "selected_options": opts}}

    out: dict[str, Any] = {}
    for index, values in (phases or {}).items():
        out[ids.block_id(ids.BLOCK_PHASES, revision, index)] = checked(values, ids.ACTION_PHASES)
    if opt_ins is not None:
        out[ids.block_id(ids.BLOCK_OPT_INS, revision, 0)] = checked(opt_ins, ids.ACTION_OPT_INS)
    if explainer is not None:
        chosen = [ids.EXPLAINER_VALUE] if explainer else []
        out[ids.block_id(ids.BLOCK_SETTINGS, revision, 0)] = checked(chosen,
                                                                      ids.ACTION_SETTINGS)
    return out


def execute_body(world: SlackWorld, user: str, values: Mapping[str, Any] | None = None,
                 *, ts: str = "1503435956.000001") -> dict[str, Any]:
    """A ``block_actions`` payload of the Execute button (shape of the bolt-python fixture
    ``block_actions.button.json``, with the message state of NOTES.md §2)."""
    return {
        "type": "block_actions",
        "team": {"id": "T111", "domain": "workspace-domain"},
        "user": {"id": user, "username": user.lower(), "team_id": "T111"},
        "api_app_id": "A111",
        "token": "verification_token",
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL,
                      "is_ephemeral": False},
        "trigger_id": world.fake.issue_trigger_id(),
        "channel": {"id": CHANNEL, "name": "loopgate"},
        "message": card_message(world, ts=ts),
        "state": {"values": dict(values or {})},
        "response_url": world.fake.response_url,
        "actions": [{"action_id": ids.ACTION_EXECUTE, "block_id": "loopgate.execute.r0.0",
                     "text": {"type": "plain_text", "text": "Execute"}, "value": str(REF),
                     "style": "primary", "type": "button", "action_ts": "1596530385.194939"}],
    }


def approval_click(world: SlackWorld, user: str, action_id: str, value: str, *,
                   ts: str, blocks: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """A ``block_actions`` payload of an approval gate's button (fixture shape)."""
    return {
        "type": "block_actions",
        "team": {"id": "T111", "domain": "workspace-domain"},
        "user": {"id": user, "username": user.lower(), "team_id": "T111"},
        "api_app_id": "A111", "token": "verification_token",
        "container": {"type": "message", "message_ts": ts, "channel_id": CHANNEL,
                      "is_ephemeral": False, "thread_ts": "1503435956.000001"},
        "trigger_id": world.fake.issue_trigger_id(),
        "channel": {"id": CHANNEL, "name": "loopgate"},
        "message": {"type": "message", "ts": ts, "blocks": list(blocks)},
        "state": {"values": {}},
        "response_url": world.fake.response_url,
        "actions": [{"action_id": action_id, "block_id": "loopgate.approval.r0.0",
                     "text": {"type": "plain_text", "text": "Approve"}, "value": value,
                     "type": "button", "action_ts": "1596530385.194939"}],
    }


def view_submission(view: Mapping[str, Any], user: str, text: str | None) -> dict[str, Any]:
    """A ``view_submission`` of ``view`` (as opened) with ``text`` typed (fixture shape,
    ``/work/shared/fixtures/slack/interactivity/view_submission.json``)."""
    values: dict[str, Any] = {}
    if text is not None:
        values = {ids.BLOCK_DECISION_TEXT: {ids.ACTION_DECISION_TEXT: {
            "type": "plain_text_input", "value": text}}}
    return {
        "type": "view_submission",
        "team": {"id": "T111", "domain": "workspace-domain"},
        "user": {"id": user, "username": user.lower(), "team_id": "T111"},
        "api_app_id": "A111", "token": "verification_token", "trigger_id": "111.222.view",
        "view": {**dict(view), "id": "V111", "team_id": "T111", "app_id": "A111",
                 "state": {"values": values}, "hash": "1596530361.3wRYuk3R"},
        "response_urls": [],
    }


def command_fields(world: SlackWorld, user: str, text: str) -> dict[str, str]:
    """Slash-command form fields (shape of the bolt-python fixture)."""
    return {
        "token": "verification_token", "team_id": "T111", "team_domain": "test-domain",
        "channel_id": CHANNEL, "channel_name": "loopgate", "user_id": user,
        "user_name": user.lower(), "command": "/loop", "text": text,
        "response_url": world.fake.response_url, "trigger_id": "111.222.xxx",
        "api_app_id": "A111",
    }


class Waiter:
    """Polls a condition (a liveness bound for work Bolt runs after the ack)."""

    @staticmethod
    def until(predicate: Any, timeout: float = 10.0) -> Any:
        done = threading.Event()
        deadline = datetime.now(UTC) + timedelta(seconds=timeout)
        while datetime.now(UTC) < deadline:
            value = predicate()
            if value:
                return value
            done.wait(0.01)
        raise AssertionError("condition not met in time")

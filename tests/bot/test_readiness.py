"""Issue 13 §1: ``/readyz`` names ``slack_socket`` when Slack's Socket Mode connection
drops, and ``slack_outbox`` when the outbox grew for longer than its limit. Socket Mode
runs as ``serve`` runs it (Bolt's ``SocketModeHandler`` over slack_sdk's builtin client,
supervised); Slack is the loopback Web API fake plus a real WebSocket endpoint
(:mod:`tests.fakes.slack_socket`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
from flask import Flask

from bot.composition import _SocketMode
from bot.ops.health import Check, Health, blueprint
from bot.ops.supervisor import Supervisor, ThreadPool
from bot.web.server import Server
from engine.refs import WorkItemRef
from tests.bot.conftest import SlackWorld
from tests.fakes.github import wait_for
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_socket import FakeSocketMode

APP_TOKEN = "xapp-1-A0FAKEAPP-0000-socket-test-token"


@pytest.fixture
def socket_mode(fake_slack: FakeSlack) -> Iterator[FakeSocketMode]:
    with FakeSocketMode() as endpoint:
        endpoint.attach(fake_slack)
        yield endpoint


def ready(url: str) -> tuple[int, dict]:
    answer = requests.get(f"{url}/readyz", timeout=10)
    return answer.status_code, answer.json()


def test_readyz_flips_to_503_naming_the_slack_socket_when_it_drops(
        world: SlackWorld, fake_slack: FakeSlack, socket_mode: FakeSocketMode) -> None:
    listeners = ThreadPool("slack-listener")
    member = _SocketMode(world.services, APP_TOKEN, listeners.executor)
    health = Health(world.services, socket=member.connected)
    app = Flask("loopgate-test")
    app.register_blueprint(blueprint(health))
    http = Server(app, "127.0.0.1", 0, threads=2)
    supervisor = Supervisor(stop_timeout=10)
    supervisor.add("slack-listeners", listeners)
    supervisor.add("socket-mode", member)
    supervisor.add("http", http)
    supervisor.start()
    try:
        assert wait_for(lambda: socket_mode.connections == 1, timeout=10)
        opened = fake_slack.calls_to("apps.connections.open")
        assert [c.headers["authorization"] for c in opened] == [f"Bearer {APP_TOKEN}"]
        code, body = ready(http.url)
        assert (code, body["checks"]["slack_socket"]) == (
            200, {"ok": True, "detail": "connected"})
        # Slack drops the connection and refuses new ones for now
        fake_slack.fail_method("apps.connections.open", "internal_error")
        socket_mode.drop()
        assert wait_for(lambda: ready(http.url)[0] == 503, timeout=60)
        code, body = ready(http.url)
        assert body["failing"] == ["slack_socket"]
        assert body["checks"]["slack_socket"] == {
            "ok": False, "detail": "Socket Mode is not connected"}
        # Slack is back: the client reconnects on its own and the server is ready again
        fake_slack.fail_method("apps.connections.open", None)
        assert wait_for(lambda: ready(http.url)[0] == 200, timeout=60)
        assert wait_for(lambda: socket_mode.connections == 2, timeout=10)
    finally:
        report = supervisor.stop()
    assert report.clean, report


def test_readyz_names_the_slack_outbox_once_it_grew_for_longer_than_the_limit(
        world: SlackWorld) -> None:
    now = [1000.0]
    health = Health(world.services, stall_minutes=10, clock=lambda: now[0])
    world.start()  # the phase-selection card waits in the Slack outbox
    health.sample()
    now[0] += 300
    second = WorkItemRef("acme", "widgets", 8)
    world.tracker.set_issue(second, "Another widget", author="carol")
    world.start(second)
    assert {c.name: c.ok for c in health.checks()}["slack_outbox"] is True
    now[0] += 301  # growing (never shrinking, nothing sent) for 601 s > 10 min
    checks = {c.name: c for c in health.checks()}
    assert [n for n, c in checks.items() if not c.ok] == ["slack_outbox"]
    assert checks["slack_outbox"].detail.startswith("2 waiting, growing for 10 min (oldest ")
    assert world.drain() == 2  # Slack takes them: the queue shrinks to empty
    assert {c.name: c for c in health.checks()}["slack_outbox"] == Check(
        "slack_outbox", True, "0 waiting")

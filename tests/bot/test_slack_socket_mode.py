"""Issue 12 §7: Socket Mode for real — a loopback WebSocket server speaking Slack's
envelope protocol (hello, envelopes with envelope_id, acks) drives Execute, an approval
click and ``/loop check`` through loopgate's real ``SocketModeHandler``
(:func:`bot.slack.bolt_app.start_socket_mode`), the Web API on the loopback fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.ops.supervisor import Supervisor, ThreadPool
from bot.slack.blocks import ids
from bot.slack.bolt_app import build_app, start_socket_mode, stop_socket_mode
from bot.slack.slack_tables import load_thread
from tests.bot.conftest import (
    BOT_TOKEN,
    REF,
    SlackWorld,
    Waiter,
    approval_click,
    build_world,
    command_fields,
    execute_body,
    state_values,
    view_submission,
)
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_socket import FakeSocketMode

APP_TOKEN = "xapp-1-A111-1-socket"


@pytest.fixture
def socket_world(tmp_path: Path, fake_slack: FakeSlack,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SlackWorld, FakeSocketMode]]:
    """Services + a Socket Mode app connected to the fake WebSocket server."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("LOOPGATE_SLACK_PACE_SECONDS", "0")
    world = build_world(tmp_path, fake_slack)
    listeners = ThreadPool("slack-listener")
    supervisor = Supervisor()
    supervisor.on_close("store", world.services.close)
    supervisor.add("slack-listeners", listeners)
    supervisor.start()
    with FakeSocketMode() as server:
        fake_slack.set_socket_url(server.url)
        world.app = build_app(world.services, client=world.client,
                              executor=listeners.executor)
        handler = start_socket_mode(world.app, APP_TOKEN)
        try:
            server.wait_connected()
            yield world, server
        finally:
            assert stop_socket_mode(handler)
    report = supervisor.stop()
    assert report.clean, report


def test_the_app_connects_with_the_app_token_and_gets_hello(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, _server = socket_world

    [opened] = world.fake.calls_to("apps.connections.open")
    assert opened.headers["authorization"] == f"Bearer {APP_TOKEN}"
    assert opened.response["url"].startswith("ws://127.0.0.1:")


def test_execute_over_socket_mode_selects_and_acks_the_envelope(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, server = socket_world
    world.start()
    world.drain()
    ts = str(load_thread(world.store, REF)["ts"])

    envelope = server.send("interactive", execute_body(
        world, "UALICE", state_values(explainer=False), ts=ts))

    assert server.wait_ack(envelope) == {"envelope_id": envelope}
    Waiter.until(lambda: "phase-selection" in world.state().decisions)
    decision = world.state().decisions["phase-selection"]
    assert (decision["by"], decision["via"]) == ("@alice", "slack")


def test_an_approval_click_over_socket_mode_passes_the_gate(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, server = socket_world
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    ts = str(message.response["ts"])
    value = [b for b in message.args["blocks"] if b["type"] == "actions"][0]["elements"][0]["value"]

    envelope = server.send("interactive", approval_click(world, "UALICE", ids.ACTION_APPROVE,
                                                         value, ts=ts))

    assert server.wait_ack(envelope) == {"envelope_id": envelope}
    Waiter.until(lambda: world.state().current_node == "design")
    assert world.state().decisions["requirements-approval"]["via"] == "slack"


def test_a_modal_error_travels_in_the_ack_payload(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, server = socket_world
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    value = [b for b in message.args["blocks"] if b["type"] == "actions"][0]["elements"][0]["value"]
    ts = str(message.response["ts"])
    server.wait_ack(server.send("interactive", approval_click(
        world, "UCAROL", ids.ACTION_REQUEST_CHANGES, value, ts=ts)))
    [opened] = world.fake.wait_for("views.open")
    view: Any = opened.args["view"]
    view = json.loads(view) if isinstance(view, str) else view

    envelope = server.send("interactive", view_submission(view, "UCAROL", "  "))

    assert server.wait_ack(envelope)["payload"] == {"response_action": "errors", "errors": {
        ids.BLOCK_DECISION_TEXT: "Comments are required for this answer."}}
    assert world.state().current_node == "requirements-approval"


def test_loop_check_over_socket_mode_answers_through_the_response_url(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, server = socket_world
    world.start()
    fields = command_fields(world, "UALICE",
                            "check <https://github.com/acme/widgets/issues/7|acme/widgets#7>")

    envelope = server.send("slash_commands", fields)

    assert server.wait_ack(envelope) == {"envelope_id": envelope}
    [answer] = Waiter.until(lambda: world.fake.calls_to("response_url"))
    assert answer.json["text"] == "acme/widgets#7: at phase-selection (parked), 21 unmet"


def test_an_events_api_retry_over_socket_mode_is_acked_and_handled_once(
        socket_world: tuple[SlackWorld, FakeSocketMode]) -> None:
    world, server = socket_world
    event = {"type": "event_callback", "event_id": "Ev0SOCKET", "team_id": "T111",
             "api_app_id": "A111", "event": {"type": "app_mention", "user": "UALICE",
                                            "text": "<@W111> hi", "ts": "1.000001",
                                            "channel": "C111", "event_ts": "1.000001"}}

    first = server.send("events_api", event)
    server.wait_ack(first)
    world.fake.wait_for("chat.postMessage", 1)
    retry = server.send("events_api", event, retry_attempt=1)

    assert server.wait_ack(retry) == {"envelope_id": retry}
    other = server.send("events_api", {**event, "event_id": "Ev0SOCKET2"})
    server.wait_ack(other)
    world.fake.wait_for("chat.postMessage", 2)
    assert len(world.fake.calls_to("chat.postMessage")) == 2

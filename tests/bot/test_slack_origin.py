"""Requests from another Slack workspace or app are ignored (issue 19 §6), over HTTP
(signed, through waitress and Bolt) and over Socket Mode (the loopback WebSocket server):
one log line, an ephemeral for a slash command, and no listener runs; a request from the
configured workspace and app is the positive control."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from bot.ops.supervisor import Supervisor, ThreadPool
from bot.slack.bolt_app import (
    SLACK_PATH,
    build_app,
    register_http_routes,
    start_socket_mode,
    stop_socket_mode,
)
from bot.slack.slack_origin import FOREIGN_REPLY, mismatch
from tests.bot.conftest import (
    BOT_TOKEN,
    CHANNEL,
    IDENTITIES,
    REF,
    SECRET,
    SlackWorld,
    Waiter,
    build_world,
    command_fields,
    execute_body,
    slack_config,
    state_values,
)
from tests.fakes.slack import FakeSlack, command_body, interaction_body, signed_post
from tests.fakes.slack_socket import FakeSocketMode
from tests.waitress_thread import serving

APP_TOKEN = "xapp-1-A111-1-socket"


def _config(fake: FakeSlack) -> Any:
    return slack_config(fake, slack={"channel": CHANNEL, "apiUrl": fake.base_url,
                                     "identities": dict(IDENTITIES), "teamId": "T111",
                                     "appId": "A111"})


@pytest.fixture
def pinned(tmp_path: Path, fake_slack: FakeSlack, slack_env: None) -> Iterator[SlackWorld]:
    world = build_world(tmp_path, fake_slack, config=_config(fake_slack))
    listeners = ThreadPool("slack-listener")
    supervisor = Supervisor()
    supervisor.on_close("store", world.services.close)
    supervisor.add("slack-listeners", listeners)
    supervisor.start()
    world.app = build_app(world.services, client=world.client, executor=listeners.executor)
    yield world
    report = supervisor.stop()
    assert report.clean, report


@pytest.fixture
def http(pinned: SlackWorld) -> Iterator[str]:
    flask_app = Flask("loopgate-test")
    register_http_routes(flask_app, pinned.services, app=pinned.app)
    with serving(flask_app) as port:
        yield f"http://127.0.0.1:{port}{SLACK_PATH}"


def _foreign_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "bot.slack.slack_origin"]


def test_mismatch_names_the_field_and_fails_closed() -> None:
    assert mismatch("T111", "A111", "T111", "A111") == ""
    assert mismatch("T111", "A111", "T999", "A111") == "team_id T999 is not slack.teamId"
    assert mismatch("T111", "A111", "T111", "A999") == "api_app_id A999 is not slack.appId"
    assert mismatch("T111", "", None, None) == "team_id (none) is not slack.teamId"
    assert mismatch("", "", "T999", "A999") == ""  # unset: not checked


def test_a_command_from_another_workspace_gets_an_ephemeral_over_http(
        pinned: SlackWorld, http: str, caplog: pytest.LogCaptureFixture) -> None:
    pinned.start()
    caplog.set_level(logging.WARNING, logger="bot.slack.slack_origin")
    fields = {**command_fields(pinned, "UALICE", "start acme/widgets#8"), "team_id": "T999"}
    reply = signed_post(http, command_body(fields), SECRET)
    assert reply.status == 200
    assert reply.json() == {"response_type": "ephemeral", "text": FOREIGN_REPLY}
    assert _foreign_logs(caplog) == [
        "slack request from another workspace or app ignored: team_id T999 is not "
        "slack.teamId (slash_command)"]
    assert pinned.services.store.load(REF.__class__("acme", "widgets", 8)) is None
    assert pinned.fake.calls_to("response_url") == []


def test_a_click_from_another_app_is_acked_and_ignored_over_http(
        pinned: SlackWorld, http: str, caplog: pytest.LogCaptureFixture) -> None:
    pinned.start()
    pinned.drain()
    caplog.set_level(logging.WARNING, logger="bot.slack.slack_origin")
    payload = {**execute_body(pinned, "UALICE", state_values(explainer=False)),
               "api_app_id": "A999"}
    reply = signed_post(http, interaction_body(payload), SECRET)
    assert reply.status == 200 and reply.body == ""
    assert len(_foreign_logs(caplog)) == 1 and "api_app_id A999" in _foreign_logs(caplog)[0]
    assert "phase-selection" not in pinned.state().decisions
    assert pinned.fake.calls_to("chat.update") == []


def test_a_command_from_our_workspace_and_app_is_answered_over_http(
        pinned: SlackWorld, http: str, caplog: pytest.LogCaptureFixture) -> None:
    pinned.start()
    caplog.set_level(logging.WARNING, logger="bot.slack.slack_origin")
    reply = signed_post(http, command_body(command_fields(pinned, "UALICE",
                                                          "check acme/widgets#7")), SECRET)
    assert reply.status == 200
    [answer] = pinned.fake.wait_for("response_url")
    assert answer.json["text"].startswith("acme/widgets#7: at phase-selection")
    assert _foreign_logs(caplog) == []


def test_socket_mode_ignores_another_workspace_and_serves_ours(
        tmp_path: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("LOOPGATE_SLACK_PACE_SECONDS", "0")
    world = build_world(tmp_path, fake_slack, config=_config(fake_slack))
    listeners = ThreadPool("slack-listener")
    supervisor = Supervisor()
    supervisor.on_close("store", world.services.close)
    supervisor.add("slack-listeners", listeners)
    supervisor.start()
    caplog.set_level(logging.WARNING, logger="bot.slack.slack_origin")
    try:
        with FakeSocketMode() as server:
            fake_slack.set_socket_url(server.url)
            world.app = build_app(world.services, client=world.client,
                                  executor=listeners.executor)
            handler = start_socket_mode(world.app, APP_TOKEN)
            try:
                server.wait_connected()
                world.start()
                foreign = {**command_fields(world, "UALICE", "check acme/widgets#7"),
                           "team_id": "T999"}
                envelope = server.send("slash_commands", foreign)
                ack = server.wait_ack(envelope)
                assert ack["payload"] == {"response_type": "ephemeral", "text": FOREIGN_REPLY}
                assert len(_foreign_logs(caplog)) == 1
                ours = server.send("slash_commands",
                                   command_fields(world, "UALICE", "check acme/widgets#7"))
                assert server.wait_ack(ours) == {"envelope_id": ours}
                [answer] = Waiter.until(lambda: world.fake.calls_to("response_url"))
                assert answer.json["text"].startswith("acme/widgets#7: at phase-selection")
            finally:
                assert stop_socket_mode(handler)
    finally:
        report = supervisor.stop()
        assert report.clean, report

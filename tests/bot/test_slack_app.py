"""Building the Bolt app from loopgate.yaml: secrets only from the named environment
variables, the Web API base URL and 429 handler, HTTP vs Socket Mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

import bot.slack.bolt_app as app_module
from bot.slack.bolt_app import app_token, build_app, build_web_client, register_http_routes
from engine.errors import ConfigError
from tests.bot.conftest import BOT_TOKEN, SECRET, build_world, slack_config
from tests.fakes.slack import FakeSlack


def test_missing_bot_token_names_the_variable_never_a_value(
    tmp_path: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    monkeypatch.setenv("MY_SIGNING", SECRET)
    config = slack_config(fake_slack, slack={"botTokenEnv": "MY_BOT_TOKEN",
                                             "signingSecretEnv": "MY_SIGNING",
                                             "apiUrl": fake_slack.base_url})
    world = build_world(tmp_path, fake_slack, config)

    with pytest.raises(ConfigError) as caught:
        build_app(world.services)

    assert str(caught.value) == ("the Slack bot token is missing: set the environment "
                                 "variable MY_BOT_TOKEN")
    assert SECRET not in str(caught.value)


def test_missing_signing_secret_in_http_mode_names_the_variable(
    tmp_path: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    world = build_world(tmp_path, fake_slack)

    with pytest.raises(ConfigError, match="set the environment variable SLACK_SIGNING_SECRET$"):
        build_app(world.services)
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        register_http_routes(Flask("t"), world.services)


def test_web_client_points_at_the_configured_api_url_with_the_429_handler(
    fake_slack: FakeSlack,
) -> None:
    client = build_web_client(slack_config(fake_slack), token=BOT_TOKEN)

    assert client.base_url == fake_slack.base_url
    assert any(isinstance(h, RateLimitErrorRetryHandler) for h in client.retry_handlers)
    assert client.auth_test()["ok"] is True
    [call] = fake_slack.calls_to("auth.test")
    assert call.headers["authorization"] == f"Bearer {BOT_TOKEN}"


def test_socket_mode_needs_no_signing_secret_and_connects_in_the_background(
    tmp_path: Path, fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-test")
    world = build_world(tmp_path, fake_slack)
    connected: list[Any] = []

    class Handler:
        def __init__(self, app: Any, token: str) -> None:
            connected.append((app, token))

        def connect(self) -> None:
            connected.append("connect")

    import slack_bolt.adapter.socket_mode as socket_mode

    monkeypatch.setattr(socket_mode, "SocketModeHandler", Handler)
    assert app_token(world.services.config) == "xapp-1-test"

    app = build_app(world.services, client=world.client)
    handler = app_module.start_socket_mode(app, "xapp-1-test")

    assert isinstance(handler, Handler)
    assert connected == [(app, "xapp-1-test"), "connect"]


def test_listeners_of_every_kind_are_registered(world: Any) -> None:
    # One per card action (6 ack-only: 5 card/notice + the home tab's explainer button;
    # Execute), the approval buttons (Approve + 2 modal openers, issue 12 §1), /loop,
    # app_mention, app_home_opened (§3), the decision modal's view_submission and an
    # operator request's Confirm button (issue 19 §5).
    assert len(world.app._listeners) == 15

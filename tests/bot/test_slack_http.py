"""Tier 2: signed requests dispatched through the real Bolt app over HTTP (a real waitress
server on 127.0.0.1, port 0), with the Web API calls going to the loopback fake."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import pytest
from flask import Flask

from bot.slack.bolt_app import SLACK_PATH, is_utf8, register_http_routes, verify_request
from bot.slack.slack_tables import load_thread
from bridges.ingress.ack_first import AckFirst
from tests.bot.conftest import (
    REF,
    SECRET,
    SlackWorld,
    Waiter,
    command_fields,
    execute_body,
    state_values,
)
from tests.fakes.slack import command_body, interaction_body, sign, signed_post
from tests.waitress_thread import serving


@pytest.fixture
def http(world: SlackWorld) -> Iterator[str]:
    """``http://127.0.0.1:PORT/slack/events`` served by waitress in a thread."""
    flask_app = Flask("loopgate-test")
    register_http_routes(flask_app, world.services, app=world.app)
    with serving(flask_app) as port:
        yield f"http://127.0.0.1:{port}{SLACK_PATH}"


def _started_with_card(world: SlackWorld) -> str:
    world.start()
    world.drain()
    thread = load_thread(world.store, REF)
    assert thread is not None
    return str(thread["ts"])


def test_a_forged_signature_gets_401_and_nothing_happens(world: SlackWorld, http: str) -> None:
    ts = _started_with_card(world)
    calls = len(world.fake.calls)
    body = interaction_body(execute_body(world, "UALICE", state_values(explainer=False), ts=ts))

    reply = signed_post(http, body, SECRET, signature="v0=" + "0" * 64)

    assert reply.status == 401
    assert "phase-selection" not in world.state().decisions
    assert len(world.fake.calls) == calls


def test_a_request_signed_with_another_secret_gets_401(world: SlackWorld, http: str) -> None:
    body = command_body(command_fields(world, "UALICE", "help"))

    reply = signed_post(http, body, "not-the-secret")

    assert reply.status == 401
    assert world.fake.calls_to("response_url") == []


def test_a_six_minute_old_timestamp_gets_401(world: SlackWorld, http: str) -> None:
    ts = _started_with_card(world)
    body = interaction_body(execute_body(world, "UALICE", {}, ts=ts))

    reply = signed_post(http, body, SECRET, timestamp=int(time.time()) - 6 * 60)

    assert reply.status == 401
    assert "phase-selection" not in world.state().decisions


def test_verify_request_checks_window_format_and_signature() -> None:
    body = b"token=x&text=help"
    headers = sign(body, SECRET, timestamp=1_700_000_000)

    assert verify_request(SECRET, body, headers, now=lambda: 1_700_000_000 + 299)
    assert not verify_request(SECRET, body, headers, now=lambda: 1_700_000_000 + 301)
    assert not verify_request(SECRET, body + b"&x=1", headers, now=lambda: 1_700_000_000)
    bad = {**headers, "X-Slack-Request-Timestamp": "soon"}
    assert not verify_request(SECRET, body, bad, now=lambda: 1_700_000_000)
    assert not verify_request(SECRET, body, {}, now=lambda: 1_700_000_000)


@pytest.mark.parametrize("body", [b"token=x&text=caf\xe9", b'{"type": "\xff"}'])
def test_a_signed_body_that_is_not_utf8_gets_400_and_one_log_line(
        world: SlackWorld, http: str, caplog: pytest.LogCaptureFixture, body: bytes) -> None:
    calls = len(world.fake.calls)
    caplog.set_level(logging.WARNING)

    reply = signed_post(http, body, SECRET)

    assert reply.status == 400
    assert reply.json() == {"error": "body is not UTF-8"}
    # loopgate's own lines only: on a loaded machine waitress adds "Task queue depth is 1"
    # (its worker threads were busy), which says nothing about this request.
    assert [(r.name, r.getMessage(), r.exc_info) for r in caplog.records
            if not r.name.startswith("waitress")] == [
        ("bot.slack.bolt_app",
         f"slack request refused: the body is not UTF-8 ({len(body)} bytes)", None)]
    assert len(world.fake.calls) == calls


def test_verify_request_checks_a_body_that_is_not_utf8_without_raising() -> None:
    body = b"text=\xff\xfe"
    headers = sign(body, SECRET, timestamp=1_700_000_000)

    assert verify_request(SECRET, body, headers, now=lambda: 1_700_000_000)
    assert not verify_request("other", body, headers, now=lambda: 1_700_000_000)
    assert not is_utf8(body) and is_utf8("café".encode())


def test_signed_execute_over_http_acks_then_selects(world: SlackWorld, http: str) -> None:
    ts = _started_with_card(world)
    body = interaction_body(execute_body(world, "UALICE", state_values(explainer=False), ts=ts))

    reply = signed_post(http, body, SECRET)

    assert reply.status == 200
    assert reply.body == ""
    world.fake.wait_for("chat.update")
    state = Waiter.until(lambda: world.services.store.load(REF).decisions.get("phase-selection")
                         and world.services.store.load(REF))
    assert state.decisions["phase-selection"]["via"] == "slack"
    assert state.skips["spec-quiz"].token == "explainer"
    assert state.current_node == "brainstorming"


def test_a_checkbox_tick_over_http_is_acked_and_changes_nothing(world: SlackWorld,
                                                                 http: str) -> None:
    ts = _started_with_card(world)
    payload = execute_body(world, "UALICE", {}, ts=ts)
    payload["actions"] = [{"action_id": "loopgate.opt_ins", "block_id": "loopgate.opt_ins.r0.0",
                           "type": "checkboxes", "selected_options": [
                               {"value": "design-critic-review"}],
                           "action_ts": "1596530385.194939"}]
    calls = len(world.fake.calls)

    reply = signed_post(http, interaction_body(payload), SECRET)

    assert reply.status == 200
    assert "phase-selection" not in world.state().decisions
    assert [c.method for c in world.fake.calls[calls:]] in ([], ["auth.test"])


def test_url_verification_is_echoed(world: SlackWorld, http: str) -> None:
    body = json.dumps({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": "3eZbrw1aBm2rZgRNFdxV",
                       "type": "url_verification"})

    reply = signed_post(http, body, SECRET)

    assert reply.status == 200
    assert reply.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV"}


def test_slash_command_over_http_answers_ephemerally_after_the_ack(world: SlackWorld,
                                                                   http: str) -> None:
    world.start()

    reply = signed_post(http, command_body(command_fields(world, "UALICE",
                                                          "check acme/widgets#7")), SECRET)

    assert reply.status == 200
    [answer] = world.fake.wait_for("response_url")
    assert answer.json["response_type"] == "ephemeral"
    assert answer.json["text"].startswith("acme/widgets#7: at phase-selection")
    assert answer.json["blocks"][0]["text"]["text"] == "Check · acme/widgets#7"


def test_app_mention_answers_with_help_in_the_thread(world: SlackWorld, http: str) -> None:
    event = {"token": "verification_token", "team_id": "T111", "api_app_id": "A111",
             "type": "event_callback", "event_id": "Ev111", "event_time": 1599616881,
             "authed_users": ["W111"],
             "event": {"type": "app_mention", "user": "W222", "text": "<@W111> hi",
                       "ts": "1595926230.009600", "channel": "C111",
                       "event_ts": "1595926230.009600"}}

    reply = signed_post(http, json.dumps(event), SECRET)

    assert reply.status == 200
    [said] = world.fake.wait_for("chat.postMessage")
    assert said.args["thread_ts"] == "1595926230.009600"
    assert "/loop check owner/repo#N" in said.args["text"]


class _CountedAcks(AckFirst):
    """The dispatcher's acks-first count, recording how many requests were counted in."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = 0

    def enter(self) -> None:
        self.entered += 1
        super().enter()


def test_only_a_signed_slack_request_is_an_ack_in_hand(world: SlackWorld) -> None:
    """Counted as acks, unsigned POSTs (anyone can send them) would hold the dispatcher's
    acks-first pause at its bound; a signed one is counted until its response closes."""
    acks = _CountedAcks()
    flask_app = Flask("loopgate-test")
    register_http_routes(flask_app, world.services, app=world.app, acks=acks)
    client = flask_app.test_client()
    body = command_body(command_fields(world, "UALICE", "help"))
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    forged = client.post(SLACK_PATH, data=body, headers={
        **headers, **sign(body, "not-the-secret")})
    assert forged.status_code == 401 and acks.entered == 0
    signed = client.post(SLACK_PATH, data=body, headers={**headers, **sign(body, SECRET)})
    assert signed.status_code == 200
    assert acks.entered == 1 and acks.in_hand == 1  # until the server closes the response
    signed.close()
    assert acks.in_hand == 0

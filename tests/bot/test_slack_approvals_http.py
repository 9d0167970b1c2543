"""Issue 12 §1, tier 2: approval clicks and the decision modal as signed HTTP requests
through the real Bolt app (waitress on 127.0.0.1), Web API calls to the loopback fake."""

from __future__ import annotations

import json
from typing import Any

from bot.slack.blocks import ids
from engine.hooks.chat_decision import decision_marker as slack_decision_marker
from tests.bot.conftest import SECRET, SlackWorld, Waiter, approval_click, view_submission
from tests.bot.test_slack_http import http  # noqa: F401 - the signed-HTTP fixture
from tests.fakes.slack import interaction_body, signed_post


def _posted(world: SlackWorld) -> tuple[str, str]:
    world.walk_to_requirements_approval()
    world.drain()
    message = world.approval_message()
    [actions] = [b for b in message.args["blocks"] if b["type"] == "actions"]
    return str(message.response["ts"]), actions["elements"][0]["value"]


def test_approve_click_over_signed_http_passes_the_gate_via_slack(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    ts, value = _posted(world)
    body = interaction_body(approval_click(world, "UALICE", ids.ACTION_APPROVE, value, ts=ts))

    reply = signed_post(http, body, SECRET)

    assert reply.status == 200
    Waiter.until(lambda: [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts])
    decision = world.state().decisions["requirements-approval"]
    assert (decision["by"], decision["via"], decision["outcome"]) == (
        "@alice", "slack", "approved")
    assert len(world.comments(slack_decision_marker("requirements-approval"))) == 1


def test_unauthorized_click_over_signed_http_is_ephemeral_and_changes_nothing(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    ts, value = _posted(world)
    body = interaction_body(approval_click(world, "UBOB", ids.ACTION_APPROVE, value, ts=ts))

    assert signed_post(http, body, SECRET).status == 200

    [said] = world.fake.wait_for("chat.postEphemeral")
    assert said.args["user"] == "UBOB" and "@bob may not answer" in said.args["text"]
    assert world.state().current_node == "requirements-approval"


def _open_modal(world: SlackWorld, url: str, ts: str, value: str) -> dict[str, Any]:
    click = approval_click(world, "UCAROL", ids.ACTION_REQUEST_CHANGES, value, ts=ts)
    assert signed_post(url, interaction_body(click), SECRET).status == 200
    [opened] = world.fake.wait_for("views.open")
    assert opened.args["trigger_id"] == click["trigger_id"]
    view = opened.args["view"]
    return json.loads(view) if isinstance(view, str) else view


def test_empty_modal_over_signed_http_answers_response_action_errors(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    ts, value = _posted(world)
    view = _open_modal(world, http, ts, value)

    reply = signed_post(http, interaction_body(view_submission(view, "UCAROL", "")), SECRET)

    assert reply.status == 200
    assert reply.json() == {"response_action": "errors", "errors": {
        ids.BLOCK_DECISION_TEXT: "Comments are required for this answer."}}
    assert world.state().current_node == "requirements-approval"


def test_modal_submission_over_signed_http_requests_changes(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    ts, value = _posted(world)
    view = _open_modal(world, http, ts, value)

    reply = signed_post(http, interaction_body(view_submission(view, "UCAROL", "R2 is vague")),
                        SECRET)

    assert reply.status == 200 and reply.body == ""
    Waiter.until(lambda: world.state().current_node == "requirements-definition")
    assert world.state().decisions["requirements-approval"]["text"] == "R2 is vague"

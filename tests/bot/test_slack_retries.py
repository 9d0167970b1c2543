"""Issue 12 §6: an Events API redelivery (same ``event_id``) is handled once; ``/loop
check`` takes a pasted issue URL (``<https://github.com/o/r/issues/N|label>``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.slack.listeners.commands.loop import run_loop_command
from bot.slack.listeners.commands.pasted_refs import parse_item
from bot.slack.listeners.events.dedupe import first_delivery
from engine.errors import WorkItemRefError
from engine.refs import WorkItemRef
from tests.bot.conftest import REF, SECRET, SlackWorld, Waiter, command_fields
from tests.bot.test_slack_http import http  # noqa: F401 - the signed-HTTP fixture
from tests.fakes.slack import command_body, signed_post

MENTION = {
    "token": "verification_token", "team_id": "T111", "api_app_id": "A111",
    "event": {"type": "app_mention", "text": "<@W111> Hi there!", "user": "UALICE",
              "ts": "1595926230.009600", "channel": "C111", "event_ts": "1595926230.009600"},
    "type": "event_callback", "event_id": "Ev0RETRY1", "event_time": 1595926230,
}


@pytest.fixture
def mention() -> Iterator[dict[str, Any]]:
    yield json.loads(json.dumps(MENTION))


def test_first_delivery_is_true_once_per_event_id(world: SlackWorld) -> None:
    assert first_delivery(world.store, "Ev1") is True
    assert first_delivery(world.store, "Ev1") is False
    assert first_delivery(world.store, "Ev2") is True


def test_an_app_mention_redelivered_with_the_same_event_id_is_answered_once_tier2(
        world: SlackWorld, http: str, mention: dict[str, Any]) -> None:  # noqa: F811
    body = json.dumps(mention)
    first = signed_post(http, body, SECRET)
    world.fake.wait_for("chat.postMessage", 1)
    retry = _post_retry(http, body, 1)
    retry2 = _post_retry(http, body, 2)

    assert (first.status, retry.status, retry2.status) == (200, 200, 200)
    other = json.dumps({**mention, "event_id": "Ev0OTHER"})
    assert signed_post(http, other, SECRET).status == 200
    posts = world.fake.wait_for("chat.postMessage", 2)
    assert [p.args["thread_ts"] for p in posts] == ["1595926230.009600"] * 2
    assert len(world.fake.calls_to("chat.postMessage")) == 2  # the retries posted nothing


def _post_retry(url: str, body: str, num: int) -> Any:
    import urllib.request

    from tests.fakes.slack import HttpReply, sign

    headers = {**sign(body, SECRET), "Content-Type": "application/json",
               "X-Slack-Retry-Num": str(num), "X-Slack-Retry-Reason": "http_timeout"}
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as resp:
        return HttpReply(resp.status, resp.read().decode(), dict(resp.headers))


@pytest.mark.parametrize("text", [
    "<https://github.com/acme/widgets/issues/7|acme/widgets#7 Add a widget>",
    "<https://github.com/Acme/Widgets/issues/7>",
    "https://github.com/acme/widgets/issues/7",
    "acme/widgets#7",
])
def test_loop_check_accepts_a_pasted_issue_url(world: SlackWorld, text: str) -> None:
    world.start()

    reply = run_loop_command(world.services, "UALICE", f"check {text}")

    assert reply.text == "acme/widgets#7: at phase-selection (parked), 21 unmet"


def test_loop_check_with_a_pasted_url_over_signed_http_tier2(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    world.start()
    text = "check <https://github.com/acme/widgets/issues/7|acme/widgets#7>"

    reply = signed_post(http, command_body(command_fields(world, "UALICE", text)), SECRET)

    assert reply.status == 200
    [answer] = Waiter.until(lambda: world.fake.calls_to("response_url"))
    assert answer.json["text"].startswith("acme/widgets#7: at phase-selection")


def test_parse_item_forms_and_refusal() -> None:
    assert parse_item("<https://github.com/o/r/pull/12|o/r#12>") == WorkItemRef("o", "r", 12)
    assert parse_item("https://github.com/o/r/issues/3#issuecomment-1") == WorkItemRef("o", "r", 3)
    with pytest.raises(WorkItemRefError, match="expected owner/repo#N or an issue URL"):
        parse_item("<https://example.com/o/r/issues/3|x>")
    assert REF == parse_item("acme/widgets#7")


def test_the_dedupe_middleware_drops_a_redelivery_tier1(world: SlackWorld) -> None:
    from slack_bolt import BoltRequest

    from bot.slack.listeners.events.dedupe import dedupe_events

    calls: list[str] = []
    request = BoltRequest(body=json.dumps(MENTION), headers={"X-Slack-Retry-Num": "1"})
    context = {"services": world.services}

    first = dedupe_events(request, MENTION, context, lambda: calls.append("next"))
    again = dedupe_events(request, MENTION, context, lambda: calls.append("next"))

    assert first is None and calls == ["next"]
    assert again.status == 200
    passthrough = dedupe_events(request, {"type": "block_actions"}, context,
                                lambda: calls.append("next"))
    assert passthrough is None and calls == ["next", "next"]

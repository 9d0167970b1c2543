"""The Slack fake refuses what Slack refuses (platform-facts §C1, §C4), through the real
``slack_sdk.WebClient``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.fakes.slack import FakeSlack


class Clock:
    """Monotonic seconds the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def client(clock: Clock) -> Iterator[tuple[FakeSlack, WebClient]]:
    with FakeSlack(clock=clock) as fake:
        yield fake, WebClient(token="xoxb-test", base_url=fake.base_url)


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _modal(blocks: list[dict]) -> dict:
    return {"type": "modal", "title": {"type": "plain_text", "text": "T"}, "blocks": blocks}


def _error(call) -> str:  # noqa: ANN001 - a thunk
    with pytest.raises(SlackApiError) as info:
        call()
    return str(info.value.response["error"])


def test_views_open_takes_an_issued_trigger_id_once(client, clock) -> None:  # noqa: ANN001
    fake, web = client
    trigger = fake.issue_trigger_id()
    assert web.views_open(trigger_id=trigger, view=_modal([_section("hi")]))["ok"] is True
    assert _error(lambda: web.views_open(trigger_id=trigger, view=_modal([]))) == \
        "exchanged_trigger_id"


def test_views_open_refuses_a_trigger_id_slack_never_issued(client) -> None:  # noqa: ANN001
    _, web = client
    with pytest.raises(SlackApiError) as info:
        web.views_open(trigger_id="111.222.made-up", view=_modal([]))
    assert info.value.response["error"] == "invalid_arguments"
    assert info.value.response["response_metadata"]["messages"] == ["invalid `trigger_id`"]


def test_views_open_refuses_a_trigger_id_older_than_3_seconds(client, clock) -> None:  # noqa: ANN001
    fake, web = client
    late, in_time = fake.issue_trigger_id(), fake.issue_trigger_id()
    clock.now += 3.01
    assert _error(lambda: web.views_open(trigger_id=late, view=_modal([]))) == \
        "expired_trigger_id"
    clock.now -= 0.02  # 2.99 s after issue
    assert web.views_open(trigger_id=in_time, view=_modal([]))["ok"] is True


def test_a_home_view_holds_at_most_100_blocks(client) -> None:  # noqa: ANN001
    _, web = client
    home = {"type": "home", "blocks": [_section("x")] * 100}
    assert web.views_publish(user_id="U1", view=home)["ok"] is True
    home["blocks"] = [_section("x")] * 101
    assert _error(lambda: web.views_publish(user_id="U1", view=home)) == "invalid_arguments"


def test_a_modal_holds_at_most_100_blocks(client) -> None:  # noqa: ANN001
    fake, web = client
    too_many = _modal([_section("x")] * 101)
    assert _error(lambda: web.views_open(trigger_id=fake.issue_trigger_id(),
                                         view=too_many)) == "invalid_arguments"


def test_a_message_holds_at_most_50_blocks(client) -> None:  # noqa: ANN001
    _, web = client
    assert web.chat_postMessage(channel="C1", text="t", blocks=[_section("x")] * 50)["ok"]
    assert _error(lambda: web.chat_postMessage(channel="C1", text="t",
                                               blocks=[_section("x")] * 51)) == "invalid_blocks"
    assert _error(lambda: web.chat_update(channel="C1", ts="1.2", text="t",
                                          blocks=[_section("x")] * 51)) == "invalid_blocks"


def test_section_text_holds_at_most_3000_characters(client) -> None:  # noqa: ANN001
    _, web = client
    assert web.chat_postMessage(channel="C1", text="t", blocks=[_section("x" * 3000)])["ok"]
    assert _error(lambda: web.chat_postMessage(channel="C1", text="t",
                                               blocks=[_section("x" * 3001)])) == \
        "invalid_blocks"
    home = {"type": "home", "blocks": [_section("x" * 3001)]}
    assert _error(lambda: web.views_publish(user_id="U1", view=home)) == "invalid_arguments"

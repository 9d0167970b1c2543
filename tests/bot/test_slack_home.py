"""Issue 12 §3: the App Home tab — ``app_home_opened`` publishes "Waiting on you" and
"Your items"; it is republished when one of those items moves. Tier 1 (listener) and
tier 2 (a signed Events API request)."""

from __future__ import annotations

import json
from typing import Any

from bot.slack.listeners.events.home_opened import on_home_opened
from tests.bot.conftest import SECRET, SlackWorld, Waiter
from tests.bot.test_slack_http import http  # noqa: F401 - the signed-HTTP fixture
from tests.fakes.slack import signed_post


def _open(world: SlackWorld, user: str) -> dict[str, Any]:
    acked: list[int] = []
    on_home_opened(lambda *a, **k: acked.append(1),
                   {"type": "app_home_opened", "user": user, "tab": "home"},
                   world.client, {"services": world.services})
    assert acked == [1]
    return _published(world, user)[-1]


def _published(world: SlackWorld, user: str) -> list[dict[str, Any]]:
    out = []
    for call in world.fake.calls_to("views.publish"):
        if call.args["user_id"] == user:
            view = call.args["view"]
            out.append(json.loads(view) if isinstance(view, str) else view)
    return out


def _text(view: dict[str, Any]) -> str:
    parts = []
    for block in view["blocks"]:
        text = block.get("text")
        if isinstance(text, dict):
            parts.append(text["text"])
        for el in block.get("elements") or ():
            parts.append(str(el.get("text", {}).get("text", "") if isinstance(
                el.get("text"), dict) else el.get("text", "")))
    return "\n".join(parts)


def test_home_shows_the_gate_waiting_on_an_approver_and_their_items(world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    entered = world.state().nodes["requirements-approval"].entered_at

    view = _open(world, "UALICE")

    text = _text(view)
    assert view["type"] == "home"
    assert text.index("Waiting on you") < text.index("Your items")
    assert (f"*acme/widgets#7* · `requirements-approval` (approval) — waiting since {entered}"
            in text)
    buttons = [el for b in view["blocks"] if b["type"] == "actions" for el in b["elements"]]
    assert [(b["text"]["text"], b["url"]) for b in buttons] == [
        ("Open the issue", "https://github.com/acme/widgets/issues/7")]
    assert ("• <https://github.com/acme/widgets/issues/7|acme/widgets#7> — at "
            "`requirements-approval` (parked)") in text


def test_home_of_a_linked_user_who_may_not_decide_shows_nothing_waiting(
        world: SlackWorld) -> None:
    world.walk_to_requirements_approval()

    text = _text(_open(world, "UBOB"))

    assert "Nothing waits on you." in text and "You own no work items yet." in text


def test_home_of_an_unlinked_user_says_how_to_link(world: SlackWorld) -> None:
    text = _text(_open(world, "UEVE"))

    assert "`/loop link <github-login>`" in text


def test_home_lists_a_quiz_waiting_on_its_owner_with_the_comment_button(
        world: SlackWorld) -> None:
    world.start()
    comment = world.walk_to_spec_quiz()

    view = _open(world, "UALICE")

    assert "`spec-quiz` (quiz)" in _text(view)
    buttons = {el["text"]["text"]: el["url"] for b in view["blocks"]
               if b["type"] == "actions" for el in b["elements"]}
    assert buttons["Open the quiz comment"] == comment.url


def test_home_is_republished_when_one_of_its_items_moves(world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    _open(world, "UALICE")
    world.drain()
    before = len(_published(world, "UALICE"))

    world.reply_on_github("carol", "approved")
    world.drain()

    latest = _published(world, "UALICE")
    assert len(latest) > before
    text = _text(latest[-1])
    assert "Nothing waits on you." in text
    assert "at `design`" in text


def test_app_home_opened_over_signed_http_publishes_the_tab_tier2(
        world: SlackWorld, http: str) -> None:  # noqa: F811
    world.walk_to_requirements_approval()
    body = json.dumps({"token": "t", "team_id": "T111", "api_app_id": "A111",
                       "type": "event_callback", "event_id": "Ev0HOME1", "event_time": 1,
                       "event": {"type": "app_home_opened", "user": "UCAROL", "channel": "D1",
                                 "tab": "home", "event_ts": "1.1"}})

    assert signed_post(http, body, SECRET).status == 200

    view = Waiter.until(lambda: _published(world, "UCAROL"))[-1]
    assert "`requirements-approval` (approval)" in _text(view)


def test_web_base_follows_the_configured_api_url(world: SlackWorld) -> None:
    from bot.config import validate_mapping
    from bot.slack.home_tab import web_base

    assert web_base(world.services.config) == "https://github.com"
    ghes = validate_mapping({"github": {"apiUrl": "https://git.acme.test/api/v3"}}, "t")
    assert web_base(ghes) == "https://git.acme.test"

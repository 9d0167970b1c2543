"""An operator request in Slack (issue 19 §5): the item's thread gets the request with a
Confirm button; a click counts as the clicker's linked GitHub login, authorized like a
reply — an unlinked or unauthorized clicker is told why and nothing changes, an
authorized click applies it, records ``via: slack`` and rewrites the message."""

from __future__ import annotations

from typing import Any

from bot.slack.blocks import ids
from bot.slack.blocks.operator_blocks import parse_request_value
from bot.slack.listeners.actions.operator_confirm import on_operator_confirm
from tests.bot.conftest import REF, SlackWorld, approval_click


class Ack:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)


def _requested(world: SlackWorld) -> tuple[str, str, str]:
    world.start()
    world.reply_on_github("alice", "the-loop execute\n- [ ] brainstorming")
    world.drain()
    result = world.services.runtime.operator_skip(REF, ["code-quiz"], "a <b>typo</b> fix", "cli")
    assert result.request is not None
    world.fake.clear()
    world.drain()
    [post] = [c for c in world.fake.calls_to("chat.postMessage")
              if any(b.get("type") == "actions" for b in c.args.get("blocks") or ())]
    [actions] = [b for b in post.args["blocks"] if b["type"] == "actions"]
    [button] = actions["elements"]
    assert (button["action_id"], button["text"]["text"]) == (ids.ACTION_OPERATOR_CONFIRM,
                                                             "Confirm")
    assert "a &lt;b&gt;typo&lt;/b&gt; fix" in post.args["blocks"][0]["text"]["text"]
    assert post.args["text"] == (f"Operator request {result.request['id']} on acme/widgets#7: "
                                 "skip code-quiz (needs a confirmation)")
    return str(post.response["ts"]), button["value"], result.request["id"]


def _click(world: SlackWorld, user: str, value: str, ts: str) -> None:
    ack = Ack()
    on_operator_confirm(ack, approval_click(world, user, ids.ACTION_OPERATOR_CONFIRM, value,
                                            ts=ts), world.client, {"services": world.services})
    assert ack.calls == [{}]


def _ephemerals(world: SlackWorld, user: str) -> list[str]:
    return [c.args["text"] for c in world.fake.calls_to("chat.postEphemeral")
            if c.args.get("user") == user]


def test_the_button_value_names_the_item_and_the_request() -> None:
    assert parse_request_value("acme/widgets#7|0badc0de") == (REF, "0badc0de")


def test_an_unlinked_or_unauthorized_click_changes_nothing(world: SlackWorld) -> None:
    ts, value, rid = _requested(world)
    _click(world, "UEVE", value, ts)
    assert _ephemerals(world, "UEVE") == [
        "Your Slack account is not linked to a GitHub login, so nothing was confirmed. "
        "Run `/loop link &lt;github-login&gt;` first."]
    _click(world, "UBOB", value, ts)  # linked to bob, who is not authorized
    assert _ephemerals(world, "UBOB") == [
        f"@bob cannot confirm operator request {rid} (skip code-quiz): @bob is not among the "
        "approvers of this gate (@alice, @carol) (at code-quiz). Nothing changed."]
    state = world.state()
    assert "code-quiz" not in state.skips
    assert state.surface["operatorRequests"][rid]["refused"][0]["via"] == "slack"
    assert [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts] == []


def test_an_authorized_click_confirms_and_rewrites_the_message(world: SlackWorld) -> None:
    ts, value, rid = _requested(world)
    _click(world, "UALICE", value, ts)
    skip = world.state().skips["code-quiz"]
    assert (skip.confirmed_by, skip.confirmed_via, skip.request) == ("alice", "slack", rid)
    [update] = [c for c in world.fake.calls_to("chat.update") if c.args["ts"] == ts]
    assert update.args["text"] == (f"Operator request {rid} on acme/widgets#7: confirmed by "
                                   "@alice via slack")
    assert not [b for b in update.args["blocks"] if b["type"] == "actions"]
    _click(world, "UCAROL", value, ts)  # settled: a second click changes nothing
    assert _ephemerals(world, "UCAROL") == [
        f"Operator request {rid} on acme/widgets#7 is not pending (already confirmed, or "
        "unknown); nothing changed."]

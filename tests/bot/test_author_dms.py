"""Issue 24 §3 through the outbox, the Slack worker and the loopback fake Slack: the work
item's author (carol, linked as UCAROL) gets a DM when a gate passes ("your spec quiz is
attested; tasks breakdown is unblocked") and when the item is complete — once per pass,
also when the notice is retried or the event replayed — and nothing when the author is
not linked."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from bot.slack.notifier import OutboxNotifier
from engine.story import AUTHOR_NOTICE
from tests.bot.conftest import REF, SlackWorld

ISSUE = "https://github.com/acme/widgets/issues/7"


def _author_dms(world: SlackWorld) -> list[Any]:
    # Carol's DMs other than the quiz-pending one ("🎓 Spec quiz waiting on …").
    return [c for c in world.fake.calls_to("chat.postMessage")
            if c.args["channel"] == "DUCAROL" and not c.args["text"].startswith("🎓")]


def _skip_everything(world: SlackWorld) -> None:
    graph = world.services.graph
    rows = "\n".join(f"- [ ] {n.id}" for n in graph.ordered() if n.skippable)
    state = world.reply_on_github("alice", f"the-loop execute\n{rows}\n- [ ] explainer")
    assert state.current_node == "human-approval", state.parked


def test_a_passed_gate_dms_the_author_once(world: SlackWorld) -> None:
    world.start()
    comment = world.walk_to_spec_quiz()
    world.drain()
    assert _author_dms(world) == []  # the selection confirms itself; nothing passed yet
    world.fake.clear()

    state = world.tick_quiz(comment, "alice")
    assert state.current_node == "tasks-breakdown"
    world.drain()

    [dm] = _author_dms(world)
    about = world.services.graph.node("tasks-breakdown").description
    assert dm.args["text"] == "acme/widgets#7: your spec quiz is attested"
    assert dm.args["blocks"][0]["text"]["text"] == (
        f"✅ Your spec quiz (`spec-quiz`) on <{ISSUE}|acme/widgets#7> “Add a &lt;widget&gt; "
        "&amp; more” is attested by @alice. Tasks breakdown (`tasks-breakdown`) is "
        f"unblocked: {about}.")
    assert [c.args["users"] for c in world.fake.calls_to("conversations.open")] == ["UCAROL"]

    # A replayed attestation and a retried notice reach nobody twice.
    world.services.runtime.advance(REF, {"attestation": {"comment_id": comment.id,
                                                         "url": comment.url}})
    data = next(d for e, d in _outbox_data(world) if e == AUTHOR_NOTICE)
    OutboxNotifier(world.store).send(REF, AUTHOR_NOTICE, data)
    world.drain()
    assert len(_author_dms(world)) == 1


def _outbox_data(world: SlackWorld) -> list[tuple[str, dict[str, Any]]]:
    rows = world.store.db().execute("SELECT event, data FROM slack_outbox ORDER BY id")
    return [(e, json.loads(d)) for e, d in rows]


def test_the_completion_dms_the_author_once(world: SlackWorld) -> None:
    world.start()
    _skip_everything(world)
    world.drain()
    world.fake.clear()

    state = world.reply_on_github("alice", "approved")
    assert state.status == "complete"
    world.drain()
    world.drain()

    [dm] = _author_dms(world)
    assert dm.args["text"] == "acme/widgets#7 is complete"
    assert dm.args["blocks"][0]["text"]["text"] == (
        f"🏁 Your work item <{ISSUE}|acme/widgets#7> “Add a &lt;widget&gt; &amp; more” is "
        "complete: its human approval (`human-approval`) is approved by @alice.")
    assert [e for e, _ in _outbox_data(world)].count(AUTHOR_NOTICE) == 1


def test_no_dm_when_the_author_is_not_linked(world: SlackWorld,
                                             caplog: pytest.LogCaptureFixture) -> None:
    world.tracker.set_issue(REF, "Add a widget", author="eve")  # eve is linked to nobody
    world.start()
    _skip_everything(world)
    world.drain()
    world.fake.clear()

    with caplog.at_level(logging.DEBUG, logger="bot.slack.worker"):
        world.reply_on_github("alice", "approved")
        world.drain()

    assert world.fake.calls_to("conversations.open") == []
    assert "no author DM for acme/widgets#7: @eve is not linked to a Slack user" in caplog.text
    assert [e for e, _ in _outbox_data(world)].count(AUTHOR_NOTICE) == 1  # sent, to nobody

"""Issue 12 §2: thread lines for a waiting gate mention the linked Slack users it waits
on; a gate waiting longer than ``slack.remindAfterHours`` (default 24) gets one thread
reminder and one DM per approver per day at most, stopping when it moves."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.bot.conftest import IDENTITIES, SlackWorld, build_world, slack_config
from tests.fakes.slack import FakeSlack


def _reminders(world: SlackWorld) -> list[tuple[str, str]]:
    return [(c.args["channel"], c.args.get("thread_ts", "")) for c in
            world.fake.calls_to("chat.postMessage") if "⏰" in str(c.args.get("text"))]


def test_the_approval_message_mentions_the_linked_approvers(world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    world.drain()

    text = world.approval_message().args["blocks"][0]["text"]["text"]

    assert "Waiting on: <@UALICE>, <@UCAROL>" in text


def test_the_quiz_thread_line_mentions_its_owners(world: SlackWorld) -> None:
    world.start()
    world.walk_to_spec_quiz()
    world.drain()

    [line] = [c for c in world.fake.calls_to("chat.postMessage")
              if c.args.get("thread_ts") and "Spec quiz" in str(c.args.get("text"))]
    assert line.args["blocks"][-1]["elements"][0]["text"] == "Waiting on: <@UALICE>, <@UCAROL>"


def test_no_reminder_before_remind_after_hours(world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    world.drain()
    world.clock.advance(hours=23, minutes=59)

    world.drain()

    assert _reminders(world) == []


def test_a_gate_waiting_past_24_hours_gets_one_thread_reminder_and_one_dm_per_day(
        world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    world.drain()
    thread_ts = world.approval_message().args["thread_ts"]

    world.clock.advance(hours=25)
    world.drain()
    world.drain()  # a second pass the same day adds nothing

    reminders = _reminders(world)
    assert sorted(reminders) == sorted([("C0CARDS", thread_ts), ("DUALICE", ""),
                                        ("DUCAROL", "")])
    [line] = [c for c in world.fake.calls_to("chat.postMessage")
              if c.args.get("thread_ts") == thread_ts and "⏰" in c.args["text"]]
    assert line.args["text"] == (
        "⏰ `requirements-approval` of <https://github.com/acme/widgets/issues/7|acme/widgets#7>"
        " has waited 25 hours for an approval — <@UALICE>, <@UCAROL>.")

    world.clock.advance(hours=23)
    world.drain()
    assert len(_reminders(world)) == 3  # not yet a day since the last one

    world.clock.advance(hours=1)
    world.drain()
    assert len(_reminders(world)) == 6  # the next day: once more each


def test_reminders_stop_when_the_gate_moves(world: SlackWorld) -> None:
    world.walk_to_requirements_approval()
    world.drain()
    world.reply_on_github("carol", "approved")

    world.clock.advance(hours=30)
    world.drain()

    assert _reminders(world) == []


def test_remind_after_hours_is_configurable(tmp_path: Path, fake_slack: FakeSlack,
                                            slack_env: None) -> None:
    config = slack_config(fake_slack, slack={
        "channel": "C0CARDS", "apiUrl": fake_slack.base_url, "identities": dict(IDENTITIES),
        "remindAfterHours": 2})
    world = build_world(tmp_path, fake_slack, config)
    try:
        world.walk_to_requirements_approval()
        world.drain()
        world.clock.advance(hours=2)
        world.drain()
        assert len(_reminders(world)) == 3
    finally:
        world.services.close()


def test_a_refused_reminder_is_logged_once_and_not_retried_every_pass(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.walk_to_requirements_approval()
    world.drain()
    world.fake.fail_method("conversations.open", "cannot_dm_bot")
    world.clock.advance(hours=25)
    caplog.set_level(logging.WARNING, logger="bot.slack.worker")

    world.drain()
    world.drain()

    refusals = [r.getMessage() for r in caplog.records if "reminder refused" in r.getMessage()]
    assert refusals == ["slack: reminder refused: conversations.open: cannot_dm_bot"] * 2
    assert len(world.fake.all_calls_to("conversations.open")) == 2  # alice, carol: once each


def test_a_deleted_approval_message_is_given_up_with_one_log_line(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.walk_to_requirements_approval()
    world.drain()
    world.reply_on_github("carol", "approved")
    world.fake.fail_method("chat.update", "message_not_found")
    caplog.set_level(logging.WARNING, logger="bot.slack.worker")

    world.drain()
    world.drain()

    lines = [r.getMessage() for r in caplog.records if "not rewritten" in r.getMessage()]
    assert lines == ["slack: approval message of acme/widgets#7 requirements-approval not "
                     "rewritten: slack 200: message_not_found"]

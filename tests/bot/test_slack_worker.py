"""The outbox and the Slack worker: the card, quiz DMs and their rewrites, thread lines,
429 handling, outage retries and pacing — all against the loopback fake Slack."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from slack_sdk.http_retry import builtin_handlers

from bot.slack import worker as worker_module
from bot.slack.notifier import OutboxNotifier
from bot.slack.slack_tables import load_thread
from tests.bot.conftest import CHANNEL, REF, SlackWorld


def _posts(world: SlackWorld, channel: str | None = None) -> list[Any]:
    return [c for c in world.fake.calls_to("chat.postMessage")
            if channel is None or c.args["channel"] == channel]


def _unsent(world: SlackWorld) -> list[tuple[str, int, str]]:
    rows = world.store.db().execute(
        "SELECT event, attempts, last_error FROM slack_outbox WHERE sent_at IS NULL ORDER BY id")
    return [tuple(r) for r in rows]


def test_phase_selection_pending_posts_the_card_in_the_channel(world: SlackWorld) -> None:
    world.start()

    assert world.drain() == 1

    [post] = _posts(world)
    assert post.args["channel"] == CHANNEL
    # The fallback text escapes the title like the blocks do (issue 19 §6).
    assert post.args["text"] == ("Phase selection for acme/widgets#7: "
                                 "Add a &lt;widget&gt; &amp; more")
    assert post.args["blocks"][0]["text"]["text"] == "Phase selection · acme/widgets#7"
    thread = load_thread(world.store, REF)
    assert thread is not None
    assert (thread["kind"], thread["revision"], thread["author"]) == ("card", 0, "carol")
    assert _unsent(world) == []


def test_a_selection_made_on_github_rewrites_the_card(world: SlackWorld) -> None:
    world.start()
    world.drain()
    card_ts = load_thread(world.store, REF)["ts"]

    world.reply_on_github("alice", "the-loop execute\n- [ ] brainstorming")
    world.drain()

    [update] = world.fake.calls_to("chat.update")
    assert update.args["ts"] == card_ts
    blocks = update.args["blocks"]
    assert not [b for b in blocks if b["type"] == "actions"]
    assert all(".r1." in b["block_id"] for b in blocks if "block_id" in b)
    text = str(blocks)
    assert "by @alice — from the checklist in the reply." in text
    assert "Skipped by @alice: `brainstorming`." in text
    assert load_thread(world.store, REF)["kind"] == "status"


def test_quiz_pending_dm_is_sent_on_spec_quiz_entry_and_updated_on_attestation(
    world: SlackWorld,
) -> None:
    world.start()
    world.drain()
    comment = world.walk_to_spec_quiz()
    world.fake.clear()

    world.drain()

    opened = sorted(c.args["users"] for c in world.fake.calls_to("conversations.open"))
    assert opened == ["UALICE", "UCAROL"]  # who executed phase selection + issue author
    dms = [c for c in _posts(world) if c.args["channel"].startswith("D")]
    assert sorted(c.args["channel"] for c in dms) == ["DUALICE", "DUCAROL"]
    dm = dms[0].args
    assert dm["text"].startswith("🎓 Spec quiz waiting on acme/widgets#7")
    section = dm["blocks"][0]["text"]["text"]
    assert "View it with one of these commands" in section
    assert "gh api -H 'Accept: application/vnd.github.raw'" in section
    [button] = dm["blocks"][1]["elements"]
    assert (button["url"], button["text"]["text"]) == (comment.url, "Open the GitHub comment")
    [line] = [c for c in _posts(world) if c.args.get("thread_ts")]
    assert line.args["thread_ts"] == load_thread(world.store, REF)["ts"]
    assert line.args["text"] == dm["text"]

    state = world.tick_quiz(comment, "alice")
    assert state.current_node == "tasks-breakdown"
    world.fake.clear()
    world.drain()

    updates = world.fake.calls_to("chat.update")
    attested = [u for u in updates if "attested by" in u.args["text"]]
    assert sorted(u.args["channel"] for u in attested) == [CHANNEL, "DUALICE", "DUCAROL"]
    when = state.decisions["spec-quiz"]["attestedAt"]
    assert when
    for update in attested:
        expected = f"✅ Spec quiz on acme/widgets#7: attested by @alice at {when}"
        assert update.args["text"] == expected
        assert ".r1." in update.args["blocks"][0]["block_id"]


def test_a_stale_quiz_rewrites_the_notices_to_say_a_new_quiz_will_follow(
    world: SlackWorld,
) -> None:
    world.start()
    comment = world.walk_to_spec_quiz()
    world.drain()
    world.artifacts.write(REF, "design.md", "design v2\n")

    state = world.tick_quiz(comment, "alice")
    assert state.current_node == "spec-explainer"
    world.fake.clear()
    world.drain()

    stale = [u for u in world.fake.calls_to("chat.update") if "spec changed" in u.args["text"]]
    assert sorted(u.args["channel"] for u in stale) == [CHANNEL, "DUALICE", "DUCAROL"]
    assert stale[0].args["text"] == ("♻️ Spec quiz on acme/widgets#7: the spec changed and a "
                                     "new quiz will follow")


def test_no_dm_to_a_deactivated_account(world: SlackWorld) -> None:
    world.fake.set_user("UCAROL", deleted=True)
    world.start()
    world.walk_to_spec_quiz()

    world.drain()

    assert [c.args["users"] for c in world.fake.calls_to("conversations.open")] == ["UALICE"]


def test_other_events_go_to_the_items_thread(world: SlackWorld) -> None:
    world.start()
    world.drain()
    notifier = OutboxNotifier(world.store)

    notifier.send(REF, "conflict-escalated", {"node": "implementation",
                                              "reason": "three blocks in a row"})
    world.drain()

    [line] = [c for c in _posts(world) if c.args.get("thread_ts")]
    assert line.args["thread_ts"] == load_thread(world.store, REF)["ts"]
    assert line.args["text"] == ("acme/widgets#7: ⚠️ escalated at `implementation`: a person "
                                 "has to decide")
    assert line.args["blocks"][1]["elements"][0]["text"] == "three blocks in a row"


def test_a_slack_429_is_retried_after_retry_after(world: SlackWorld,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(builtin_handlers.time, "sleep", slept.append)
    world.fake.rate_limit_once("chat.postMessage", retry_after=7)
    world.start()

    assert world.drain() == 1

    statuses = [c.status for c in world.fake.all_calls_to("chat.postMessage")]
    assert statuses == [429, 200]
    assert len(slept) == 1 and 7 <= slept[0] < 8  # Retry-After plus the SDK's jitter
    assert load_thread(world.store, REF) is not None
    assert _unsent(world) == []


def test_a_slack_outage_never_blocks_github_and_never_loses_the_event(
    world: SlackWorld,
) -> None:
    world.fake.set_down(True)

    state = world.start()  # the engine commits regardless of Slack
    world.reply_on_github("alice", "the-loop execute")
    assert state.current_node == "phase-selection"
    assert world.drain() == 0

    unsent = _unsent(world)
    assert [e for e, _, _ in unsent] == ["phase-selection-pending", "phase-selection-done"]
    assert unsent[0][1] == 1 and unsent[0][2] == "slack 503: service_unavailable"
    assert unsent[1][1] == 0, "a later event of the item waits behind the failed one"

    world.fake.set_down(False)
    assert world.drain() == 2

    assert _unsent(world) == []
    # Sent late, the card is posted as it should look now: read-only, naming the selection.
    [post] = _posts(world)
    assert "by @alice" in str(post.args["blocks"])
    assert not [b for b in post.args["blocks"] if b["type"] == "actions"]
    assert world.fake.calls_to("chat.update") == []


def test_a_refused_event_is_set_aside_after_max_attempts(world: SlackWorld) -> None:
    world.fake.fail_method("chat.postMessage", "channel_not_found")
    world.start()

    for _ in range(worker_module.MAX_ATTEMPTS):
        world.drain()

    failed = world.store.db().execute(
        "SELECT attempts, last_error FROM slack_outbox WHERE failed_at IS NOT NULL").fetchall()
    assert failed == [(worker_module.MAX_ATTEMPTS, "chat.postMessage: channel_not_found")]


def test_posts_to_one_channel_are_paced(world: SlackWorld,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    clock = [1000.0]

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock[0] += seconds

    # The worker's own clock: on a loaded machine real time between two posts would eat
    # into the wait (and the global time.sleep is left alone for every other thread).
    monkeypatch.setattr(worker_module, "time",
                        SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    world.worker.pace_seconds = 1.0
    world.start()
    notifier = OutboxNotifier(world.store)
    notifier.send(REF, "work-item-complete", {"node": "complete"})
    notifier.send(REF, "pr-review-pending", {"node": "human-approval"})

    world.drain()

    assert len(_posts(world, CHANNEL)) == 3
    assert len(waits) == 2 and all(0.9 < w <= 1.0 for w in waits)


def test_outbox_rows_commit_and_roll_back_with_the_engine_transaction(
    world: SlackWorld,
) -> None:
    notifier = OutboxNotifier(world.store)

    with pytest.raises(RuntimeError), world.store.transaction(REF):
        notifier.send(REF, "quiz-pending", {"node": "spec-quiz"})
        raise RuntimeError("the transition failed")
    with world.store.transaction(REF):
        notifier.send(REF, "quiz-pending", {"node": "code-quiz"})

    assert world.outbox() == [("quiz-pending", "acme/widgets#7")]


def test_the_notifier_never_raises(world: SlackWorld) -> None:
    class Broken:
        def db(self) -> Any:
            raise OSError("disk gone")

    notifier = OutboxNotifier(world.store)
    notifier.store = Broken()

    notifier.send(REF, "quiz-pending", {"node": "spec-quiz"})  # logged, not raised


def test_the_worker_thread_drains_until_stopped(world: SlackWorld) -> None:
    world.worker.idle_seconds = 0.01
    world.worker.start()
    world.start()

    world.fake.wait_for("chat.postMessage")
    world.worker.stop()

    assert _unsent(world) == []


def test_a_failed_home_refresh_never_fails_or_repeats_the_items_notice(
        world: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    from bot.slack.home_tab import publish_home

    world.start()
    world.drain()
    publish_home(world.services, world.client, "UCAROL")  # her Home lists her item
    world.fake.fail_method("views.publish", "invalid_arguments")
    OutboxNotifier(world.store).send(REF, "conflict-escalated", {
        "node": "implementation", "reason": "three blocks in a row"})

    with caplog.at_level("WARNING", logger="bot.slack.home_tab"):
        assert world.drain() == 1
        world.drain()  # nothing is left to retry

    lines = [c for c in _posts(world) if c.args.get("thread_ts")]
    assert len(lines) == 1, "the thread line is posted once"
    assert _unsent(world) == []
    assert len(world.fake.all_calls_to("views.publish")) == 2  # first publish + one refresh
    [logged] = [r.getMessage() for r in caplog.records if r.name == "bot.slack.home_tab"]
    assert logged == ("home tabs showing acme/widgets#7 not refreshed for 1 of 1 users "
                      "(invalid_arguments)")

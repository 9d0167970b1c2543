"""Issue 14 §15: GitHub-side selection reaches Slack. Unticking a row of loopgate's
checklist on GitHub, before anyone executes, redraws the Slack card ticked as the checklist
says with fresh block ids, so a Slack Execute cannot run a phase the checklist removed;
whichever surface executes first wins and the other shows the result.

The real stack end to end: the fake GitHub (PyGithub/gql), the poller or the webhook
receiver, the dispatcher, the SQLite outbox, the Slack worker and the Execute listener over
the loopback fake Slack (slack_sdk's WebClient)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.blocks import ids
from bot.slack.bolt_app import build_web_client
from bot.slack.listeners.actions.execute import ExecuteOutcome, execute
from bot.slack.slack_tables import load_thread
from bot.slack.worker import SlackWorker
from engine.hooks.markers import CONFIRMATION_MARKER, PHASE_SELECTION_MARKER
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeComment, FakeGitHub
from tests.fakes.slack import FakeSlack

CHANNEL = "C0CARDS"
BOT_TOKEN = "xoxb-test-token"


@pytest.fixture
def fake_slack(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlack]:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "8f742231b10e8888abcd99yyyzzz85a5")
    monkeypatch.setenv("LOOPGATE_SLACK_PACE_SECONDS", "0")
    with FakeSlack() as fake:
        yield fake


class Both:
    """The GitHub world with a Slack section, its worker, and Execute clicks."""

    def __init__(self, github: FakeGitHub, slack: FakeSlack, tmp: Path) -> None:
        overrides = {"slack": {"channel": CHANNEL, "apiUrl": slack.base_url,
                               "identities": {"UALICE": "alice", "UBOB": "bob"}}}
        self.gh = GitHubWorld(github, tmp, overrides).build()
        self.slack = slack
        client = build_web_client(self.gh.services.config, token=BOT_TOKEN)
        self.client = client
        self.worker = SlackWorker(self.gh.services, client=client, pace_seconds=0,
                                  retry_base=0)
        self.ref = WorkItemRef("acme", "widgets", 0)  # set by the test once started

    def started(self) -> tuple[WorkItemRef, FakeComment]:
        ref = self.gh.issue()
        self.gh.fake.add_label(REPO, ref.number, "loop:start")
        self.gh.poll()
        self.worker.drain_once()
        [checklist] = [c for c in self.gh.fake.comments_on(REPO, ref.number)
                       if PHASE_SELECTION_MARKER in c.body]
        return ref, checklist

    def untick_on_github(self, checklist: FakeComment, token: str) -> None:
        self.gh.fake.advance(2)  # an edit is seen as one when updated_at moved
        body = self.gh.fake.comments[checklist.id].body
        row = re.compile(rf"^- \[x\] {re.escape(token)}(?= |$)", re.M)  # a description may follow
        assert len(row.findall(body)) == 1
        self.gh.fake.edit_comment(checklist.id, row.sub(f"- [ ] {token}", body), "alice")

    def card(self) -> dict[str, Any]:
        """The card message as Slack holds it now (the last post or update of its ts)."""
        thread = load_thread(self.gh.services.store, self.ref)
        assert thread is not None
        calls = [c for c in self.slack.calls
                 if c.method in ("chat.postMessage", "chat.update")
                 and (c.args.get("ts") in (None, thread["ts"]))
                 and not c.args.get("thread_ts")]
        blocks = calls[-1].args["blocks"]
        return {"type": "message", "ts": thread["ts"],
                "blocks": blocks if isinstance(blocks, list) else []}

    def click(self, user: str, message: dict[str, Any],
              values: dict[str, Any] | None = None) -> ExecuteOutcome:
        body = {
            "type": "block_actions", "user": {"id": user}, "channel": {"id": CHANNEL},
            "container": {"type": "message", "message_ts": message["ts"],
                          "channel_id": CHANNEL},
            "message": message, "state": {"values": dict(values or {})},
            "actions": [{"action_id": ids.ACTION_EXECUTE, "value": str(self.ref),
                         "type": "button"}],
        }
        return execute(self.gh.services, self.client, body)


@pytest.fixture
def both(github_env: FakeGitHub, fake_slack: FakeSlack, tmp_path: Path) -> Iterator[Both]:
    b = Both(github_env, fake_slack, tmp_path)
    try:
        yield b
    finally:
        b.worker.stop()
        b.gh.close()


def _phase_options(message: dict[str, Any]) -> tuple[set[str], set[str], set[int]]:
    """(options, initially ticked options, revisions) of the card's phase rows."""
    options: set[str] = set()
    ticked: set[str] = set()
    revisions: set[int] = set()
    for block in message["blocks"]:
        parsed = ids.parse_block_id(str(block.get("block_id") or ""))
        if parsed is None:
            continue
        revisions.add(parsed.revision)
        if parsed.prefix != ids.BLOCK_PHASES:
            continue
        for element in block["elements"]:
            options |= {o["value"] for o in element["options"]}
            ticked |= {o["value"] for o in element.get("initial_options") or ()}
    return options, ticked, revisions


def test_unticking_a_github_checklist_row_redraws_the_slack_card_with_fresh_block_ids(
        both: Both) -> None:
    both.ref, checklist = both.started()
    first = both.card()
    options, ticked, revisions = _phase_options(first)
    assert "brainstorming" in ticked and revisions == {0}

    both.untick_on_github(checklist, "brainstorming")
    report = both.gh.poll()
    assert [r.reason for r in report.repos[0].results] == ["checklist-mirrored"]
    both.worker.drain_once()

    redrawn = both.card()
    new_options, new_ticked, new_revisions = _phase_options(redrawn)
    assert new_options == options
    assert new_ticked == ticked - {"brainstorming"}
    assert new_revisions == {1}  # every block id is fresh
    assert load_thread(both.gh.services.store, both.ref)["revision"] == 1
    assert both.gh.events(both.ref, "github.checklist_edited")[0]["skips"] == ["brainstorming"]
    # the same edit read again (overlap window) redraws nothing more
    updates = len(both.slack.calls_to("chat.update"))
    both.gh.poll()
    both.worker.drain_once()
    assert len(both.slack.calls_to("chat.update")) == updates

    # An Execute on the redrawn card, boxes untouched: brainstorming is not run.
    outcome = both.click("UALICE", redrawn)
    assert outcome.code == "selected", outcome.message
    state = both.gh.state(both.ref)
    assert state.decisions["phase-selection"]["skips"] == ["brainstorming"]
    assert state.current_node == "requirements-definition"


def test_a_slack_execute_on_the_card_drawn_before_the_github_edit_runs_nothing(
        both: Both) -> None:
    both.ref, checklist = both.started()
    old = both.card()
    both.untick_on_github(checklist, "brainstorming")
    both.gh.poll()
    # the redraw is still queued: a click on the old drawing (brainstorming ticked) is refused
    outcome = both.click("UALICE", old)
    assert outcome.code == "stale-card"
    assert "changed on GitHub" in outcome.message
    assert "phase-selection" not in both.gh.state(both.ref).decisions
    both.worker.drain_once()
    # redrawn: the old drawing is still refused, the new one selects
    assert both.click("UALICE", old).code == "stale-card"
    assert both.click("UALICE", both.card()).code == "selected"
    assert both.gh.state(both.ref).decisions["phase-selection"]["skips"] == ["brainstorming"]


def test_a_github_execute_first_wins_and_the_slack_card_shows_it(both: Both) -> None:
    both.ref, checklist = both.started()
    both.untick_on_github(checklist, "brainstorming")
    both.gh.comment(both.ref, "the-loop execute", as_user="alice")
    both.gh.poll()
    state = both.gh.state(both.ref)
    decision = state.decisions["phase-selection"]
    assert (decision["by"], decision["via"], decision["skips"]) == (
        "@alice", "checklist", ["brainstorming"])
    both.worker.drain_once()
    card = both.card()
    assert not [b for b in card["blocks"] if b["type"] == "actions"], "read-only now"
    assert "by @alice" in str(card["blocks"])
    late = both.click("UALICE", card)
    assert late.code == "already-selected"
    assert both.gh.state(both.ref).decisions == state.decisions


def test_a_slack_execute_first_wins_and_a_later_github_edit_changes_nothing(
        both: Both) -> None:
    both.ref, checklist = both.started()
    assert both.click("UALICE", both.card()).code == "selected"
    confirmations = [c for c in both.gh.fake.comments_on(REPO, both.ref.number)
                     if CONFIRMATION_MARKER in c.body]
    assert len(confirmations) == 1 and "from Slack" in confirmations[0].body
    both.untick_on_github(checklist, "design")
    both.gh.comment(both.ref, "the-loop execute", as_user="bob")
    report = both.gh.poll()
    assert {r.reason for r in report.repos[0].results} == {"not-waiting", "not-at-gate"}
    state = both.gh.state(both.ref)
    assert state.decisions["phase-selection"]["via"] == "slack"
    assert state.decisions["phase-selection"]["skips"] == []


def test_a_checklist_edit_webhook_redraws_the_card_once(both: Both) -> None:
    both.ref, checklist = both.started()
    both.gh.serve()
    before = both.gh.fake.comments[checklist.id].body
    both.untick_on_github(checklist, "brainstorming")
    response = both.gh.webhook("issue_comment", "edited", both.ref, comment_id=checklist.id,
                               previous_body=before)
    assert response.status_code in (200, 202)
    both.gh.poll()  # the poller sees the same edit: one content key, one redraw
    both.worker.drain_once()
    assert len(both.slack.calls_to("chat.update")) == 1
    _options, ticked, revisions = _phase_options(both.card())
    assert "brainstorming" not in ticked and revisions == {1}
    assert len(both.gh.events(both.ref, "github.checklist_edited")) == 1



def _untick_as(both: Both, checklist: FakeComment, token: str, editor: str) -> None:
    both.gh.fake.advance(2)
    body = both.gh.fake.comments[checklist.id].body
    both.gh.fake.edit_comment(checklist.id, body.replace(f"- [x] {token}", f"- [ ] {token}", 1),
                              editor)


def test_an_unauthorized_edit_of_the_checklist_is_not_mirrored_to_slack(both: Both) -> None:
    # Issue 19 §1: mallory (write access, not authorized) may not choose phases, so the card
    # does not follow her edit; the event log names her.
    both.ref, checklist = both.started()
    updates = len(both.slack.calls_to("chat.update"))
    _untick_as(both, checklist, "brainstorming", "mallory")
    report = both.gh.poll()
    assert [r.reason for r in report.repos[0].results] == ["not-mirrored-editor"]
    both.worker.drain_once()
    assert len(both.slack.calls_to("chat.update")) == updates
    assert both.gh.events(both.ref, "github.checklist_edited") == []
    [refused] = both.gh.events(both.ref, "github.checklist_not_mirrored")
    assert refused == {"commentId": checklist.id, "editor": "mallory",
                       "reason": "the checklist was edited by @mallory, who may not choose "
                                 "phases"}


def test_a_failed_editor_lookup_retries_the_mirror(both: Both) -> None:
    both.ref, checklist = both.started()
    _untick_as(both, checklist, "brainstorming", "alice")
    both.gh.fake.graphql_rate_limit(1)
    report = both.gh.poll()
    assert [r.status for r in report.repos[0].results] == ["retry"]
    assert both.gh.events(both.ref, "github.checklist_edited") == []
    both.gh.services.ports.tracker.graphql.guard.clear()  # the limit resets
    report = both.gh.poll()
    assert [r.reason for r in report.repos[0].results] == ["checklist-mirrored"]

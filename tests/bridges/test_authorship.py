"""Issue 19 §1: a reply, a typed attestation line or a link code counts as its author's
only when GitHub says nobody else edited it — on every path (poller, webhook, catch-up),
through the real clients against the fake GitHub, whose REST edits made with another
user's token land in GraphQL's edit history as GitHub's do (platform-facts F3, A1-A4)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import requests

from bot.slack.slack_identity import comment_observer, create_link_code, resolve_login
from bridges.github.graphql import MAX_IDS
from bridges.ingress.dispatcher import DROPPED, RETRY
from engine.hooks.markers import attestation_line
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeGitHub

EDITED = "@alice's reply was edited by @mallory; not counted"


def _edit_as(world: GitHubWorld, login: str, comment_id: int, body: str) -> dict[str, Any]:
    """Edit a comment through REST with ``login``'s own token, as a collaborator would."""
    token = world.fake.add_user_token(login)
    answer = requests.patch(f"{world.fake.api_url}/repos/{REPO}/issues/comments/{comment_id}",
                            json={"body": body}, headers={"Authorization": f"token {token}"},
                            timeout=10)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _at_human_approval(world: GitHubWorld) -> WorkItemRef:
    ref = world.issue()
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    world.poll()  # the thread so far is seen: only what follows is new
    world.fake.advance(2)
    return ref


def _edit_lookups(world: GitHubWorld) -> list[list[str]]:
    """The ids of every ``CommentEdits`` query sent since the log was reset."""
    return [list(q["variables"]["ids"]) for q in world.fake.graphql_log
            if "query CommentEdits" in q["query"]]


def _not_counted(records: list[logging.LogRecord]) -> list[dict[str, Any]]:
    return [r.__dict__ for r in records
            if getattr(r, "event", "") in ("graph.comment_not_counted",
                                           "dispatch.comment_not_counted",
                                           "slack.link_refused")]


# -- the fake records edits as GitHub does ------------------------------------------------------
def test_a_rest_edit_by_another_user_lands_in_the_graphql_history_newest_first(
        world: GitHubWorld) -> None:
    ref = world.issue()
    reply = world.comment(ref, "Reading it now", as_user="alice")
    world.fake.advance(2)
    rest = _edit_as(world, "mallory", reply.id, "approved")
    assert rest["user"]["login"] == "alice"  # REST keeps the author (F3)
    assert rest["updated_at"] > rest["created_at"]
    data = world.services.ports.tracker.graphql.execute(
        "comment_edits", {"ids": [reply.node_id], "edits": 100})
    [node] = data["nodes"]
    assert node["editor"]["login"] == "mallory" and node["lastEditedAt"]
    assert node["includesCreatedEdit"] is True
    edits = node["userContentEdits"]
    assert edits["totalCount"] == 2
    # newest first (A3); the creation entry, by the author, is the oldest (A4)
    assert [e["editor"]["login"] for e in edits["nodes"]] == ["mallory", "alice"]


# -- the poller is the first to see the comment ------------------------------------------------
def test_poller_first_an_approval_edited_in_by_a_non_approver_does_not_count(
        world: GitHubWorld, caplog: pytest.LogCaptureFixture) -> None:
    ref = _at_human_approval(world)
    reply = world.comment(ref, "Reading it now", as_user="alice")
    _edit_as(world, "mallory", reply.id, "approved")
    world.fake.reset_log()
    with caplog.at_level(logging.WARNING):
        world.poll()
    state = world.state(ref)
    assert state.current_node == "human-approval"
    assert EDITED in state.parked.reason
    assert not state.parked.unverified
    [event] = world.events(ref, "graph.comment_not_counted")
    assert (event["commentId"], event["author"], event["editor"]) == (reply.id, "alice",
                                                                      "mallory")
    [logged] = _not_counted(caplog.records)
    assert logged["commentId"] == reply.id and logged["editor"] == "mallory"
    # one batched lookup of the one comment that could matter
    assert _edit_lookups(world) == [[reply.node_id]]
    assert "human-approval" not in state.decisions


def test_poller_first_the_authors_own_edit_still_counts(world: GitHubWorld) -> None:
    ref = _at_human_approval(world)
    reply = world.comment(ref, "Reading it now", as_user="alice")
    _edit_as(world, "alice", reply.id, "approved")
    world.poll()
    state = world.state(ref)
    assert state.current_node == "complete", state.parked
    assert state.decisions["human-approval"]["by"] == "@alice"
    assert world.events(ref, "graph.comment_not_counted") == []


def test_an_idle_poll_and_a_plain_comment_cost_no_graphql_query(world: GitHubWorld) -> None:
    ref = _at_human_approval(world)
    world.fake.reset_log()
    world.poll()
    world.comment(ref, "a question about the widget size", as_user="carol")
    world.poll()
    assert _edit_lookups(world) == []


def test_a_failed_lookup_leaves_the_gate_waiting_unverified_then_counts(
        world: GitHubWorld) -> None:
    ref = _at_human_approval(world)
    world.comment(ref, "approved", as_user="alice")  # genuine, but GitHub cannot say so now
    world.fake.graphql_rate_limit(1)
    report = world.poll()
    state = world.state(ref)
    assert state.current_node == "human-approval"
    assert state.parked.unverified is True
    assert "could not read who edited the replies" in state.parked.reason
    assert [r.status for r in report.repos[0].results] == [RETRY]
    world.services.ports.tracker.graphql.guard.clear()  # the limit resets
    world.poll()  # the cursor was held back: the reply is offered again
    assert world.state(ref).current_node == "complete"


def test_a_typed_quiz_line_edited_in_by_someone_else_does_not_attest(
        world: GitHubWorld) -> None:
    ref = world.issue()
    world.to_spec_quiz(ref)
    world.fake.advance(2)
    reply = world.comment(ref, "will read it tonight", as_user="alice")
    _edit_as(world, "mallory", reply.id,
             "will read it tonight\n\n" + attestation_line("spec", ticked=True))
    world.poll()
    state = world.state(ref)
    assert state.current_node == "spec-quiz"
    assert EDITED in state.parked.reason
    assert world.events(ref, "graph.quiz_attested") == []
    # control: the author typing the line herself attests
    world.fake.advance(2)
    world.comment(ref, attestation_line("spec", ticked=True), as_user="alice")
    world.poll()
    assert world.state(ref).decisions["spec-quiz"]["attestedBy"] == "@alice"


def test_a_link_code_appended_by_someone_else_links_nobody(
        world: GitHubWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.dispatcher.comment_observers.append(comment_observer(world.services))
    ref = world.issue()
    world.poll()
    world.fake.advance(2)
    # mallory asked Slack for a code bound to alice's login and slips it into alice's comment
    stolen = create_link_code(world.services, "UMALLORY", "alice")
    reply = world.comment(ref, "Reading it now", as_user="alice")
    _edit_as(world, "mallory", reply.id, f"Reading it now\n\nloopgate link {stolen.code}")
    with caplog.at_level(logging.WARNING):
        world.poll()
    assert resolve_login(world.services, "UMALLORY") is None
    [logged] = _not_counted(caplog.records)
    assert EDITED in logged["reason"]
    # control: a code alice posts herself links her Slack account
    world.fake.advance(2)
    own = create_link_code(world.services, "UALICE", "alice")
    world.comment(ref, f"loopgate link {own.code}", as_user="alice")
    world.poll()
    assert resolve_login(world.services, "UALICE") == "alice"


def test_a_start_keyword_edited_in_by_someone_else_starts_nothing(world: GitHubWorld) -> None:
    ref = world.issue()
    world.poll()
    world.fake.advance(2)
    reply = world.comment(ref, "Reading it now", as_user="alice")
    _edit_as(world, "mallory", reply.id, "the-loop start")
    report = world.poll()
    assert world.services.store.load(ref) is None
    assert [(r.status, r.reason) for r in report.repos[0].results] == [(DROPPED, "not-counted")]


# -- the webhook ------------------------------------------------------------------------------
def test_webhook_edited_by_a_non_author_sender_is_named_and_not_counted(
        world: GitHubWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.serve()
    ref = _at_human_approval(world)
    reply = world.comment(ref, "Reading it now", as_user="alice")
    assert world.webhook("issue_comment", "created", ref, comment_id=reply.id,
                         sender="alice").status_code == 202
    world.fake.reset_log()
    _edit_as(world, "mallory", reply.id, "approved")
    with caplog.at_level(logging.WARNING):
        assert world.webhook("issue_comment", "edited", ref, comment_id=reply.id,
                             sender="mallory", previous_body="Reading it now").status_code == 202
    state = world.state(ref)
    assert state.current_node == "human-approval"
    assert EDITED in state.parked.reason
    assert [e["editor"] for e in world.events(ref, "graph.comment_not_counted")] == ["mallory"]
    assert _not_counted(caplog.records)
    assert _edit_lookups(world) == []  # the sender said it: no lookup needed
    # control: an approval alice writes herself, seen by the created webhook, counts
    world.fake.advance(2)
    own = world.comment(ref, "approved", as_user="alice")
    world.webhook("issue_comment", "created", ref, comment_id=own.id, sender="alice")
    assert world.state(ref).current_node == "complete"


# -- the dispatcher's catch-up (first sight) ---------------------------------------------------
def test_catch_up_does_not_count_a_reply_edited_by_someone_else(
        world: GitHubWorld, github_env: FakeGitHub, tmp_path: Path) -> None:
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    world.poll()
    assert world.state(ref).current_node == "phase-selection"
    world.close()
    world.services = world.dispatcher = None  # closed: the fixture must not close them again
    (tmp_path / "fresh").mkdir()
    fresh = GitHubWorld(github_env, tmp_path / "fresh").build()
    try:
        github_env.advance(2)
        reply = fresh.comment(ref, "Reading it now", as_user="alice")
        _edit_as(fresh, "mallory", reply.id, "the-loop execute")
        fresh.poll()
        state = fresh.state(ref)
        assert state.current_node == "phase-selection"
        assert EDITED in state.parked.reason
        assert "phase-selection" not in state.decisions
        # control: alice's own execute reply is honoured by the gate
        github_env.advance(2)
        fresh.comment(ref, "the-loop execute", as_user="alice")
        fresh.poll()
        assert fresh.state(ref).decisions["phase-selection"]["by"] == "@alice"
    finally:
        fresh.close()


def test_lookups_are_batched_by_at_most_a_hundred(world: GitHubWorld) -> None:
    ref = _at_human_approval(world)
    for n in range(MAX_IDS + 1):
        world.comment(ref, f"approved ({n})" if n % 2 else "lgtm", as_user="carol")
    world.fake.reset_log()
    world.poll()
    assert [len(ids) for ids in _edit_lookups(world)][:2] == [MAX_IDS, 1]

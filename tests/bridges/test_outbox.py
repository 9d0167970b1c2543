"""GitHub writes through the outbox (issue 10 §1, §2), against the loopback fake GitHub
refusing the checklist POST as GitHub does: a 502, a secondary limit (403 + Retry-After),
a 422. Nothing is lost, nothing is posted twice, nothing is retried that cannot succeed,
and what failed is visible."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from bot.cli import cli
from engine.effects import FAILED, PENDING
from engine.hooks.markers import PHASE_SELECTION_MARKER
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import wait_for


def _checklists(world: GitHubWorld, ref: WorkItemRef) -> list[Any]:
    return [c for c in world.fake.comments_on(REPO, ref.number)
            if PHASE_SELECTION_MARKER in c.body]


def _posts(world: GitHubWorld, ref: WorkItemRef) -> list[int]:
    """Statuses of every comment POST on ``ref``'s issue, in order."""
    path = f"/repos/{REPO}/issues/{ref.number}/comments"
    return [r.status for r in world.fake.requests
            if r.method == "POST" and r.route == "comment-create" and r.path.endswith(path)]


def _event_kinds(world: GitHubWorld, ref: WorkItemRef) -> list[str]:
    return [e["kind"] for e in world.services.store.events(ref)]


def _clean_start(world: GitHubWorld) -> tuple[list[str], list[int]]:
    """The event kinds and comment POST statuses of a start nothing refuses."""
    ref = world.issue("a clean start")
    world.services.runtime.start(ref)
    return _event_kinds(world, ref), _posts(world, ref)


def test_a_502_on_the_checklist_post_is_retried_after_the_back_off(world: GitHubWorld) -> None:
    clean, posts = _clean_start(world)
    ref = world.issue()
    world.fake.fail_route("POST", "comment-create", 502)
    state = world.services.runtime.start(ref)
    assert state.current_node == "phase-selection"
    assert _checklists(world, ref) == []
    [waiting, *_] = world.services.store.effects.rows(ref, statuses=[PENDING])
    assert waiting.effect.kind == "post-comment" and waiting.attempts == 1
    assert "502" in waiting.last_error and waiting.not_before > waiting.created_at

    world.performer_later().drain(ref)

    [checklist] = _checklists(world, ref)
    assert _posts(world, ref) == [502, *posts]
    assert world.state(ref).surface["phaseSelection"]["commentId"] == checklist.id
    assert _event_kinds(world, ref) == clean  # no new event: the retry is not news
    assert world.services.store.effects.rows(ref, statuses=[PENDING, FAILED]) == []


def test_a_secondary_limit_on_the_checklist_post_waits_for_retry_after(
        world: GitHubWorld) -> None:
    clean, posts = _clean_start(world)
    ref = world.issue()
    world.fake.fail_route("POST", "comment-create", 403, headers={"Retry-After": "1"})
    world.services.runtime.start(ref)
    [waiting, *_] = world.services.store.effects.rows(ref, statuses=[PENDING])
    assert "rate limit" in waiting.last_error
    guard = world.services.ports.tracker.client.guard
    assert guard.closed_until is not None  # nothing is sent before Retry-After

    world.performer_later().drain(ref)  # still closed: no request, the row waits again
    assert _posts(world, ref) == [403]
    assert wait_for(lambda: guard.closed_until is None, timeout=10)
    world.performer_later().drain(ref)

    assert len(_checklists(world, ref)) == 1
    assert _posts(world, ref) == [403, *posts]
    assert _event_kinds(world, ref) == clean


def test_a_422_is_not_retried_and_is_visible_in_check_and_effects(
        world: GitHubWorld, monkeypatch: Any) -> None:
    _, posts = _clean_start(world)
    ref = world.issue()
    world.fake.fail_route("POST", "comment-create", 422,
                          message="Validation Failed: body is too long")
    world.services.runtime.start(ref)
    for _ in range(2):
        world.performer_later().drain(ref)
    assert _posts(world, ref) == [422, *posts[1:]]  # one try: no retry loop
    [failed] = world.services.store.effects.rows(ref, statuses=[FAILED])
    assert failed.effect.kind == "post-comment" and "422" in failed.last_error
    [event] = [e["data"] for e in world.services.store.events(ref)
               if e["kind"] == "graph.effect_failed"]
    assert event["row"] == failed.id and "422" in event["error"]

    report = world.services.runtime.status(ref)
    assert [(e["row"], e["status"]) for e in report["effects"]] == [(failed.id, FAILED)]

    db = str(world.tmp / "loopgate.db")
    monkeypatch.setenv("LOOPGATE_DB", db)
    checked = _cli(world, ["check", str(ref)])
    assert (f"effect failed: post-comment (phase-selection) on {ref} (row {failed.id})"
            in checked.output)
    listed = _cli(world, ["effects", "list", str(ref)])
    assert listed.exit_code == 1 and "failed" in listed.output and "422" in listed.output

    retried = _cli(world, ["effects", "retry", str(ref)])  # the cause is gone now
    assert retried.exit_code == 0, retried.output
    assert "re-queued 1 effect" in retried.output
    assert len(_checklists(world, ref)) == 1
    assert _cli(world, ["effects", "list", str(ref)]).output.strip() == "nothing owed"


def _cli(world: GitHubWorld, args: list[str]) -> Any:
    config = world.tmp / "loopgate.yaml"
    github = {"repos": [REPO], "apiUrl": world.fake.api_url,
              "graphqlUrl": world.fake.graphql_url, "pollIntervalSeconds": 0}
    config.write_text(json.dumps({"authorizedUsers": ["alice", "bob"], "github": github}),
                      "utf-8")  # JSON is YAML
    return CliRunner().invoke(cli, ["--config", str(config), *args])


def test_execute_waits_while_the_checklist_is_not_on_the_issue(world: GitHubWorld) -> None:
    # Nobody can tick what is not there: never the default selection then (fail closed).
    ref = world.issue()
    world.fake.fail_route("POST", "comment-create", 502)
    world.services.runtime.start(ref)
    assert _checklists(world, ref) == []
    reply = world.comment(ref, "the-loop execute")
    result = world.dispatcher.handle(_comment_delivery(ref, reply))
    assert (result.status, result.reason) == ("retry", "unverified")  # offered again
    state = world.state(ref)
    assert state.current_node == "phase-selection" and "phase-selection" not in state.decisions
    assert "checklist is still being posted" in state.parked.reason

    world.performer_later().drain(ref)  # the checklist is posted; the reply is offered again
    assert len(_checklists(world, ref)) == 1
    again = world.dispatcher.handle(_comment_delivery(ref, reply, "again"))
    assert again.status == "handled"
    assert world.state(ref).decisions["phase-selection"]["via"] == "checklist"


def test_execute_waits_when_the_checklist_failed_for_good(world: GitHubWorld) -> None:
    ref = world.issue()
    world.fake.fail_route("POST", "comment-create", 422)
    world.services.runtime.start(ref)
    reply = world.comment(ref, "the-loop execute")
    world.dispatcher.handle(_comment_delivery(ref, reply))
    state = world.state(ref)
    assert state.current_node == "phase-selection"
    assert "checklist could not be posted" in state.parked.reason
    assert "loopgate effects retry" in state.parked.reason


def _comment_delivery(ref: WorkItemRef, comment: Any, suffix: str = "") -> Any:
    from bridges.github.router import COMMENT, comment_from_rest, comment_key
    from bridges.github.webhook import Delivery

    fake = comment_from_rest({"id": comment.id, "user": {"login": comment.author,
                                                         "type": "User"},
                              "body": comment.body, "created_at": comment.created_at,
                              "updated_at": comment.updated_at, "node_id": comment.node_id,
                              "html_url": ""}, ref.number)
    return Delivery(f"test-{comment.id}{suffix}", "github", COMMENT, "issue_comment.created",
                    {"ref": ref, "comment": fake, "key": comment_key(comment.id),
                     "pull_request": False})

"""Issue 19 §1 over the real stack (fake GitHub through PyGithub/gql, the poller, the
dispatcher): mallory, with write access but not authorized, unticks gates on loopgate's
phase-selection checklist; alice's bare ``the-loop execute`` must not record mallory's
choice as alice's, whether mallory edits before alice replies or after it but before the
poll reads the reply. An authorized person's ticks still count."""

from __future__ import annotations

import re

import requests

from tests.bridges.conftest import REPO, GitHubWorld

GATES = ("requirements-approval", "design-approval", "`explainer`")


def _edit_as(world: GitHubWorld, login: str, comment_id: int, body: str) -> None:
    # A REST PATCH with the editor's own token: GitHub records the editor (platform-facts F3).
    token = world.fake.add_user_token(login)
    r = requests.patch(f"{world.fake.api_url}/repos/{REPO}/issues/comments/{comment_id}",
                       json={"body": body}, headers={"Authorization": f"token {token}"},
                       timeout=10)
    assert r.status_code == 200, r.text


def _unticked(world: GitHubWorld, comment_id: int) -> str:
    body = world.fake.comments[comment_id].body
    for token in GATES:
        body = re.sub(r"- \[x\] " + re.escape(token), "- [ ] " + token, body)
    return body


def _started(world: GitHubWorld):
    ref = world.issue()
    world.services.runtime.start(ref)
    world.poll()
    [checklist] = [c for c in world.fake.comments_on(REPO, ref.number)
                   if "the-loop:phase-selection" in c.body]
    world.fake.advance(2)
    return ref, checklist


def _refused(world: GitHubWorld, ref) -> None:
    state = world.state(ref)
    assert state.current_node == "phase-selection"
    assert "phase-selection" not in state.decisions
    assert state.parked.reason.startswith(
        "the checklist was edited by @mallory, who may not choose phases")
    [logged] = world.events(ref, "graph.checklist_not_counted")
    assert logged["editor"] == "mallory" and logged["by"] == "@alice"


def test_unticks_by_someone_unauthorized_before_the_reply_are_refused(
        world: GitHubWorld) -> None:
    ref, checklist = _started(world)
    _edit_as(world, "mallory", checklist.id, _unticked(world, checklist.id))
    world.fake.advance(2)
    world.comment(ref, "the-loop execute", as_user="alice")
    world.poll()
    _refused(world, ref)


def test_unticks_by_someone_unauthorized_after_the_reply_are_refused(
        world: GitHubWorld) -> None:
    ref, checklist = _started(world)
    body = _unticked(world, checklist.id)
    world.comment(ref, "the-loop execute", as_user="alice")
    world.fake.advance(2)
    _edit_as(world, "mallory", checklist.id, body)
    world.poll()
    _refused(world, ref)


def test_an_authorized_persons_unticks_count(world: GitHubWorld) -> None:
    ref, checklist = _started(world)
    _edit_as(world, "bob", checklist.id, _unticked(world, checklist.id))
    world.fake.advance(2)
    world.comment(ref, "the-loop execute", as_user="alice")
    world.poll()
    decision = world.state(ref).decisions["phase-selection"]
    assert decision["by"] == "@alice" and decision["via"] == "checklist"
    assert "requirements-approval" in decision["skips"]
    assert "design-approval" in decision["skips"]
    assert "spec-quiz" in decision["skips"]  # the explainer row turned its set off

"""Issue 14 §11: first sight must not swallow a reply. A fresh database meets an issue that
already carries loopgate's checklist; comments after the checklist are honoured once, only
those older than it are history. Driven through the real poller against the fake GitHub."""

from __future__ import annotations

from pathlib import Path

from engine.hooks.markers import CONFIRMATION_MARKER, PHASE_SELECTION_MARKER
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeGitHub


def _labelled_with_checklist(world: GitHubWorld) -> WorkItemRef:
    """An issue a previous loopgate installation started: label, checklist posted."""
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    world.poll()
    assert world.state(ref).current_node == "phase-selection"
    assert _checklists(world, ref) == 1
    return ref


def _checklists(world: GitHubWorld, ref: WorkItemRef) -> int:
    return sum(PHASE_SELECTION_MARKER in c.body for c in world.fake.comments_on(REPO, ref.number))


def _confirmations(world: GitHubWorld, ref: WorkItemRef) -> int:
    return sum(CONFIRMATION_MARKER in c.body for c in world.fake.comments_on(REPO, ref.number))


def _fresh(world: GitHubWorld, fake: FakeGitHub, tmp_path: Path) -> GitHubWorld:
    """The same GitHub, a new loopgate with an empty database (a lost or new install)."""
    world.close()
    world.services = world.dispatcher = None  # closed: the fixture must not close them again
    (tmp_path / "fresh").mkdir()
    return GitHubWorld(fake, tmp_path / "fresh").build()


def test_first_sight_honours_an_execute_reply_posted_after_the_checklist_once(
        world: GitHubWorld, github_env: FakeGitHub, tmp_path: Path) -> None:
    ref = _labelled_with_checklist(world)
    fresh = _fresh(world, github_env, tmp_path)
    try:
        github_env.advance(2)
        fresh.comment(ref, "looks good to me, one question about the widget size",
                      as_user="carol")
        reply = fresh.comment(ref, "the-loop execute", as_user="alice")
        report = fresh.poll()
        assert [r.reason for r in report.repos[0].results if r.reason.startswith("started")] \
            == ["started-by-label"]
        state = fresh.state(ref)
        assert state.current_node == "brainstorming", state.parked
        decision = state.decisions["phase-selection"]
        assert decision["by"] == "@alice" and decision["commentId"] == reply.id
        assert _checklists(fresh, ref) == 1  # the existing checklist was adopted
        assert _confirmations(fresh, ref) == 1
        # honoured once: later polls deliver nothing and confirm nothing again
        github_env.advance(2)
        fresh.poll()
        fresh.poll()
        assert _confirmations(fresh, ref) == 1
        left = [e for e in fresh.events(ref, "graph.advanced")
                if e.get("from") == "phase-selection"]
        assert len(left) == 1
    finally:
        fresh.close()


def test_first_sight_treats_comments_older_than_the_checklist_as_history(
        world: GitHubWorld, github_env: FakeGitHub, tmp_path: Path) -> None:
    ref = world.issue()
    world.comment(ref, "the-loop execute", as_user="alice")  # before anything was posted
    github_env.advance(2)
    world.fake.add_label(REPO, ref.number, "loop:start")
    world.poll()
    assert world.state(ref).current_node == "phase-selection"
    fresh = _fresh(world, github_env, tmp_path)
    try:
        fresh.poll()
        state = fresh.state(ref)
        assert state.current_node == "phase-selection"
        assert "phase-selection" not in state.decisions
        assert _confirmations(fresh, ref) == 0
        github_env.advance(2)
        fresh.comment(ref, "the-loop execute", as_user="bob")  # a new reply is honoured
        fresh.poll()
        assert fresh.state(ref).current_node == "brainstorming"
        assert fresh.state(ref).decisions["phase-selection"]["by"] == "@bob"
    finally:
        fresh.close()


def test_first_sight_through_a_label_webhook_honours_the_reply_once(
        world: GitHubWorld, github_env: FakeGitHub, tmp_path: Path) -> None:
    ref = _labelled_with_checklist(world)
    fresh = _fresh(world, github_env, tmp_path)
    try:
        fresh.serve()
        github_env.advance(2)
        reply = fresh.comment(ref, "the-loop execute", as_user="bob")
        # the reply's own webhook reaches a database that does not know the item yet
        fresh.webhook("issue_comment", "created", ref, comment_id=reply.id)
        assert fresh.services.store.load(ref) is None
        fresh.webhook("issues", "labeled", ref, label="loop:start")
        state = fresh.state(ref)
        assert state.current_node == "brainstorming", state.parked
        assert state.decisions["phase-selection"]["commentId"] == reply.id
        fresh.poll()  # the poller meets the same reply: already decided, nothing twice
        assert _confirmations(fresh, ref) == 1
    finally:
        fresh.close()

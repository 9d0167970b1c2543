"""Issue 22 §3 over a real Slack approval (issue 12 §1): the Approve click passes the gate
through the bot's own listener, loopgate posts its mirror on the thread, and ``verify``
re-derives the verdict from that mirror; doctoring the mirror makes it differ."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.slack.blocks import ids
from engine.hooks.chat_decision import decision_marker
from engine.local.memory_tracker import MemoryTracker
from engine.ports import Comment, CommentEdits, PullRequest
from engine.refs import WorkItemRef
from engine.verify import PublishedCheck, verify_item
from tests.bot.conftest import SlackWorld
from tests.bot.test_slack_approvals import _click, _posted

NODE = "requirements-approval"


@dataclass
class _Source:
    """The world's tracker as verify reads it; nothing is published (mergeGate off)."""

    tracker: MemoryTracker
    comments_editable: bool = True

    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        return self.tracker.list_comments(ref)

    def comment_edits(self, comment_ids: list[int]) -> dict[int, CommentEdits]:
        return self.tracker.comment_edits(comment_ids)

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        return self.tracker.delivering_pull_requests(ref)

    def published_check(self, owner: str, repo: str, sha: str) -> PublishedCheck | None:
        return None


def _verify_gate(world: SlackWorld) -> tuple[str, ...]:
    services = world.services  # loopgate's login as the start-up probe learns it
    settings = replace(services.settings, bot_login="loopgate-bot")
    found = verify_item(services.graph, settings, world.state(), _Source(world.tracker))
    [gate] = [g for g in found.gates if g.node == NODE]
    return gate.differences


def test_a_slack_approval_re_derives_from_loopgates_mirror(world: SlackWorld) -> None:
    ts, value, _ = _posted(world)
    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)
    world.drain()
    assert world.comments(decision_marker(NODE))  # the mirror is on the thread
    assert _verify_gate(world) == ()


def test_a_slack_approval_whose_mirror_was_edited_by_someone_else_differs(
        world: SlackWorld) -> None:
    ts, value, _ = _posted(world)
    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)
    world.drain()
    [mirror] = world.comments(decision_marker(NODE))
    world.tracker.edit_comment(mirror.id, mirror.body, "mallory")
    assert _verify_gate(world) == (
        f"GitHub shows loopgate's mirror of @alice's approved from slack at {NODE} (comment "
        f"{mirror.id}) edited by @mallory",)


def test_without_loopgates_own_login_a_slack_approval_cannot_be_re_derived(
        world: SlackWorld) -> None:
    ts, value, _ = _posted(world)
    _click(world, "UALICE", ids.ACTION_APPROVE, value, ts)
    world.drain()
    found = verify_item(world.services.graph, world.services.settings, world.state(),
                        _Source(world.tracker))
    [gate] = [g for g in found.gates if g.node == NODE]
    assert gate.differences == ("loopgate's own GitHub login is unknown, so its mirror of "
                                f"@alice's approved from slack at {NODE} cannot be checked",)

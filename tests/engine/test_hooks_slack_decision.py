"""A human gate answered from Slack (issue 12 §1): classify-feedback records ``via: slack``
with the person's words, and queues the marked mirror comment on the issue."""

from __future__ import annotations

from engine.effects import PostComment
from engine.hooks.markers import SELF_MARKER
from engine.hooks.slack_decision import (
    mirror_text,
    reply_words,
    slack_decision_marker,
    slack_reply_body,
)
from engine.ports import Comment
from tests.engine.test_hooks_support import Harness


def test_a_slack_reply_is_recorded_via_slack_and_mirrored_once() -> None:
    h = Harness()
    reply = Comment(id=0, author="alice", body=slack_reply_body("changes-requested",
                                                                "R2 is vague\napprove later"))

    result = h.run("design-approval", "classify-feedback",
                   event={"comments": [reply], "via": "slack"})

    assert result.kind == "pass" and result.data["outcome"] == "changes-requested"
    assert result.data["decision"].to_json() == {
        "by": "@alice", "at": "2026-03-01T12:00:00Z", "outcome": "changes-requested",
        "comment": "", "commentId": 0, "via": "slack", "text": "R2 is vague\napprove later"}
    posts = [e for e, _ in h.performed if isinstance(e, PostComment)] or [
        row.effect for row in h.queued if isinstance(row.effect, PostComment)]
    [mirror] = posts
    assert mirror.body.startswith(
        "✋ **Changes requested** at `design-approval` by @alice — from Slack.\n\n"
        "> R2 is vague\n> approve later")
    assert slack_decision_marker("design-approval") in mirror.body
    assert SELF_MARKER in mirror.body


def test_a_github_reply_is_not_mirrored_and_has_no_via() -> None:
    h = Harness()
    [comment] = [h.tracker.add_comment_as(h.ref, "alice", "approved")]

    result = h.run("design-approval", "classify-feedback", event={"comments": [comment]})

    assert "via" not in result.data["decision"].to_json()
    assert not [e for e, _ in h.performed if isinstance(e, PostComment)]
    assert not [r for r in h.queued if isinstance(r.effect, PostComment)]


def test_the_persons_words_are_quoted_so_they_never_decide() -> None:
    body = slack_reply_body("approved-with-comments", "request changes next time")

    assert body == "approved with comments\n\n> request changes next time"
    assert reply_words(body) == "request changes next time"
    assert mirror_text("x", "approved", Comment(0, "bob", "approved")) == (
        "✅ **Approved** at `x` by @bob — from Slack.")

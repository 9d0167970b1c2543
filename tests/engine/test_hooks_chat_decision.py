"""A human gate answered on a chat surface (issue 12 §1, issue 20 §1): classify-feedback
records the surface's ``via`` with the person's words from a typed Decision, and queues the
marked echo comment on the issue — the same stored decision and the same echo as the
Slack click fed as a reply wrote before."""

from __future__ import annotations

from engine.effects import PostComment
from engine.events import Decision, hook_event
from engine.hooks.chat_decision import (
    decision_body,
    decision_marker,
    decision_text,
    mirror_text,
)
from engine.hooks.markers import SELF_MARKER
from engine.ports import Comment
from tests.engine.test_hooks_support import Harness

OLD_JSON = {"by": "@alice", "at": "2026-03-01T12:00:00Z", "outcome": "changes-requested",
            "comment": "", "commentId": 0, "via": "slack", "text": "R2 is vague\napprove later"}
ECHO = ("✋ **Changes requested** at `design-approval` by @alice — from Slack.\n\n"
        "> R2 is vague\n> approve later")


def _echo(h: Harness) -> PostComment:
    posts = [e for e, _ in h.performed if isinstance(e, PostComment)] or [
        row.effect for row in h.queued if isinstance(row.effect, PostComment)]
    [mirror] = posts
    return mirror


def test_a_chat_decision_is_recorded_with_its_via_and_echoed_once() -> None:
    h = Harness()
    decision = Decision("design-approval", "changes-requested", "alice",
                        "R2 is vague\napprove later", via="slack")

    result = h.run("design-approval", "classify-feedback", event=hook_event(decision))

    assert result.kind == "pass" and result.data["outcome"] == "changes-requested"
    assert result.data["decision"].to_json() == OLD_JSON
    mirror = _echo(h)
    assert mirror.body.startswith(ECHO)
    assert decision_marker("design-approval") in mirror.body
    assert SELF_MARKER in mirror.body


def test_the_legacy_reply_shape_still_records_the_same_decision_and_echo() -> None:
    # What the bot fed before issue 20 §1 (a reply standing for the click) still decides
    # identically: other ingresses' code may still call advance with comments.
    h = Harness()
    reply = Comment(id=1, author="alice", body=decision_body("changes-requested",
                                                              "R2 is vague\napprove later"))

    result = h.run("design-approval", "classify-feedback",
                   event={"comments": [reply], "via": "slack"})

    assert result.data["decision"].to_json() == OLD_JSON
    assert _echo(h).body.startswith(ECHO)


def test_a_github_reply_is_not_mirrored_and_has_no_via() -> None:
    h = Harness()
    [comment] = [h.tracker.add_comment_as(h.ref, "alice", "approved")]

    result = h.run("design-approval", "classify-feedback", event={"comments": [comment]})

    assert "via" not in result.data["decision"].to_json()
    assert not [e for e, _ in h.performed if isinstance(e, PostComment)]
    assert not [r for r in h.queued if isinstance(r.effect, PostComment)]


def test_the_persons_words_are_quoted_so_they_never_decide() -> None:
    body = decision_body("approved-with-comments", "request changes next time")

    assert body == "approved with comments\n\n> request changes next time"
    assert decision_text(body) == "request changes next time"
    assert mirror_text("x", "approved", "bob", "", "slack") == (
        "✅ **Approved** at `x` by @bob — from Slack.")

"""Human review gates: ``classify-feedback`` and ``record-feedback`` (issue #2 §3).

The words a reviewer writes, matched case-insensitively at the start of a line (bullets,
quotes and ``**``/`` ` `` emphasis around the words are ignored):

* ``approved with comments`` / ``approve with comments`` / ``lgtm with comments``
  → ``approved-with-comments``
* ``changes requested`` / ``request changes`` / ``requested changes`` /
  ``requesting changes`` → ``changes-requested``
* ``approved`` / ``approve`` / ``lgtm`` → ``approved``

Quoted lines (``> approved``) never count.

One comment with several decisive lines reads as its most cautious one
(changes-requested, then approved-with-comments, then approved). Across comments the
latest decisive one wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.hooks.base import HookContext, HookResult, hook
from engine.hooks.common import (
    at_login,
    authorized_comments,
    event_comments,
    is_self_authored,
    latest,
)
from engine.hooks.slack_decision import (
    VIA_SLACK,
    from_slack,
    mirror_slack_decision,
    reply_words,
)
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.ports import Comment
from engine.records import ReviewDecision

__all__ = [
    "Feedback", "classify_text", "latest_feedback", "classify_feedback", "record_feedback",
    "unauthorized_deciders",
]

# Bullets, emphasis and headings may precede the words; a quoted line ("> approved")
# is someone else's words and never counts.
_LEAD = r"^[\s*_`#-]*"
_END = r"(?![\w-])"  # the word ends here ("approvedly" or "approved-ish" do not count)
_PATTERNS = (
    (
        CHANGES_REQUESTED,
        re.compile(_LEAD + r"(changes\s+requested|request(?:ed|ing)?\s+changes)" + _END),
    ),
    (
        APPROVED_WITH_COMMENTS,
        re.compile(_LEAD + r"(approved?|lgtm)\s+with\s+comments" + _END),
    ),
    (APPROVED, re.compile(_LEAD + r"(approved?|lgtm)" + _END)),
)


@dataclass(frozen=True)
class Feedback:
    """A classified review reply.

    Attributes:
        outcome: ``approved``, ``approved-with-comments`` or ``changes-requested``.
        comment: the comment that decided it.
    """

    outcome: str
    comment: Comment

    def decision(self, at: str, via: str = "") -> ReviewDecision:
        """The gate's :class:`~engine.records.ReviewDecision` (``by`` is ``@login``;
        ``via`` is ``slack`` for a Slack click, whose words are kept as ``text``)."""
        words = reply_words(self.comment.body) if via else ""
        return ReviewDecision(at_login(self.comment.author), at, self.outcome,
                              self.comment.url, self.comment.id, via, words)


def classify_text(body: str | None) -> str | None:
    """The outcome a comment body states, or None when it states none."""
    found = set()
    for line in (body or "").lower().splitlines():
        for outcome, pattern in _PATTERNS:
            if pattern.match(line):
                found.add(outcome)
                break  # the first (most specific) pattern on a line decides that line
    for outcome, _ in _PATTERNS:  # most cautious first
        if outcome in found:
            return outcome
    return None


def latest_feedback(ctx: HookContext) -> Feedback | None:
    """The latest decisive, authorized, non-self-authored comment of the event, or None."""
    decisive = [c for c in authorized_comments(ctx) if classify_text(c.body)]
    chosen = latest(decisive)
    if chosen is None:
        return None
    outcome = classify_text(chosen.body)
    assert outcome is not None  # filtered above
    return Feedback(outcome, chosen)


def _waiting_reason(ctx: HookContext) -> str:
    who = ", ".join(at_login(u) for u in ctx.settings.authorized_users) or "an authorized user"
    reason = (
        f"waiting for {who} to reply on {ctx.node.id}: "
        "approved, approved with comments, or changes requested"
    )
    ignored = unauthorized_deciders(ctx)
    if ignored:
        reason += f" (ignored {', '.join(ignored)}: not authorized)"
    return reason


def unauthorized_deciders(ctx: HookContext) -> list[str]:
    """Who, in the event, wrote a decisive reply without being authorized.

    Args:
        ctx: the hook's context (its event's comments and the settings).

    Returns:
        The sorted ``@login``s of the event's non-self-authored comments that state an
        outcome but whose author is not authorized (empty when there are none).
    """
    return sorted({
        at_login(c.author or "unknown")
        for c in event_comments(ctx)
        if classify_text(c.body) and not is_self_authored(c, ctx.settings)
        and not ctx.settings.is_authorized(c.author)
    })


@hook("classify-feedback")
def classify_feedback(ctx: HookContext) -> HookResult:
    """Route a human gate by the latest authorized reply.

    Returns:
        pass with ``outcome`` and ``decision {by, at, outcome, comment, commentId}``, or
        wait naming what is awaited.
    """
    feedback = latest_feedback(ctx)
    if feedback is None:
        return HookResult.wait(_waiting_reason(ctx))
    via = VIA_SLACK if from_slack(ctx) else ""
    if via:  # a Slack click is mirrored on the issue: GitHub stays the record (issue 12 §1)
        mirror_slack_decision(ctx, feedback.outcome, feedback.comment)
    return HookResult.passed(
        f"{feedback.outcome} by {at_login(feedback.comment.author)}",
        outcome=feedback.outcome,
        decision=feedback.decision(ctx.now_iso(), via),
    )


@hook("record-feedback")
def record_feedback(ctx: HookContext) -> HookResult:
    """On ``approved-with-comments`` append the reply, attributed, to
    ``state.surface["reviewComments"]`` (append-only; loopgate has no repository write
    access, so the comments live with the item's state).

    Other outcomes pass unchanged; with no decisive reply it waits like
    ``classify-feedback`` (it never passes a gate on its own).
    """
    feedback = latest_feedback(ctx)
    if feedback is None:
        return HookResult.wait(_waiting_reason(ctx))
    if feedback.outcome != APPROVED_WITH_COMMENTS:
        return HookResult.passed(outcome=feedback.outcome)
    existing = [dict(e) for e in ctx.state.surface.get("reviewComments") or ()]
    if any(e.get("commentId") == feedback.comment.id for e in existing):
        return HookResult.passed("review comments already recorded", outcome=feedback.outcome)
    entry = {
        "node": ctx.node.id,
        "by": at_login(feedback.comment.author),
        "at": feedback.comment.created_at or ctx.now_iso(),
        "comment": feedback.comment.url,
        "commentId": feedback.comment.id,
        "body": feedback.comment.body,
    }
    return HookResult.passed(
        f"recorded review comments by {entry['by']}",
        outcome=feedback.outcome,
        surface={"reviewComments": [*existing, entry]},
    )

"""A human gate answered from Slack (issue 12 §1): the mirror comment on the issue.

The Slack bot feeds an approval click to the runtime exactly as a GitHub reply by the
clicker's linked login (``{"comments": [reply], "via": "slack", "expectNode": node}``), so
the gate's own rules (``classify-feedback``, authorization, and any approval rules) decide
it. Because that reply exists only in Slack, the gate posts it on the issue as a marked
comment — ``<!-- the-loop:slack-decision <node> -->`` — so the GitHub thread stays the
record. The comment is self-authored (it carries :data:`~engine.ports.SELF_MARKER`), so no
ingress reads it back as a second decision.
"""

from __future__ import annotations

from engine.effects import PostComment
from engine.hooks.base import HookContext
from engine.hooks.markers import with_self_marker
from engine.ports import Comment

__all__ = ["VIA_SLACK", "from_slack", "slack_decision_marker", "mirror_text",
           "mirror_slack_decision", "slack_reply_body", "reply_words", "DECISION_WORDS"]

#: The first line of the reply a Slack click stands for, per outcome (the words
#: ``classify-feedback`` reads).
DECISION_WORDS = {
    "approved": "approved",
    "approved-with-comments": "approved with comments",
    "changes-requested": "changes requested",
}

VIA_SLACK = "slack"
_OUTCOME_TEXT = {
    "approved": "✅ **Approved**",
    "approved-with-comments": "✅ **Approved with comments**",
    "changes-requested": "✋ **Changes requested**",
}


def from_slack(ctx: HookContext) -> bool:
    """True when the event being evaluated came from Slack (``event["via"] == "slack"``)."""
    return ctx.event.get("via") == VIA_SLACK


def slack_decision_marker(node: str) -> str:
    """``<!-- the-loop:slack-decision <node> -->``."""
    return f"<!-- the-loop:slack-decision {node} -->"


def slack_reply_body(outcome: str, text: str = "") -> str:
    """The reply body a Slack decision stands for: the outcome's words, then the person's
    text as quoted lines (``> …``), which ``classify-feedback`` never reads as a decision —
    "request changes next time" inside an approval's comments cannot flip it.

    Raises:
        KeyError: ``outcome`` is not one of :data:`DECISION_WORDS`.
    """
    lines = [DECISION_WORDS[outcome]]
    words = [line.rstrip() for line in (text or "").strip().splitlines()]
    if words:
        lines += ["", *[f"> {line}" if line else ">" for line in words]]
    return "\n".join(lines)


def reply_words(body: str) -> str:
    """The person's text in a :func:`slack_reply_body` ("" when none)."""
    lines = (body or "").splitlines()[1:]
    return "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">")
                     for line in lines if line.startswith(">")).strip()


def mirror_text(node: str, outcome: str, reply: Comment) -> str:
    """The mirror comment body without markers.

    Args:
        node: the gate's id.
        outcome: ``approved``, ``approved-with-comments`` or ``changes-requested``.
        reply: the Slack-made reply (author = the linked GitHub login, body = its words).

    Returns:
        Markdown: the outcome, who, where, and the comments quoted (when any).
    """
    who = "@" + (reply.author or "someone").lstrip("@")
    head = f"{_OUTCOME_TEXT.get(outcome, outcome)} at `{node}` by {who} — from Slack."
    words = reply_words(reply.body)
    if not words:
        return head
    quoted = "\n".join(f"> {line}" if line else ">" for line in words.splitlines())
    return f"{head}\n\n{quoted}"


def mirror_slack_decision(ctx: HookContext, outcome: str, reply: Comment) -> None:
    """Queue the mirror comment of a Slack decision (posted after commit, in order)."""
    body = mirror_text(ctx.node.id, outcome, reply)
    ctx.emit(PostComment(ctx.ref, with_self_marker(body, slack_decision_marker(ctx.node.id))))

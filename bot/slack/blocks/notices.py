"""Notices: quiz-pending DMs and thread lines, and the lines for other events (issue 4 §4).

Each builder is pure and returns ``(text, blocks)``: ``text`` is the notification
fallback Slack shows where blocks cannot be rendered, ``blocks`` the Block Kit body.
A quiz notice is later rewritten in place (``chat.update``) to say who attested, or that
the spec changed; the revision makes its block ids fresh each time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from bot.slack.blocks import ids
from bot.slack.blocks.card import escape, truncate, truncate_keep_lines
from engine.refs import WorkItemRef

__all__ = [
    "quiz_name",
    "comment_urls",
    "quiz_pending_notice",
    "quiz_attested_notice",
    "quiz_stale_notice",
    "event_line",
    "gate_words",
    "author_update_notice",
]

_QUIZ_NAMES = {"spec-quiz": "Spec quiz", "code-quiz": "Code quiz"}
_QUIZ_SUBJECT = {
    "spec-quiz": "read the spec explainer and take its quiz before code generation starts",
    "code-quiz": "read the explainer of the change and take the code quiz before review",
}
_EVENT_LINES = {
    "phase-approval-pending": "🧑‍⚖️ `{node}` waits for an approval",
    "pr-review-pending": "👀 a pull request review is requested (`{node}`)",
    "conflict-escalated": "⚠️ escalated at `{node}`: a person has to decide",
    "work-item-complete": "🏁 the work item is complete",
    "effect-failed": "⚠️ a GitHub write failed for good at `{node}`; `loopgate effects retry` "
                     "re-queues it once the cause is fixed",
}


def quiz_name(node: str) -> str:
    """``Spec quiz`` / ``Code quiz``, else the node id."""
    return _QUIZ_NAMES.get(node, node)


def comment_urls(data: Mapping[str, Any]) -> list[str]:
    """The GitHub comment links of a quiz event: ``commentUrls`` (the notify hook's shape)
    or ``comments: [{url}]``."""
    urls = [str(u) for u in data.get("commentUrls") or () if u]
    urls += [str(c.get("url")) for c in data.get("comments") or ()
             if isinstance(c, Mapping) and c.get("url")]
    return list(dict.fromkeys(urls))


def _item(ref: WorkItemRef, url: str) -> str:
    return f"<{url}|{ref}>" if url else str(ref)


def _where(location: str, view_commands: Sequence[str]) -> str:
    # A URL location is a link; a repo path comes with the copy-paste view commands
    # (explainer design C3), shown in a code block so nothing is reformatted.
    if view_commands:
        code = "\n".join(str(c) for c in view_commands)
        return "View it with one of these commands:\n```" + truncate_keep_lines(code, 2500) + "```"
    if location.startswith(("https://", "http://")):
        return f"The explainer: <{location}|open it>"
    if location:
        return f"The explainer: `{escape(location)}`"
    return "The explainer link is on GitHub."


def _button(url: str, revision: int, index: int) -> Block:
    button = ButtonElement(text="Open the GitHub comment", url=url[:3000],
                           action_id=ids.ACTION_OPEN_COMMENT, value="open")
    return ActionsBlock(block_id=ids.block_id(ids.BLOCK_NOTICE, revision, index),
                        elements=[button])


def quiz_pending_notice(
    ref: WorkItemRef,
    node: str,
    *,
    item_url: str = "",
    location: str = "",
    view_commands: Sequence[str] = (),
    comment_url_list: Sequence[str] = (),
    revision: int = 0,
    waiting_on: Sequence[str] = (),
) -> tuple[str, list[Block]]:
    """A quiz waits: which quiz, where the explainer is, and a button to the comment.

    Args:
        ref: the work item.
        node: ``spec-quiz`` or ``code-quiz``.
        item_url: the issue link.
        location: the explainer record's Location (URL or repo path).
        view_commands: copy-paste commands for a committed HTML page.
        comment_url_list: the GitHub comments where the box is ticked (first gets a button).
        revision: the message revision.
        waiting_on: Slack user ids the quiz waits on, mentioned (the thread line; a DM
            goes to them already) — issue 12 §2.
    """
    name = quiz_name(node)
    subject = _QUIZ_SUBJECT.get(node, "take the quiz")
    text = f"🎓 {name} waiting on {ref}: {subject}, then tick the box on GitHub."
    lines = [f"🎓 *{name}* waiting on {_item(ref, item_url)} — {subject}.",
             _where(location, view_commands),
             "Ticking the box on GitHub is enough; only an authorized user's tick counts."]
    blocks: list[Block] = [SectionBlock(
        text=MarkdownTextObject(text=truncate_keep_lines("\n".join(lines))),
        block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 0))]
    if comment_url_list:
        blocks.append(_button(comment_url_list[0], revision, 1))
    if waiting_on:
        who = ", ".join(f"<@{u}>" for u in dict.fromkeys(waiting_on))
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"Waiting on: {who}")],
                                   block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 2)))
    return text, blocks


def quiz_attested_notice(
    ref: WorkItemRef,
    node: str,
    *,
    attested_by: str,
    attested_at: str,
    item_url: str = "",
    comment_url_list: Sequence[str] = (),
    revision: int = 1,
) -> tuple[str, list[Block]]:
    """The quiz notice rewritten: "attested by @login at <time>"."""
    who = attested_by if attested_by.startswith("@") else f"@{attested_by}"
    text = f"✅ {quiz_name(node)} on {ref}: attested by {who} at {attested_at}"
    body = (f"✅ *{quiz_name(node)}* on {_item(ref, item_url)} — attested by "
            f"{escape(who)} at {escape(attested_at)}")
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=body),
                                        block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 0))]
    if comment_url_list:
        blocks.append(_button(comment_url_list[0], revision, 1))
    return text, blocks


def quiz_stale_notice(
    ref: WorkItemRef, node: str, *, item_url: str = "", revision: int = 1, why: str = ""
) -> tuple[str, list[Block]]:
    """The quiz notice rewritten: what the quiz covered changed (``why``: default "the spec
    changed"; the code quiz says new commits arrived, issue 19 §3) and a new quiz will
    follow."""
    why = escape(why or "the spec changed")
    text = f"♻️ {quiz_name(node)} on {ref}: {why} and a new quiz will follow"
    body = (f"♻️ *{quiz_name(node)}* on {_item(ref, item_url)} — {why} and a new "
            "quiz will follow. The old box no longer counts.")
    return text, [SectionBlock(text=MarkdownTextObject(text=body),
                               block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 0))]


def event_line(
    ref: WorkItemRef, event: str, data: Mapping[str, Any], *, item_url: str = ""
) -> tuple[str, list[Block]]:
    """A thread line for any other event (phase-approval-pending, pr-review-pending,
    conflict-escalated, work-item-complete, or an unknown name said as it is)."""
    node = escape(str(data.get("node") or ""))
    template = _EVENT_LINES.get(event)
    line = template.format(node=node) if template else f"🔔 {escape(event)} at `{node or '—'}`"
    raw_node = str(data.get("node") or "")  # the fallback is escaped as it is sent
    raw = (template.format(node=raw_node) if template
           else f"🔔 {event} at `{raw_node or '—'}`")
    text = f"{ref}: {truncate(raw, 200)}"
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=f"{line} — {_item(ref, item_url)}")),
    ]
    reason = str(data.get("reason") or "")
    if reason:
        note = MarkdownTextObject(text=escape(truncate(reason, 2900)))
        blocks.append(ContextBlock(elements=[note]))
    return text, blocks


def gate_words(node: str) -> str:
    """A node in plain words: ``spec quiz`` for ``spec-quiz``."""
    return node.replace("-", " ").replace("_", " ").strip() or node


def _by(login: str) -> str:
    return f" by @{escape(login.strip().lstrip('@'))}" if login.strip() else ""


def author_update_notice(ref: WorkItemRef, data: Mapping[str, Any], *, title: str = "",
                         item_url: str = "") -> tuple[str, list[Block]]:
    """The DM to a work item's author (issue 24 §3): a gate passed ("your spec quiz is
    attested by @alice. Next: tasks breakdown — …") or the item is complete.

    Args:
        ref: the work item.
        data: the ``author-update`` notice's data (:func:`engine.story.author_passed`,
            :func:`engine.story.author_completed`).
        title: the issue's title.
        item_url: the issue's link.

    Returns:
        ``(text, blocks)``; what people wrote (title, descriptions) is escaped.
    """
    item = _item(ref, item_url) + (f" “{escape(truncate(title, 150))}”" if title else "")
    if data.get("kind") == "complete":
        line = f"🏁 Your work item {item} is complete: every gate on its walk passed."
        return f"{ref} is complete", [SectionBlock(text=MarkdownTextObject(text=line))]
    node = str(data.get("node") or "")
    visit = int(data.get("visit") or 1)
    again = f" (visit {visit})" if visit > 1 else ""
    what = escape(str(data.get("what") or "passed"))
    gate = f"{escape(gate_words(node))} (`{escape(node)}`)"
    passed = f"is {what}{_by(str(data.get('by') or ''))}{again}"
    if data.get("complete"):  # the last gate: one DM says both (no second follows)
        line = f"🏁 Your work item {item} is complete: its {gate} {passed}."
        return f"{ref} is complete", [SectionBlock(text=MarkdownTextObject(text=line))]
    line = f"✅ Your {gate} on {item} {passed}."
    after = str(data.get("nextNode") or "")
    if after:
        about = str(data.get("nextDescription") or "")
        nxt = (f"{escape(gate_words(after)).capitalize()} (`{escape(after)}`) is unblocked"
               + (f": {escape(truncate(about, 300)).rstrip('.')}." if about else "."))
    else:
        nxt = ""
    text = f"{ref}: your {gate_words(node)} is {data.get('what') or 'passed'}"
    return text, [SectionBlock(text=MarkdownTextObject(text=f"{line} {nxt}".strip()))]

"""The App Home tab (issue 12 §3): "Waiting on you" and "Your items".

Pure builder of the ``views.publish`` view. Each waiting row is one gate or quiz, oldest
first, with URL buttons to open the issue, the quiz comment and the explainer page (a
URL button needs no interaction handling beyond an ack).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.slack.blocks import ids
from bot.slack.blocks.card import MAX_BLOCKS, MAX_SECTION_TEXT, details_link, escape, truncate

__all__ = ["WaitingRow", "ItemRow", "home_view", "items_text", "MAX_ROWS"]

#: Rows shown per section (a view holds at most 100 blocks; each row takes two).
MAX_ROWS = 20


@dataclass(frozen=True)
class WaitingRow:
    """One gate or quiz waiting on the viewer.

    Attributes:
        ref: ``owner/repo#N``.
        node: the node id.
        kind: ``approval`` or ``quiz``.
        since: ISO-8601 UTC time the node was entered.
        description: the node's one-line description.
        item_url: the issue link ("" when unknown).
        comment_url: the quiz comment ("" when none).
        explainer_url: the explainer page when it is a URL ("" otherwise).
        visit: which visit to the node this is (issue 19 §2; named from 2 on).
        previous: the previous visit's answer (``visit 1: ✋ Changes requested by
            @alice``), "" for none.
        page_url: the item's details page (issue 22 §2), "" when ``server.publicUrl`` is
            unset.
    """

    ref: str
    node: str
    kind: str
    since: str
    description: str = ""
    item_url: str = ""
    comment_url: str = ""
    explainer_url: str = ""
    visit: int = 1
    previous: str = ""
    page_url: str = ""


@dataclass(frozen=True)
class ItemRow:
    """One of the viewer's work items: reference, current node, status, link, and its
    latest decision among each node's current visit (``bot.slack.home_tab.last_decision``; "" for
    none), and its details page (issue 22 §2; "" for none)."""

    ref: str
    node: str
    status: str
    item_url: str = ""
    decision: str = ""
    page_url: str = ""


def _button(text: str, url: str, action_id: str) -> dict[str, Any]:
    # One action id per button kind (unique within its block; the ack-only listener
    # matches it exactly).
    return {"type": "button", "text": {"type": "plain_text", "text": text},
            "url": url[:3000], "action_id": action_id}


def _waiting_blocks(row: WaitingRow, index: int) -> list[dict[str, Any]]:
    what = "approval" if row.kind == "approval" else "quiz"
    line = (f"*{escape(row.ref)}* · `{escape(row.node)}` ({what}) — waiting since "
            f"{escape(row.since or '?')}")
    if row.visit > 1:  # sent back and waiting again (issue 19 §2)
        line += f" — visit {row.visit}" + (f" ({escape(row.previous)})" if row.previous else "")
    line += details_link(row.page_url)
    if row.description:
        line += f"\n{escape(truncate(row.description, 200))}"
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": line}}]
    buttons = [_button(label, url, action) for label, url, action in (
        ("Open the issue", row.item_url, ids.ACTION_OPEN_ITEM),
        ("Open the quiz comment", row.comment_url, ids.ACTION_OPEN_COMMENT),
        ("Open the explainer", row.explainer_url, ids.ACTION_OPEN_EXPLAINER)) if url]
    if buttons:
        blocks.append({"type": "actions", "block_id": f"{ids.BLOCK_HOME}.w{index}",
                       "elements": buttons})
    return blocks


def _item_line(row: ItemRow) -> str:
    ref = f"<{row.item_url}|{escape(row.ref)}>" if row.item_url else escape(row.ref)
    line = f"• {ref} — at `{escape(row.node or '—')}` ({escape(row.status or '—')})"
    line += details_link(row.page_url)
    return f"{line} — {escape(row.decision)}" if row.decision else line


def _more(count: int) -> str:
    return f"… and {count} more"


def items_text(items: Sequence[ItemRow], limit: int = MAX_SECTION_TEXT) -> str:
    """The "Your items" section text: one line per item (at most :data:`MAX_ROWS`), whole
    lines only, within ``limit`` characters (a section's text holds at most 3,000:
    Slack's Block Kit section reference), ending "… and N more" when items were left out.
    """
    if not items:
        return "You own no work items yet."
    kept: list[str] = []
    for row in items[:MAX_ROWS]:
        line = _item_line(row)
        left = len(items) - len(kept) - 1
        tail = ("\n" + _more(left)) if left else ""
        if len("\n".join([*kept, line]) + tail) > limit:
            break
        kept.append(line)
    left = len(items) - len(kept)
    return "\n".join([*kept, _more(left)] if left else kept)


def home_view(login: str, waiting: Sequence[WaitingRow],
              items: Sequence[ItemRow]) -> dict[str, Any]:
    """The home tab for GitHub ``login`` ("" when the viewer is not linked).

    Args:
        login: the viewer's linked login.
        waiting: what waits on them, oldest first (at most :data:`MAX_ROWS` shown).
        items: their work items (at most :data:`MAX_ROWS` shown).

    Returns:
        A ``{"type": "home", "blocks": [...]}`` view (block ids are stable per row, so
        a republish replaces rows in place).
    """
    header = {"type": "header", "text": {"type": "plain_text", "text": "loopgate"}}
    if not login:
        return {"type": "home", "blocks": [header, {"type": "section", "text": {
            "type": "mrkdwn", "text": "Link your Slack account to your GitHub login to see "
            "what waits on you: `/loop link <github-login>`."}}]}
    blocks: list[dict[str, Any]] = [
        header,
        {"type": "context", "elements": [{"type": "mrkdwn",
                                          "text": f"Signed in as @{escape(login)}"}]},
        {"type": "header", "text": {"type": "plain_text", "text": "Waiting on you"}},
    ]
    for index, row in enumerate(waiting[:MAX_ROWS]):
        blocks += _waiting_blocks(row, index)
    if len(waiting) > MAX_ROWS:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _more(len(waiting) - MAX_ROWS) + " waiting on you"}]})
    if not waiting:
        blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                                   "text": "Nothing waits on you."}})
    blocks += [{"type": "divider"},
               {"type": "header", "text": {"type": "plain_text", "text": "Your items"}}]
    blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": items_text(items)}})
    return {"type": "home", "blocks": blocks[: 2 * MAX_BLOCKS]}

"""The approval gates' thread message and the decision modal (issue 12 §1, §2).

Pure builders returning ``(text, blocks)`` or a view dict. The message names the gate,
what it reviews, the people it waits on (as Slack mentions, ``<@U…>``) and carries three
buttons — **Approve**, **Approve with comments**, **Request changes** — whose ``value``
is a :class:`GateRef` (``owner/repo#N|node|enteredAt``, well under the 2,000-character
button value limit, NOTES.md §1). Once the gate is answered (from Slack or GitHub) the
message is rewritten read-only with the outcome.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from bot.slack.blocks.card import details_link, escape, truncate, truncate_keep_lines
from bot.slack.blocks.escaping import Mrkdwn
from engine.errors import WorkItemRefError
from engine.refs import WorkItemRef

__all__ = [
    "GateRef",
    "OUTCOME_LABELS",
    "approval_message",
    "approval_done_message",
    "decision_modal",
    "mentions",
    "reminder_text",
    "HEADLINES",
    "headline",
]

#: What each outcome reads as in Slack.
OUTCOME_LABELS = {
    "approved": "✅ Approved",
    "approved-with-comments": "✅ Approved with comments",
    "changes-requested": "✋ Changes requested",
}
#: Modal title per outcome (Slack: at most 24 characters).
_MODAL_TITLES = {"approved-with-comments": "Approve with comments",
                 "changes-requested": "Request changes"}
_MODAL_PROMPTS = {"approved-with-comments": "Your comments (they go on the issue with the "
                  "approval)",
                  "changes-requested": "What has to change (it goes on the issue)"}


@dataclass(frozen=True)
class GateRef:
    """One visit of an approval gate: the work item, the node, when it was entered and
    which visit it is (a gate re-entered after changes were requested is a new visit, so
    an old message's buttons are outdated).

    Attributes:
        ref: the work item.
        node: the gate's node id.
        entered_at: ``state.nodes[node].entered_at`` of the visit ("" when unknown).
        visit: the visit's number (1, 2, ...; issue 19 §2), 0 for a button posted before
            buttons named it: two visits entered within one clock second share
            ``entered_at``, so only the number tells them apart.
    """

    ref: WorkItemRef
    node: str
    entered_at: str = ""
    visit: int = 0

    def value(self) -> str:
        """``owner/repo#N|node|enteredAt|visit`` (the buttons' value; without ``|visit``
        when the number is unknown, the shape buttons had before)."""
        base = f"{self.ref}|{self.node}|{self.entered_at}"
        return f"{base}|{self.visit}" if self.visit else base

    @classmethod
    def parse(cls, value: str) -> GateRef:
        """Parse :meth:`value` (both shapes: three parts, or four with the visit).

        Raises:
            ValueError: not three or four ``|``-separated parts, or a bad work item, node
                or visit number.
        """
        parts = str(value or "").split("|")
        if len(parts) not in (3, 4) or not parts[1] \
                or not parts[1].replace("-", "").isalnum() \
                or (len(parts) == 4 and not (parts[3].isdigit() and len(parts[3]) < 7)):
            raise ValueError(f"not a gate reference: {str(value)[:80]!r}")
        try:
            ref = WorkItemRef.parse(parts[0])
        except WorkItemRefError as exc:
            raise ValueError(str(exc)) from None
        return cls(ref, parts[1], parts[2], int(parts[3]) if len(parts) == 4 else 0)


def mentions(users: Sequence[str]) -> str:
    """``<@U1>, <@U2>`` for Slack user ids (empty when none)."""
    return ", ".join(f"<@{u}>" for u in dict.fromkeys(users) if u)


def _item(ref: WorkItemRef, url: str) -> str:
    return f"<{url}|{escape(str(ref))}>" if url else escape(str(ref))


#: The first line per notify event (the same words as the other thread lines).
HEADLINES = {
    "phase-approval-pending": "🧑‍⚖️ `{node}` waits for an approval",
    "pr-review-pending": "👀 a pull request review is requested (`{node}`)",
}


def headline(event: str, node: str) -> str:
    """The message's first line for ``event`` (an approval gate's notify event)."""
    return HEADLINES.get(event, HEADLINES["phase-approval-pending"]).format(node=node)


def _lines(gate: GateRef, description: str, waits_on: str, item_url: str, event: str,
           page_url: str = "") -> str:
    lines = [f"{headline(event, gate.node)} — {_item(gate.ref, item_url)}"
             f"{details_link(page_url)}"]
    if description:
        lines.append(escape(truncate(description, 300)))
    lines.append(f"Waiting on: {waits_on}" if waits_on else
                 "Waiting on: an authorized user")
    return "\n".join(lines)


def approval_message(
    gate: GateRef, *, description: str = "", waiting_on: Sequence[str] = (),
    waiting_logins: Sequence[str] = (), item_url: str = "", revision: int = 0,
    event: str = "phase-approval-pending", page_url: str = "",
) -> tuple[str, list[Block]]:
    """The interactive message of a waiting approval gate.

    Args:
        gate: the gate visit (the buttons' value).
        description: the node's one-line description.
        waiting_on: Slack user ids of the people it waits on (mentioned).
        waiting_logins: their GitHub logins, named for those without a linked Slack user.
        item_url: the issue link.
        revision: the message revision (fresh block ids on every rewrite).
        event: the notify event that asked for it (``phase-approval-pending`` or
            ``pr-review-pending``), which names the first line.
        page_url: the item's details page (issue 22 §2: who approved, whom it waits on),
            linked on the first line; "" for none (``server.publicUrl`` unset).

    Returns:
        ``(fallback text, blocks)``.
    """
    who = ", ".join([mentions(waiting_on), *[f"@{escape(lg)}" for lg in waiting_logins]])
    who = who.strip(", ")
    text = f"{gate.ref}: {headline(event, gate.node)}"
    buttons = [
        ButtonElement(text="Approve", action_id=ids.ACTION_APPROVE, value=gate.value(),
                      style="primary"),
        ButtonElement(text="Approve with comments", action_id=ids.ACTION_APPROVE_COMMENTS,
                      value=gate.value()),
        ButtonElement(text="Request changes", action_id=ids.ACTION_REQUEST_CHANGES,
                      value=gate.value(), style="danger"),
    ]
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(
            text=truncate_keep_lines(_lines(gate, description, who, item_url, event,
                                            page_url))),
            block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 0)),
        ActionsBlock(block_id=ids.block_id(ids.BLOCK_APPROVAL, revision, 0), elements=buttons),
        ContextBlock(elements=[MarkdownTextObject(
            text="Or reply on the GitHub issue: approved, approved with comments, or "
                 "changes requested.")], block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 1)),
    ]
    return text, blocks


def approval_done_message(
    gate: GateRef, decision: Mapping[str, Any], *, item_url: str = "", revision: int = 1,
    moved_to: str = "", visit: int = 0, page_url: str = "",
) -> tuple[str, list[Block]]:
    """The message rewritten read-only once the gate was answered (or moved on).

    Args:
        gate: the gate visit.
        decision: the decision recorded on the visit the message was for
            (``bot.slack.approval_clicks.gate_decision``: ``by``, ``outcome``, ``at``, ``via``,
            ``text``, ``approvers`` at a gate that needed several approvals); empty when
            the gate moved without one (skipped, forced).
        item_url: the issue link.
        revision: the new revision.
        moved_to: where the item is now, named when there is no decision.
        visit: that visit's number; from 2 on it is named ("visit 2"), so a gate sent
            back and answered again reads as its own answer (issue 19 §2).
        page_url: the item's details page (issue 22 §2), linked after the outcome; "" for
            none.
    """
    outcome = str(decision.get("outcome") or "")
    if outcome:
        via = " from Slack" if decision.get("via") == "slack" else " on GitHub"
        head = (f"{OUTCOME_LABELS.get(outcome, outcome)} — `{gate.node}` of "
                f"{_item(gate.ref, item_url)} by {escape(str(decision.get('by') or '?'))}"
                f"{via} at {escape(str(decision.get('at') or ''))}{_approvers(decision)}"
                f"{f' (visit {visit})' if visit > 1 else ''}{details_link(page_url)}")
    else:
        head = (f"⏭️ `{gate.node}` of {_item(gate.ref, item_url)} is no longer waiting"
                f"{f' (now at `{escape(moved_to)}`)' if moved_to else ''}."
                f"{details_link(page_url)}")
    text = f"{gate.ref}: {gate.node} — {outcome or 'moved on'}"
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=head),
                                        block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 0))]
    words = str(decision.get("text") or "")
    if words:
        quoted = "\n".join(f">{escape(line)}" for line in words.splitlines())
        blocks.append(SectionBlock(text=MarkdownTextObject(text=truncate_keep_lines(quoted)),
                                   block_id=ids.block_id(ids.BLOCK_NOTICE, revision, 1)))
    return text, blocks


def _approvers(decision: Mapping[str, Any]) -> str:
    # A gate that needed several approvals names them all (issue 11 §2): the one who
    # decided last is not the only one who approved.
    names = [str(n) for n in decision.get("approvers") or () if n]
    return f" (approvals: {escape(', '.join(names))})" if len(names) > 1 else ""


def decision_modal(gate: GateRef, outcome: str, *, channel: str, ts: str) -> dict[str, Any]:
    """The modal asking for the comments of ``approved-with-comments`` or
    ``changes-requested`` (the text is required).

    Args:
        gate: the gate visit.
        outcome: ``approved-with-comments`` or ``changes-requested``.
        channel: the channel of the message clicked (updated after the decision).
        ts: that message's ts.

    Returns:
        A ``views.open`` view dict; ``private_metadata`` (≤ 3,000 characters) carries the
        gate, the outcome and the message.
    """
    meta = json.dumps({"gate": gate.value(), "outcome": outcome, "channel": channel,
                       "ts": ts}, separators=(",", ":"))
    return {
        "type": "modal",
        "callback_id": ids.VIEW_DECISION,
        "private_metadata": meta,
        "title": {"type": "plain_text", "text": _MODAL_TITLES[outcome]},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": (
                f"`{gate.node}` of {gate.ref} — {OUTCOME_LABELS[outcome]}")}},
            {"type": "input", "block_id": ids.BLOCK_DECISION_TEXT, "optional": False,
             "label": {"type": "plain_text", "text": _MODAL_PROMPTS[outcome]},
             "element": {"type": "plain_text_input", "action_id": ids.ACTION_DECISION_TEXT,
                         "multiline": True, "max_length": 3000}},
        ],
    }


def reminder_text(gate: GateRef, hours: int, waiting_on: Sequence[str], *,
                  item_url: str = "") -> str:
    """A reminder for a gate that has waited ``hours`` hours (issue 12 §2), as mrkdwn.

    Args:
        gate: the gate visit.
        hours: whole hours waited.
        waiting_on: Slack user ids mentioned (none in a DM to one of them).
        item_url: the issue link.
    """
    who = f" — {mentions(waiting_on)}" if waiting_on else ""
    # Sent without blocks: the link and mentions are markup on purpose, the rest escaped.
    return Mrkdwn(f"⏰ `{escape(gate.node)}` of {_item(gate.ref, item_url)} has waited "
                  f"{hours} hours for an approval{who}.")

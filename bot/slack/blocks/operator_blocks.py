"""The Slack thread message of an operator request (issue 19 §5): what the CLI verb
would do, why, and a Confirm button; rewritten read-only once someone confirmed it.

Every value from the request (reason, node ids, who asked) is escaped (Slack's three
control characters, :mod:`bot.slack.blocks.escaping`); the text fallback is escaped as it is
sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from bot.slack.blocks import ids
from bot.slack.blocks.card import truncate
from bot.slack.blocks.escaping import escape
from engine.refs import WorkItemRef

__all__ = ["does", "request_value", "parse_request_value", "operator_request_message",
           "operator_confirmed_message"]


def does(request: Mapping[str, Any]) -> str:
    """What the request would do, in plain words (not escaped): ``skip spec-quiz`` or
    ``force to complete past human-approval``."""
    nodes = ", ".join(str(n) for n in request.get("nodes") or ())
    if request.get("verb") == "force":
        return f"force to {request.get('to')} past {nodes}"
    return f"skip {nodes}"


def request_value(ref: WorkItemRef, request_id: str) -> str:
    """The Confirm button's ``value``: ``owner/repo#N|<id>`` (≤ 2,000 characters)."""
    return f"{ref}|{request_id}"


def parse_request_value(value: str) -> tuple[WorkItemRef, str]:
    """Read :func:`request_value` back.

    Raises:
        ValueError: not ``owner/repo#N|<8 hex digits>`` (a WorkItemRefError is one).
    """
    ref, sep, request_id = (value or "").rpartition("|")
    if not sep or len(request_id) != 8 or not all(c in "0123456789abcdef" for c in request_id):
        raise ValueError(f"{value!r} is not an operator request button value")
    return WorkItemRef.parse(ref), request_id


def _head(ref: WorkItemRef, request: Mapping[str, Any]) -> str:
    return (f"🛂 Operator request `{escape(str(request.get('id')))}` on {escape(str(ref))}: "
            f"*{escape(does(request))}* — asked by `{escape(str(request.get('by')))}`.\n"
            f"Reason: {escape(truncate(str(request.get('reason') or ''), 1500))}")


def operator_request_message(ref: WorkItemRef, request: Mapping[str, Any]
                             ) -> tuple[str, list[Block]]:
    """The pending request's message: ``(text fallback, blocks)``; the button confirms
    as the clicker's linked GitHub login, authorized like a reply."""
    rid = str(request.get("id"))
    text = f"Operator request {rid} on {ref}: {does(request)} (needs a confirmation)"
    button = ButtonElement(
        text="Confirm", action_id=ids.ACTION_OPERATOR_CONFIRM, style="danger",
        value=request_value(ref, rid),
        confirm=ConfirmObject(title="Confirm the operator request?",
                              text=truncate(f"This will {does(request)} on {ref} without "
                                            "those gates' answers.", 300),
                              confirm="Confirm", deny="Cancel"))
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=_head(ref, request)),
                     block_id=ids.block_id(ids.BLOCK_OPERATOR, 0, 0)),
        ActionsBlock(elements=[button], block_id=ids.block_id(ids.BLOCK_OPERATOR, 0, 1)),
        ContextBlock(elements=[MarkdownTextObject(
            text=f"Or reply `the-loop confirm {escape(rid)}` on the GitHub issue. Only a "
                 "person authorized for every gate it names can confirm.")],
            block_id=ids.block_id(ids.BLOCK_OPERATOR, 0, 2)),
    ]
    return text, blocks


def operator_confirmed_message(ref: WorkItemRef, request: Mapping[str, Any]
                               ) -> tuple[str, list[Block]]:
    """The message rewritten read-only: confirmed by whom and how."""
    confirmed = request.get("confirmed") or {}
    who = f"@{confirmed.get('by')} via {confirmed.get('via')}"
    text = f"Operator request {request.get('id')} on {ref}: confirmed by {who}"
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=_head(ref, request)),
                     block_id=ids.block_id(ids.BLOCK_OPERATOR, 1, 0)),
        ContextBlock(elements=[MarkdownTextObject(text=f"✅ Confirmed by {escape(who)}.")],
                     block_id=ids.block_id(ids.BLOCK_OPERATOR, 1, 1)),
    ]
    return text, blocks

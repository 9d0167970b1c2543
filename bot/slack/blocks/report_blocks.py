"""The ``/loop check`` report as Block Kit (issue 4 §5).

Built from :func:`engine.report.build_report`'s dictionary, so Slack says exactly what
``loopgate check`` says: the current node, ok/unmet, every node with a status word and an
emoji (passed, skipped by declaration with who/why, not selected, waiting, blocked with
the reason, not reached ...), the phase-selection decision and the quiz attestations.
Nodes are grouped into a few section blocks, so the whole shipped graph fits well within
the 50-block limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from bot.slack.blocks.card import MAX_BLOCKS, escape, truncate

__all__ = ["STATUS_EMOJI", "node_line", "check_report_blocks", "item_list_blocks"]

STATUS_EMOJI = {
    "passed": "✅",
    "skipped": "⏭️",
    "not selected": "➖",
    "waiting": "⏳",
    "changes requested": "↩️",
    "sent back": "↩️",
    "blocked": "⛔",
    "not reached": "⚪",
    "current": "▶️",
    "escalated": "🚨",
    "forced past": "⚠️",
}
_SECTION_BUDGET = 2800  # under the section's 3000 characters, with room for the ellipsis
_DETAIL = 220


def node_line(node: Mapping[str, Any]) -> str:
    """One node as ``<emoji> `id` — status — detail``."""
    status = str(node.get("status") or "")
    emoji = STATUS_EMOJI.get(status, "•")
    detail = truncate(str(node.get("detail") or ""), _DETAIL)
    tail = f" — {escape(detail)}" if detail else ""
    return f"{emoji} `{node.get('id')}` — *{status}*{tail}"


def _pack(lines: Iterable[str], budget: int = _SECTION_BUDGET) -> list[str]:
    # Greedily join lines into as few section texts as fit the budget.
    chunks: list[str] = []
    current = ""
    for line in lines:
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > budget and current:
            chunks.append(current)
            current = line
        else:
            current = candidate
    if current:
        chunks.append(current)
    return chunks


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text[:3000]))


def _selection_text(selection: Mapping[str, Any] | None) -> str:
    if not selection or not selection.get("by"):
        return "*Phase selection:* not made yet"
    via = f" via {selection['via']}" if selection.get("via") else ""
    at = f" at {selection['at']}" if selection.get("at") else ""
    return f"*Phase selection:* by {escape(str(selection['by']))}{via}{at}"


def _attestation_text(attestations: Sequence[Mapping[str, Any]]) -> str:
    if not attestations:
        return "*Quiz attestations:* none yet"
    lines = ["*Quiz attestations:*"]
    for att in attestations:
        link = f" (<{att['comment']}|comment>)" if att.get("comment") else ""
        lines.append(f"🎓 `{att.get('node')}` — attested by {escape(str(att.get('attestedBy')))}"
                     f" at {escape(str(att.get('attestedAt') or '?'))}{link}")
    return "\n".join(lines)


def check_report_blocks(report: Mapping[str, Any]) -> list[Block]:
    """The ephemeral report of one work item.

    Args:
        report: :func:`engine.report.build_report` output.

    Returns:
        At most 50 blocks: a header, the state line, the nodes grouped into sections,
        the phase-selection decision, the attestations, and the unmet nodes.
    """
    unmet = [u["node"] for u in report.get("unmet") or ()]
    ok = "✅ ok" if report.get("ok") else f"❌ not ok — {len(unmet)} unmet"
    current = report.get("currentNode") or "—"
    head = f"*Now:* `{current}` ({report.get('status')}) · {ok}"
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text=truncate(f"Check · {report.get('workItem')}", 150))),
        _section(head),
        DividerBlock(),
        *[_section(text) for text in _pack(node_line(n) for n in report.get("nodes") or ())],
        DividerBlock(),
        _section(_selection_text(report.get("phaseSelection"))),
        _section(_attestation_text(report.get("attestations") or ())),
    ]
    if unmet:
        text = "Unmet: " + ", ".join(f"`{n}`" for n in unmet)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=truncate(text, 2900))]))
    return blocks[:MAX_BLOCKS]


def item_list_blocks(login: str, items: Sequence[tuple[str, str, str]]) -> list[Block]:
    """``/loop check`` without an argument: the caller's work items, one line each.

    Args:
        login: the caller's GitHub login.
        items: ``(workItem, currentNode, status)`` tuples.
    """
    if not items:
        return [_section(f"No work items involve @{escape(login)} yet.")]
    lines = [f"• `{ref}` — at `{node or '—'}` ({status})" for ref, node, status in items]
    sections = [_section(t) for t in _pack(lines)]
    blocks: list[Block] = [_section(f"*Work items of @{escape(login)}*"), *sections]
    if len(blocks) > MAX_BLOCKS:
        blocks = [*blocks[: MAX_BLOCKS - 1],
                  _section(f"… and more: {len(items)} work items in all.")]
    return blocks

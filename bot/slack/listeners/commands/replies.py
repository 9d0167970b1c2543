"""The reply shape of ``/loop`` sub-commands and the help text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.slack.blocks.escaping import slack_text

__all__ = ["Reply", "HELP_TEXT", "USAGE_HINT"]

#: The manifest's usage hint for ``/loop``.
USAGE_HINT = "check [owner/repo#N] | start owner/repo#N | link <github-login> | unlink | help"

HELP_TEXT = "\n".join([
    "*loopgate* walks GitHub issues through a declared process. `/loop` commands:",
    "• `/loop check owner/repo#N` (or a pasted issue URL) — where a work item is, node by node",
    "• `/loop check` — the work items you are involved in",
    "• `/loop start owner/repo#N` — start a work item (authorized users)",
    "• `/loop link <github-login>` — link your Slack account to your GitHub login",
    "• `/loop unlink` — remove that link",
    "• `/loop help` — this text",
    "An approval gate's message in the item's thread has Approve, Approve with comments and "
    "Request changes buttons; loopgate's Home tab lists what waits on you.",
])


@dataclass(frozen=True)
class Reply:
    """An ephemeral answer: ``text`` (always) and optional Block Kit ``blocks`` (dicts)."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for Bolt's ``respond``."""
        out: dict[str, Any] = {"text": slack_text(self.text), "response_type": "ephemeral"}
        if self.blocks:
            out["blocks"] = self.blocks
        return out

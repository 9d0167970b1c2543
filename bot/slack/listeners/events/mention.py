"""``app_mention``: answer with a short help in the thread (url_verification is Bolt's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.slack.blocks.escaping import slack_text
from bot.slack.listeners.commands.replies import HELP_TEXT

__all__ = ["on_mention"]


def on_mention(ack: Callable[..., Any], event: Mapping[str, Any], say: Callable[..., Any]) -> None:
    """Bolt listener: ack, then reply in the mention's thread."""
    ack()
    say(text=slack_text(HELP_TEXT), thread_ts=event.get("thread_ts") or event.get("ts"))

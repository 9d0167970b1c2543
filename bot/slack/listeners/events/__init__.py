"""Events API listeners: ``app_mention`` and ``app_home_opened`` (Bolt answers
``url_verification`` itself; redeliveries are dropped by :mod:`.dedupe`)."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.listeners.events.home_opened import on_home_opened
from bot.slack.listeners.events.mention import on_mention

__all__ = ["register"]


def register(app: App) -> None:
    """Wire event listeners into ``app``."""
    app.event("app_mention")(on_mention)
    app.event("app_home_opened")(on_home_opened)

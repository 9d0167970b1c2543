"""Events API listeners: ``app_mention`` (Bolt answers ``url_verification`` itself)."""

from __future__ import annotations

from slack_bolt import App

from bot.listeners.events.mention import on_mention

__all__ = ["register"]


def register(app: App) -> None:
    """Wire event listeners into ``app``."""
    app.event("app_mention")(on_mention)

"""Slash-command listeners: ``/loop``."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.listeners.commands.loop import on_loop

__all__ = ["register", "COMMAND"]

COMMAND = "/loop"


def register(app: App) -> None:
    """Wire ``/loop`` into ``app``."""
    app.command(COMMAND)(on_loop)

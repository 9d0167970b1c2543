"""View listeners: loopgate opens no modal, so there is nothing to wire (kept so every
listener kind has its ``register``)."""

from __future__ import annotations

from slack_bolt import App

__all__ = ["register"]


def register(app: App) -> None:
    """Wire view listeners into ``app`` (none today)."""
    return None

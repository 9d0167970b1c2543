"""View listeners: the decision modal's submission (issue 12 §1)."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.blocks import ids
from bot.slack.listeners.views.decision import on_decision_submit

__all__ = ["register"]


def register(app: App) -> None:
    """Wire view listeners into ``app``."""
    app.view(ids.VIEW_DECISION)(on_decision_submit)

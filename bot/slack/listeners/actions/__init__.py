"""``block_actions`` listeners: the card's checkboxes and link buttons (ack only), the
Execute button, and the approval gates' buttons (issue 12 §1)."""

from __future__ import annotations

from slack_bolt import App

from bot.slack.blocks import ids
from bot.slack.listeners.actions.approve import MODAL_OUTCOMES, on_approve, on_open_modal
from bot.slack.listeners.actions.execute import on_execute
from bot.slack.listeners.actions.operator_confirm import on_operator_confirm
from bot.slack.listeners.actions.ticks import on_tick

__all__ = ["register"]

_ACK_ONLY = (ids.ACTION_PHASES, ids.ACTION_OPT_INS, ids.ACTION_SETTINGS,
             ids.ACTION_OPEN_COMMENT, ids.ACTION_OPEN_ITEM, ids.ACTION_OPEN_EXPLAINER)


def register(app: App) -> None:
    """Wire the action listeners into ``app``."""
    for action_id in _ACK_ONLY:
        app.action(action_id)(on_tick)
    app.action(ids.ACTION_EXECUTE)(on_execute)
    app.action(ids.ACTION_APPROVE)(on_approve)
    app.action(ids.ACTION_OPERATOR_CONFIRM)(on_operator_confirm)  # issue 19 §5
    for action_id in MODAL_OUTCOMES:
        app.action(action_id)(on_open_modal)

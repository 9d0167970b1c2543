"""Pure Block Kit builders (``slack_sdk.models.blocks``): the phase-selection card and the
status card (:mod:`bot.slack.blocks.card`), the ``/loop check`` report
(:mod:`bot.slack.blocks.report_blocks`), notices (:mod:`bot.slack.blocks.notices`); every
action/block id once in :mod:`bot.slack.blocks.ids`."""

from __future__ import annotations

__all__ = ["card", "ids", "notices", "report"]

"""Pure Block Kit builders (``slack_sdk.models.blocks``): the phase-selection card and the
status card (:mod:`bot.blocks.card`), the ``/loop check`` report (:mod:`bot.blocks.report`),
notices (:mod:`bot.blocks.notices`); every action/block id once in :mod:`bot.blocks.ids`."""

from __future__ import annotations

__all__ = ["card", "ids", "notices", "report"]

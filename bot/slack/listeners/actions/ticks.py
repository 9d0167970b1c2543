"""Checkbox ticks and link buttons: ack, change nothing (issue 4 §3).

Slack sends a ``block_actions`` request for every tick (NOTES.md §2) and for a URL
button click; the state lives in the message until Execute reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["on_tick"]


def on_tick(ack: Callable[..., Any]) -> None:
    """Bolt listener: acknowledge only."""
    ack()

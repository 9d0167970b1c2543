"""``app_home_opened``: publish the viewer's home tab (issue 12 §3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.slack.home_tab import publish_home

__all__ = ["on_home_opened"]


def on_home_opened(ack: Callable[..., Any], event: Mapping[str, Any], client: Any,
                   context: Mapping[str, Any]) -> None:
    """Bolt listener: ack, then publish the home tab (the Messages tab is left alone)."""
    ack()
    if str(event.get("tab") or "home") != "home":
        return
    publish_home(context["services"], client, str(event.get("user") or ""))

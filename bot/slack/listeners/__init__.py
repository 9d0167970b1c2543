"""Bolt listeners, one package per kind; each kind's ``register(app)`` wires its callbacks.

A callback acks first, then parses, calls a service and renders (STYLE.md, Bolt). The
wired services are in ``context["services"]`` (put there by :func:`bot.slack.bolt_app.build_app`).
"""

from __future__ import annotations

__all__ = ["actions", "commands", "events", "views"]

"""Placeholder: filled in by its owner (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add this module's commands to ``group``."""
    return None

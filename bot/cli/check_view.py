"""How ``loopgate check`` shows its reports on a terminal (issue 14 §9): status words in
colour, the ``--all`` summary table, and the ``--node``/``--status`` filters.

Colour follows the usual conventions: on when standard output is a terminal and
``NO_COLOR`` is unset or empty (no-color.org), off otherwise; ``--color always|never``
overrides both. Styles come from ``click.style``.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

import click

from engine.state import ItemState

__all__ = ["COLOR_MODES", "use_color", "painter", "Summary", "matches"]

COLOR_MODES = ("auto", "always", "never")

#: click.style arguments per status word (node and item statuses).
STYLES: Mapping[str, Mapping[str, Any]] = {
    "passed": {"fg": "green"},
    "complete": {"fg": "green", "bold": True},
    "skipped": {"fg": "cyan"},
    "not selected": {"fg": "cyan", "dim": True},
    "current": {"fg": "yellow"},
    "waiting": {"fg": "yellow"},
    "changes requested": {"fg": "yellow"},
    "sent back": {"fg": "yellow"},
    "running": {"fg": "yellow"},
    "parked": {"fg": "yellow"},
    "blocked": {"fg": "red"},
    "escalated": {"fg": "red", "bold": True},
    "forced past": {"fg": "magenta"},
    "not reached": {"dim": True},
    "unreadable": {"fg": "red", "bold": True},
}


def use_color(mode: str, stream: TextIO | None = None,
              environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output.

    Args:
        mode: ``auto`` | ``always`` | ``never``.
        stream: the output (default ``sys.stdout``).
        environ: the environment (default ``os.environ``).

    Returns:
        ``always`` → True; ``never`` → False; ``auto`` → a terminal and no ``NO_COLOR``.
    """
    if mode != "auto":
        return mode == "always"
    env = os.environ if environ is None else environ
    out = sys.stdout if stream is None else stream
    return not env.get("NO_COLOR") and bool(getattr(out, "isatty", lambda: False)())


def painter(color: bool) -> Callable[[str, str], str]:
    """``(text, status word) -> text``, styled when ``color`` (for ``render_table``)."""
    def paint(text: str, status: str) -> str:
        style = STYLES.get(status)
        return click.style(text, **style) if color and style else text
    return paint


def matches(state: ItemState, node: str | None, status: str | None) -> bool:
    """True when ``state`` passes the ``--node`` / ``--status`` filters (None = any)."""
    return ((node is None or state.current_node == node)
            and (status is None or state.status == status))


class Summary:
    """Items per (current node, status), for the table ``check --all`` ends with (an item
    that could not be read counts as node ``?``, status ``unreadable``).

    Args:
        order: node ids in graph order (rows follow it; unknown nodes come last).
    """

    def __init__(self, order: Sequence[str]) -> None:
        self.order = {node: i for i, node in enumerate(order)}
        self.counts: Counter[tuple[str, str]] = Counter()

    def add(self, report: Mapping[str, Any]) -> None:
        """Count one report (its ``currentNode`` and ``status``)."""
        self.counts[(report["currentNode"] or "-", report["status"])] += 1

    def add_unreadable(self) -> None:
        """Count a stored item that could not be read (node ``?``, status ``unreadable``:
        what it holds is unknown)."""
        self.counts[("?", "unreadable")] += 1

    def lines(self, paint: Callable[[str, str], str]) -> Iterable[str]:
        """``summary: N items`` then an aligned table: node, status, items."""
        total = sum(self.counts.values())
        yield f"summary: {total} item{'s' if total != 1 else ''}"
        if not total:
            return
        rows = sorted(self.counts.items(),
                      key=lambda kv: (self.order.get(kv[0][0], len(self.order)), kv[0]))
        width_node = max(len("node"), *(len(node) for (node, _), _ in rows))
        width_status = max(len("status"), *(len(status) for (_, status), _ in rows))
        yield f"  {'node':<{width_node}}  {'status':<{width_status}}  items"
        for (node, status), count in rows:
            cell = paint(status, status) + " " * (width_status - len(status))
            yield f"  {node:<{width_node}}  {cell}  {count:>5}"

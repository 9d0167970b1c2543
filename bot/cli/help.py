"""Help that reads well (issue 14 §8): command lists that are never cut with "...", and one
word for output formats.

:class:`HelpGroup` lists each subcommand with its whole first sentence (click wraps it
instead of cutting it at the terminal's width). :func:`format_option` is every command's
``--format``: ``text`` or ``json`` (plus what a command adds, such as ``mermaid``); the old
word ``table`` is still accepted, as an alias of ``text``, so scripts written for it keep
working.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

__all__ = ["HelpGroup", "FormatChoice", "format_option", "FORMAT_ALIASES"]

#: Old format words still accepted, and the word they stand for now.
FORMAT_ALIASES: Mapping[str, str] = {"table": "text"}


class HelpGroup(click.Group):
    """A click group whose command list shows each command's whole first sentence."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Write the ``Commands:`` section (hidden commands left out).

        Args:
            ctx: the group's context.
            formatter: click's help formatter (wraps long rows under their name).
        """
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class FormatChoice(click.Choice[str]):
    """``click.Choice`` that also takes old words (:data:`FORMAT_ALIASES`) and returns the
    current one; only the current words are listed in help."""

    def __init__(self, choices: Sequence[str],
                 aliases: Mapping[str, str] = FORMAT_ALIASES) -> None:
        super().__init__(list(choices))
        self.aliases = {old: new for old, new in aliases.items() if new in choices}

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The canonical word for ``value`` (an alias is mapped first).

        Raises:
            click.BadParameter: not a format this command offers.
        """
        if isinstance(value, str) and value.lower() in self.aliases:
            value = self.aliases[value.lower()]
        return super().convert(value, param, ctx)


def format_option(*extra: str, help_text: str = "") -> Callable[[Any], Any]:
    """The ``--format`` option: ``text`` (default) | ``json`` | ``extra``...; ``table`` is
    accepted as the old name of ``text``."""
    choices = ("text", "json", *extra)
    text = help_text or "Output format"
    return click.option("--format", "fmt", type=FormatChoice(choices), default="text",
                        show_default=True,
                        help=f"{text} (`table` is accepted as the old name of `text`).")

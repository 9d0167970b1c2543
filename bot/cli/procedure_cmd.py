"""``loopgate procedure [COMMAND]``: print the procedure an assignment's ``Command:`` names
(issue 23 §1). Exit 0; 2 for a name with no procedure (a usage error, naming the known
ones and the closest)."""

from __future__ import annotations

import difflib

import click

from bot.cli.context import fail
from bot.procedures import UnknownProcedure, procedure_names, procedure_text

__all__ = ["register"]


@click.command("procedure")
@click.argument("command", required=False)
def procedure(command: str | None) -> None:
    """Print the procedure for COMMAND (the word after "Command:" in an assignment), or
    list the commands that have one.

    \b
    Example:
      loopgate procedure requirements
    """
    if command is None:
        for name in procedure_names():
            click.echo(name)
        return
    try:
        text = procedure_text(command)
    except UnknownProcedure as exc:
        close = difflib.get_close_matches(command, procedure_names(), n=1, cutoff=0.6)
        fail(str(exc) + (f" — did you mean `{close[0]}`?" if close else ""), 2)
    click.echo(text, nl=False)


def register(group: click.Group) -> None:
    """Add ``procedure`` to ``group``."""
    group.add_command(procedure)

"""One line per bad input (issue 23 §3): click's own usage errors in loopgate's form.

Every error loopgate reports itself is one ``loopgate: <message>`` line on stderr
(:func:`bot.cli.context.fail`). click's usage errors (an unknown option, a missing
argument, a value a type refuses) would print three lines instead (``Usage:``, ``Try``,
``Error:``); :class:`RootGroup` turns them into the same one line, with the command's
``--help`` named at its end, and keeps their exit code (2). A bare group (``loopgate``,
``loopgate config``) still prints its help. A stored item that cannot be read, met by a
verb that does not say so itself, is one line too (exit 3).
"""

from __future__ import annotations

from typing import IO, Any

import click

from bot.cli.help import HelpGroup
from engine.errors import UnreadableItemError

__all__ = ["OneLineError", "RootGroup", "one_line"]


def one_line(exc: click.ClickException) -> str:
    """``loopgate: <message>`` for ``exc``, on one line; a usage error ends with the
    ``--help`` of the command it concerns.

    Args:
        exc: any click error (a :class:`click.UsageError` carries its context).
    """
    text = "; ".join(part.strip() for part in exc.format_message().splitlines()
                     if part.strip())
    text = text[:-1] if text.endswith(".") and not text.endswith("..") else text
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        text += f" (see `{ctx.command_path} --help`)"
    return f"loopgate: {text}"


class OneLineError(click.ClickException):
    """A click error shown as :func:`one_line`, with the wrapped error's exit code."""

    def __init__(self, wrapped: click.ClickException) -> None:
        super().__init__(wrapped.format_message())
        self.wrapped = wrapped
        # click declares exit_code a ClassVar; here it is the wrapped error's, per instance.
        self.exit_code = wrapped.exit_code  # type: ignore[misc]

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line to stderr (``file`` is ignored: errors go to stderr)."""
        click.echo(one_line(self.wrapped), err=True)


def _reworded(exc: click.ClickException) -> click.ClickException:
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):  # `loopgate config`: the help
        return exc
    return OneLineError(exc)


class RootGroup(HelpGroup):
    """The ``loopgate`` group: its usage errors and its subcommands' are one line."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """click's, with a root option error (``loopgate --bogus``) in one line."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.ClickException as exc:
            raise _reworded(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """click's, with a subcommand's usage error in one line, and a stored item that
        cannot be read (a verb that met one and did not say so itself) one line too, exit
        3 (``UnreadableItemError.exit_code``), not a traceback."""
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            raise _reworded(exc) from None
        except UnreadableItemError as exc:
            click.echo(f"loopgate: {exc}", err=True)
            raise SystemExit(exc.exit_code) from None

"""The ``loopgate`` command line (click).

Subcommands live in small modules, each with ``register(group)``:
``graph_cmd`` (graph show/validate), ``item_cmd`` (start, advance, complete, skip, force,
check, comments, events), ``explainer_cmd`` (explainer render/check/redact, briefing),
``serve_cmd`` (serve, poll), ``config_cmd`` (config check/reference), ``effects_cmd``
(effects list/retry: the outbox), ``ops_cmd`` (status, backup, db migrate), ``slack_cmd``
(slack preview: Block Kit JSON), ``procedure_cmd`` (procedure: the agent procedure an
assignment's ``Command:`` names), ``verify_cmd`` (verify: re-derive the
verdicts from GitHub alone, issue 22 §3). A module is imported only when one of its
commands runs or the commands are listed (:class:`LazyCommands`, :data:`COMMAND_MODULES`:
a new command's module goes in that table).

Exit codes: 0 success; 1 a refusal or an unmet ``--fail-on`` condition; 2 a usage,
configuration or graph error (click's own usage errors are 2 as well); 3 a stored work
item that cannot be read (``UnreadableItemError``). Every error is one
``loopgate: <message>`` line on stderr (:mod:`bot.cli.usage_errors`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import ItemsView, Iterator, KeysView, ValuesView
from typing import Any

import click

from bot.cli.context import CliContext
from bot.cli.usage_errors import RootGroup

__all__ = ["main", "cli"]


DB_HELP = (
    "SQLite state database, or a postgresql://user@host/dbname URL (the password comes "
    "from databasePasswordEnv); also set by the environment variable LOOPGATE_DB, and a "
    "URL by LOOPGATE_DATABASE_URL. Else the "
    "config's `database`; else .loopgate/loopgate.db beside loopgate.yaml when one is found "
    "or given; else $XDG_STATE_HOME/loopgate/loopgate.db. `loopgate config show` says which "
    "rule chose it."
)
CONFIG_HELP = (
    "loopgate.yaml to use; also set by the environment variable LOOPGATE_CONFIG. Default: "
    "./loopgate.yaml when present, else built-in defaults."
)


def database_in_use(ctx: click.Context) -> str:
    """The database this invocation would use, for ``--help``.

    Args:
        ctx: the group's context; ``--db``/``--config`` given before ``--help`` are in its
            params (both options are eager), else their environment variables count.

    Returns:
        The path, or a sentence saying why it cannot be told (an invalid config file).
    """
    from bot.config import load_config
    from engine.errors import LoopgateError

    try:
        config = load_config(ctx.params.get("config_path") or None)
    except LoopgateError as exc:
        # One line here: `loopgate config check` lists every error.
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"unknown until the config is fixed ({first}; see `loopgate config check`)"
    explicit = ctx.params.get("db_path") or os.environ.get("LOOPGATE_DB") or None
    try:
        from bot.database import describe_database

        return describe_database(config, explicit)  # a PostgreSQL URL: never the password
    except LoopgateError as exc:
        return f"unknown until the config is fixed ({exc})"


class _DbOption(click.Option):
    """``--db``, whose help ends with the database this invocation uses (issue 14 §2)."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        """The option's help row, naming the database in use.

        Args:
            ctx: the group's context.

        Returns:
            ``(option names, help text)``.
        """
        record = super().get_help_record(ctx)
        if record is None:
            return None
        return record[0], f"{record[1]} In use here: {database_in_use(ctx)}"


@click.group(cls=RootGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_path", cls=_DbOption, envvar="LOOPGATE_DB", show_envvar=True,
              default=None, metavar="PATH", is_eager=True, help=DB_HELP)
@click.option("--config", "config_path", envvar="LOOPGATE_CONFIG", show_envvar=True,
              default=None, metavar="PATH", is_eager=True, help=CONFIG_HELP)
@click.version_option(package_name="loopgate")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, config_path: str | None) -> None:
    """loopgate: walk GitHub issues through a declared process graph.

    Every command's --help shows an example. Output formats are `--format text`
    (the default) or `--format json`.

    \b
    Example:
      loopgate start acme/widgets#7 && loopgate check acme/widgets#7
    """
    ctx.obj = CliContext(config_path=config_path, db_path=db_path)
    ctx.call_on_close(ctx.obj.close)


#: Command name -> the modules (under ``bot.cli``) whose ``register(cli)`` adds it, in
#: order (``db``: ops_cmd's ``db migrate``, then db_cmd's ``db copy``). A module is imported
#: only when one of its commands is looked up (issue 21 §3: importing every command's
#: module cost ``check`` 0.4 s before its first item). ``tests/cli/test_lazy_commands.py``
#: checks this table against the modules.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("graph",), ("graph_cmd",)),
    **dict.fromkeys(("start", "advance", "complete", "skip", "force", "comments", "events"),
                    ("item_cmd",)),
    "check": ("check_cmd",),
    "effects": ("effects_cmd",),
    **dict.fromkeys(("explainer", "briefing"), ("explainer_cmd",)),
    **dict.fromkeys(("serve", "poll"), ("serve_cmd",)),
    "config": ("config_cmd",),
    **dict.fromkeys(("status", "backup"), ("ops_cmd",)),
    "db": ("ops_cmd", "db_cmd"),
    "procedure": ("procedure_cmd",),
    "simulate": ("simulate_cmd",),
    "verify": ("verify_cmd",),
    "slack": ("slack_cmd",),  # slack preview approval|home (issue 12)
}


class LazyCommands(dict[str, click.Command]):
    """The root group's ``commands``: a dict that imports a command's module (and calls its
    ``register(group)``) the first time the command is looked up by name; listing the
    commands (iterating, ``keys``, ``items``, ``values``, ``len``) registers every one, so
    ``loopgate --help`` still lists them all.

    Args:
        group: the group the modules register on.
        table: command name -> module names under ``bot.cli`` (:data:`COMMAND_MODULES`).
    """

    def __init__(self, group: click.Group, table: dict[str, tuple[str, ...]]) -> None:
        super().__init__()
        self._group = group
        self._pending = dict(table)
        self._done: set[str] = set()

    def _load(self, name: object) -> None:
        modules = self._pending.pop(name, ()) if isinstance(name, str) else ()
        for module in modules:
            if module not in self._done:
                self._done.add(module)
                importlib.import_module(f"bot.cli.{module}").register(self._group)

    def _load_all(self) -> None:
        for name in list(self._pending):
            self._load(name)

    def __getitem__(self, name: str) -> click.Command:
        self._load(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        """The command called ``name`` (its module imported first), else ``default``."""
        self._load(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._pending or super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_all()
        return super().__len__()

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        """Every command name (every module registered first)."""
        self._load_all()
        return super().keys()

    def values(self) -> ValuesView[click.Command]:  # type: ignore[override]
        """Every command (every module registered first)."""
        self._load_all()
        return super().values()

    def items(self) -> ItemsView[str, click.Command]:  # type: ignore[override]
        """Every ``(name, command)`` (every module registered first)."""
        self._load_all()
        return super().items()


cli.commands = LazyCommands(cli, COMMAND_MODULES)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="loopgate")

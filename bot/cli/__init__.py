"""The ``loopgate`` command line (click).

Subcommands live in small modules, each with ``register(group)``:
``graph_cmd`` (graph show/validate), ``item_cmd`` (start, advance, complete, skip, force,
check, comments, events), ``explainer_cmd`` (explainer render/check/redact, briefing),
``serve_cmd`` (serve, poll), ``config_cmd`` (config check/reference), ``effects_cmd``
(effects list/retry: the outbox).

Exit codes: 0 success; 1 a refusal or an unmet ``--fail-on`` condition; 2 a usage,
configuration or graph error (click's own usage errors are 2 as well).
"""

from __future__ import annotations

import click

from bot.cli import config_cmd, effects_cmd, explainer_cmd, graph_cmd, item_cmd, serve_cmd
from bot.cli.context import CliContext

__all__ = ["main", "cli"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db_path", envvar="LOOPGATE_DB", default=None, metavar="PATH",
              help="SQLite state database (default $XDG_STATE_HOME/loopgate/loopgate.db).")
@click.option("--config", "config_path", envvar="LOOPGATE_CONFIG", default=None, metavar="PATH",
              help="loopgate.yaml (default ./loopgate.yaml when present).")
@click.version_option(package_name="loopgate")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, config_path: str | None) -> None:
    """loopgate: walk GitHub issues through a declared process graph."""
    ctx.obj = CliContext(config_path=config_path, db_path=db_path)
    ctx.call_on_close(ctx.obj.close)


for _module in (graph_cmd, item_cmd, effects_cmd, explainer_cmd, serve_cmd, config_cmd):
    _module.register(cli)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="loopgate")

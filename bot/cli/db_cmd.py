"""``loopgate db copy --to postgresql://…``: move a SQLite installation onto PostgreSQL
(issue 15 §4). The password comes from the environment variable ``databasePasswordEnv``
names (default ``PGPASSWORD``), never from the command line or a log line."""

from __future__ import annotations

import click

from bot.cli.context import CliContext, fail
from engine.errors import LoopgateError

__all__ = ["register"]


@click.command("copy")
@click.option("--to", "target", required=True, metavar="URL",
              help="The PostgreSQL database to copy into (postgresql://user@host:port/db; "
                   "the password comes from $PGPASSWORD or databasePasswordEnv).")
@click.pass_obj
def copy(ctx: CliContext, target: str) -> None:
    """Copy the SQLite database in use (--db, LOOPGATE_DB or the config's) into an empty
    PostgreSQL database, in one transaction; then point `database:` at the URL.

    \b
    Example:
      loopgate db copy --to postgresql://loopgate@db.internal:5432/loopgate
    """
    from bot.config import default_db_path
    from bot.database import database_password, database_url, is_database_url
    from bridges.postgres.copy import copy_sqlite_to_postgres
    from bridges.postgres.store import PostgresStore, describe, without_password

    if not is_database_url(target):
        fail("--to must be a postgresql:// URL")
    if database_url(ctx.config, ctx.db_path) is not None:
        fail("the database in use is already PostgreSQL: copy from a SQLite file (--db PATH)")
    source = default_db_path(ctx.config, ctx.db_path)
    try:
        store = PostgresStore(target, password=database_password(ctx.config))
        try:
            report = copy_sqlite_to_postgres(source, store)
        finally:
            store.close()
    except LoopgateError as exc:
        fail(str(exc), 1)
    for table, rows in report.copied.items():
        click.echo(f"{table:<20} {rows:>8}")
    for table, (rows, why) in report.skipped.items():
        click.echo(f"{table:<20} {rows:>8}  not copied: {why}")
    click.echo(f"copied {source} into PostgreSQL {describe(target)}; set "
               f"`database: {without_password(target)}` in loopgate.yaml to use it")


def register(group: click.Group) -> None:
    """Add ``copy`` to ``group``'s ``db`` family (made by :mod:`bot.cli.ops_cmd`, which
    registers first)."""
    family = group.commands["db"]
    assert isinstance(family, click.Group)
    family.add_command(copy)

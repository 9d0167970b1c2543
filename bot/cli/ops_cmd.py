"""Operating commands (issue 13): ``status``, ``backup PATH``, ``db migrate [--check]``.

* ``status`` asks the running ``serve`` for ``GET /readyz`` (``server.host``/``port``, or
  ``--url``) and prints every check; when no server answers it says so and prints what
  it can see itself (the database probe and the queues). Exit 0 ready, 1 not ready.
* ``backup PATH`` copies the state database with SQLite's online backup API
  (https://www.sqlite.org/backup.html): one read transaction, so the copy is one
  consistent snapshot even while ``serve`` writes; the webhook inbox file is copied
  beside it. The copy is written to a temporary file, checked (``PRAGMA quick_check``)
  and renamed into place.
* ``db migrate --check`` lists the migrations a database still lacks, opened read-only
  (exit 1 when some are pending); ``db migrate`` applies them.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from sqlite_utils import Database

from bot.cli.context import CliContext, fail
from bot.cli.help import HelpGroup

__all__ = ["register", "backup_database", "pending_migrations", "migration_sets"]


# -- status ------------------------------------------------------------------------------
def _server_url(config: Any) -> str:
    server = config.section("server")
    host = str(server.get("host") or "127.0.0.1")
    if host in ("0.0.0.0", "::", ""):  # listening everywhere: ask it on this machine
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{int(server.get('port') or 8787)}"


def _print_checks(ready: bool, body: dict[str, Any], where: str) -> None:
    failing = body.get("failing") or []
    click.echo(f"{'ready' if ready else 'NOT READY'} ({where})"
               + (f": failing {', '.join(failing)}" if failing else ""))
    for name, check in (body.get("checks") or {}).items():
        mark = "ok  " if check.get("ok") else "FAIL"
        click.echo(f"  {mark} {name:<18} {check.get('detail', '')}")


def _local_checks(ctx: CliContext) -> dict[str, Any]:
    """What this process can check without the server: the database and the queues
    (read from the files alone: nothing here talks to GitHub or Slack)."""
    from bot.config import default_db_path
    from bot.database import database_url, describe_database
    from bot.ops.health import backlogs, probe_database
    from engine.errors import ConfigError
    from engine.store.sqlite import SqliteStore

    try:
        if database_url(ctx.config, ctx.db_path) is not None:
            # A URL is no file: name the server (never the password), as /readyz does.
            detail = f"not probed: {describe_database(ctx.config, ctx.db_path)}"
            return {"checks": {"database": {"ok": True, "detail": detail}}, "failing": []}
    except ConfigError as exc:
        return {"checks": {"database": {"ok": False, "detail": str(exc)}},
                "failing": ["database"]}
    path = default_db_path(ctx.config, ctx.db_path)
    probe = probe_database(path)
    checks = {"database": {"ok": probe.ok, "detail": probe.detail}}
    if probe.ok:
        store = SqliteStore(path)
        inbox = None
        try:
            if ctx.config.has("github"):
                from bridges.ingress.inbox import inbox_path, webhook_inbox

                inbox = webhook_inbox(store) if inbox_path(path).exists() else None
            found = backlogs(store, ctx.config, inbox)
        finally:
            if inbox is not None:
                inbox.close()
            store.close()
        for name, backlog in found.items():
            checks[name] = {"ok": True, "detail": f"{backlog.depth} waiting, oldest "
                                                  f"{backlog.oldest:.0f} s"}
    return {"checks": checks, "failing": [n for n, c in checks.items() if not c["ok"]]}


@click.command("status")
@click.option("--url", default=None, metavar="URL",
              help="The server to ask (default: http://server.host:server.port).")
@click.pass_obj
def status(ctx: CliContext, url: str | None) -> None:
    """Print the readiness checks of the running server (GET /readyz).

    \b
    Example:
      loopgate status --url http://127.0.0.1:8080
    """
    import requests

    target = (url or _server_url(ctx.config)).rstrip("/")
    try:
        answer = requests.get(f"{target}/readyz", timeout=10)
        body = answer.json()
    except (requests.RequestException, ValueError) as exc:
        click.echo(f"NOT READY: no loopgate serve answers at {target} "
                   f"({type(exc).__name__})")
        local = _local_checks(ctx)
        _print_checks(False, local, "checked here, without the server")
        raise SystemExit(1) from None
    ready = answer.status_code == 200 and bool(body.get("ready"))
    _print_checks(ready, body, f"{target}/readyz")
    if not ready:
        raise SystemExit(1)


# -- backup ------------------------------------------------------------------------------
def _copy(source: Path, target: Path) -> int:
    """Online-backup ``source`` into ``target`` (replaced atomically); returns its size."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    try:
        dst = sqlite3.connect(str(partial))
        try:
            src.backup(dst)  # pages=-1: every page in one step, one consistent snapshot
            verdict = dst.execute("PRAGMA quick_check").fetchone()[0]
            if verdict != "ok":
                raise sqlite3.DatabaseError(f"the copy failed its check: {verdict}")
        finally:
            dst.close()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        src.close()
    os.replace(partial, target)
    return target.stat().st_size


def backup_database(source: Path, target: Path) -> list[tuple[Path, int]]:
    """Copy the state database (and its webhook inbox file, when there is one).

    Args:
        source: the state database.
        target: the copy's path (its inbox goes to ``<target>.inbox.db``).

    Returns:
        ``(path, bytes)`` of every file written.

    Raises:
        sqlite3.Error: a file could not be read or written, or the copy failed its check.
    """
    from bridges.ingress.inbox import inbox_path

    written = [(target, _copy(source, target))]
    inbox = inbox_path(source)
    if inbox.exists():
        copy = inbox_path(target)
        written.append((copy, _copy(inbox, copy)))
    return written


def _sqlite_only(ctx: CliContext, what: str, instead: str) -> None:
    """Exit 2 naming the database when it is PostgreSQL: ``what`` reads a SQLite file."""
    from bot.database import database_url, describe_database

    if database_url(ctx.config, ctx.db_path) is not None:
        fail(f"{what} works on a SQLite database; this one is "
             f"{describe_database(ctx.config, ctx.db_path)}: {instead}")


def _backup_target(target: str) -> Path:
    """PATH as given: a trailing slash means a folder (created, parents too); a file's
    missing parent folder is an error naming it, not a traceback."""
    path = Path(os.path.expanduser(target))
    if target.endswith(("/", os.sep)):
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"cannot create the folder {path}: {exc.strerror or exc}")
        return path
    if not path.parent.is_dir():
        fail(f"no folder {path.parent} for the backup {path}: create it, or end PATH with / "
             "to have a folder made")
    return path


@click.command("backup")
@click.argument("path", type=click.Path(dir_okay=True))
@click.option("--force", is_flag=True, help="Replace PATH when it exists.")
@click.pass_obj
def backup(ctx: CliContext, path: str, force: bool) -> None:
    """Copy the database to PATH (safe while serve runs; a directory, or a PATH ending in
    / which is created, gets a dated name).

    \b
    Example:
      loopgate backup /var/backups/loopgate/
    """
    from bot.config import default_db_path

    _sqlite_only(ctx, "backup", "back it up with pg_dump (docs/operations.md, Backups)")
    source = default_db_path(ctx.config, ctx.db_path)
    if not source.exists():
        fail(f"no database at {source}: nothing to back up")
    target = _backup_target(path)
    if target.is_dir():
        target = target / f"loopgate-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.db"
    if target.exists() and not force:
        fail(f"{target} exists: pass --force to replace it")
    if target.resolve() == source.resolve():
        fail("the backup must not be the database itself")
    try:
        written = backup_database(source, target)
    except (sqlite3.Error, OSError) as exc:
        fail(f"backup failed: {exc}")
        return
    for file, size in written:
        click.echo(f"backed up to {file} ({size} bytes, quick_check ok)")


# -- db migrate ----------------------------------------------------------------------------
def migration_sets(config: Any) -> list[tuple[str, Any]]:
    """``(file, Migrations)`` for every migration set this installation uses: ``state``
    (the engine's; the GitHub bridge's and the Slack bot's when configured) and
    ``inbox`` (the webhook inbox file, with GitHub)."""
    from engine.store.migrations import MIGRATIONS

    sets: list[tuple[str, Any]] = [("state", MIGRATIONS)]
    if config.has("github"):
        from bridges.ingress.bridge_state import MIGRATIONS as GITHUB
        from bridges.ingress.inbox import MIGRATIONS as INBOX

        sets += [("state", GITHUB), ("inbox", INBOX)]
    if config.has("slack"):
        from bot.slack.slack_schema import SLACK_MIGRATIONS

        sets.append(("state", SLACK_MIGRATIONS))
    return sets


def pending_migrations(config: Any, db_path: Path) -> list[tuple[str, str, str]]:
    """The migrations not applied yet, read without writing anything.

    Args:
        config: the validated configuration.
        db_path: the state database (a missing file has every migration pending).

    Returns:
        ``(file, migration set, migration name)`` in the order they would run.
    """
    from bridges.ingress.inbox import inbox_path

    files = {"state": db_path, "inbox": inbox_path(db_path)}
    out: list[tuple[str, str, str]] = []
    for file, migrations in migration_sets(config):
        path = files[file]
        if not path.exists():
            out += [(str(path), migrations.name, m.name) for m in migrations._migrations]
            continue
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            pending = migrations.pending(Database(conn, execute_plugins=False))
        finally:
            conn.close()
        out += [(str(path), migrations.name, m.name) for m in pending]
    return out


@click.group("db", cls=HelpGroup)
def db_group() -> None:
    """The state database: migrations, and a copy onto PostgreSQL.

    \b
    Example:
      loopgate db migrate --check
    """


@db_group.command("migrate")
@click.option("--check", "check_only", is_flag=True,
              help="Only list pending migrations (exit 1 when there are some).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.pass_obj
def migrate(ctx: CliContext, check_only: bool, fmt: str) -> None:
    """Apply pending migrations, or list them with --check (before an upgrade).

    \b
    Example:
      loopgate db migrate --check --format json
    """
    from bot.config import default_db_path

    _sqlite_only(ctx, "db migrate", "each replica applies PostgreSQL's migrations, once "
                 "across replicas, when it starts")
    path = default_db_path(ctx.config, ctx.db_path)
    try:
        pending = pending_migrations(ctx.config, path)
    except sqlite3.DatabaseError as exc:  # not SQLite: one line, as every verb (issue 23)
        fail(f"cannot open {path}: {exc} (is it a loopgate database?)", 2)
    if fmt == "json":
        click.echo(json.dumps([{"file": f, "set": s, "name": n} for f, s, n in pending]))
    elif not pending:
        click.echo(f"{path}: no pending migrations")
    else:
        for file, set_name, name in pending:
            click.echo(f"pending: {set_name} {name} ({file})")
    if check_only:
        if pending:
            raise SystemExit(1)
        return
    if pending:
        _apply(ctx)
        if fmt == "text":
            click.echo(f"applied {len(pending)} migration(s)")


def _apply(ctx: CliContext) -> None:
    """Open every file once without talking to GitHub or Slack: each set is applied on
    open, under the file's write lock."""
    from bot.config import default_db_path
    from engine.store.sqlite import SqliteStore

    store = SqliteStore(default_db_path(ctx.config, ctx.db_path))
    try:
        if ctx.config.has("github"):
            from bridges.ingress.bridge_state import bridge_state
            from bridges.ingress.inbox import webhook_inbox

            bridge_state(store)
            webhook_inbox(store).close()
        if ctx.config.has("slack"):
            from bot.slack.slack_schema import ensure_slack_tables

            ensure_slack_tables(store)
    finally:
        store.close()


def register(group: click.Group) -> None:
    """Add ``status``, ``backup`` and ``db`` to ``group``."""
    group.add_command(status)
    group.add_command(backup)
    group.add_command(db_group)

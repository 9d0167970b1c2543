"""The Slack bot's tables: their schema and the write scope every Slack storage call uses.

The tables (``slack_outbox``, ``slack_threads``, ``slack_messages``, ``slack_links``,
``slack_link_codes``) are the ``loopgate-slack`` migration set (:data:`SLACK_MIGRATIONS`),
applied to a SQLite store by :func:`ensure_slack_tables`; the PostgreSQL store migrates
its own copy when it opens (``bridges.postgres.migrate``, the ``slack`` set; a test proves
the two schemas equal). What is read and written in them is :mod:`bot.slack.slack_tables`'s
(issue 20 §2: no SQL outside the storage modules).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

if TYPE_CHECKING:
    from engine.store.base import DatabaseStore

__all__ = ["SLACK_MIGRATIONS", "ensure_slack_tables", "write_scope", "iso"]

SLACK_MIGRATIONS = Migrations("loopgate-slack")
# Stores already migrated in this process (migrating is a read of the migrations table).
_READY: weakref.WeakSet[Any] = weakref.WeakSet()


@SLACK_MIGRATIONS()
def m001_outbox_threads_identity(db: Database) -> None:
    """The outbox, the per-item thread and notice messages, identity links and codes."""
    db.execute(
        "CREATE TABLE slack_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL, "
        "event TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL, "
        "attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT NOT NULL, "
        "sent_at TEXT, failed_at TEXT, last_error TEXT NOT NULL DEFAULT '')"
    )
    db.execute("CREATE INDEX slack_outbox_pending ON slack_outbox (sent_at, next_attempt_at)")
    # One thread per work item: the parent message is the item's card / live status card.
    db.execute(
        "CREATE TABLE slack_threads (item TEXT PRIMARY KEY, channel TEXT NOT NULL, "
        "ts TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, kind TEXT NOT NULL, "
        "node TEXT NOT NULL DEFAULT '', author TEXT NOT NULL DEFAULT '', "
        "updated_at TEXT NOT NULL)"
    )
    # Messages updated later: quiz DMs (kind 'dm') and thread lines (kind 'thread').
    db.execute(
        "CREATE TABLE slack_messages (item TEXT NOT NULL, node TEXT NOT NULL, "
        "kind TEXT NOT NULL, slack_user TEXT NOT NULL DEFAULT '', channel TEXT NOT NULL, "
        "ts TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL, "
        "PRIMARY KEY (item, node, kind, slack_user))"
    )
    db.execute(
        "CREATE TABLE slack_links (slack_user TEXT PRIMARY KEY, github_login TEXT NOT NULL, "
        "linked_at TEXT NOT NULL, via TEXT NOT NULL)"
    )
    db.execute(
        "CREATE TABLE slack_link_codes (code TEXT PRIMARY KEY, slack_user TEXT NOT NULL, "
        "github_login TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, "
        "used_at TEXT)"
    )


@SLACK_MIGRATIONS()
def m002_outbox_claims(db: Database) -> None:
    """A claim per outbox row (issue 15 §3): the worker that sends an event holds it, so
    workers of several replicas never send one event twice."""
    db.execute("ALTER TABLE slack_outbox ADD COLUMN claimed_by TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE slack_outbox ADD COLUMN claimed_until TEXT NOT NULL DEFAULT ''")


def iso(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with seconds precision (``2026-01-02T03:04:05Z``); sorts as text."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def write_scope(store: DatabaseStore) -> Iterator[Any]:
    """A write scope on ``store``: the store's own (SQLite: ``BEGIN IMMEDIATE``; joins an
    open transaction).

    Yields:
        The thread's session: a ``sqlite_utils.Database`` on SQLite, a ``PgSession`` on
        PostgreSQL (both run the portable statements of
        :class:`~engine.store.base.SqlSession`).
    """
    with store.writing() as db:
        yield db


def ensure_slack_tables(store: DatabaseStore | Database) -> None:
    """Apply the ``loopgate-slack`` migrations to ``store``'s database (idempotent).

    Args:
        store: the store (``SqliteStore``; the PostgreSQL store migrates its Slack tables
            when it opens), or a ``sqlite_utils.Database``.
    """
    if store in _READY:
        return
    if isinstance(store, Database):
        SLACK_MIGRATIONS.apply(store)
    elif store.capabilities.backend == "postgresql":
        return
    else:
        with write_scope(store) as db:
            SLACK_MIGRATIONS.apply(db)
    _READY.add(store)

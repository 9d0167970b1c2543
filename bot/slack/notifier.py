"""The Slack notifier: a persisted outbox the Slack worker drains (issue 4 §1).

:class:`OutboxNotifier` implements :class:`engine.ports.Notifier`. The engine calls it from
inside its write transaction, so the event is written through ``store.db()`` (the
transaction's connection) and commits, or rolls back, with the transition that produced
it: a notice is never sent for a transition that did not happen, and a transition never
loses its notice. Nothing here talks to Slack, so a Slack outage never blocks the GitHub
side; :class:`bot.slack.worker.SlackWorker` sends and retries.

The Slack bot's tables live in their own migration set, ``loopgate-slack``
(:data:`SLACK_MIGRATIONS`), applied by :func:`ensure_slack_tables`.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from engine.refs import WorkItemRef

if TYPE_CHECKING:
    from engine.store.base import DatabaseStore

__all__ = [
    "SLACK_MIGRATIONS",
    "OutboxNotifier",
    "ensure_slack_tables",
    "write_scope",
    "iso",
    "load_thread",
    "save_thread",
    "claim_outbox_row",
]

log = logging.getLogger(__name__)

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


_CLAIM_WHERE = ("sent_at IS NULL AND failed_at IS NULL "
                "AND (claimed_until < ? OR claimed_by = ?)")


def claim_outbox_row(store: DatabaseStore, row_id: int, owner: str, until: str,
                     now: str) -> bool:
    """Take outbox row ``row_id`` for ``owner`` until ``until`` (ISO-8601 UTC).

    False when the row is sent, set aside, or another worker holds a live claim. On
    PostgreSQL the row is taken ``FOR UPDATE SKIP LOCKED`` (issue 15 §3), so a worker
    never waits on another replica's claim; on SQLite the write lock serializes claims.
    """
    with write_scope(store) as db:
        if store.capabilities.backend == "postgresql":
            sql = ("UPDATE slack_outbox SET claimed_by = ?, claimed_until = ? WHERE id = "
                   f"(SELECT id FROM slack_outbox WHERE id = ? AND {_CLAIM_WHERE} "
                   "FOR UPDATE SKIP LOCKED)")
        else:
            sql = ("UPDATE slack_outbox SET claimed_by = ?, claimed_until = ? "
                   f"WHERE id = ? AND {_CLAIM_WHERE}")
        return bool(db.execute(sql, (owner, until, row_id, now, owner)).rowcount == 1)


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


def _json_default(value: Any) -> Any:
    # Event data is JSON-shaped; anything else (a dataclass, a tuple) is made readable.
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


class OutboxNotifier:
    """:class:`engine.ports.Notifier` writing each event to the ``slack_outbox`` table.

    Args:
        store: the SQLite store (``db()`` returns the thread's connection, which inside
            the engine's transaction is the transaction's own).
    """

    def __init__(self, store: DatabaseStore) -> None:
        self.store = store
        ensure_slack_tables(store)

    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Queue ``event`` about ``ref``. Never raises: a failure is logged.

        Args:
            ref: the work item.
            event: the event name (``quiz-pending``, ``phase-selection-done`` ...).
            data: JSON-shaped event data.
        """
        try:
            now = iso()
            text = json.dumps(dict(data or {}), sort_keys=True, default=_json_default)
            # db.execute joins the engine's open transaction (no commit of its own).
            self.store.db().execute(
                "INSERT INTO slack_outbox (item, event, data, created_at, next_attempt_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (str(ref), str(event), text, now, now),
            )
        except Exception as exc:  # noqa: BLE001 - the Notifier contract: never raise
            log.error("slack outbox: could not queue %s for %s: %s", event, ref,
                      type(exc).__name__)


_THREAD_KEYS = ("channel", "ts", "revision", "kind", "node", "author")


def load_thread(store: DatabaseStore, ref: WorkItemRef) -> dict[str, Any] | None:
    """The item's Slack thread parent ``{channel, ts, revision, kind, node, author}``, or
    None when no card was posted. ``kind`` is ``card`` (interactive, phase selection
    waits) or ``status`` (read-only live status card)."""
    ensure_slack_tables(store)
    row = store.db().execute(
        f"SELECT {', '.join(_THREAD_KEYS)} FROM slack_threads WHERE item = ?", (str(ref),)
    ).fetchone()
    return None if row is None else dict(zip(_THREAD_KEYS, row, strict=True))


def save_thread(
    store: DatabaseStore,
    ref: WorkItemRef,
    *,
    channel: str,
    ts: str,
    revision: int,
    kind: str,
    node: str = "",
    author: str = "",
) -> None:
    """Record (or move) the item's thread parent message.

    Args:
        store: the SQLite store.
        ref: the work item.
        channel: the channel id the parent message is in.
        ts: its message timestamp (Slack's message id).
        revision: the message revision last rendered (block ids carry it).
        kind: ``card`` or ``status``.
        node: the item's current node when last rendered.
        author: the issue author's login, as the tracker reported it ("" keeps the old).
    """
    ensure_slack_tables(store)
    with write_scope(store) as db:
        db.execute(
            "INSERT INTO slack_threads (item, channel, ts, revision, kind, node, author, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item) DO UPDATE SET "
            "channel = excluded.channel, ts = excluded.ts, revision = excluded.revision, "
            "kind = excluded.kind, node = excluded.node, updated_at = excluded.updated_at, "
            "author = CASE WHEN excluded.author = '' THEN slack_threads.author "
            "ELSE excluded.author END",
            (str(ref), channel, ts, revision, kind, node or "", author or "", iso()),
        )

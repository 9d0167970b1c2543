"""The webhook inbox: acknowledged deliveries, in a SQLite file of their own.

GitHub does not redeliver a delivery it got a ``2xx`` for, so the receiver keeps each
routed delivery here before it answers, and the dispatcher marks it handled once it is
handled for good; a delivery still owed (a process killed in between, or a handling that
ended ``retry``/``failed``) is replayed on the next start and every 60 s.

Why a file of its own (``<db>.inbox.db``, beside the state database): the state database
has one write lock, and an item transaction can hold it for seconds (issue 10). Storing a
delivery is ONE short statement on this file's lock, which only the receiver, the
dispatcher's "handled" mark and the replay ever take, so answering GitHub never waits on
an item transaction. The file is in WAL mode with ``synchronous = FULL``: a ``2xx`` is a
promise, so the row is on disk before it is answered.

Group commit (issue 21 §1): every write (``put``, ``done``) goes through one writer
thread (:class:`~bridges.ingress.group_commit.GroupWriter`) that commits whatever is waiting
in one transaction, one fsync, then answers each waiter; a waiter answers GitHub only
after that. Concurrent deliveries share an fsync instead of queueing for the lock one by
one, and no thread of this process waits in SQLite's busy handler. A write not on disk
within ``ack_wait_s`` is refused (the receiver answers 503), never acknowledged.

Each thread gets its own connection (sqlite3 connections are not shared across threads);
:meth:`SqliteInbox.close` closes them all, and must run only after every thread that used
the inbox was joined (the supervisor's closers run last).

Handled rows are kept (newest :data:`HANDLED_CAP`), so a redelivery of a handled delivery
is recognised from this file alone: the receiver never reads the state database.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from sqlite_utils import Database, Migrations

from bridges.ingress.errors import BridgeError
from bridges.ingress.group_commit import GroupWriter, Write, WriteTimeout
from engine.store.base import Store
from engine.store.sqlite import SqliteStore

__all__ = [
    "MIGRATIONS",
    "NEW",
    "OWED",
    "HANDLED",
    "HELD",
    "HANDLED_CAP",
    "InboxEntry",
    "InboxError",
    "WebhookInbox",
    "KeepsInbox",
    "SqliteInbox",
    "MemoryInbox",
    "inbox_path",
    "webhook_inbox",
    "adopt_legacy_inbox",
]

logger = logging.getLogger(__name__)

#: What :meth:`WebhookInbox.put` found: a delivery never seen, one kept but not handled
#: yet, one handled already.
NEW = "new"
OWED = "owed"
HANDLED = "handled"
#: Kept, not handled yet, and in hand at another replica sharing the database (issue 15):
#: answered as a duplicate; that replica finishes it, or its lease runs out and the replay
#: takes it.
HELD = "held"

#: A handled delivery is remembered for de-duplication while it is among the newest this
#: many arrivals (an owed one is never forgotten); GitHub keeps a delivery redeliverable
#: for 3 days, far fewer than this many on one server.
HANDLED_CAP = 50000

MIGRATIONS = Migrations("loopgate-inbox")


@MIGRATIONS(name="0001_inbox")
def _inbox(db: Database) -> None:
    db.table("inbox").create({"delivery_id": str, "event": str, "body": bytes, "received_at": str,
                        "handled_at": str, "status": str}, pk="delivery_id")
    # The replay reads only the rows still owed; the handled ones are the many.
    db.execute("CREATE INDEX inbox_owed ON inbox (received_at) WHERE handled_at IS NULL")


class InboxError(BridgeError):
    """The inbox file cannot be opened, migrated or written."""


@dataclass(frozen=True)
class InboxEntry:
    """One kept delivery.

    Attributes:
        delivery_id: the ``X-GitHub-Delivery`` GUID.
        event: the ``X-GitHub-Event`` header.
        body: the raw request body, exactly as signed.
    """

    delivery_id: str
    event: str
    body: bytes


class WebhookInbox(Protocol):
    """Where the receiver keeps acknowledged deliveries until they are handled."""

    def put(self, delivery_id: str, event: str, body: bytes) -> str:
        """Keep a delivery; a second put of the same id keeps the first.

        Returns:
            :data:`NEW`, :data:`OWED` (kept before, not handled yet), :data:`HANDLED`,
            or (replicas only) :data:`HELD`.
        """
        ...

    def owed(self) -> list[InboxEntry]:
        """Every kept delivery not handled yet, oldest first."""
        ...

    def backlog(self) -> tuple[int, str]:
        """``(deliveries not handled yet, received_at of the oldest)`` — ISO-8601 UTC, ""
        when none or not kept — read without taking anything (``/readyz`` and
        ``/metrics``, issue 13; a replica's :meth:`owed` leases what it returns)."""
        ...

    def done(self, delivery_id: str, status: str) -> None:
        """Mark a delivery handled for good with the dispatcher's ``status``."""
        ...

    def close(self) -> None:
        """Release what the inbox holds (connections)."""
        ...


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def inbox_path(db_path: str | os.PathLike[str]) -> Path:
    """The inbox file beside the state database: ``<db>.inbox.db``.

    Args:
        db_path: the state database file.

    Returns:
        The inbox file's path (same directory, the database's name + ``.inbox.db``).
    """
    path = Path(db_path)
    return path.with_name(f"{path.name}.inbox.db")


class _Local(threading.local):
    conn: sqlite3.Connection | None = None
    pid: int = 0


class SqliteInbox:
    """:class:`WebhookInbox` in its own SQLite file.

    Args:
        path: the inbox file (see :func:`inbox_path`); its directory must exist.
        busy_timeout_ms: how long the writer waits for this file's write lock
            (milliseconds): only another process (a backup, a second tool) can hold it.
        ack_wait_s: how long a ``put``/``done`` waits for its commit before it is refused
            (seconds; below GitHub's 10 s delivery timeout, platform-facts B5).

    Raises:
        InboxError: the file cannot be opened or migrated.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 5000,
                 ack_wait_s: float = 8.0) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.ack_wait_s = ack_wait_s
        self._local = _Local()
        self._conns: list[tuple[int, sqlite3.Connection]] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._migrate()
        self.writer = GroupWriter(self._connect, after_batch=_prune_handled)

    def _connect(self) -> sqlite3.Connection:
        try:
            # autocommit (isolation_level=None): each statement is its own transaction,
            # so the receiver's insert holds the lock for that statement only.
            conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_ms / 1000,
                                   isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise InboxError(f"cannot open the webhook inbox {self.path}: {exc}") from None
        return conn

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (a fresh one after a fork)."""
        if self._closed:
            raise InboxError(f"the webhook inbox {self.path} is closed")
        local = self._local
        if local.conn is None or local.pid != os.getpid():
            local.conn = self._connect()
            local.pid = os.getpid()
            with self._conns_lock:
                self._conns.append((local.pid, local.conn))
        return local.conn

    def _migrate(self) -> None:
        conn = self._conn()
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            # Under the write lock, so two processes opening a new file migrate it once.
            conn.execute("BEGIN IMMEDIATE")
            try:
                MIGRATIONS.apply(Database(conn, execute_plugins=False))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise InboxError(f"cannot migrate the webhook inbox {self.path}: {exc}") from None

    def put(self, delivery_id: str, event: str, body: bytes) -> str:
        """Keep the raw delivery (one ``INSERT``); a second put keeps the first.

        Returns:
            :data:`NEW`, :data:`OWED` or :data:`HANDLED`.

        Raises:
            InboxError: the row could not be written (the receiver must not answer 2xx).
        """
        self._open_check()
        return str(self._submit(Write(lambda conn: _insert(conn, delivery_id, event, body)),
                                f"cannot keep delivery {delivery_id}"))

    def owed(self) -> list[InboxEntry]:
        """Every delivery not handled yet, in arrival order."""
        rows = self._conn().execute(
            "SELECT delivery_id, event, body FROM inbox WHERE handled_at IS NULL "
            "ORDER BY rowid").fetchall()
        return [InboxEntry(str(i), str(e), bytes(b)) for i, e, b in rows]

    def backlog(self) -> tuple[int, str]:
        """``(deliveries owed, received_at of the oldest, "" when none)`` — one indexed
        read (``/readyz`` and ``/metrics``, issue 13)."""
        count, oldest = self._conn().execute(
            "SELECT COUNT(*), MIN(received_at) FROM inbox WHERE handled_at IS NULL").fetchone()
        return int(count or 0), str(oldest or "")

    def done(self, delivery_id: str, status: str) -> None:
        """Mark ``delivery_id`` handled; handled ones older than the newest
        :data:`HANDLED_CAP` arrivals go (one indexed range delete).

        Raises:
            InboxError: the mark could not be written (the delivery is then replayed, and
                the dispatcher finds it handled in its own record).
        """
        self._open_check()
        self._submit(Write(lambda conn: _mark_done(conn, delivery_id, status)),
                     f"cannot mark delivery {delivery_id} handled")

    def _open_check(self) -> None:
        if self._closed:
            raise InboxError(f"the webhook inbox {self.path} is closed")

    def _submit(self, write: Write, failure: str) -> object:
        """One write through the group commit; its result once on disk."""
        try:
            return self.writer.submit(write, self.ack_wait_s)
        except WriteTimeout as exc:
            raise InboxError(f"{failure}: {exc}") from None
        except (sqlite3.Error, RuntimeError, InboxError) as exc:
            raise InboxError(f"{failure}: {exc}") from None

    def close(self) -> None:
        """Commit what is queued, stop the writer, close every connection this process
        opened (idempotent)."""
        self._closed = True
        self.writer.stop()
        pid = os.getpid()
        with self._conns_lock:
            mine = [c for p, c in self._conns if p == pid]
            self._conns = [(p, c) for p, c in self._conns if p != pid]
        for conn in mine:
            conn.close()


def _insert(conn: sqlite3.Connection, delivery_id: str, event: str, body: bytes) -> str:
    """Keep a delivery unless kept already (the writer's transaction); NEW/OWED/HANDLED."""
    inserted = conn.execute(
        "INSERT OR IGNORE INTO inbox (delivery_id, event, body, received_at) "
        "VALUES (?, ?, ?, ?)", (delivery_id, event, body, _now())).rowcount
    if inserted:
        return NEW
    row = conn.execute("SELECT handled_at FROM inbox WHERE delivery_id = ?",
                       (delivery_id,)).fetchone()
    return HANDLED if row is not None and row[0] else OWED


def _mark_done(conn: sqlite3.Connection, delivery_id: str, status: str) -> bool:
    conn.execute("UPDATE inbox SET handled_at = ?, status = ? WHERE delivery_id = ?",
                 (_now(), status, delivery_id))
    return True


def _prune_handled(conn: sqlite3.Connection, batch: list[Write]) -> None:
    """Forget handled rows older than the newest :data:`HANDLED_CAP` arrivals (one indexed
    range delete per batch that marked any handled)."""
    if any(w.result is True for w in batch):
        conn.execute("DELETE FROM inbox WHERE handled_at IS NOT NULL AND rowid <= "
                     "(SELECT MAX(rowid) FROM inbox) - ?", (HANDLED_CAP,))


class MemoryInbox:
    """:class:`WebhookInbox` in memory (a store without a file; lost on exit)."""

    def __init__(self) -> None:
        # delivery id -> (arrival number, entry, status; "" while owed), in arrival order
        self._rows: OrderedDict[str, tuple[int, InboxEntry, str]] = OrderedDict()
        self._arrivals = 0
        self._lock = threading.Lock()

    def put(self, delivery_id: str, event: str, body: bytes) -> str:
        """Keep the delivery; a second put keeps the first. Returns NEW, OWED or HANDLED."""
        with self._lock:
            kept = self._rows.get(delivery_id)
            if kept is None:
                self._arrivals += 1
                self._rows[delivery_id] = (self._arrivals,
                                           InboxEntry(delivery_id, event, bytes(body)), "")
                return NEW
            return HANDLED if kept[2] else OWED

    def owed(self) -> list[InboxEntry]:
        """Every delivery not handled yet, in arrival order."""
        with self._lock:
            return [entry for _, entry, status in self._rows.values() if not status]

    def backlog(self) -> tuple[int, str]:
        """``(deliveries owed, "")``: memory keeps no arrival times."""
        return len(self.owed()), ""

    def done(self, delivery_id: str, status: str) -> None:
        """Mark ``delivery_id`` handled; handled ones older than the newest
        :data:`HANDLED_CAP` arrivals go (as in :class:`SqliteInbox`)."""
        with self._lock:
            kept = self._rows.get(delivery_id)
            if kept is not None:
                self._rows[delivery_id] = (kept[0], kept[1], status or HANDLED)
            oldest_kept = self._arrivals - HANDLED_CAP
            for key in [k for k, (n, _, s) in self._rows.items() if s and n <= oldest_kept]:
                del self._rows[key]

    def close(self) -> None:
        """Nothing to release."""


@runtime_checkable
class KeepsInbox(Protocol):
    """A store that keeps the webhook inbox in its own database, shared by every replica
    (the PostgreSQL store, issue 15): it hands it out, so this module names no backend."""

    def webhook_inbox(self) -> WebhookInbox:
        """The inbox in this store's database."""
        ...


def webhook_inbox(store: Store) -> WebhookInbox:
    """The inbox beside ``store``: the one a store keeps itself (PostgreSQL:
    :class:`KeepsInbox`), a :class:`SqliteInbox` next to a store's file (its declared
    ``capabilities.path``), else a :class:`MemoryInbox`.

    Raises:
        InboxError: the inbox file cannot be opened or migrated.
    """
    if isinstance(store, KeepsInbox):  # shared by replicas (issue 15)
        return store.webhook_inbox()
    path = store.capabilities.path
    if path is not None:
        return SqliteInbox(inbox_path(path))
    return MemoryInbox()


def adopt_legacy_inbox(store: Store, inbox: WebhookInbox) -> int:
    """Move deliveries an older loopgate kept in the state database into ``inbox``.

    Before issue 10 the inbox was the ``github_inbox`` table of the state database. Rows
    are copied first (a put keeps the first copy, so a crash in between only copies
    again), then deleted in one write transaction.

    Args:
        store: the state store (only a ``SqliteStore`` ever held the legacy table).
        inbox: the inbox to move them into.

    Returns:
        How many deliveries were moved.
    """
    if not isinstance(store, SqliteStore):
        return 0
    db = store.db()
    if not db["github_inbox"].exists():
        return 0
    rows = db.execute("SELECT delivery_id, event, body FROM github_inbox ORDER BY rowid"
                      ).fetchall()
    if not rows:
        return 0
    for delivery_id, event, body in rows:
        inbox.put(str(delivery_id), str(event), bytes(body))
    with store.writing() as wdb:
        wdb.conn.executemany("DELETE FROM github_inbox WHERE delivery_id = ?",
                             [(r[0],) for r in rows])
    logger.info("moved %d webhook deliveries from the state database %s into the webhook "
                "inbox", len(rows), store.capabilities.path)
    return len(rows)

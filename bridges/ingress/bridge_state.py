"""The bridge's own persisted state: poll cursors and ETags, seen keys, handled deliveries.

Kept in the engine's SQLite file, in tables created by the bridge's own migration set
(``sqlite_utils.Migrations("loopgate-github")``) applied on ``SqliteStore.db()``; writes go
through ``SqliteStore.writing()`` (one ``BEGIN IMMEDIATE`` transaction each). A store without
``db()`` (the in-memory store of unit tests) gets :class:`MemoryBridgeState`.

Tables:

* ``github_poll (repo, stream)`` → ``cursor, etag, etag_since`` — one row per repository
  and stream (``comments``, ``labels``);
* ``github_seen (scope, kind, key)`` — keys the poller has handled (``comment`` ids,
  ``quiz`` keys), capped per scope and kind, oldest forgotten first;
* ``github_deliveries (key)`` — delivery ids and content keys the dispatcher handled;
* ``github_inbox`` — legacy: the webhook inbox before issue 10. Acknowledged deliveries
  now live in a SQLite file of their own (:mod:`bridges.ingress.inbox`), so the receiver
  never waits on this database's write lock; rows an older loopgate left here are moved
  there on start (:func:`bridges.ingress.inbox.adopt_legacy_inbox`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from sqlite_utils import Database, Migrations

from engine.store.base import Store
from engine.store.sqlite import SqliteStore

__all__ = [
    "MIGRATIONS",
    "PollCursor",
    "BridgeState",
    "KeepsBridgeState",
    "SqliteBridgeState",
    "MemoryBridgeState",
    "bridge_state",
    "SEEN_CAP",
    "DELIVERY_CAP",
]

#: Seen keys kept per (repository, kind): far more than one overlap window can hold.
SEEN_CAP = 5000
#: Handled delivery ids/keys kept (oldest forgotten first).
DELIVERY_CAP = 50000

MIGRATIONS = Migrations("loopgate-github")


@MIGRATIONS(name="0001_poll_seen_deliveries")
def _initial(db: Database) -> None:
    db.table("github_poll").create({"repo": str, "stream": str, "cursor": str, "etag": str,
                              "etag_since": str, "updated_at": str}, pk=("repo", "stream"))
    db.table("github_seen").create({"scope": str, "kind": str, "key": str, "at": str},
                             pk=("scope", "kind", "key"))
    db.table("github_deliveries").create({"key": str, "status": str, "at": str}, pk="key")


@MIGRATIONS(name="0002_webhook_inbox")
def _inbox(db: Database) -> None:  # legacy (see the module docstring); never edit
    db.table("github_inbox").create({"delivery_id": str, "event": str, "body": bytes,
                               "received_at": str}, pk="delivery_id")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Statements both backends run as written (the PostgreSQL state converts placeholders).
GET_CURSOR = ("SELECT cursor, etag, etag_since FROM github_poll WHERE repo = ? "
              "AND stream = ?")
SET_CURSOR = ("INSERT INTO github_poll (repo, stream, cursor, etag, etag_since, updated_at) "
              "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (repo, stream) DO UPDATE SET "
              "cursor = excluded.cursor, etag = excluded.etag, "
              "etag_since = excluded.etag_since, updated_at = excluded.updated_at")
IS_HANDLED = "SELECT 1 FROM github_deliveries WHERE key = ?"
MARK_HANDLED = ("INSERT INTO github_deliveries (key, status, at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET status = excluded.status, at = excluded.at")


@dataclass(frozen=True)
class PollCursor:
    """Where one poll stream of one repository stands.

    Attributes:
        cursor: ISO-8601 ``since`` for the next request ("" = never polled).
        etag: the ETag of the last ``200`` first page ("" = none).
        etag_since: the ``since`` that ETag was answered for (an ETag only matches the
            same URL).
    """

    cursor: str = ""
    etag: str = ""
    etag_since: str = ""


class BridgeState(Protocol):
    """Persistence used by the poller and the dispatcher."""

    def get_cursor(self, repo: str, stream: str) -> PollCursor:
        """The stored cursor (empty when never polled)."""
        ...

    def set_cursor(self, repo: str, stream: str, cursor: PollCursor) -> None:
        """Store a cursor."""
        ...

    def seen(self, scope: str, kind: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` were marked seen."""
        ...

    def mark_seen(self, scope: str, kind: str, keys: Iterable[str], cap: int = SEEN_CAP) -> None:
        """Mark ``keys`` seen, keeping at most ``cap`` per (scope, kind)."""
        ...

    def handled(self, key: str) -> bool:
        """True when the dispatcher recorded ``key`` as handled."""
        ...

    def mark_handled(self, key: str, status: str) -> None:
        """Record ``key`` handled with ``status``."""
        ...

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        """Hold the delivery ``key`` names for the block: one replica at a time where
        replicas share this state (PostgreSQL, issue 15 §3); nothing to hold elsewhere,
        where the dispatcher's own lock serializes."""
        ...


@runtime_checkable
class KeepsBridgeState(Protocol):
    """A store that keeps the bridge state in its own database, shared by every replica
    (the PostgreSQL store, issue 15): it hands it out, so this module names no backend."""

    def bridge_state(self) -> BridgeState:
        """The bridge state in this store's database."""
        ...


class SqliteBridgeState:
    """:class:`BridgeState` in the engine's SQLite file.

    Args:
        store: the ``engine.store.sqlite.SqliteStore`` (its ``writing()`` scopes).
    """

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        with self._writing() as db:
            MIGRATIONS.apply(db)

    def _writing(self) -> AbstractContextManager[Database]:
        return self.store.writing()

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        """Nothing to hold: no replica shares a SQLite file (:class:`BridgeState`)."""
        return nullcontext()

    def get_cursor(self, repo: str, stream: str) -> PollCursor:
        """The stored cursor of ``repo``/``stream`` (empty when never polled)."""
        row = self.store.db().conn.execute(GET_CURSOR, (repo, stream)).fetchone()
        return PollCursor(*row) if row else PollCursor()

    def set_cursor(self, repo: str, stream: str, cursor: PollCursor) -> None:
        """Store the cursor of ``repo``/``stream`` (one write transaction)."""
        with self._writing() as db:
            db.conn.execute(SET_CURSOR, (repo, stream, cursor.cursor, cursor.etag,
                                         cursor.etag_since, _now()))

    def seen(self, scope: str, kind: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are marked seen under ``scope``/``kind``."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        conn = self.store.db().conn
        for start in range(0, len(wanted), 500):
            part = wanted[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT key FROM github_seen WHERE scope = ? AND kind = ? AND key IN ({marks})",
                (scope, kind, *part))
            found.update(r[0] for r in rows)
        return found

    def mark_seen(self, scope: str, kind: str, keys: Iterable[str], cap: int = SEEN_CAP) -> None:
        """Mark ``keys`` seen, then keep only the newest ``cap`` of ``scope``/``kind``."""
        rows = [(scope, kind, k, _now()) for k in dict.fromkeys(keys)]
        if not rows:
            return
        with self._writing() as db:
            db.conn.executemany(
                "INSERT OR IGNORE INTO github_seen (scope, kind, key, at) VALUES (?, ?, ?, ?)",
                rows)
            db.conn.execute(
                "DELETE FROM github_seen WHERE scope = ? AND kind = ? AND rowid NOT IN "
                "(SELECT rowid FROM github_seen WHERE scope = ? AND kind = ? "
                "ORDER BY rowid DESC LIMIT ?)", (scope, kind, scope, kind, cap))

    def handled(self, key: str) -> bool:
        """True when the dispatcher recorded ``key`` (a delivery id or content key)."""
        row = self.store.db().conn.execute(IS_HANDLED, (key,)).fetchone()
        return row is not None

    def mark_handled(self, key: str, status: str) -> None:
        """Record ``key`` with ``status``; the oldest beyond :data:`DELIVERY_CAP` go."""
        with self._writing() as db:
            db.conn.execute(MARK_HANDLED, (key, status, _now()))
            db.conn.execute(
                "DELETE FROM github_deliveries WHERE rowid <= "
                "(SELECT MAX(rowid) FROM github_deliveries) - ?", (DELIVERY_CAP,))



class MemoryBridgeState:
    """:class:`BridgeState` in memory (unit tests; lost on exit)."""

    def __init__(self) -> None:
        self._cursors: dict[tuple[str, str], PollCursor] = {}
        self._seen: dict[tuple[str, str], OrderedDict[str, None]] = {}
        self._handled: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get_cursor(self, repo: str, stream: str) -> PollCursor:
        """The stored cursor of ``repo``/``stream`` (empty when never polled)."""
        with self._lock:
            return self._cursors.get((repo, stream), PollCursor())

    def set_cursor(self, repo: str, stream: str, cursor: PollCursor) -> None:
        """Store the cursor of ``repo``/``stream`` (one write transaction)."""
        with self._lock:
            self._cursors[(repo, stream)] = cursor

    def seen(self, scope: str, kind: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are marked seen under ``scope``/``kind``."""
        with self._lock:
            bucket = self._seen.get((scope, kind), OrderedDict())
            return {k for k in keys if k in bucket}

    def mark_seen(self, scope: str, kind: str, keys: Iterable[str], cap: int = SEEN_CAP) -> None:
        """Mark ``keys`` seen, then keep only the newest ``cap`` of ``scope``/``kind``."""
        with self._lock:
            bucket = self._seen.setdefault((scope, kind), OrderedDict())
            for key in keys:
                bucket.setdefault(key, None)
            while len(bucket) > cap:
                bucket.popitem(last=False)

    def handled(self, key: str) -> bool:
        """True when the dispatcher recorded ``key`` (a delivery id or content key)."""
        with self._lock:
            return key in self._handled

    def mark_handled(self, key: str, status: str) -> None:
        """Record ``key`` with ``status``; the oldest beyond :data:`DELIVERY_CAP` go."""
        with self._lock:
            self._handled[key] = status
            while len(self._handled) > DELIVERY_CAP:
                self._handled.popitem(last=False)

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        """Nothing to hold: one process (:class:`BridgeState`)."""
        return nullcontext()


def bridge_state(store: Store) -> BridgeState:
    """The bridge state living beside ``store``: the one a store keeps itself (PostgreSQL,
    issue 15: :class:`KeepsBridgeState`), SQLite in the SQLite store's file, else in
    memory."""
    if isinstance(store, KeepsBridgeState):
        return store.bridge_state()
    if isinstance(store, SqliteStore):
        return SqliteBridgeState(store)
    return MemoryBridgeState()

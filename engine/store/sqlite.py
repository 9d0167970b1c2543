"""The SQLite :class:`~engine.store.base.Store` (sqlite-utils; WAL; ``BEGIN IMMEDIATE``).

Concurrency rules (issue 2 §5):

* One connection per thread (sqlite-utils is not thread-safe), and per process: a
  connection inherited through ``fork`` is never used (nor closed) by the child.
* Every item write is ONE ``BEGIN IMMEDIATE`` transaction: the write lock is taken before
  the state is read, so two writers (threads or processes) serialize and never lose an
  update. Taking the lock waits ``busy_timeout`` and is retried a bounded number of times;
  after that :class:`StoreError` is raised.
* WAL mode, so readers (``check``) never block the writer.

Everything is stored as JSON text, never pickles.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import StoreError
from engine.refs import WorkItemRef
from engine.state import ItemState
from engine.store.base import OnUnreadable, StoreCapabilities
from engine.store.memory import StoreTransaction, json_text, utc_now_iso
from engine.store.rows import (
    KV_DELETE,
    KV_GET,
    KV_ITEMS,
    KV_SET,
    SELECT_EVENTS,
    SELECT_REFS,
    WHOLE,
    Query,
    Span,
    SpanKey,
    active_items,
    event_counts,
    item_counts,
    open_waits,
    read_state,
    span_starts,
    stream_states,
    write_statements,
)
from engine.store.schema import up_to_date
from engine.store.sqlite_effects import SqliteEffectQueue, finish_rows, insert_rows

if TYPE_CHECKING:  # imported when first written through: a reader never loads it
    from sqlite_utils import Database

__all__ = ["SqliteStore"]

logger = logging.getLogger(__name__)



def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Local(threading.local):
    """Per-thread connection bookkeeping."""

    pid: int = 0
    conn: sqlite3.Connection | None = None
    db: Database | None = None
    open_refs: set[WorkItemRef]

    def __init__(self) -> None:
        self.open_refs = set()


class SqliteStore:
    """Work item state, event log, local thread and kv in one SQLite file.

    Args:
        path: the database file; its directory is created when missing.
        busy_timeout_ms: how long one attempt waits for the write lock (milliseconds).
        lock_retries: attempts to take the write lock before giving up.
        retry_pause: seconds slept between attempts (multiplied by the attempt number).

    Raises:
        StoreError: the file cannot be opened or migrated.
    """

    #: Which implementation this is (the one SQL statement that differs asks).
    backend = "sqlite"

    @property
    def capabilities(self) -> StoreCapabilities:
        """A file one process serves (replicas need PostgreSQL, issue 15 §3), at
        :attr:`path` (issue 20 §2)."""
        return StoreCapabilities("sqlite", shared=False, path=self.path)

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Nothing to hold: no replica shares a SQLite file, and in one process the
        callers' own locks serialize (:class:`~engine.store.base.DatabaseStore`)."""
        return nullcontext()

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = 5000,
        lock_retries: int = 5,
        retry_pause: float = 0.05,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.lock_retries = max(1, lock_retries)
        self.retry_pause = retry_pause
        self._local = _Local()
        self._conns_lock = threading.Lock()
        self._conns: list[tuple[int, sqlite3.Connection]] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the directory of {self.path}: {exc}") from None
        try:
            self._migrate()
        except sqlite3.DatabaseError as exc:  # a file that is not SQLite: one line, no trace
            self.close()
            raise StoreError(f"cannot open {self.path}: {exc} (is it a loopgate "
                             "database?)") from None
        #: The outbox of effects (:class:`~engine.store.effect_queue.EffectQueue`).
        self.effects = SqliteEffectQueue(self._conn, self.writing)

    # -- connections -------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            # isolation_level=None: no implicit BEGIN; this class issues BEGIN IMMEDIATE
            # itself, and sqlite-utils' atomic() nests inside as savepoints.
            conn = sqlite3.connect(
                str(self.path),
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,  # only so close() may run from another thread
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from None
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    def _conn(self) -> sqlite3.Connection:
        """The current thread's connection (what :meth:`db` wraps): the read paths use it
        directly, so a process that only reads never imports sqlite-utils (0.06 s of
        ``check``'s start, issue 21 §3)."""
        local = self._local
        pid = os.getpid()
        if local.conn is None or local.pid != pid:
            # A connection inherited through fork belongs to the parent: leave it alone.
            conn = self._connect()
            local.conn = conn
            local.db = None
            local.pid = pid
            local.open_refs = set()
            with self._conns_lock:
                self._conns.append((pid, conn))
        return local.conn

    def db(self) -> Database:
        """The current thread's ``sqlite_utils.Database`` (over :meth:`_conn`'s connection).

        Inside a transaction this is the transaction's connection, so writes made through
        it (the local tracker, kv) join that transaction.
        """
        conn = self._conn()
        local = self._local
        if local.db is None:
            from sqlite_utils import Database

            local.db = Database(conn, execute_plugins=False)
        return local.db

    def close(self) -> None:
        """Close every connection this process opened (any thread)."""
        pid = os.getpid()
        with self._conns_lock:
            mine = [c for p, c in self._conns if p == pid]
            self._conns = [(p, c) for p, c in self._conns if p != pid]
        for conn in mine:
            try:
                conn.close()
            except sqlite3.Error as exc:  # closing twice or mid-statement: nothing to save
                logger.debug("closing a connection failed: %s", type(exc).__name__)
        self._local = _Local()

    def _migrate(self) -> None:
        conn = self._conn()
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        if up_to_date(conn):  # every migration applied and committed: nothing to take
            return
        from engine.store.migrations import MIGRATIONS

        with self.writing() as db:  # under the write lock: concurrent openers migrate once
            MIGRATIONS.apply(db)

    # -- locking -----------------------------------------------------------------------
    def _retry_locked(self, action: Any) -> Any:
        for attempt in range(1, self.lock_retries + 1):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_lock_error(exc):
                    raise StoreError(f"{self.path}: {exc}") from None
                logger.warning("%s locked (attempt %d of %d)", self.path, attempt,
                               self.lock_retries)
                time.sleep(self.retry_pause * attempt)
        raise StoreError(
            f"{self.path}: database is locked after {self.lock_retries} attempts "
            f"of {self.busy_timeout_ms} ms"
        )

    @contextmanager
    def writing(self) -> Iterator[Database]:
        """A write scope: joins the thread's open transaction, else opens one.

        A fresh scope is ONE ``BEGIN IMMEDIATE`` transaction (bounded retry on a locked
        database), committed on normal exit and rolled back on an exception.

        Yields:
            The thread's ``sqlite_utils.Database``.

        Raises:
            StoreError: the write lock could not be taken within the retry bound.
        """
        db = self.db()
        conn = db.conn
        if conn.in_transaction:
            with db.atomic():  # a savepoint inside the enclosing transaction
                yield db
            return
        self._retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield db
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"{self.path}: commit failed: {exc}") from None

    # -- the Store protocol ------------------------------------------------------------
    @contextmanager
    def transaction(self, ref: WorkItemRef) -> Iterator[StoreTransaction]:
        """Open a write transaction on ``ref`` (see :meth:`engine.store.base.Store.transaction`).

        The write lock is taken before the state is read (``BEGIN IMMEDIATE``), so the
        state a caller sees cannot be changed by another writer before it commits.

        Raises:
            StoreError: the lock could not be taken, or a transaction on the same item is
                already open in this thread.
        """
        self._conn()  # binds this thread's (and process's) connection and bookkeeping
        local = self._local
        if ref in local.open_refs:
            raise StoreError(f"a transaction on {ref} is already open in this thread")
        local.open_refs.add(ref)
        try:
            with self.writing() as wdb:
                tx = StoreTransaction(ref, read_state(_query(wdb.conn), ref))
                yield tx
                _write(wdb.conn, tx)
            if tx.state is not None:
                tx.state.revision += 1
        finally:
            local.open_refs.discard(ref)

    def load(self, ref: WorkItemRef) -> ItemState | None:
        """A copy of the item's committed state, or None."""
        return read_state(_query(self._conn()), ref)

    def refs(self) -> list[WorkItemRef]:
        """Every stored work item, sorted."""
        rows = self._conn().execute(SELECT_REFS)
        return [WorkItemRef(o, r, n) for o, r, n in rows]

    def load_all(self, on_unreadable: OnUnreadable | None = None,
                 span: Span = WHOLE) -> Iterator[ItemState]:
        """Every item's committed state, sorted by ref, from one consistent snapshot.

        Each table is read once with one ordered query, and the rows are merged item by
        item, so memory stays flat however many items there are. A private connection is
        used, so the caller may write through the store while iterating (or, opened
        here, in a process forked after the store was made). An item that cannot be read
        goes to ``on_unreadable`` (see ``Store.load_all``).

        Args:
            on_unreadable: see ``Store.load_all``.
            span: only the items of this run of the order (one of :meth:`spans`); the
                default, every item.
        """
        conn = self._connect()
        try:
            conn.execute("BEGIN")
            yield from stream_states(_query(conn), on_unreadable, tie="rowid", span=span)
        finally:
            conn.close()

    def item_total(self) -> int:
        """How many work items are stored (one count over the items' index)."""
        return int(self._conn().execute("SELECT COUNT(*) FROM items").fetchone()[0])

    def spans(self, size: int) -> list[Span]:
        """The items cut into runs of ``size`` in :meth:`load_all`'s order (the last run
        may be shorter): ``load_all(span=s)`` for each, in turn, reads every item once,
        in order, as one ``load_all()`` does; each run is its own snapshot (the runs of
        ``check --all``'s workers). No items: one span, :data:`WHOLE`.

        Raises:
            ValueError: ``size`` below 1.
        """
        conn = self._connect()
        try:
            conn.execute("BEGIN")
            starts: list[SpanKey | None] = [*span_starts(_query(conn), size)]
        finally:
            conn.close()
        bounds = [None, *starts, None]
        return list(pairwise(bounds))

    def events(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        """The item's event log, oldest first: ``[{seq, at, kind, data}]``."""
        rows = self._conn().execute(SELECT_EVENTS, (str(ref),))
        return [{"seq": s, "at": a, "kind": k, "data": json.loads(d)} for s, a, k, d in rows]

    # -- what /metrics reads (DatabaseStore) ---------------------------------------------
    def item_counts(self) -> list[tuple[str, str, int]]:
        """``(current node, status, count)`` of the work items, sorted."""
        return item_counts(_query(self._conn()))

    def open_waits(self) -> list[tuple[str, str]]:
        """``(node, entered_at)`` of every item neither complete nor escalated."""
        return open_waits(_query(self._conn()))

    def event_counts(self, kinds: Sequence[str]) -> dict[tuple[str, str], int]:
        """``{(kind, node): count}`` of the logged events of ``kinds``."""
        return event_counts(_query(self._conn()), kinds, "json_extract(data, '$.node')")

    # -- what serve's self-audit reads (DatabaseStore) -----------------------------------
    def active_items(self) -> list[WorkItemRef]:
        """The work items still walking (``running`` or ``parked``), sorted."""
        return active_items(_query(self._conn()))

    # -- kv (bridges) ------------------------------------------------------------------
    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``(namespace, key)``, or ``default``."""
        row = self._conn().execute(KV_GET, (namespace, key)).fetchone()
        return default if row is None else json.loads(row[0])

    def kv_set(self, namespace: str, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``(namespace, key)`` (joins an open transaction)."""
        text = json_text(value)
        with self.writing() as db:
            db.conn.execute(KV_SET, (namespace, key, text, utc_now_iso()))

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``(namespace, key)``; absent is not an error."""
        with self.writing() as db:
            db.conn.execute(KV_DELETE, (namespace, key))

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """Every ``key -> value`` of ``namespace``, sorted by key."""
        rows = self._conn().execute(KV_ITEMS, (namespace,))
        return {k: json.loads(v) for k, v in rows}


def _query(conn: sqlite3.Connection) -> Query:
    return lambda sql, params: conn.execute(sql, params)


def _write(conn: sqlite3.Connection, tx: StoreTransaction) -> None:
    for sql, rows in write_statements(tx):
        conn.executemany(sql, rows)
    if tx.effects:
        insert_rows(conn, tx.ref, tx.effects, utc_now_iso())
    if tx.finished:
        finish_rows(conn, tx.finished)

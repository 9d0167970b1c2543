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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from engine.errors import StoreError
from engine.refs import WorkItemRef
from engine.state import ItemState, NodeRecord
from engine.store.memory import StoreTransaction, json_text, utc_now_iso
from engine.store.migrations import MIGRATIONS
from engine.store.sqlite_effects import SqliteEffectQueue, finish_rows, insert_rows

__all__ = ["SqliteStore"]

logger = logging.getLogger(__name__)

# Tables holding ``node id -> JSON entry`` per item, with the ItemState attribute each fills.
_ENTRY_TABLES = (
    ("skips", "skips"),
    ("opt_ins", "opt_ins"),
    ("decisions", "decisions"),
    ("completions", "completions"),
)
_ITEM_COLUMNS = (
    "item, owner, repo, number, loop, current_node, status, parked, surface, "
    "started_at, revision, updated_at"
)


def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Local(threading.local):
    """Per-thread connection bookkeeping."""

    pid: int = 0
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
        self._migrate()
        #: The outbox of effects (:class:`~engine.store.effect_queue.EffectQueue`).
        self.effects = SqliteEffectQueue(lambda: self.db().conn, self.writing)

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

    def db(self) -> Database:
        """The current thread's ``sqlite_utils.Database``.

        Inside a transaction this is the transaction's connection, so writes made through
        it (the local tracker, kv) join that transaction.
        """
        local = self._local
        pid = os.getpid()
        if local.db is None or local.pid != pid:
            # A connection inherited through fork belongs to the parent: leave it alone.
            conn = self._connect()
            local.db = Database(conn, execute_plugins=False)
            local.pid = pid
            local.open_refs = set()
            with self._conns_lock:
                self._conns.append((pid, conn))
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
        conn = self.db().conn
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
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
        self.db()  # binds this thread's (and process's) connection and bookkeeping
        local = self._local
        if ref in local.open_refs:
            raise StoreError(f"a transaction on {ref} is already open in this thread")
        local.open_refs.add(ref)
        try:
            with self.writing() as wdb:
                tx = StoreTransaction(ref, _read_state(wdb.conn, ref))
                yield tx
                _write(wdb.conn, tx)
            if tx.state is not None:
                tx.state.revision += 1
        finally:
            local.open_refs.discard(ref)

    def load(self, ref: WorkItemRef) -> ItemState | None:
        """A copy of the item's committed state, or None."""
        return _read_state(self.db().conn, ref)

    def refs(self) -> list[WorkItemRef]:
        """Every stored work item, sorted."""
        rows = self.db().conn.execute(
            "SELECT owner, repo, number FROM items ORDER BY owner, repo, number"
        )
        return [WorkItemRef(o, r, n) for o, r, n in rows]

    def load_all(self) -> Iterator[ItemState]:
        """Every item's committed state, sorted by ref, from one consistent snapshot.

        Each table is read once with one ordered query, and the rows are merged item by
        item, so memory stays flat however many items there are. A private connection is
        used, so the caller may write through the store while iterating.
        """
        conn = self._connect()
        try:
            conn.execute("BEGIN")
            yield from _stream_states(conn)
        finally:
            conn.close()

    def events(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        """The item's event log, oldest first: ``[{seq, at, kind, data}]``."""
        rows = self.db().conn.execute(
            "SELECT seq, at, kind, data FROM events WHERE item = ? ORDER BY seq", (str(ref),)
        )
        return [{"seq": s, "at": a, "kind": k, "data": json.loads(d)} for s, a, k, d in rows]

    # -- kv (bridges) ------------------------------------------------------------------
    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``(namespace, key)``, or ``default``."""
        row = self.db().conn.execute(
            "SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)
        ).fetchone()
        return default if row is None else json.loads(row[0])

    def kv_set(self, namespace: str, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``(namespace, key)`` (joins an open transaction)."""
        text = json_text(value)
        with self.writing() as db:
            db.conn.execute(
                "INSERT INTO kv (namespace, key, value, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (namespace, key, text, utc_now_iso()),
            )

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``(namespace, key)``; absent is not an error."""
        with self.writing() as db:
            db.conn.execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """Every ``key -> value`` of ``namespace``, sorted by key."""
        rows = self.db().conn.execute(
            "SELECT key, value FROM kv WHERE namespace = ? ORDER BY key", (namespace,)
        )
        return {k: json.loads(v) for k, v in rows}


# -- row <-> state -----------------------------------------------------------------------
def _state_from_row(row: tuple[Any, ...]) -> ItemState:
    item, _o, _r, _n, loop, current, status, parked, surface, started, revision, _u = row
    state = ItemState(
        ref=WorkItemRef.parse(item),
        loop=loop or "",
        current_node=current or "",
        status=status or "running",
        parked=json.loads(parked or "{}"),
        surface=json.loads(surface or "{}"),
        started_at=started or "",
    )
    state.revision = int(revision or 0)
    return state


def _record_from_row(row: tuple[Any, ...]) -> NodeRecord:
    attempts, outcome, entered, exited, last_block, forced = row
    return NodeRecord(
        attempts=int(attempts or 0),
        outcome=outcome or "",
        entered_at=entered or "",
        exited_at=exited or "",
        last_block=last_block or "",
        forced=bool(forced),
    )


def _read_state(conn: sqlite3.Connection, ref: WorkItemRef) -> ItemState | None:
    item = str(ref)
    row = conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE item = ?", (item,)).fetchone()
    if row is None:
        return None
    state = _state_from_row(row)
    for node, *rest in conn.execute(
        "SELECT node, attempts, outcome, entered_at, exited_at, last_block, forced "
        "FROM node_records WHERE item = ? ORDER BY ord", (item,)
    ):
        state.nodes[node] = _record_from_row(tuple(rest))
    for table, attr in _ENTRY_TABLES:
        target = getattr(state, attr)
        for node, data in conn.execute(
            f"SELECT node, data FROM {table} WHERE item = ? ORDER BY ord", (item,)
        ):
            target[node] = json.loads(data)
    state.forced = [
        json.loads(d)
        for (d,) in conn.execute("SELECT data FROM forced_moves WHERE item = ? ORDER BY ord",
                                 (item,))
    ]
    return state


def _write(conn: sqlite3.Connection, tx: StoreTransaction) -> None:
    item = str(tx.ref)
    if tx.state is not None:
        _write_state(conn, item, tx.state)
    if tx.events:
        conn.executemany(
            "INSERT INTO events (item, at, kind, data) VALUES (?, ?, ?, ?)",
            [(item, at, kind, json_text(data)) for kind, data, at in tx.events],
        )
    if tx.effects:
        insert_rows(conn, tx.ref, tx.effects, utc_now_iso())
    if tx.finished:
        finish_rows(conn, tx.finished)


def _write_state(conn: sqlite3.Connection, item: str, state: ItemState) -> None:
    ref = state.ref
    conn.execute(
        f"INSERT OR REPLACE INTO items ({_ITEM_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (item, ref.owner, ref.repo, ref.number, state.loop, state.current_node, state.status,
         json_text(state.parked), json_text(state.surface), state.started_at,
         state.revision + 1, utc_now_iso()),
    )
    # The item's child rows are replaced wholesale: simple, and exact under the lock.
    for table in ("node_records", "skips", "opt_ins", "decisions", "completions",
                  "forced_moves"):
        conn.execute(f"DELETE FROM {table} WHERE item = ?", (item,))
    conn.executemany(
        "INSERT INTO node_records (item, node, ord, attempts, outcome, entered_at, exited_at, "
        "last_block, forced) VALUES (?,?,?,?,?,?,?,?,?)",
        [(item, node, i, r.attempts, r.outcome, r.entered_at, r.exited_at, r.last_block,
          int(r.forced)) for i, (node, r) in enumerate(state.nodes.items())],
    )
    for table, attr in _ENTRY_TABLES:
        entries: Mapping[str, Any] = getattr(state, attr)
        if table in ("skips", "opt_ins"):
            conn.executemany(
                f"INSERT INTO {table} (item, node, ord, data, via) VALUES (?,?,?,?,?)",
                [(item, node, i, json_text(e), _via(e)) for i, (node, e) in
                 enumerate(entries.items())],
            )
        else:
            conn.executemany(
                f"INSERT INTO {table} (item, node, ord, data) VALUES (?,?,?,?)",
                [(item, node, i, json_text(e)) for i, (node, e) in enumerate(entries.items())],
            )
    conn.executemany(
        "INSERT INTO forced_moves (item, ord, from_node, to_node, by, reason, at, data) "
        "VALUES (?,?,?,?,?,?,?,?)",
        [(item, i, _text(m, "from"), _text(m, "to"), _text(m, "by"), _text(m, "reason"),
          _text(m, "at"), json_text(m)) for i, m in enumerate(state.forced)],
    )


def _via(entry: Any) -> str:
    return _text(entry, "via")


def _text(entry: Any, key: str) -> str:
    if isinstance(entry, Mapping):
        value = entry.get(key)
        return "" if value is None else str(value)
    return ""


# -- load_all: one ordered query per table, merged item by item --------------------------
class _Rows:
    """An ordered cursor whose rows are taken in runs sharing their first column (item)."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor
        self._head = next(cursor, None)

    def take(self, item: str) -> list[tuple[Any, ...]]:
        run = []
        while self._head is not None and self._head[0] == item:
            run.append(self._head[1:])
            self._head = next(self._cursor, None)
        return run


def _ordered(conn: sqlite3.Connection, table: str, columns: str) -> _Rows:
    # Child rows in the items' sort order, so a single pass merges them.
    return _Rows(conn.execute(
        f"SELECT c.item, {columns} FROM {table} c JOIN items i ON i.item = c.item "
        "ORDER BY i.owner, i.repo, i.number, c.ord"
    ))


def _stream_states(conn: sqlite3.Connection) -> Iterator[ItemState]:
    items = conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items ORDER BY owner, repo, number")
    records = _ordered(conn, "node_records",
                       "c.node, c.attempts, c.outcome, c.entered_at, c.exited_at, "
                       "c.last_block, c.forced")
    entries = {attr: _ordered(conn, table, "c.node, c.data") for table, attr in _ENTRY_TABLES}
    forced = _ordered(conn, "forced_moves", "c.data")
    for row in items:
        state = _state_from_row(row)
        item = row[0]
        for node, *rest in records.take(item):
            state.nodes[node] = _record_from_row(tuple(rest))
        for attr, rows in entries.items():
            target = getattr(state, attr)
            for node, data in rows.take(item):
                target[node] = json.loads(data)
        state.forced = [json.loads(d) for (d,) in forced.take(item)]
        yield state

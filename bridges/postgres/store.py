"""The PostgreSQL :class:`~engine.store.base.Store` (psycopg 3 + ``psycopg_pool``), issue 15.

Concurrency rules:

* One work item is changed by one transaction at a time, across threads and replicas: a
  transaction locks the item's ``item_locks`` row (``SELECT … FOR UPDATE``) before reading
  its state, and holds it only for the short, network-free transaction (issue 10 moved
  every network call out of transactions, into the outbox). Other items go on in parallel;
  nothing locks the whole database (unlike SQLite's ``BEGIN IMMEDIATE``).
* A lock waited for longer than ``lock_timeout_ms`` (or a deadlock PostgreSQL breaks)
  raises :class:`StoreError`; the transaction wrote nothing.
* A transaction opened inside another one in the same thread joins it as a savepoint (as
  SQLite's do), so a thread's writes commit together.
* Pool connections are autocommit; each write scope is one explicit transaction. After a
  ``fork`` the child opens its own pool (a pool's connections and threads belong to the
  process that opened them).

The password never reaches a log line or an exception: errors name the server as
:func:`describe` prints it (host, port, database, user).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from bridges.postgres import migrate
from bridges.postgres.effect_queue import PostgresEffectQueue
from bridges.postgres.session import PgSession
from bridges.postgres.sql import to_pg
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
    Query,
    active_items,
    event_counts,
    item_counts,
    open_waits,
    read_state,
    stream_states,
    write_statements,
)
from engine.store.sqlite_effects import (
    FINISH_ROW,
    INSERT_ROW,
    effect_row_values,
    finish_values,
)

if TYPE_CHECKING:  # lazily at run time: they implement the GitHub bridge's protocols
    from bridges.postgres.bridge_state import PostgresBridgeState
    from bridges.postgres.inbox import PostgresInbox

__all__ = ["PostgresStore", "describe", "without_password"]

logger = logging.getLogger(__name__)


def describe(conninfo: str) -> str:
    """``user@host:port/dbname`` of a conninfo or URL: what errors and logs may name (never
    the password). Unparseable input is named ``<unparseable database URL>``."""
    try:
        parts = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "<unparseable database URL>"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"{parts.get('user') or ''}@{host}:{port}/{parts.get('dbname') or ''}"


def without_password(url: str) -> str:
    """``url`` with any password taken out of its user part (what may be printed)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}" if user else netloc))


class _Local(threading.local):
    """Per-thread: the connection of the open write scope, and the items it locked."""

    conn: psycopg.Connection | None = None
    open_refs: set[WorkItemRef]

    def __init__(self) -> None:
        self.open_refs = set()


class PostgresStore:
    """Work item state, event log, kv and the effect outbox in one PostgreSQL database
    (and, through :meth:`db`/:meth:`writing`, the bridges' and the Slack bot's tables).

    Attributes:
        backend: ``"postgresql"`` (what callers choosing an implementation ask).
        where: ``user@host:port/db`` — how logs and errors name the database.

    Args:
        conninfo: a libpq URL or conninfo string (``postgresql://user@host:port/db``); the
            password comes inside it or from ``password`` (never logged).
        password: the password, when not in ``conninfo`` (read from the environment by
            the caller, e.g. ``PGPASSWORD`` or the config's ``passwordEnv``).
        min_size, max_size: the connection pool's bounds.
        lock_timeout_ms: the longest wait for an item's row lock (milliseconds).
        connect_timeout_s: how long opening waits for the server (seconds).
        migration_sets: the migration histories applied at open (default: the engine's,
            the GitHub bridge's, the inbox's and the Slack bot's, :data:`migrate.ALL`).

    Raises:
        StoreError: the server cannot be reached, the login is refused, or the schema
            cannot be migrated.
    """

    def __init__(self, conninfo: str, *, password: str | None = None, min_size: int = 1,
                 max_size: int = 10, lock_timeout_ms: int = 30_000,
                 connect_timeout_s: int = 10,
                 migration_sets: Sequence[migrate.MigrationSet] = migrate.ALL) -> None:
        self.where = describe(conninfo)
        self._conninfo = conninfo
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": connect_timeout_s,
            "options": f"-c lock_timeout={int(lock_timeout_ms)}",
        }
        if password:
            self._kwargs["password"] = password
        self._sizes = (min_size, max_size)
        self._local = _Local()
        self._pid = os.getpid()
        self._inherited: list[ConnectionPool] = []
        self._check_login()
        self._pool = self._open_pool()
        try:
            with self._pool.connection() as conn:
                migrate.apply(conn, migration_sets)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"{self.where}: migrating failed: {_reason(exc)}") from None
        #: The outbox of effects (:class:`~engine.store.effect_queue.EffectQueue`).
        self.effects = PostgresEffectQueue(self._read, self._write)

    backend = "postgresql"

    @property
    def capabilities(self) -> StoreCapabilities:
        """One database every replica shares (issue 15 §3): :meth:`exclusive` holds an
        advisory lock; guards, budgets, the inbox and bridge state live here too."""
        return StoreCapabilities("postgresql", shared=True)

    def webhook_inbox(self) -> PostgresInbox:
        """The webhook inbox in this database, shared by every replica (issue 15 §3;
        ``bridges.ingress.inbox.KeepsInbox``)."""
        from bridges.postgres.inbox import PostgresInbox

        return PostgresInbox(self)

    def bridge_state(self) -> PostgresBridgeState:
        """The GitHub bridge's state in this database (issue 15;
        ``bridges.ingress.bridge_state.KeepsBridgeState``)."""
        from bridges.postgres.bridge_state import PostgresBridgeState

        return PostgresBridgeState(self)

    # -- portable SQL (the bot's tables) -------------------------------------------------
    def db(self) -> PgSession:
        """A session for one statement at a time: inside this thread's open transaction
        it runs there (its writes commit with the transaction), else autocommit."""
        return PgSession(self._read)

    @contextmanager
    def writing(self) -> Iterator[PgSession]:
        """A write scope (joins the thread's open transaction as a savepoint, else one
        transaction committed on normal exit), as a :class:`PgSession`."""
        with self._write() as conn:
            yield PgSession(lambda: nullcontext(conn))

    @contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """Hold a session-level advisory lock on ``name`` (hashed to 64 bits) for the
        block, on a pool connection of its own: across replicas, one holder at a time.
        Unlike an item transaction this may span network calls; it locks no row."""
        self._for_this_process()
        with _store_errors(self.where), self._pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))

    # -- connections -------------------------------------------------------------------
    def connect(self) -> psycopg.Connection:
        """A new autocommit connection outside the pool (the caller closes it): for what
        must outlive a pool checkout, such as a session advisory lock.

        Raises:
            StoreError: the server cannot be reached or refuses the login.
        """
        try:
            return psycopg.connect(self._conninfo, **self._kwargs)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.where}: {_reason(exc)}") from None

    def _check_login(self) -> None:
        # A direct connection first: its error says why (the pool would only time out).
        self.connect().close()

    def _open_pool(self) -> ConnectionPool:
        low, high = self._sizes
        pool = ConnectionPool(self._conninfo, min_size=low, max_size=high,
                              kwargs=self._kwargs, open=True, name="loopgate", timeout=60)
        return pool

    def _for_this_process(self) -> _Local:
        if os.getpid() != self._pid:
            # Forked: the parent's pool (its sockets, its threads) is not ours to use, nor
            # to free: freeing a connection tells the server goodbye on the parent's socket.
            self._inherited.append(self._pool)
            self._pid = os.getpid()
            self._pool = self._open_pool()
            self._local = _Local()
        return self._local

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection]:
        """A write scope: a savepoint in the thread's open transaction, else a new
        transaction on a pool connection, committed on normal exit."""
        local = self._for_this_process()
        if local.conn is not None:
            with _store_errors(self.where), local.conn.transaction():
                yield local.conn
            return
        with _store_errors(self.where), self._pool.connection() as conn:
            local.conn = conn
            try:
                with conn.transaction():
                    yield conn
            finally:
                local.conn = None

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        """The thread's open transaction's connection (its writes are visible), else a
        pool connection (autocommit: each statement sees the latest commits)."""
        local = self._for_this_process()
        if local.conn is not None:
            yield local.conn
            return
        with _store_errors(self.where), self._pool.connection() as conn:
            yield conn

    def close(self) -> None:
        """Close the pool (every connection this process opened)."""
        if os.getpid() == self._pid:
            self._pool.close()

    # -- the Store protocol ------------------------------------------------------------
    @contextmanager
    def transaction(self, ref: WorkItemRef) -> Iterator[StoreTransaction]:
        """Open a write transaction on ``ref`` (see :meth:`engine.store.base.Store.transaction`).

        The item's row lock is taken before the state is read, so no other transaction
        (thread or replica) changes the item before this one commits.

        Raises:
            StoreError: the lock wait passed ``lock_timeout_ms``, the server failed, or a
                transaction on the same item is already open in this thread.
        """
        local = self._for_this_process()
        if ref in local.open_refs:
            raise StoreError(f"a transaction on {ref} is already open in this thread")
        local.open_refs.add(ref)
        try:
            with self._write() as conn:
                _lock_item(conn, str(ref))
                tx = StoreTransaction(ref, read_state(_query(conn), ref))
                yield tx
                _commit(conn, tx)
            if tx.state is not None:
                tx.state.revision += 1
        finally:
            local.open_refs.discard(ref)

    def load(self, ref: WorkItemRef) -> ItemState | None:
        """A copy of the item's committed state, or None."""
        with self._read() as conn:
            return read_state(_query(conn), ref)

    def refs(self) -> list[WorkItemRef]:
        """Every stored work item, sorted."""
        with self._read() as conn:
            return [WorkItemRef(o, r, int(n)) for o, r, n in _query(conn)(SELECT_REFS, ())]

    def load_all(self, on_unreadable: OnUnreadable | None = None) -> Iterator[ItemState]:
        """Every item's committed state, sorted by ref, from one snapshot (a read-only
        ``REPEATABLE READ`` transaction on its own connection, rows streamed through
        server-side cursors), so the caller may write through the store while iterating.
        An item that cannot be read goes to ``on_unreadable`` (see ``Store.load_all``)."""
        self._for_this_process()
        with _store_errors(self.where), self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            names = itertools.count()

            def stream(sql: str, params: tuple[Any, ...]) -> Any:
                cursor = conn.cursor(name=f"load_all_{next(names)}")
                cursor.itersize = 500
                cursor.execute(to_pg(sql), params)
                return cursor

            yield from stream_states(stream, on_unreadable)

    def events(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        """The item's event log, oldest first: ``[{seq, at, kind, data}]``."""
        with self._read() as conn:
            rows = _query(conn)(SELECT_EVENTS, (str(ref),))
        return [{"seq": s, "at": a, "kind": k, "data": json.loads(d)} for s, a, k, d in rows]

    # -- what /metrics reads (DatabaseStore) ---------------------------------------------
    def item_counts(self) -> list[tuple[str, str, int]]:
        """``(current node, status, count)`` of the work items, sorted."""
        with self._read() as conn:
            return item_counts(_query(conn))

    def open_waits(self) -> list[tuple[str, str]]:
        """``(node, entered_at)`` of every item neither complete nor escalated."""
        with self._read() as conn:
            return open_waits(_query(conn))

    def event_counts(self, kinds: Sequence[str]) -> dict[tuple[str, str], int]:
        """``{(kind, node): count}`` of the logged events of ``kinds`` (the data's node
        read as jsonb: SQLite's ``json_extract`` is not PostgreSQL's)."""
        with self._read() as conn:
            return event_counts(_query(conn), kinds, "(data::jsonb ->> 'node')")

    # -- what serve's self-audit reads (DatabaseStore) -----------------------------------
    def active_items(self) -> list[WorkItemRef]:
        """The work items still walking (``running`` or ``parked``), sorted."""
        with self._read() as conn:
            return active_items(_query(conn))

    # -- kv (bridges) ------------------------------------------------------------------
    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``(namespace, key)``, or ``default``."""
        with self._read() as conn:
            rows = list(_query(conn)(KV_GET, (namespace, key)))
        return default if not rows else json.loads(rows[0][0])

    def kv_set(self, namespace: str, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``(namespace, key)`` (joins an open transaction)."""
        text = json_text(value)
        with self._write() as conn:
            conn.execute(to_pg(KV_SET), (namespace, key, text, utc_now_iso()))

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``(namespace, key)``; absent is not an error."""
        with self._write() as conn:
            conn.execute(to_pg(KV_DELETE), (namespace, key))

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """Every ``key -> value`` of ``namespace``, sorted by key."""
        with self._read() as conn:
            rows = _query(conn)(KV_ITEMS, (namespace,))
        return {k: json.loads(v) for k, v in rows}


def _query(conn: psycopg.Connection) -> Query:
    return lambda sql, params: conn.execute(to_pg(sql), params).fetchall()


def _lock_item(conn: psycopg.Connection, item: str) -> None:
    # The row exists once the item was ever written; a first writer inserts it (a
    # concurrent first writer waits on the uncommitted insert), then both lock it.
    conn.execute("INSERT INTO item_locks (item) VALUES (%s) ON CONFLICT DO NOTHING", (item,))
    conn.execute("SELECT item FROM item_locks WHERE item = %s FOR UPDATE", (item,))


def _commit(conn: psycopg.Connection, tx: StoreTransaction) -> None:
    with conn.cursor() as cursor:
        for sql, rows in write_statements(tx):
            cursor.executemany(to_pg(sql), rows)
        if tx.effects:
            cursor.executemany(to_pg(INSERT_ROW),
                               effect_row_values(tx.ref, tx.effects, utc_now_iso()))
        if tx.finished:
            cursor.executemany(to_pg(FINISH_ROW), finish_values(tx.finished))


def _reason(exc: BaseException) -> str:
    """A psycopg error's first line (libpq's messages carry no password)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextmanager
def _store_errors(where: str) -> Iterator[None]:
    """psycopg's lock, deadlock and connection failures as :class:`StoreError`."""
    try:
        yield
    except pg_errors.LockNotAvailable:
        raise StoreError(f"{where}: an item stayed locked past lock_timeout") from None
    except pg_errors.DeadlockDetected:
        raise StoreError(f"{where}: deadlock broken by the server; nothing written") from None
    except psycopg.OperationalError as exc:
        raise StoreError(f"{where}: {_reason(exc)}") from None

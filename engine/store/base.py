"""The Store protocol: persistence of work item state and the event log.

Two implementations share one conformance suite (``tests/engine/test_store_conformance.py``):
:class:`engine.store.memory.MemoryStore` and :class:`engine.store.sqlite.SqliteStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from engine.effects import Effect
from engine.errors import UnreadableItemError
from engine.refs import WorkItemRef
from engine.state import ItemState
from engine.store.effect_queue import EffectQueue

if TYPE_CHECKING:  # rows imports this module
    from engine.store.rows import Span

__all__ = ["Transaction", "Store", "SqlSession", "SqlTables", "StoreCapabilities",
           "DatabaseStore", "EVENT_KINDS", "OnUnreadable", "SpannedStore"]

#: ``on_unreadable(stored key, error)``: what :meth:`Store.load_all` tells of a stored item
#: it cannot read, and then passes over.
OnUnreadable = Callable[[str, UnreadableItemError], None]

#: Event kinds the runtime and hooks append (bridges add ``quiz_*``/``slack.*`` kinds).
EVENT_KINDS = (
    "graph.started",
    "graph.advanced",
    "graph.parked",
    "graph.blocked",
    "graph.escalated",
    "graph.no_edge",
    "graph.completed",
    "graph.forced",
    "graph.node_skipped",
    "graph.skips_declared",
    "graph.opt_ins_selected",
    "graph.skips_rejected",
    "graph.hook_degraded",
    "graph.quiz_refused",
    "graph.quiz_unverified",
    "graph.quiz_attested",
    "graph.node_entered",
    "graph.effect_failed",
    "graph.decided",
)


class Transaction(Protocol):
    """One write transaction on one work item (``BEGIN IMMEDIATE`` in SQLite).

    Attributes:
        state: the item's working copy, or None when the item was never started.
    """

    state: ItemState | None

    def create(self, loop: str) -> ItemState:
        """Create the item's state (pointer empty) and return it; the caller fills it."""
        ...

    def log(self, kind: str, data: Mapping[str, Any]) -> None:
        """Append ``{kind, data, at}`` to the item's event log (committed with the state)."""
        ...

    def enqueue(self, key: str, effect: Effect) -> None:
        """Store ``effect`` in the outbox under the unique ``key`` (committed with the
        state, issue 10 §1)."""
        ...

    def finish_effect(self, row_id: int, result: Mapping[str, Any], *,
                      error: str = "") -> None:
        """Finish outbox row ``row_id`` with ``result`` (committed with the state): done,
        or failed for good when ``error`` says why."""
        ...


class Store(Protocol):
    """Work item state, event log and effect outbox persistence.

    Attributes:
        effects: the outbox (:class:`~engine.store.effect_queue.EffectQueue`).
    """

    @property
    def effects(self) -> EffectQueue:
        """The outbox (read-only here, so a store may hold a narrower queue type)."""
        ...

    @property
    def capabilities(self) -> StoreCapabilities:
        """What the backend offers (:class:`StoreCapabilities`, fixed for the store's
        life): callers choosing the inbox, bridge state or a lock read it, never probe."""
        ...

    def transaction(self, ref: WorkItemRef) -> AbstractContextManager[Transaction]:
        """Open a write transaction on ``ref``.

        On normal exit the state (if any) and logged events are committed atomically; on
        an exception nothing is written and the exception propagates. Concurrent
        transactions on the same store (threads or processes) are serialized, so no
        update is lost.

        Raises:
            StoreError: the database stayed locked past the retry bound.
        """
        ...

    def load(self, ref: WorkItemRef) -> ItemState | None:
        """A copy of the item's committed state, or None.

        Raises:
            UnreadableItemError: the stored item cannot be read (see :meth:`load_all`).
        """
        ...

    def refs(self) -> list[WorkItemRef]:
        """Every started work item, sorted."""
        ...

    def load_all(self, on_unreadable: OnUnreadable | None = None) -> Iterator[ItemState]:
        """Every item's committed state (sorted by ref), read efficiently in bulk.

        Args:
            on_unreadable: told of each stored item that cannot be read (its key is not a
                work item reference, or a column or child row is not JSON or JSON of the
                wrong shape; the error names the part), which is then passed over: the
                items after it are read as usual. None: such an item raises.

        Raises:
            UnreadableItemError: an item cannot be read and no ``on_unreadable`` is given.
        """
        ...

    def events(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        """The item's event log, oldest first: ``[{seq, at, kind, data}]``."""
        ...


@runtime_checkable
class SqlSession(Protocol):
    """One statement at a time on a store's database, in SQL both backends run (``?``
    placeholders; ``INSERT``/``UPDATE``/``DELETE``/``SELECT``; ``ON CONFLICT … DO
    UPDATE``). The bot's Slack tables (outbox, threads, messages, links, codes) are kept
    through it, so one set of statements serves SQLite and PostgreSQL (issue 15 §1)."""

    def execute(self, sql: str, params: Any = ()) -> Any:
        """Run ``sql``; the result offers ``fetchone()``, ``fetchall()``, iteration and
        ``rowcount``. Inside the thread's open write scope it joins that transaction."""
        ...

    @property
    def conn(self) -> Any:
        """The connection under the session (``execute``, ``executemany``): sqlite3's on
        SQLite, the session itself on PostgreSQL (so ``db.conn.execute`` runs on both)."""
        ...


@runtime_checkable
class SqlTables(Protocol):
    """A store whose database also keeps other rooms' tables (SqliteStore, PostgresStore).

    Attributes:
        backend: ``"sqlite"`` or ``"postgresql"`` (for the one statement that differs).
    """

    backend: str

    def db(self) -> SqlSession:
        """The calling thread's session (inside a write scope: that scope's)."""
        ...

    def writing(self) -> AbstractContextManager[SqlSession]:
        """A write scope: joins the thread's open transaction, else one transaction
        committed on normal exit and rolled back on an exception."""
        ...


@dataclass(frozen=True)
class StoreCapabilities:
    """What a store's backend offers, declared by the backend itself (issue 20 §2: callers
    read this record and never probe a store with ``getattr``, as LangGraph's savers
    declare what they support).

    Attributes:
        backend: ``"memory"``, ``"sqlite"`` or ``"postgresql"``.
        shared: several processes (replicas, issue 15 §3) share the database, so
            :meth:`DatabaseStore.exclusive` serializes across them and rate guards, write
            budgets, the inbox and bridge state are kept in it.
        path: the SQLite file the store lives in (the webhook inbox sits beside it), or
            None when there is no file.
    """

    backend: str
    shared: bool = False
    path: Path | None = None


class DatabaseStore(Store, SqlTables, Protocol):
    """A store over a database, as the application opens it (``bot.database.open_store``:
    :class:`~engine.store.sqlite.SqliteStore` or ``bridges.postgres.store.PostgresStore``):
    state and outbox (:class:`Store`), other rooms' tables (:class:`SqlTables`), a kv
    namespace, named exclusion and closing, with its :class:`StoreCapabilities`.
    """

    @property
    def capabilities(self) -> StoreCapabilities:
        """What this backend offers (fixed for the store's life)."""
        ...

    def exclusive(self, name: str) -> AbstractContextManager[None]:
        """Hold ``name`` for the block: one holder at a time across the processes sharing
        the database (nothing to hold where ``capabilities.shared`` is False)."""
        ...

    def close(self) -> None:
        """Close the store's connections (the store is not used after)."""
        ...

    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``(namespace, key)``, or ``default``."""
        ...

    def kv_set(self, namespace: str, key: str, value: Any) -> None:
        """Store the JSON-serialisable ``value`` under ``(namespace, key)``."""
        ...

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``(namespace, key)`` (nothing when absent)."""
        ...

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """Every ``key: value`` of ``namespace``."""
        ...

    def item_counts(self) -> list[tuple[str, str, int]]:
        """``(current node, status, count)`` of the work items, sorted (``/metrics``)."""
        ...

    def open_waits(self) -> list[tuple[str, str]]:
        """``(node, entered_at)`` of every item neither complete nor escalated."""
        ...

    def event_counts(self, kinds: Sequence[str]) -> dict[tuple[str, str], int]:
        """``{(kind, node): count}`` of the logged events of ``kinds`` (``node``: the
        event data's, "" without one)."""
        ...

    def active_items(self) -> list[WorkItemRef]:
        """The work items still walking (``running`` or ``parked``), sorted by owner,
        repository and number (serve's self-audit, issue 22 §3)."""
        ...


@runtime_checkable
class SpannedStore(Protocol):
    """A store whose items can be read in runs apart (SQLite's: ``check --all``'s workers
    read one run each, :mod:`bot.cli.check_cmd`). ``Span`` is
    :data:`engine.store.rows.Span`."""

    def item_total(self) -> int:
        """How many work items are stored."""
        ...

    def spans(self, size: int) -> list[Span]:
        """The items cut into runs of ``size`` in :meth:`load_all`'s order."""
        ...

    def load_all(self, on_unreadable: OnUnreadable | None = None,
                 span: Span = ...) -> Iterator[ItemState]:
        """Every item's state in ``span`` (default: every item), as ``Store.load_all``."""
        ...

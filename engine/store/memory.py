"""An in-memory :class:`~engine.store.base.Store` (tests, dry runs).

It keeps each item as its JSON document, exactly as the SQLite store does, so both pass
one conformance suite. Transactions are serialized by one re-entrant lock: threads never
lose an update, and a failed transaction leaves no trace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from engine.effects import Effect
from engine.errors import StoreError
from engine.refs import WorkItemRef
from engine.state import ItemState
from engine.store.base import OnUnreadable, StoreCapabilities
from engine.store.effect_queue import MemoryEffectQueue

__all__ = ["MemoryStore", "StoreTransaction", "utc_now_iso"]


def utc_now_iso() -> str:
    """The wall clock as ISO-8601 UTC with seconds precision (``...Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_text(value: Any) -> str:
    """Serialize JSON-shaped ``value`` compactly.

    Raises:
        StoreError: the value holds something that is not JSON (the store keeps JSON only).
    """
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"state is not JSON-serializable: {exc}") from None


class StoreTransaction:
    """One write transaction on one work item (see :class:`engine.store.base.Transaction`).

    Attributes:
        ref: the work item.
        state: the working copy, or None when the item was never created.
        events: ``(kind, data, at)`` appended during the transaction, committed with it.
        effects: ``(key, effect)`` emitted during the transaction, stored with it.
        finished: ``(row id, result)`` of effects carried out, marked done with it.
    """

    def __init__(self, ref: WorkItemRef, state: ItemState | None) -> None:
        self.ref = ref
        self.state = state
        self.events: list[tuple[str, dict[str, Any], str]] = []
        self.effects: list[tuple[str, Effect]] = []
        self.finished: list[tuple[int, dict[str, Any], str]] = []

    def create(self, loop: str) -> ItemState:
        """Create the item's state (pointer empty) and return it.

        Args:
            loop: the graph name the item walks.

        Raises:
            StoreError: the item already has state.
        """
        if self.state is not None:
            raise StoreError(f"{self.ref} already has state")
        self.state = ItemState(ref=self.ref, loop=loop)
        return self.state

    def log(self, kind: str, data: Mapping[str, Any], at: str | None = None) -> None:
        """Append an event, committed with the state.

        Args:
            kind: the event kind (``graph.advanced`` ...).
            data: JSON-shaped details.
            at: ISO-8601 UTC time (default: the wall clock now).
        """
        payload = dict(data)
        json_text(payload)  # refuse non-JSON now, not at commit, so the caller sees where
        self.events.append((kind, payload, at or utc_now_iso()))

    def enqueue(self, key: str, effect: Effect) -> None:
        """Store ``effect`` under the unique ``key``, committed with the state (issue 10:
        the intent and the state change commit together or not at all)."""
        self.effects.append((key, effect))

    def finish_effect(self, row_id: int, result: Mapping[str, Any], *,
                      error: str = "") -> None:
        """Finish effect row ``row_id`` with ``result`` (JSON), committed with the state
        change that records it: done, or failed for good when ``error`` says why."""
        payload = dict(result)
        json_text(payload)
        self.finished.append((row_id, payload, error))


class MemoryStore:
    """Work item state and event log held in process memory."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._docs: dict[WorkItemRef, tuple[str, int]] = {}
        self._events: dict[WorkItemRef, list[dict[str, Any]]] = {}
        self._seq = 0
        self._open = threading.local()
        self._kv: dict[tuple[str, str], str] = {}
        #: The outbox of effects (:class:`~engine.store.effect_queue.EffectQueue`).
        self.effects = MemoryEffectQueue(self._lock)

    @contextmanager
    def transaction(self, ref: WorkItemRef) -> Iterator[StoreTransaction]:
        """Open a write transaction on ``ref`` (see :meth:`engine.store.base.Store.transaction`).

        Raises:
            StoreError: a transaction on the same item is already open in this thread.
        """
        with self._lock:
            open_refs: set[WorkItemRef] = self._open.__dict__.setdefault("refs", set())
            if ref in open_refs:
                raise StoreError(f"a transaction on {ref} is already open in this thread")
            open_refs.add(ref)
            try:
                tx = StoreTransaction(ref, self._load_locked(ref))
                yield tx
                self._commit_locked(tx)
            finally:
                open_refs.discard(ref)

    def _load_locked(self, ref: WorkItemRef) -> ItemState | None:
        stored = self._docs.get(ref)
        if stored is None:
            return None
        state = ItemState.from_document(json.loads(stored[0]))
        state.revision = stored[1]
        return state

    def _commit_locked(self, tx: StoreTransaction) -> None:
        if tx.state is not None:
            text = json_text(tx.state.to_document())
            revision = tx.state.revision + 1
            self._docs[tx.ref] = (text, revision)
            tx.state.revision = revision
        log = self._events.setdefault(tx.ref, [])
        for kind, data, at in tx.events:
            self._seq += 1
            copy = json.loads(json_text(data))
            log.append({"seq": self._seq, "at": at, "kind": kind, "data": copy})
        self.effects.insert(tx.ref, tx.effects, utc_now_iso())
        for row_id, result, error in tx.finished:
            self.effects.finish(row_id, result, error)

    def load(self, ref: WorkItemRef) -> ItemState | None:
        """A copy of the item's committed state, or None."""
        with self._lock:
            return self._load_locked(ref)

    def refs(self) -> list[WorkItemRef]:
        """Every stored work item, sorted."""
        with self._lock:
            return sorted(self._docs)

    def load_all(self, on_unreadable: OnUnreadable | None = None) -> Iterator[ItemState]:
        """Every item's committed state, sorted by ref (a snapshot taken under the lock).
        ``on_unreadable`` is never called: the states are kept as the documents this store
        wrote itself, each of which reads."""
        with self._lock:
            states = [self._load_locked(ref) for ref in sorted(self._docs)]
        yield from (s for s in states if s is not None)

    def events(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        """The item's event log, oldest first: ``[{seq, at, kind, data}]``."""
        with self._lock:
            return [json.loads(json.dumps(e)) for e in self._events.get(ref, [])]

    # -- kv (bridges) ------------------------------------------------------------------
    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The JSON value stored under ``(namespace, key)``, or ``default``."""
        with self._lock:
            text = self._kv.get((namespace, key))
        return default if text is None else json.loads(text)

    def kv_set(self, namespace: str, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``(namespace, key)``."""
        text = json_text(value)
        with self._lock:
            self._kv[(namespace, key)] = text

    def kv_delete(self, namespace: str, key: str) -> None:
        """Remove ``(namespace, key)``; absent is not an error."""
        with self._lock:
            self._kv.pop((namespace, key), None)

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """Every ``key -> value`` of ``namespace``, sorted by key."""
        with self._lock:
            found = sorted((k, v) for (ns, k), v in self._kv.items() if ns == namespace)
        return {k: json.loads(v) for k, v in found}

    def close(self) -> None:
        """Nothing to release (kept for symmetry with :class:`SqliteStore`)."""
        return None

    @property
    def capabilities(self) -> StoreCapabilities:
        """Memory of this process only: no file, no SQL tables, not shared (issue 20 §2)."""
        return StoreCapabilities("memory")

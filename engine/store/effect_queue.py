"""The effect queue: the durable outbox of effects committed with item transactions
(issue 10 §1). A protocol, and the in-memory implementation; the SQLite one is
:class:`engine.store.sqlite_effects.SqliteEffectQueue`. One conformance suite runs against
both (``tests/engine/test_effect_queue.py``).

Rows are written by :meth:`Transaction.enqueue` (with the state change that emitted them)
and finished by :meth:`Transaction.finish_effect` (with the state change that records their
result); everything in between — claiming, deferring after a failure, giving up — is one
short statement here, never inside an item transaction.

Per-item order: :meth:`EffectQueue.due` hands out a row only when no earlier unfinished
row of the same item exists, so an item's effects happen in the order they were emitted,
while other items' rows go on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Protocol

from engine.effects import DONE, FAILED, PENDING, RUNNING, Effect, EffectRow
from engine.refs import WorkItemRef

__all__ = ["EffectQueue", "MemoryEffectQueue", "UNFINISHED"]

#: Statuses that hold back the item's later rows.
UNFINISHED = (PENDING, RUNNING)


class EffectQueue(Protocol):
    """What performers and operators do with stored effects. Times are ISO-8601 UTC
    strings (``...Z``), which order as text."""

    def due(self, now: str, limit: int = 50, ref: WorkItemRef | None = None
            ) -> list[EffectRow]:
        """Rows a performer may take now, oldest first: pending (``not_before`` reached)
        or running with an expired claim (a performer died), and first of their item."""
        ...

    def claim(self, row_id: int, owner: str, until: str, now: str) -> bool:
        """Take ``row_id`` for ``owner`` until ``until``; False when someone else holds a
        live claim or the row is finished."""
        ...

    def defer(self, row_id: int, not_before: str, error: str, *, count: bool = True) -> None:
        """A transient failure: back to pending, not before ``not_before``; keeps ``error``
        for people and counts an attempt unless ``count`` is False (a rate limit: nothing
        was sent, and waiting it out must never use up the row's tries)."""
        ...

    def fail(self, row_id: int, error: str) -> None:
        """A permanent failure: status failed (no more tries until :meth:`retry`)."""
        ...

    def rows(self, ref: WorkItemRef | None = None, statuses: Iterable[str] = ()
             ) -> list[EffectRow]:
        """Stored rows (of ``ref``, with one of ``statuses``), oldest first."""
        ...

    def retry(self, ref: WorkItemRef | None = None) -> int:
        """Re-queue failed rows (of ``ref``); returns how many."""
        ...

    def claims(self) -> list[tuple[int, str]]:
        """``(row id, owner)`` of every claimed (running) row, oldest first: a performer
        that starts frees those of performers it knows are dead."""
        ...


class MemoryEffectQueue:
    """:class:`EffectQueue` in process memory (the :class:`MemoryStore`'s)."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._rows: dict[int, EffectRow] = {}
        self._claims: dict[int, tuple[str, str]] = {}
        self._next = 0

    # -- called by the store's commit, under its lock -----------------------------------
    def insert(self, ref: WorkItemRef, entries: Iterable[tuple[str, Effect]], at: str) -> None:
        """Store ``(key, effect)`` pairs emitted by ``ref``'s transaction."""
        for key, effect in entries:
            self._next += 1
            self._rows[self._next] = EffectRow(self._next, key, ref, effect, created_at=at)

    def finish(self, row_id: int, result: dict[str, Any], error: str = "") -> None:
        """Mark ``row_id`` done with ``result``, or failed for good when ``error`` is set."""
        row = self._rows.get(row_id)
        if row is not None:
            finished = (replace(row, status=FAILED, attempts=row.attempts + 1,
                                last_error=error, result=dict(result)) if error
                        else replace(row, status=DONE, result=dict(result)))
            self._rows[row_id] = finished
            self._claims.pop(row_id, None)

    # -- EffectQueue ---------------------------------------------------------------------
    def due(self, now: str, limit: int = 50, ref: WorkItemRef | None = None
            ) -> list[EffectRow]:
        """See :meth:`EffectQueue.due`."""
        out: list[EffectRow] = []
        blocked: set[WorkItemRef] = set()
        with self._lock:
            for row in sorted(self._rows.values(), key=lambda r: r.id):
                if row.status not in UNFINISHED or row.ref in blocked:
                    continue
                blocked.add(row.ref)
                if (ref is None or row.ref == ref) and self._takeable(row, now):
                    out.append(row)
                if len(out) >= limit:
                    break
        return out

    def _takeable(self, row: EffectRow, now: str) -> bool:
        if row.status == RUNNING:
            return self._claims.get(row.id, ("", ""))[1] < now
        return row.not_before <= now

    def claim(self, row_id: int, owner: str, until: str, now: str) -> bool:
        """See :meth:`EffectQueue.claim`."""
        with self._lock:
            row = self._rows.get(row_id)
            if row is None or row.status not in UNFINISHED or not self._takeable(row, now):
                return False
            self._rows[row_id] = replace(row, status=RUNNING)
            self._claims[row_id] = (owner, until)
            return True

    def defer(self, row_id: int, not_before: str, error: str, *, count: bool = True) -> None:
        """See :meth:`EffectQueue.defer`."""
        with self._lock:
            row = self._rows[row_id]
            self._rows[row_id] = replace(row, status=PENDING,
                                         attempts=row.attempts + (1 if count else 0),
                                         not_before=not_before, last_error=error)
            self._claims.pop(row_id, None)

    def fail(self, row_id: int, error: str) -> None:
        """See :meth:`EffectQueue.fail`."""
        with self._lock:
            row = self._rows[row_id]
            self._rows[row_id] = replace(row, status=FAILED, attempts=row.attempts + 1,
                                         last_error=error)
            self._claims.pop(row_id, None)

    def rows(self, ref: WorkItemRef | None = None, statuses: Iterable[str] = ()
             ) -> list[EffectRow]:
        """See :meth:`EffectQueue.rows`."""
        wanted = set(statuses)
        with self._lock:
            return [r for _, r in sorted(self._rows.items())
                    if (ref is None or r.ref == ref) and (not wanted or r.status in wanted)]

    def claims(self) -> list[tuple[int, str]]:
        """See :meth:`EffectQueue.claims`."""
        with self._lock:
            return [(row_id, owner) for row_id, (owner, _) in sorted(self._claims.items())
                    if self._rows[row_id].status == RUNNING]

    def retry(self, ref: WorkItemRef | None = None) -> int:
        """See :meth:`EffectQueue.retry`."""
        with self._lock:
            failed = [r for r in self._rows.values()
                      if r.status == FAILED and (ref is None or r.ref == ref)]
            for row in failed:
                self._rows[row.id] = replace(row, status=PENDING, attempts=0, not_before="")
            return len(failed)

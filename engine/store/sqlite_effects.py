"""The effect queue in SQLite (the ``effects`` table of migration ``0005_effects``).

Rows are inserted and finished by :class:`~engine.store.sqlite.SqliteStore`'s item
transactions (:func:`insert_rows`, :func:`finish_rows`); claiming, deferring and failing
are one short ``UPDATE`` each (see :mod:`engine.store.effect_queue`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from engine.effects import (
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    Effect,
    EffectRow,
    effect_from_json,
    effect_to_json,
)
from engine.refs import WorkItemRef

__all__ = ["SqlEffectQueue", "SqliteEffectQueue", "insert_rows", "finish_rows", "INSERT_ROW",
           "FINISH_ROW", "effect_row_values", "finish_values"]

_COLUMNS = "id, key, item, data, status, attempts, not_before, last_error, result, created_at"
# An unfinished row blocks its item's later rows, so an item's effects keep their order.
_DUE = f"""
SELECT {_COLUMNS} FROM effects e
WHERE ((e.status = '{PENDING}' AND e.not_before <= :now)
       OR (e.status = '{RUNNING}' AND e.claimed_until < :now))
  AND NOT EXISTS (SELECT 1 FROM effects p WHERE p.item = e.item AND p.id < e.id
                  AND p.status IN ('{PENDING}', '{RUNNING}'))
  {{extra}}
ORDER BY e.id LIMIT :limit
"""


INSERT_ROW = ("INSERT INTO effects (key, item, kind, data, status, created_at) "
              "VALUES (?,?,?,?,?,?)")
FINISH_ROW = ("UPDATE effects SET status = ?, result = ?, last_error = ?, "
              "attempts = attempts + ?, claimed_by = '', claimed_until = '' WHERE id = ?")
_CLAIMABLE = (f"((status = '{PENDING}' AND not_before <= :now) "
              f"OR (status = '{RUNNING}' AND claimed_until < :now))")


def effect_row_values(ref: WorkItemRef, entries: Iterable[tuple[str, Effect]],
                      at: str) -> list[tuple[Any, ...]]:
    """:data:`INSERT_ROW` parameters for ``(key, effect)`` pairs of ``ref``."""
    return [(key, str(ref), e.kind, json.dumps(effect_to_json(e)), PENDING, at)
            for key, e in entries]


def finish_values(finished: Iterable[tuple[int, dict[str, Any], str]]
                  ) -> list[tuple[Any, ...]]:
    """:data:`FINISH_ROW` parameters for ``(row id, result, error)`` triples."""
    return [(FAILED if error else DONE, json.dumps(result), error, 1 if error else 0, row_id)
            for row_id, result, error in finished]


def insert_rows(conn: sqlite3.Connection, ref: WorkItemRef,
                entries: Iterable[tuple[str, Effect]], at: str) -> None:
    """Insert ``(key, effect)`` rows for ``ref`` (inside the item's transaction)."""
    conn.executemany(INSERT_ROW, effect_row_values(ref, entries, at))


def finish_rows(conn: sqlite3.Connection,
                finished: Iterable[tuple[int, dict[str, Any], str]]) -> None:
    """Mark rows done with their results, or failed for good where an error is given
    (inside the recording item transaction)."""
    conn.executemany(FINISH_ROW, finish_values(finished))


def _row(values: tuple[Any, ...]) -> EffectRow:
    row_id, key, item, data, status, attempts, not_before, error, result, created = values
    return EffectRow(
        id=int(row_id), key=str(key), ref=WorkItemRef.parse(str(item)),
        effect=effect_from_json(json.loads(data)), status=str(status),
        attempts=int(attempts or 0), not_before=str(not_before or ""),
        last_error=str(error or ""), result=json.loads(result or "{}"),
        created_at=str(created or ""),
    )


class SqlEffectQueue:
    """:class:`~engine.store.effect_queue.EffectQueue` in SQL, one statement per call.

    Statements use ``?`` and ``:name`` placeholders; a subclass runs them on its driver
    (:meth:`_fetch`, :meth:`_change`) and may sharpen :meth:`claim`.
    """

    def _fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _change(self, sql: str, params: Any) -> int:
        raise NotImplementedError

    def _select(self, sql: str, params: dict[str, Any]) -> list[EffectRow]:
        return [_row(values) for values in self._fetch(sql, params)]

    def _update(self, sql: str, params: Any) -> int:
        return self._change(sql, params)

    def due(self, now: str, limit: int = 50, ref: WorkItemRef | None = None
            ) -> list[EffectRow]:
        """See :meth:`~engine.store.effect_queue.EffectQueue.due`."""
        extra = "AND e.item = :item" if ref is not None else ""
        return self._select(_DUE.format(extra=extra),
                            {"now": now, "limit": limit, "item": str(ref) if ref else ""})

    def claim(self, row_id: int, owner: str, until: str, now: str) -> bool:
        """See :meth:`~engine.store.effect_queue.EffectQueue.claim`."""
        return self._update(
            f"UPDATE effects SET status = '{RUNNING}', claimed_by = :owner, "
            f"claimed_until = :until WHERE id = :id AND {_CLAIMABLE}",
            {"owner": owner, "until": until, "id": row_id, "now": now}) == 1

    def defer(self, row_id: int, not_before: str, error: str, *, count: bool = True) -> None:
        """See :meth:`~engine.store.effect_queue.EffectQueue.defer`."""
        self._update(
            f"UPDATE effects SET status = '{PENDING}', attempts = attempts + ?, "
            "not_before = ?, last_error = ?, claimed_by = '', claimed_until = '' WHERE id = ?",
            (1 if count else 0, not_before, error, row_id))

    def fail(self, row_id: int, error: str) -> None:
        """See :meth:`~engine.store.effect_queue.EffectQueue.fail`."""
        self._update(
            f"UPDATE effects SET status = '{FAILED}', attempts = attempts + 1, "
            "last_error = ?, claimed_by = '', claimed_until = '' WHERE id = ?",
            (error, row_id))

    def rows(self, ref: WorkItemRef | None = None, statuses: Iterable[str] = ()
             ) -> list[EffectRow]:
        """See :meth:`~engine.store.effect_queue.EffectQueue.rows`."""
        wanted = list(statuses)
        where, params = [], {}
        if ref is not None:
            where.append("item = :item")
            params["item"] = str(ref)
        if wanted:
            names = ", ".join(f":s{i}" for i in range(len(wanted)))
            where.append(f"status IN ({names})")
            params.update({f"s{i}": s for i, s in enumerate(wanted)})
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return self._select(f"SELECT {_COLUMNS} FROM effects {clause} ORDER BY id", params)

    def claims(self) -> list[tuple[int, str]]:
        """See :meth:`~engine.store.effect_queue.EffectQueue.claims`."""
        rows = self._fetch(
            f"SELECT id, claimed_by FROM effects WHERE status = '{RUNNING}' ORDER BY id", ())
        return [(int(row_id), str(owner or "")) for row_id, owner in rows]

    def retry(self, ref: WorkItemRef | None = None) -> int:
        """See :meth:`~engine.store.effect_queue.EffectQueue.retry`."""
        if ref is None:
            return self._update(f"UPDATE effects SET status = '{PENDING}', attempts = 0, "
                                f"not_before = '' WHERE status = '{FAILED}'", ())
        return self._update(f"UPDATE effects SET status = '{PENDING}', attempts = 0, "
                            f"not_before = '' WHERE status = '{FAILED}' AND item = ?",
                            (str(ref),))


class SqliteEffectQueue(SqlEffectQueue):
    """:class:`~engine.store.effect_queue.EffectQueue` over the SQLite store's connection.

    Args:
        conn: returns the calling thread's connection (for reads).
        writing: opens a short write scope (``BEGIN IMMEDIATE``) and yields a
            ``sqlite_utils.Database``.
    """

    def __init__(self, conn: Callable[[], sqlite3.Connection],
                 writing: Callable[[], AbstractContextManager[Any]]) -> None:
        self._conn = conn
        self._writing = writing

    def _fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        return self._conn().execute(sql, params).fetchall()

    def _change(self, sql: str, params: Any) -> int:
        with self._writing() as db:
            changed: int = db.conn.execute(sql, params).rowcount
            return changed

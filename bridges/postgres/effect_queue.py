"""The effect queue in PostgreSQL (the ``effects`` table of migration ``0005_effects``).

The statements are the engine's (:class:`~engine.store.sqlite_effects.SqlEffectQueue`);
a claim is sharpened with ``FOR UPDATE SKIP LOCKED`` (issue 15 §3): two replicas reaching
for one row never wait on each other — the one that finds it locked moves on, the one
holding it takes it, and the conditional update keeps the claim exactly-once.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from bridges.postgres.sql import to_pg
from engine.effects import PENDING, RUNNING
from engine.store.sqlite_effects import SqlEffectQueue

__all__ = ["PostgresEffectQueue"]

Scope = Callable[[], AbstractContextManager[psycopg.Connection]]

_CLAIM = f"""
UPDATE effects SET status = '{RUNNING}', claimed_by = :owner, claimed_until = :until
WHERE id = (SELECT id FROM effects WHERE id = :id
            AND ((status = '{PENDING}' AND not_before <= :now)
                 OR (status = '{RUNNING}' AND claimed_until < :now))
            FOR UPDATE SKIP LOCKED)
"""


class PostgresEffectQueue(SqlEffectQueue):
    """:class:`~engine.store.effect_queue.EffectQueue` on the PostgreSQL store.

    Args:
        read: opens a read scope yielding a connection.
        write: opens a write scope (a transaction, or a savepoint in the thread's open one).
    """

    def __init__(self, read: Scope, write: Scope) -> None:
        self._read = read
        self._write = write

    def _fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        with self._read() as conn:
            return conn.execute(to_pg(sql), params).fetchall()

    def _change(self, sql: str, params: Any) -> int:
        with self._write() as conn:
            return conn.execute(to_pg(sql), params).rowcount

    def claim(self, row_id: int, owner: str, until: str, now: str) -> bool:
        """See :meth:`~engine.store.effect_queue.EffectQueue.claim` (``SKIP LOCKED``: a row
        another replica is claiming or finishing right now is not waited for)."""
        return self._change(_CLAIM, {"owner": owner, "until": until, "id": row_id,
                                     "now": now}) == 1

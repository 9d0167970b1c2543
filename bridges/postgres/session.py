"""A portable-SQL session on the PostgreSQL store: what ``SqliteStore.db()`` offers the bot's
Slack tables (``execute(sql, params)`` with ``?`` placeholders), run on PostgreSQL.

The Slack outbox, threads, messages, links and codes are written in SQL both engines run
(plain ``INSERT``/``UPDATE``/``DELETE``/``SELECT`` and ``ON CONFLICT … DO UPDATE``), so one
set of statements serves both backends; only the schema differs (:mod:`.migrate`). A
session inside a write scope runs on that transaction's connection; outside one, each
statement runs on a pool connection and its rows are read before the connection goes back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from bridges.postgres.sql import to_pg

__all__ = ["PgSession", "Result"]

Scope = Callable[[], AbstractContextManager[psycopg.Connection]]


class Result:
    """A statement's outcome, read in full: ``fetchone``/``fetchall``/iteration and
    ``rowcount`` (as sqlite3's cursor offers them)."""

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        """The next row, or None."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        """The remaining rows."""
        rest, self._next = self._rows[self._next:], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class PgSession:
    """``execute``/``executemany`` with SQLite-style placeholders on the PostgreSQL store.

    Attributes:
        dialect: ``"postgresql"`` (a caller with one statement that differs asks this).
        conn: the session itself (code written for ``db.conn.execute`` runs unchanged).
    """

    dialect = "postgresql"

    def __init__(self, scope: Scope) -> None:
        self._scope = scope
        self.conn = self

    def execute(self, sql: str, params: Any = ()) -> Result:
        """Run one statement; its rows (if any) and rowcount come back read in full."""
        with self._scope() as conn:
            # Without parameters the text is sent as is (no placeholder to convert).
            cursor = conn.execute(to_pg(sql), params) if params else conn.execute(sql)
            rows = cursor.fetchall() if cursor.description else []
            return Result([tuple(r) for r in rows], cursor.rowcount)

    def executemany(self, sql: str, rows: Iterable[Any]) -> Result:
        """Run one statement for each parameter row."""
        with self._scope() as conn, conn.cursor() as cursor:
            cursor.executemany(to_pg(sql), list(rows))
            return Result([], cursor.rowcount)

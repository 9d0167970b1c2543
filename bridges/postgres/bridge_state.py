"""The GitHub bridge's state on PostgreSQL: :class:`bridges.ingress.bridge_state.BridgeState`
(poll cursors and ETags, seen keys, handled deliveries), shared by every replica.

Cursor and delivery statements are the SQLite state's own (:mod:`bridges.ingress.bridge_state`);
the caps keep the newest rows as SQLite's rowid order does, through the ``n`` column.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bridges.ingress.bridge_state import (
    DELIVERY_CAP,
    GET_CURSOR,
    IS_HANDLED,
    MARK_HANDLED,
    SEEN_CAP,
    SET_CURSOR,
    PollCursor,
)

if TYPE_CHECKING:  # the store hands this state out (PostgresStore.bridge_state)
    from bridges.postgres.store import PostgresStore

__all__ = ["PostgresBridgeState"]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PostgresBridgeState:
    """:class:`~bridges.ingress.bridge_state.BridgeState` in the PostgreSQL store.

    Args:
        store: a :class:`~bridges.postgres.store.PostgresStore` (its tables are migrated
            when it opens).
    """

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def exclusive(self, key: str) -> AbstractContextManager[None]:
        """Handle the delivery ``key`` names on one replica at a time (a PostgreSQL
        advisory lock on the key), so a delivery sent to two replicas, or seen by the
        poller of one and the webhook of another, is handled once: the second holder
        finds it recorded as handled."""
        return self.store.exclusive(f"delivery-key:{key}")

    def get_cursor(self, repo: str, stream: str) -> PollCursor:
        """The stored cursor of ``repo``/``stream`` (empty when never polled)."""
        row = self.store.db().execute(GET_CURSOR, (repo, stream)).fetchone()
        return PollCursor(*row) if row else PollCursor()

    def set_cursor(self, repo: str, stream: str, cursor: PollCursor) -> None:
        """Store the cursor of ``repo``/``stream``."""
        with self.store.writing() as db:
            db.execute(SET_CURSOR, (repo, stream, cursor.cursor, cursor.etag,
                                    cursor.etag_since, _now()))

    def seen(self, scope: str, kind: str, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are marked seen under ``scope``/``kind``."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return set()
        rows = self.store.db().execute(
            "SELECT key FROM github_seen WHERE scope = ? AND kind = ? AND key = ANY(?)",
            (scope, kind, wanted))
        return {r[0] for r in rows}

    def mark_seen(self, scope: str, kind: str, keys: Iterable[str], cap: int = SEEN_CAP) -> None:
        """Mark ``keys`` seen, then keep only the newest ``cap`` of ``scope``/``kind``."""
        rows = [(scope, kind, k, _now()) for k in dict.fromkeys(keys)]
        if not rows:
            return
        with self.store.writing() as db:
            db.executemany("INSERT INTO github_seen (scope, kind, key, at) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT DO NOTHING", rows)
            db.execute(
                "DELETE FROM github_seen WHERE scope = ? AND kind = ? AND n < "
                "(SELECT COALESCE(MIN(n), 0) FROM (SELECT n FROM github_seen WHERE scope = ? "
                "AND kind = ? ORDER BY n DESC LIMIT ?) newest)",
                (scope, kind, scope, kind, cap))

    def handled(self, key: str) -> bool:
        """True when a dispatcher (any replica) recorded ``key``."""
        row = self.store.db().execute(IS_HANDLED, (key,)).fetchone()
        return row is not None

    def mark_handled(self, key: str, status: str) -> None:
        """Record ``key`` with ``status``; the oldest beyond :data:`DELIVERY_CAP` go."""
        with self.store.writing() as db:
            db.execute(MARK_HANDLED, (key, status, _now()))
            db.execute("DELETE FROM github_deliveries WHERE n <= "
                       "(SELECT MAX(n) FROM github_deliveries) - ?", (DELIVERY_CAP,))

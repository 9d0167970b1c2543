"""The webhook inbox on PostgreSQL: :class:`bridges.ingress.inbox.WebhookInbox` shared by
every replica (issue 15 §3: deliveries are claimed exactly once).

A delivery is kept (one ``INSERT … ON CONFLICT DO NOTHING`` on its unique id) before the
receiving replica answers ``2xx``, and is leased to that replica while it handles it. The
replay (:meth:`PostgresInbox.owed`) leases the unhandled rows nobody holds with
``FOR UPDATE SKIP LOCKED``, so two replicas never replay the same delivery; a lease runs
out after :data:`LEASE_SECONDS`, after which a delivery whose replica died is replayed by
another one.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from bridges.ingress import inbox as inbox_module
from bridges.ingress.inbox import HANDLED, HELD, NEW, OWED, InboxEntry, InboxError

if TYPE_CHECKING:  # types only: the store imports this module (webhook_inbox)
    from bridges.postgres.store import PostgresStore

__all__ = ["PostgresInbox", "LEASE_SECONDS"]

#: How long a replica holds a delivery it took (the replay runs every 60 s).
LEASE_SECONDS = 60
#: Overrides :data:`LEASE_SECONDS` — test rigs only (a fault test need not wait a minute).
LEASE_ENV = "LOOPGATE_INBOX_LEASE_SECONDS"


def _lease_seconds() -> float:
    raw = os.environ.get(LEASE_ENV, "").strip()
    try:
        return max(1.0, float(raw)) if raw else float(LEASE_SECONDS)
    except ValueError:
        return float(LEASE_SECONDS)


def _at(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class PostgresInbox:
    """:class:`~bridges.ingress.inbox.WebhookInbox` in the PostgreSQL store.

    Args:
        store: a :class:`~bridges.postgres.store.PostgresStore`.
        owner: this replica's name in leases (default ``host:pid``).
    """

    def __init__(self, store: PostgresStore, owner: str | None = None) -> None:
        self.store = store
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}"

    def _lease(self) -> tuple[str, str]:
        now = datetime.now(UTC)
        return _at(now), _at(now + timedelta(seconds=_lease_seconds()))

    def put(self, delivery_id: str, event: str, body: bytes) -> str:
        """Keep the raw delivery, leased to this replica; a second put keeps the first.

        Returns:
            :data:`NEW`; :data:`OWED` (kept before, not handled, and now leased here);
            :data:`HELD` (another replica's live lease has it); or :data:`HANDLED`.

        Raises:
            InboxError: the row could not be written (the receiver must not answer 2xx).
        """
        now, until = self._lease()
        try:
            inserted = self.store.db().execute(
                "INSERT INTO inbox (delivery_id, event, body, received_at, claimed_by, "
                "claimed_until) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (delivery_id, event, bytes(body), now, self.owner, until)).rowcount
            if inserted:
                return NEW
            taken = self.store.db().execute(
                "UPDATE inbox SET claimed_by = ?, claimed_until = ? WHERE delivery_id = ? "
                "AND handled_at IS NULL AND (claimed_until < ? OR claimed_by = ?)",
                (self.owner, until, delivery_id, now, self.owner)).rowcount
            if taken:
                return OWED
            row = self.store.db().execute("SELECT handled_at FROM inbox WHERE delivery_id = ?",
                                          (delivery_id,)).fetchone()
        except Exception as exc:  # noqa: BLE001 - psycopg or StoreError: not kept
            raise InboxError(f"cannot keep delivery {delivery_id}: "
                             f"{type(exc).__name__}") from None
        return HANDLED if row is not None and row[0] else HELD

    def owed(self) -> list[InboxEntry]:
        """Lease and return every unhandled delivery that no other replica's live lease
        holds, oldest first (``FOR UPDATE SKIP LOCKED``: rows another replica is taking
        right now are left to it; this replica's own are its to replay, as in SQLite)."""
        now, until = self._lease()
        rows = self.store.db().execute(
            "UPDATE inbox SET claimed_by = ?, claimed_until = ? WHERE delivery_id IN "
            "(SELECT delivery_id FROM inbox WHERE handled_at IS NULL "
            "AND (claimed_until < ? OR claimed_by = ?) "
            "ORDER BY n FOR UPDATE SKIP LOCKED) RETURNING n, delivery_id, event, body",
            (self.owner, until, now, self.owner)).fetchall()
        return [InboxEntry(str(i), str(e), bytes(b)) for _, i, e, b in sorted(rows)]

    def backlog(self) -> tuple[int, str]:
        """``(deliveries not handled yet, received_at of the oldest, "" when none)`` over
        every replica's, one read that leases nothing (``/readyz`` and ``/metrics``,
        issue 13: :meth:`owed` would lease the rows to the replica asking)."""
        row = self.store.db().execute(
            "SELECT COUNT(*), MIN(received_at) FROM inbox WHERE handled_at IS NULL"
        ).fetchone()
        count, oldest = row if row is not None else (0, "")  # an aggregate: always a row
        return int(count or 0), str(oldest or "")

    def done(self, delivery_id: str, status: str) -> None:
        """Mark ``delivery_id`` handled (lease released); handled ones older than the
        newest :data:`HANDLED_CAP` arrivals go.

        Raises:
            InboxError: the mark could not be written.
        """
        try:
            with self.store.writing() as db:
                db.execute("UPDATE inbox SET handled_at = ?, status = ?, claimed_by = '', "
                           "claimed_until = '' WHERE delivery_id = ?",
                           (self._lease()[0], status, delivery_id))
                db.execute("DELETE FROM inbox WHERE handled_at IS NOT NULL AND n <= "
                           "(SELECT MAX(n) FROM inbox) - ?", (inbox_module.HANDLED_CAP,))
        except Exception as exc:  # noqa: BLE001 - reported as the inbox's error
            raise InboxError(f"cannot mark delivery {delivery_id} handled: "
                             f"{type(exc).__name__}") from None

    def close(self) -> None:
        """Nothing to release: the store owns the connections."""

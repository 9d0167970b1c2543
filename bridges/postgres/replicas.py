"""What several ``loopgate serve`` replicas on one PostgreSQL share (issue 15 §3).

* :class:`Leadership` — exactly one replica runs a role (the poller): the one holding a
  session-level advisory lock (``pg_try_advisory_lock``) on a connection of its own. When
  the holder dies its session ends and PostgreSQL releases the lock; the others try again
  every poll interval, so one of them takes over within one interval. A holder whose
  connection is cut stops leading before its next cycle. Every change of holder is
  recorded (``loopgate_leader_log``), so operators (and the fault test) see who led when.
* :class:`SharedWriteBudget` — GitHub's content-creation budget (80 a minute, 500 an
  hour) and the ≥ 1 s spacing of writes, counted over every replica's writes in
  ``github_writes`` against the server's clock, so N replicas do not send N× the writes
  GitHub allows. A write is counted when it is about to be sent; two replicas deciding in
  the same instant may each take the last slot, so a window can overshoot by at most
  (replicas − 1) writes.
* :class:`SharedRateGuard` — a :class:`~bridges.github.client.RateGuard` whose
  closed-until time lives in ``github_rate_guard``: a limit one replica hit stops the
  others' calls too, without a request.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from bridges.github.client import GuardFactory, RateGuard
from bridges.github.effects_worker import PER_HOUR, PER_MINUTE, WriteBudget

if TYPE_CHECKING:
    from engine.store.base import Store

__all__ = ["Leadership", "SharedWriteBudget", "SharedRateGuard", "POLLER_LOCK", "BUDGET_ENV",
           "shared_write_budget", "rate_guards", "leader_log"]

logger = logging.getLogger(__name__)

#: The advisory lock key of the poller role (any constant unique to loopgate).
POLLER_LOCK = 0x6C67_706F_6C6C  # "lgpoll"
_SPACING_S = 1.0


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Leadership:
    """Run ``cycle`` only while this replica holds the role's advisory lock.

    Args:
        store: the :class:`~bridges.postgres.store.PostgresStore` (``connect()`` gives the
            lock its own session).
        role: the role's name in the leader record (``poller``).
        key: the advisory lock key.
        holder: this replica's name (default ``host:pid``).
    """

    def __init__(self, store: Any, role: str = "poller", key: int = POLLER_LOCK,
                 holder: str | None = None) -> None:
        self.store = store
        self.role = role
        self.key = key
        self.holder = holder or _holder()
        self._conn: psycopg.Connection | None = None
        self.leading = threading.Event()
        #: Attempts to take the lock so far (one per interval while another leads).
        self.tries = 0

    def run(self, stop: threading.Event, interval: float,
            cycle: Callable[[threading.Event], float]) -> None:
        """Until ``stop``: take the lock when free (trying every ``interval`` seconds),
        then run ``cycle(stop)`` and wait the seconds it returns, as long as the lock's
        session is alive. The lock is released on return."""
        try:
            while not stop.is_set():
                if self._take():
                    self._lead(stop, cycle)
                else:
                    stop.wait(interval)
        finally:
            self._release()

    def _take(self) -> bool:
        self.tries += 1
        try:
            conn = self.store.connect()
            held = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]
        except Exception as exc:  # noqa: BLE001 - the database is away: try again later
            logger.warning("%s leadership: cannot ask the database: %s", self.role,
                           type(exc).__name__)
            return False
        if not held:
            conn.close()
            return False
        self._conn = conn
        self._record()
        self.leading.set()
        logger.info("%s leadership taken by %s", self.role, self.holder)
        return True

    def _record(self) -> None:
        now = _iso()
        with self.store.writing() as db:
            db.execute("INSERT INTO loopgate_leaders (role, holder, since) VALUES (?, ?, ?) "
                       "ON CONFLICT (role) DO UPDATE SET holder = excluded.holder, "
                       "since = excluded.since", (self.role, self.holder, now))
            db.execute("INSERT INTO loopgate_leader_log (role, holder, at) VALUES (?, ?, ?)",
                       (self.role, self.holder, now))

    def _alive(self) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def _lead(self, stop: threading.Event, cycle: Callable[[threading.Event], float]) -> None:
        while not stop.is_set():
            if not self._alive():  # the session (and so the lock) is gone: stop leading
                logger.warning("%s leadership lost by %s (its database session ended)",
                               self.role, self.holder)
                self._release()
                return
            wait = cycle(stop)
            stop.wait(max(wait, 0.0))

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        self.leading.clear()
        if conn is None:
            return
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except psycopg.Error:
            pass  # a dead session has released it already
        finally:
            conn.close()


def leader_log(store: Any, role: str = "poller") -> list[tuple[str, str]]:
    """``(holder, at)`` of every time ``role`` was taken, oldest first."""
    rows = store.db().execute("SELECT holder, at FROM loopgate_leader_log WHERE role = ? "
                              "ORDER BY n", (role,)).fetchall()
    return [(str(h), str(a)) for h, a in rows]


class SharedWriteBudget:
    """:class:`~bridges.github.effects_worker.WriteBudget` over every replica's writes.

    Args:
        store: the PostgreSQL store.
        per_minute, per_hour: GitHub's content-creation limits (platform-facts B4).
        spacing: seconds between any two writes (GitHub's secondary-limit advice, ≥ 1 s).

    ``now`` arguments are ignored: the server's clock is the one all replicas share.
    """

    def __init__(self, store: Any, per_minute: int = PER_MINUTE, per_hour: int = PER_HOUR,
                 spacing: float = _SPACING_S) -> None:
        self.store = store
        self.windows = ((60.0, per_minute), (3600.0, per_hour))
        self.spacing = spacing

    def wait(self, now: float = 0.0) -> float:
        """Seconds until one more write fits anywhere (0 when it fits now)."""
        sql = ("SELECT extract(epoch FROM clock_timestamp())::float8, "
               "(SELECT max(at) FROM github_writes), "
               "(SELECT at FROM github_writes WHERE at > extract(epoch FROM "
               "clock_timestamp()) - 60 ORDER BY at DESC OFFSET ? LIMIT 1), "
               "(SELECT at FROM github_writes WHERE at > extract(epoch FROM "
               "clock_timestamp()) - 3600 ORDER BY at DESC OFFSET ? LIMIT 1)")
        (minute, per_minute), (hour, per_hour) = self.windows
        server_now, last, nth_minute, nth_hour = self.store.db().execute(
            sql, (per_minute - 1, per_hour - 1)).fetchone()
        longest = 0.0
        if last is not None:
            longest = max(longest, self.spacing - (server_now - last))
        if nth_minute is not None:  # the window already holds per_minute writes
            longest = max(longest, minute - (server_now - nth_minute))
        if nth_hour is not None:
            longest = max(longest, hour - (server_now - nth_hour))
        return max(longest, 0.0)

    def spend(self, now: float = 0.0) -> None:
        """Count one write sent now (and forget writes older than an hour)."""
        with self.store.writing() as db:
            db.execute("INSERT INTO github_writes (at) VALUES "
                       "(extract(epoch FROM clock_timestamp()))")
            db.execute("DELETE FROM github_writes WHERE at < "
                       "extract(epoch FROM clock_timestamp()) - 3600")


class SharedRateGuard(RateGuard):
    """A :class:`RateGuard` whose closed-until time is shared through the database."""

    def __init__(self, store: Any, resource: str, max_wait: float,
                 clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(resource, max_wait, clock)
        self.store = store

    @property
    def closed_until(self) -> datetime | None:
        """The latest reset time any replica recorded, while it is ahead; else None."""
        row = self.store.db().execute(
            "SELECT until_epoch FROM github_rate_guard WHERE resource = ?",
            (self.resource,)).fetchone()
        if row is None:
            return None
        until = datetime.fromtimestamp(float(row[0]), UTC)
        return until if self._clock() < until else None

    def clear(self) -> None:
        """Open the guard for every replica."""
        self.store.db().execute("DELETE FROM github_rate_guard WHERE resource = ?",
                                (self.resource,))

    def close(self, reset_at: datetime) -> Any:
        """Close for every replica until ``reset_at`` (bounded as :class:`RateGuard`)."""
        error = super().close(reset_at)  # bounds the time and logs once per window
        with self.store.writing() as db:
            db.execute("INSERT INTO github_rate_guard (resource, until_epoch) VALUES (?, ?) "
                       "ON CONFLICT (resource) DO UPDATE SET until_epoch = "
                       "GREATEST(github_rate_guard.until_epoch, excluded.until_epoch)",
                       (self.resource, error.reset_at.timestamp()))
        return error


#: Overrides GitHub's content-creation budget, ``PER_MINUTE/PER_HOUR`` — test rigs only
#: (a bench of 1,000 deliveries would otherwise wait hours for GitHub's real budget).
BUDGET_ENV = "LOOPGATE_GITHUB_WRITE_BUDGET"


def _budget_limits() -> tuple[int, int]:
    raw = os.environ.get(BUDGET_ENV, "").strip()
    if not raw:
        return PER_MINUTE, PER_HOUR
    try:
        minute, hour = (int(x) for x in raw.split("/"))
    except ValueError:
        from engine.errors import ConfigError

        raise ConfigError(f"{BUDGET_ENV} must be PER_MINUTE/PER_HOUR, got {raw!r}") from None
    return minute, hour


def shared_write_budget(store: Store) -> Any:
    """The write budget for ``store``: shared where replicas share the database (its
    declared ``capabilities.shared``: PostgreSQL; spaced as the GitHub client spaces
    writes, ``LOOPGATE_GITHUB_WRITE_INTERVAL`` for test rigs), else the process's own;
    ``LOOPGATE_GITHUB_WRITE_BUDGET`` overrides the limits for test rigs."""
    minute, hour = _budget_limits()
    if store.capabilities.shared:
        from bridges.github.tracker import _write_interval

        return SharedWriteBudget(store, minute, hour, spacing=_write_interval())
    return WriteBudget(minute, hour)


def rate_guards(store: Store) -> GuardFactory:
    """How the GitHub clients over ``store`` make their rate guards, given when they are
    built (issue 20 §2): shared by every replica where the store is shared (PostgreSQL,
    issue 15 §3), else each process's own :class:`RateGuard`."""
    if not store.capabilities.shared:
        return RateGuard

    def shared(resource: str, max_wait: float,
               clock: Callable[[], datetime] | None) -> RateGuard:
        return SharedRateGuard(store, resource, max_wait, clock)

    return shared

"""Group commit for the SQLite webhook inbox (issue 21 §1): one writer thread, one fsync a batch.

The receiver's HTTP threads used to write the inbox themselves, one ``synchronous=FULL``
commit each, so eight senders queued on the file's write lock and SQLite's busy handler
slept up to 100 ms at a time between tries. Here every write (a receiver's ``put``, the
dispatcher's ``done``) is handed to ONE writer thread with its own connection. The
writer takes everything waiting, runs it in one ``BEGIN IMMEDIATE … COMMIT`` (one WAL
fsync), and only then wakes each waiter with its result. A waiter that returns has its
row on disk, so a ``2xx`` still means durable; nothing in this process contends for the
write lock, so no busy handler sleeps.

Failure is per batch: a commit that fails (a full disk, a file locked by a backup past
the busy timeout) rolls back and every waiter in it gets the error, so none is
acknowledged. A waiter that gives up (the commit is slower than ``wait_s``: a slow disk)
is refused too, while its batch may still commit: the delivery is then kept but answered
5xx, which GitHub's redelivery or the inbox replay covers, since a later put of the same
id finds it kept.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["GroupWriter", "Write", "WriteTimeout", "MAX_BATCH"]

logger = logging.getLogger(__name__)

#: Most writes one commit carries (a bound on the time one batch holds the file's lock).
MAX_BATCH = 256
#: Seconds without a write after which the writer merges the WAL into the file.
IDLE_S = 1.0
#: WAL pages before the writer's automatic checkpoint (SQLite's default is 1,000, about 250
#: deliveries): a burst of thousands is acknowledged without one, then merged when idle.
WAL_PAGES = 20_000


class WriteTimeout(Exception):
    """The commit carrying a write did not end within the caller's wait."""


class Write:
    """One write waiting for its batch's commit.

    Args:
        apply: runs the write on the writer's connection inside the open transaction and
            returns the caller's result (it may raise ``sqlite3.Error``).
    """

    __slots__ = ("apply", "result", "error", "committed")

    def __init__(self, apply: Callable[[sqlite3.Connection], Any]) -> None:
        self.apply = apply
        self.result: Any = None
        self.error: BaseException | None = None
        self.committed = threading.Event()


class GroupWriter:
    """The one writer thread of an inbox file.

    Args:
        connect: opens the writer's connection (autocommit, ``synchronous = FULL``).
        after_batch: runs inside each batch's transaction after its writes (the handled
            rows' pruning), or None.
        name: the thread's name.

    Attributes:
        commits: transactions committed (tests read it: fewer than writes = grouped).
        writes: writes committed.
        in_hand: writes in the batch being committed now.
        checkpoints: WAL checkpoints run while idle.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], *,
                 after_batch: Callable[[sqlite3.Connection, list[Write]], None] | None = None,
                 name: str = "loopgate-inbox-writer") -> None:
        self._connect = connect
        self._after_batch = after_batch
        self._name = name
        self._queue: deque[Write] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopping = False
        self.commits = 0
        self.writes = 0
        self.in_hand = 0
        self._unmerged = 0  # commits since the last checkpoint
        self.checkpoints = 0

    def submit(self, write: Write, wait_s: float) -> Any:
        """Queue ``write``, wait until its batch committed, return its result.

        Args:
            write: the write.
            wait_s: seconds to wait for the commit.

        Returns:
            What ``write.apply`` returned, once it is on disk.

        Raises:
            RuntimeError: the writer is stopped.
            WriteTimeout: not committed within ``wait_s`` (it may still commit later).
            sqlite3.Error: the batch's transaction failed (rolled back: nothing kept).
        """
        with self._cond:
            if self._stopping:
                raise RuntimeError("the inbox writer is stopped")
            self._ensure_thread()
            self._queue.append(write)
            self._cond.notify()
        if not write.committed.wait(wait_s):
            raise WriteTimeout(f"not on disk within {wait_s:g} s")
        if write.error is not None:
            raise write.error
        return write.result

    @property
    def queued(self) -> int:
        """Writes waiting for the next batch (tests, metrics)."""
        with self._cond:
            return len(self._queue)

    def _ensure_thread(self) -> None:
        """Start the writer (again after a fork: threads do not survive one)."""
        if self._thread is None or self._pid != os.getpid():
            self._pid = os.getpid()
            # daemon: a process that never closed its inbox must still exit; a batch cut
            # short by the exit was never acknowledged.
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Commit what is queued, then end and join the writer (idempotent)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
            thread = self._thread if self._pid == os.getpid() else None
        if thread is not None:
            thread.join()

    def _take(self) -> list[Write] | None:
        """The next batch; ``[]`` after :data:`IDLE_S` without one; None once stopping."""
        with self._cond:
            if not self._queue and not self._stopping:
                self._cond.wait(IDLE_S)
            if not self._queue:
                return None if self._stopping else []
            count = min(len(self._queue), MAX_BATCH)
            self.in_hand = count
            return [self._queue.popleft() for _ in range(count)]

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while (batch := self._take()) is not None:
                if not batch:
                    if conn is not None and self._unmerged:
                        self._checkpoint(conn)
                    continue
                if conn is None:
                    conn = self._open(batch)
                if conn is not None:
                    self._commit(conn, batch)
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Merge the WAL into the file while no write waits (a passive checkpoint; the
        writer's own automatic one is pushed out to :data:`WAL_PAGES`, so a burst's acks
        never wait behind one)."""
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self._unmerged = 0
            self.checkpoints += 1
        except sqlite3.Error as exc:
            logger.warning("webhook inbox: checkpoint failed (tried again when idle): %s", exc)

    def _open(self, batch: list[Write]) -> sqlite3.Connection | None:
        try:
            conn = self._connect()
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES}")
            return conn
        except Exception as exc:  # noqa: BLE001 - every waiter must hear of it
            _fail(batch, exc)
            return None

    def _commit(self, conn: sqlite3.Connection, batch: list[Write]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for write in batch:
                    write.result = write.apply(conn)
                if self._after_batch is not None:
                    self._after_batch(conn, batch)
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                raise
        except Exception as exc:  # noqa: BLE001 - the batch fails, the writer goes on
            logger.error("webhook inbox: a commit of %d write(s) failed: %s", len(batch), exc)
            self.in_hand = 0
            _fail(batch, exc)
            return
        self.commits += 1
        self.writes += len(batch)
        self._unmerged += 1
        self.in_hand = 0
        for write in batch:
            write.committed.set()


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # no transaction left open (the failed statement ended it)


def _fail(batch: list[Write], exc: BaseException) -> None:
    for write in batch:
        write.result = None
        write.error = exc
        write.committed.set()

"""One ``loopgate serve`` per database: an OS file lock on ``<db>.lock``.

Two servers on one database would poll twice and race each other's deliveries (issue 10
§5). The second one must refuse to start and say which process holds the database.

Why ``fcntl.flock`` rather than a lease row with a heartbeat: the kernel releases the lock
when the holding process ends, however it ends (SIGTERM, SIGKILL, OOM), so a crashed
server never blocks the next one and there is no expiry to tune. The holder writes its
pid, host and start time into the lock file so a refused server can name it; the file's
content is only read while the lock is held, so what a dead holder left there is never
shown.

Limits: flock is advisory (only loopgate takes it) and works between processes of one
host; on a network file system it may not hold, and SQLite's WAL mode needs a local disk
anyway.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from engine.errors import LoopgateError

__all__ = ["ServerLock", "LockHolder", "DatabaseInUseError", "lock_path", "read_holder"]


def lock_path(db_path: str | os.PathLike[str]) -> Path:
    """The lock file beside the database: ``<db>.lock``, of the file the path resolves to
    (a symlink or ``..`` in the path names the same database, so the same lock).

    Args:
        db_path: the state database file.

    Returns:
        The lock file's path (same directory, the database's name + ``.lock``).
    """
    path = Path(db_path).resolve()
    return path.with_name(f"{path.name}.lock")


@dataclass(frozen=True)
class LockHolder:
    """The process holding a database.

    Attributes:
        pid: its process id.
        host: the host name it runs on.
        started_at: when it took the lock (ISO-8601 UTC).
    """

    pid: int
    host: str
    started_at: str

    def describe(self) -> str:
        """``pid 1234 on HOST, started 2026-03-01T12:00:00Z``."""
        return f"pid {self.pid} on {self.host}, started {self.started_at}"


class DatabaseInUseError(LoopgateError):
    """Another process holds the database's server lock.

    Attributes:
        db_path: the database.
        holder: the process holding it, or None when it has not written its name yet.
    """

    def __init__(self, db_path: Path, holder: LockHolder | None) -> None:
        self.db_path = db_path
        self.holder = holder
        who = holder.describe() if holder else "a process that is still starting"
        super().__init__(f"another loopgate serve is running on {db_path}: {who} "
                         f"(stop it first; lock file {lock_path(db_path)})")


class ServerLock:
    """The exclusive lock of one database, held for the life of a server.

    Args:
        db_path: the state database (the lock file is :func:`lock_path` of it; its
            directory is created when missing).
    """

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        self.db_path = Path(db_path)
        self.path = lock_path(db_path)
        self._fd: int | None = None

    def acquire(self) -> LockHolder:
        """Take the lock without waiting and write this process's name into it.

        Returns:
            This process as the holder.

        Raises:
            DatabaseInUseError: another process holds it (the message names it).
            OSError: the lock file cannot be created.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DatabaseInUseError(self.db_path, read_holder(self.path)) from None
        holder = LockHolder(os.getpid(), socket.gethostname(),
                            datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        data = json.dumps({"pid": holder.pid, "host": holder.host,
                           "startedAt": holder.started_at}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self._fd = fd
        return holder

    def release(self) -> None:
        """Give the lock up (idempotent); the process ending does the same."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.ftruncate(fd, 0)  # nobody holds it now: leave no name behind
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> ServerLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def read_holder(path: Path) -> LockHolder | None:
    """The holder a lock file names, or None when it is empty or unreadable (a holder
    between taking the lock and writing its name)."""
    try:
        data = json.loads(path.read_text("utf-8") or "null")
        return LockHolder(int(data["pid"]), str(data["host"]), str(data["startedAt"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None

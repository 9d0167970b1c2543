"""Whether the SQLite state file takes a write now (issue 13 §1's ``database`` check).

The SQL lives here, in the storage rooms (issue 20 §2), so readiness (``bot.ops.health``)
and ``loopgate ops`` ask a question and never hold SQL of their own.
"""

from __future__ import annotations

import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["probe_write"]


def _write_one_row(conn: sqlite3.Connection) -> None:
    """One write inside the open transaction: the ``kv`` row ``health/probe``; a database
    from before the ``kv`` table (an upgrade not migrated yet) rewrites its header's
    ``user_version`` with the same value instead."""
    try:
        conn.execute("INSERT INTO kv (namespace, key, value, updated_at) VALUES "
                     "('health', 'probe', '{}', ?) ON CONFLICT (namespace, key) DO UPDATE "
                     "SET updated_at = excluded.updated_at",
                     (datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),))
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        conn.execute(f"PRAGMA user_version = {version}")


def probe_write(path: str | Path, deadline: float) -> tuple[bool, str]:
    """Write one row to the SQLite file through a fresh connection.

    Args:
        path: the database file.
        deadline: seconds the write may take, the lock wait included.

    Returns:
        ``(True, "writable (N ms)")``, or ``(False, why)`` where ``why`` names the file and
        SQLite's error (e.g. "attempt to write a readonly database"), a read-only file, or
        a write slower than ``deadline``.
    """
    started = time.monotonic()
    # SQLite reuses a read-write descriptor this process still holds on the file, so a
    # file made read-only since is seen by asking the kernel, then by writing.
    for name in (str(path), f"{path}-wal"):
        if os.path.exists(name) and not os.access(name, os.W_OK):
            return False, f"{name} is read-only"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=deadline,
                               isolation_level=None)
    except sqlite3.Error as exc:
        return False, f"cannot open {path}: {exc}"
    try:
        conn.execute("BEGIN IMMEDIATE")
        _write_one_row(conn)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        return False, f"{path} is not writable: {exc}"
    finally:
        conn.close()
    took = time.monotonic() - started
    if took > deadline:
        return False, f"a write took {took:.2f} s (limit {deadline:.0f} s)"
    return True, f"writable ({took * 1000:.0f} ms)"

"""The server lock in one process: a second holder of the same database is refused with
the first one's pid, host and start time; a release (or the end of the process, see
test_serve_cmd.py) lets the next one in; another database is not affected."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bot.web.server_lock import DatabaseInUseError, ServerLock, lock_path, read_holder


def test_a_second_lock_on_the_same_database_names_the_first_holder(tmp_path: Path) -> None:
    db = tmp_path / "state" / "loopgate.db"
    first = ServerLock(db)
    holder = first.acquire()
    assert (holder.pid, holder.host) == (os.getpid(), socket.gethostname())
    assert first.path == lock_path(db) == tmp_path / "state" / "loopgate.db.lock"
    assert read_holder(first.path) == holder
    with pytest.raises(DatabaseInUseError) as refused:
        ServerLock(db).acquire()
    assert refused.value.holder == holder
    assert str(refused.value) == (
        f"another loopgate serve is running on {db}: pid {holder.pid} on {holder.host}, "
        f"started {holder.started_at} (stop it first; lock file {db}.lock)")
    with ServerLock(tmp_path / "other.db"):  # another database: its own lock
        pass
    first.release()
    first.release()  # idempotent
    assert read_holder(first.path) is None  # nobody holds it: no name left behind
    with ServerLock(db) as again:
        assert read_holder(again.path) is not None

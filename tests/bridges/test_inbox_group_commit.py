"""The SQLite inbox's group commit (issue 21 §1): concurrent puts share a commit, a put
returns only once its row is on disk, and a file that cannot be written (locked by a
backup, too slow, full) refuses instead of acknowledging — nothing acknowledged is lost,
also when the process is SIGKILLed right after its acks."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bridges.ingress.inbox import NEW, OWED, InboxError, SqliteInbox

ROOT = Path(__file__).resolve().parents[2]


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


@contextmanager
def _backup_lock(path: Path) -> Iterator[None]:
    """Hold the file's write lock from another connection, as a backup tool would."""
    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _ids(inbox: SqliteInbox) -> set[str]:
    return {e.delivery_id for e in inbox.owed()}


def test_concurrent_puts_share_one_commit(tmp_path: Path) -> None:
    inbox = SqliteInbox(tmp_path / "x.inbox.db")
    results: dict[str, str] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(
        f"g{n}", inbox.put(f"g{n}", "issues", b"{}"))) for n in range(8)]
    try:
        with _backup_lock(inbox.path):
            for t in threads:
                t.start()
            # the writer holds its first batch while it waits for the lock; the rest queue
            _wait_for(lambda: inbox.writer.in_hand + inbox.writer.queued == 8)
        for t in threads:
            t.join(30)
        assert results == {f"g{n}": NEW for n in range(8)}
        assert inbox.writer.commits <= 2 and inbox.writer.writes == 8
        assert _ids(inbox) == set(results)
    finally:
        inbox.close()


def test_the_wal_is_merged_once_writes_pause(tmp_path: Path) -> None:
    inbox = SqliteInbox(tmp_path / "x.inbox.db")
    try:
        for n in range(300):  # about 900 WAL pages: SQLite's own default would checkpoint
            inbox.put(f"g{n}", "issues", b"x" * 12_000)
        _wait_for(lambda: inbox.writer.checkpoints == 1)  # merged after IDLE_S without writes
        assert len(_ids(inbox)) == 300
    finally:
        inbox.close()


def test_a_file_locked_past_the_busy_timeout_refuses_and_keeps_nothing(tmp_path: Path) -> None:
    inbox = SqliteInbox(tmp_path / "x.inbox.db", busy_timeout_ms=200)
    try:
        with _backup_lock(inbox.path), pytest.raises(InboxError, match="cannot keep delivery g1"):
            inbox.put("g1", "issues", b"{}")
        assert inbox.owed() == []  # refused, rolled back: GitHub redelivers it
        assert inbox.put("g1", "issues", b"{}") == NEW  # the file works again
    finally:
        inbox.close()


def test_a_commit_slower_than_the_ack_wait_refuses_but_keeps_the_row(tmp_path: Path) -> None:
    inbox = SqliteInbox(tmp_path / "x.inbox.db", ack_wait_s=0.2)
    try:
        with _backup_lock(inbox.path), pytest.raises(InboxError, match="not on disk within"):
            inbox.put("g1", "issues", b"{}")
        _wait_for(lambda: inbox.writer.commits == 1)
        # answered 503, yet kept: the replay (or GitHub's redelivery, found OWED) covers it
        assert _ids(inbox) == {"g1"} and inbox.put("g1", "issues", b"{}") == OWED
    finally:
        inbox.close()


class _SmallDisk(SqliteInbox):
    """An inbox whose writer sees a full disk after a few pages (SQLITE_FULL)."""

    def _connect(self) -> sqlite3.Connection:
        conn = super()._connect()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 6}")
        return conn


def test_a_full_disk_refuses_and_loses_nothing_acknowledged(tmp_path: Path) -> None:
    inbox = _SmallDisk(tmp_path / "x.inbox.db")
    acked: list[str] = []
    try:
        with pytest.raises(InboxError, match="full"):
            for n in range(200):
                inbox.put(f"g{n}", "issues", b"x" * 3000)
                acked.append(f"g{n}")
    finally:
        inbox.close()
    assert acked  # some fitted
    again = SqliteInbox(inbox.path)
    try:
        assert _ids(again) == set(acked)
    finally:
        again.close()


CHILD = r"""
import sys, threading
from bridges.ingress.inbox import SqliteInbox
inbox = SqliteInbox(sys.argv[1])
out = threading.Lock()
def send(t):
    for i in range(100000):
        inbox.put(f"{t}-{i}", "issues", b'{"action": "labeled"}')
        with out:
            sys.stdout.write(f"{t}-{i}\n")
            sys.stdout.flush()
threads = [threading.Thread(target=send, args=(t,)) for t in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_every_acknowledged_delivery_survives_a_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "x.inbox.db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    acked: list[str] = []
    try:
        assert child.stdout is not None
        while len(acked) < 300:
            line = child.stdout.readline()
            assert line, "the child ended before 300 acks"
            acked.append(line.strip())
        child.send_signal(signal.SIGKILL)  # right after an ack, while others are in flight
        acked += [line.strip() for line in child.stdout.read().splitlines() if line.strip()]
    finally:
        child.kill()
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    inbox = SqliteInbox(path)
    try:
        assert set(acked) <= _ids(inbox)
    finally:
        inbox.close()

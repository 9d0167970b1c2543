"""The webhook inbox alone (issue 21 §1): 8 threads keep 1,000 deliveries of 12 kB, every
second one then marked handled, paired with the previous design (one ``synchronous=FULL``
commit per delivery on each thread's own connection, SQLite's busy handler between them).
Not run by the tests. Figures: put latency p50/p99/max and commits per delivery.

Usage: ``.venv/bin/python bench/inbox_bench.py [--deliveries 1000]`` (bounded: seconds).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import header, pct, row

from bridges.ingress.inbox import SqliteInbox

BODY = b"x" * 12_000


class PerDeliveryInbox:
    """The previous design, for the pairing: each thread's own autocommit connection, one
    ``INSERT`` (one fsync) per delivery, one ``UPDATE`` per handled mark."""

    def __init__(self, path: Path) -> None:
        self.path = path
        SqliteInbox(path).close()  # the same file, migrated
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        if getattr(self._local, "conn", None) is None:
            conn = sqlite3.connect(str(self.path), timeout=5, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA synchronous = FULL")
            self._local.conn = conn
        return self._local.conn

    def put(self, delivery_id: str, event: str, body: bytes) -> None:
        self._conn().execute("INSERT OR IGNORE INTO inbox (delivery_id, event, body, "
                             "received_at) VALUES (?, ?, ?, '')", (delivery_id, event, body))

    def done(self, delivery_id: str, status: str) -> None:
        self._conn().execute("UPDATE inbox SET handled_at = 'x', status = ? WHERE "
                             "delivery_id = ?", (status, delivery_id))


def burst(inbox: Any, deliveries: int, threads: int = 8) -> tuple[list[float], float]:
    """Put ``deliveries`` from ``threads`` threads; (put latencies ms, seconds in all)."""
    latencies: list[float] = []
    lock = threading.Lock()

    def send(t: int) -> None:
        for i in range(deliveries // threads):
            began = time.perf_counter()
            inbox.put(f"{t}-{i}", "issues", BODY)
            took = (time.perf_counter() - began) * 1000
            with lock:
                latencies.append(took)
            if i % 2:
                inbox.done(f"{t}-{i}", "handled")

    workers = [threading.Thread(target=send, args=(t,)) for t in range(threads)]
    began = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    return latencies, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--no-header", action="store_true")
    args = parser.parse_args()
    if not args.no_header:
        header()
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as tmp:
        before, before_s = burst(PerDeliveryInbox(Path(tmp) / "a.inbox.db"), args.deliveries)
        grouped = SqliteInbox(Path(tmp) / "b.inbox.db")
        after, after_s = burst(grouped, args.deliveries)
        grouped.close()
    row(f"#21 inbox put, {args.deliveries:,} deliveries of 12 kB from 8 threads, one "
        "commit per delivery (previous design)", "—",
        f"p50 {pct(before, .5):.2f} ms, p99 {pct(before, .99):.1f} ms, max {max(before):.0f} "
        f"ms, {before_s:.2f} s in all", None)
    row("#21 same, group commit by one writer thread (`bench/inbox_bench.py`)",
        "p99 below the previous design's",
        f"p50 {pct(after, .5):.2f} ms, p99 {pct(after, .99):.1f} ms, max {max(after):.0f} ms, "
        f"{after_s:.2f} s in all, {grouped.writer.writes / grouped.writer.commits:.1f} writes "
        "per commit", pct(after, .99) < pct(before, .99))


if __name__ == "__main__":
    main()

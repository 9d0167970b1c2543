"""Concurrent writers never lose an update (issue 2 §5): 4 processes × 200 advances on 50
items, through the real runtime and one SQLite file."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.graph.compiler import compile_graph
from engine.refs import WorkItemRef
from engine.store.sqlite import SqliteStore
from tests.engine.runtime_support import TEST_REGISTRY, make_runtime, tick_mapping

PROCESSES = 4
ADVANCES = 200
ITEMS = 50


def _ref(n: int) -> WorkItemRef:
    return WorkItemRef("acme", "widgets", n)


def _worker(store: Any, offset: int) -> None:
    # Forked: the store object is the parent's; it must open this process's own connection.
    runtime = make_runtime(store, compile_graph(tick_mapping(), TEST_REGISTRY))
    for i in range(ADVANCES):
        runtime.advance(_ref((offset + i) % ITEMS + 1), {"tick": True})
    store.close()


def test_four_processes_times_200_advances_on_50_items_lose_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db", busy_timeout_ms=10_000, lock_retries=10)
    _four_writers_lose_nothing(store, lambda: SqliteStore(tmp_path / "loopgate.db"))


def test_four_replica_processes_on_postgresql_lose_nothing(pg_database: str) -> None:
    """Issue 15 §3: one work item is changed by one replica at a time (the item's row
    lock), so 4 processes × 200 advances on 50 items on one PostgreSQL lose nothing."""
    from bridges.postgres.store import PostgresStore

    _four_writers_lose_nothing(PostgresStore(pg_database), lambda: PostgresStore(pg_database))


def _four_writers_lose_nothing(store: Any, reopen: Callable[[], Any]) -> None:
    runtime = make_runtime(store, compile_graph(tick_mapping(), TEST_REGISTRY))
    for n in range(1, ITEMS + 1):
        runtime.start(_ref(n))
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_worker, args=(store, p * 7)) for p in range(PROCESSES)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=100)
    assert [w.exitcode for w in workers] == [0] * PROCESSES

    per_item = PROCESSES * ADVANCES // ITEMS  # 16
    fresh = reopen()
    states = list(fresh.load_all())
    assert len(states) == ITEMS
    assert Counter(s.surface["ticks"] for s in states) == {per_item: ITEMS}
    assert {s.revision for s in states} == {2 + per_item}  # two start transactions + ticks
    for state in states:
        kinds = Counter(e["kind"] for e in fresh.events(state.ref))
        assert kinds["graph.advanced"] == 1 + per_item
        assert kinds["graph.parked"] == 1 + per_item
        assert state.current_node == "tick" and state.status == "parked"
    fresh.close()
    store.close()


def test_threads_sharing_one_store_lose_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db")
    runtime = make_runtime(store, compile_graph(tick_mapping(), TEST_REGISTRY))
    for n in range(1, 6):
        runtime.start(_ref(n))

    def work(offset: int) -> None:
        for i in range(40):
            runtime.advance(_ref((offset + i) % 5 + 1), {"tick": True})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s.surface["ticks"] for s in store.load_all()) == [32] * 5
    store.close()

"""The bridge's persisted state, one suite over SQLite, memory and PostgreSQL: cursors, capped seen
keys, handled deliveries; SQLite survives a reopen. (The webhook inbox has its own file
and suite: test_inbox.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridges.ingress.bridge_state import (
    BridgeState,
    MemoryBridgeState,
    PollCursor,
    SqliteBridgeState,
    bridge_state,
)
from engine.store.memory import MemoryStore
from engine.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> BridgeState:
    if request.param == "memory":
        return MemoryBridgeState()
    if request.param == "postgresql":  # issue 15 §2: shared by replicas
        from bridges.postgres.store import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_database"))
        request.addfinalizer(store.close)
        return bridge_state(store)
    store = SqliteStore(tmp_path / "loopgate.db")
    request.addfinalizer(store.close)
    return SqliteBridgeState(store)


def test_cursors_round_trip_per_repo_and_stream(state: BridgeState) -> None:
    assert state.get_cursor("acme/widgets", "comments") == PollCursor()
    cursor = PollCursor("2024-05-01T10:00:00Z", 'W/"abc"', "2024-05-01T10:00:00Z")
    state.set_cursor("acme/widgets", "comments", cursor)
    assert state.get_cursor("acme/widgets", "comments") == cursor
    assert state.get_cursor("acme/widgets", "labels") == PollCursor()
    assert state.get_cursor("acme/other", "comments") == PollCursor()


def test_seen_keys_are_capped_oldest_first(state: BridgeState) -> None:
    state.mark_seen("acme/widgets", "quiz", ["a", "b", "c"], cap=3)
    state.mark_seen("acme/widgets", "quiz", ["d"], cap=3)
    assert state.seen("acme/widgets", "quiz", ["a", "b", "c", "d"]) == {"b", "c", "d"}
    assert state.seen("acme/widgets", "comment", ["b"]) == set()
    assert state.seen("acme/other", "quiz", ["b"]) == set()


def test_handled_keys(state: BridgeState) -> None:
    assert not state.handled("delivery:1")
    state.mark_handled("delivery:1", "handled")
    state.mark_handled("delivery:1", "duplicate")  # recording twice is fine
    assert state.handled("delivery:1") and not state.handled("delivery:2")


def test_sqlite_state_survives_a_reopen(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db")
    first = SqliteBridgeState(store)
    first.set_cursor("acme/widgets", "comments", PollCursor("2024-01-01T00:00:00Z"))
    first.mark_seen("acme/widgets", "quiz", ["quiz:1:abc"])
    first.mark_handled("quiz:1:abc", "handled")
    store.close()
    again = SqliteBridgeState(SqliteStore(tmp_path / "loopgate.db"))
    assert again.get_cursor("acme/widgets", "comments").cursor == "2024-01-01T00:00:00Z"
    assert again.seen("acme/widgets", "quiz", ["quiz:1:abc"]) == {"quiz:1:abc"}
    assert again.handled("quiz:1:abc")


def test_the_state_lives_beside_the_store(tmp_path: Path) -> None:
    assert isinstance(bridge_state(MemoryStore()), MemoryBridgeState)
    store = SqliteStore(tmp_path / "loopgate.db")
    assert isinstance(bridge_state(store), SqliteBridgeState)
    tables = set(store.db().table_names())
    assert {"github_poll", "github_seen", "github_deliveries", "github_inbox"} <= tables

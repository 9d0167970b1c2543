"""What only the PostgreSQL store promises (issue 15 §1, §3): per-item row locks instead of
a database lock, SKIP LOCKED claims, its own migration history, no password in errors or
logs. The shared behaviour is in tests/engine/test_store_conformance.py."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

import psycopg
import pytest

from bridges.postgres import migrate
from bridges.postgres.store import PostgresStore, describe
from engine.effects import AddLabel
from engine.errors import StoreError
from engine.refs import WorkItemRef
from tests.pgserver import PASSWORD, PgServer

A = WorkItemRef("acme", "widgets", 1)
B = WorkItemRef("acme", "widgets", 2)
T0 = "2026-03-01T12:00:00Z"


@pytest.fixture
def store(pg_database: str):  # noqa: ANN201
    pg = PostgresStore(pg_database, lock_timeout_ms=2_000)
    yield pg
    pg.close()


def _wait(predicate, seconds: float = 10.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def _lock_waiters(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                            "current_database() AND wait_event_type = 'Lock'").fetchone()[0]


def test_one_item_is_changed_by_one_transaction_at_a_time_and_others_go_on(
        store: PostgresStore, pg_database: str) -> None:
    for ref in (A, B):
        with store.transaction(ref) as tx:
            tx.create("loop").surface["n"] = 0
    holding, release, order = threading.Event(), threading.Event(), []

    def hold_a() -> None:
        with store.transaction(A) as tx:
            holding.set()
            release.wait(10)
            tx.state.surface["n"] += 1
            order.append("first")

    def second_a() -> None:
        with store.transaction(A) as tx:
            order.append("second")
            tx.state.surface["n"] += 1

    holder = threading.Thread(target=hold_a)
    holder.start()
    assert holding.wait(10)
    waiter = threading.Thread(target=second_a)
    waiter.start()
    _wait(lambda: _lock_waiters(pg_database) == 1)  # blocked on A's row lock
    with store.transaction(B) as tx:  # another item is not held up by A's lock
        tx.state.surface["n"] = 5
    assert store.load(B).surface["n"] == 5
    assert order == [] and _lock_waiters(pg_database) == 1  # A's second still waits
    release.set()
    holder.join(10)
    waiter.join(10)
    assert order == ["first", "second"] and store.load(A).surface["n"] == 2


def test_a_lock_held_past_lock_timeout_is_a_store_error_and_writes_nothing(
        pg_database: str) -> None:
    store = PostgresStore(pg_database, lock_timeout_ms=200)
    with store.transaction(A) as tx:
        tx.create("loop")
    other = psycopg.connect(pg_database)
    other.execute("SELECT * FROM item_locks WHERE item = %s FOR UPDATE", (str(A),))
    try:
        with pytest.raises(StoreError, match="locked past lock_timeout"), \
                store.transaction(A) as tx:
            tx.state.current_node = "never"
    finally:
        other.rollback()
        other.close()
    assert store.load(A).current_node == ""
    store.close()


def test_a_claim_skips_a_row_another_replica_has_locked(store: PostgresStore,
                                                       pg_database: str) -> None:
    with store.transaction(A) as tx:
        tx.create("loop")
        tx.enqueue("k1", AddLabel(A, "loop:x"))
    (row,) = store.effects.due(T0)
    other = psycopg.connect(pg_database)
    other.execute("SELECT id FROM effects WHERE id = %s FOR UPDATE", (row.id,))
    try:
        # skipped, not waited for: waiting would end in lock_timeout's StoreError, as the
        # lock is released only after this returns
        assert store.effects.claim(row.id, "replica-2", "2026-03-01T12:05:00Z", T0) is False
    finally:
        other.rollback()
        other.close()
    assert store.effects.claim(row.id, "replica-2", "2026-03-01T12:05:00Z", T0) is True
    assert store.effects.claim(row.id, "replica-3", "2026-03-01T12:05:00Z", T0) is False


def test_migrations_are_recorded_once_even_with_replicas_opening_together(
        pg_database: str) -> None:
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(pg_database))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and len(stores) == 3
    with psycopg.connect(pg_database) as conn:
        names = migrate.applied(conn, "loopgate-engine")
    assert names == [m.name for m in migrate.ENGINE.migrations]
    for pg in stores:
        pg.close()


def test_a_wrong_password_is_a_store_error_naming_the_server_never_the_password(
        pg_server: PgServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secret = PASSWORD + "-but-wrong"
    with pytest.raises(StoreError) as caught:
        PostgresStore(pg_server.url(), password=secret)
    text = str(caught.value)
    assert f"127.0.0.1:{pg_server.port}/postgres" in text
    assert "password authentication failed" in text
    assert secret not in text and PASSWORD not in text
    assert secret not in caplog.text and PASSWORD not in caplog.text


def test_describe_names_host_port_database_and_user_only() -> None:
    url = "postgresql://bot:s3cret@db.example:6543/loopgate?sslmode=require"
    assert describe(url) == "bot@db.example:6543/loopgate"
    assert "s3cret" not in describe("host=h password=s3cret dbname=d user=u")


def test_a_delivery_is_replayed_by_one_replica_only_until_its_lease_runs_out(
        store: PostgresStore) -> None:
    from bridges.postgres.inbox import PostgresInbox

    first, second = PostgresInbox(store, "replica-1"), PostgresInbox(store, "replica-2")
    assert first.put("guid-1", "issues", b"{}") == "new"
    assert second.put("guid-1", "issues", b"{}") == "held"  # redelivered to another replica
    assert second.owed() == []  # replica-1 holds it
    assert [e.delivery_id for e in first.owed()] == ["guid-1"]
    store.db().execute("UPDATE inbox SET claimed_until = '2000-01-01T00:00:00.000000Z'")
    assert [e.delivery_id for e in second.owed()] == ["guid-1"]  # replica-1 died: taken over
    assert first.owed() == []
    second.done("guid-1", "handled")
    assert first.put("guid-1", "issues", b"{}") == "handled"


def test_reading_the_backlog_leases_nothing(store: PostgresStore) -> None:
    # /readyz and /metrics read WebhookInbox.backlog (issue 20 §2); owed() would lease
    # every row to the replica asking, so the one that took it could not replay it.
    from bot.ops.health import _inbox_backlog
    from bridges.postgres.inbox import PostgresInbox

    first, second = PostgresInbox(store, "replica-1"), PostgresInbox(store, "replica-2")
    first.put("guid-1", "issues", b"{}")
    store.db().execute("UPDATE inbox SET claimed_by = '', claimed_until = ''")
    assert second.backlog()[0] == 1
    assert _inbox_backlog(second, datetime.now(UTC)).depth == 1  # what /readyz reads
    assert [e.delivery_id for e in first.owed()] == ["guid-1"]  # still free to take


def test_replicas_replaying_together_split_the_owed_deliveries(pg_database: str) -> None:
    from bridges.postgres.inbox import PostgresInbox

    stores = [PostgresStore(pg_database) for _ in range(3)]
    inboxes = [PostgresInbox(s, f"replica-{i}") for i, s in enumerate(stores)]
    for n in range(200):
        inboxes[0].put(f"guid-{n}", "issues", b"{}")
    stores[0].db().execute("UPDATE inbox SET claimed_by = '', claimed_until = ''")
    taken: list[list[str]] = [[] for _ in inboxes]

    def replay(i: int) -> None:
        taken[i] = [e.delivery_id for e in inboxes[i].owed()]

    threads = [threading.Thread(target=replay, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    everything = [d for part in taken for d in part]
    assert sorted(everything) == sorted(f"guid-{n}" for n in range(200))  # each exactly once
    for pg in stores:
        pg.close()


def test_exclusive_is_held_by_one_replica_at_a_time(pg_database: str) -> None:
    one, two = PostgresStore(pg_database), PostgresStore(pg_database)
    entered, release, order = threading.Event(), threading.Event(), []

    def first() -> None:
        with one.exclusive("execute:acme/widgets#7"):
            entered.set()
            release.wait(10)
            order.append("first")

    def second() -> None:
        with two.exclusive("execute:acme/widgets#7"):
            order.append("second")

    a = threading.Thread(target=first)
    a.start()
    assert entered.wait(10)
    b = threading.Thread(target=second)
    b.start()
    _wait(lambda: _lock_waiters(pg_database) == 1)  # the second replica waits
    with two.exclusive("execute:acme/widgets#8"):  # another key is free
        pass
    release.set()
    a.join(10)
    b.join(10)
    assert order == ["first", "second"]
    one.close()
    two.close()

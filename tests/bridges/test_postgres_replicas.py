"""Replicas on one PostgreSQL (issue 15 §3): exactly one poller (an advisory lock taken
over within one poll interval when its holder dies), GitHub write pacing and rate-limit
state shared through the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from bridges.github.errors import RateLimited
from bridges.postgres.replicas import (
    POLLER_LOCK,
    Leadership,
    SharedRateGuard,
    SharedWriteBudget,
    leader_log,
)
from bridges.postgres.store import PostgresStore

INTERVAL = 0.5


@pytest.fixture
def store(pg_database: str):  # noqa: ANN201
    pg = PostgresStore(pg_database)
    yield pg
    pg.close()


def _wait(predicate, seconds: float = 20.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


class _Replica:
    """A leadership loop in a thread whose cycle counts the polls it ran."""

    def __init__(self, store: PostgresStore, name: str) -> None:
        self.leader = Leadership(store, "poller", holder=name)
        self.polls = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.leader.run,
                                       args=(self.stop, INTERVAL, self._cycle))

    def _cycle(self, stop: threading.Event) -> float:
        self.polls += 1
        return INTERVAL

    def __enter__(self) -> _Replica:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def test_exactly_one_of_three_replicas_polls(store: PostgresStore) -> None:
    with _Replica(store, "r1") as r1, _Replica(store, "r2") as r2, _Replica(store, "r3") as r3:
        replicas = (r1, r2, r3)
        _wait(lambda: sum(r.polls for r in replicas) >= 4)
        polling = [r for r in replicas if r.polls]
        assert len(polling) == 1
        assert sum(r.leader.leading.is_set() for r in replicas) == 1
        # read before the exits: a leader that stops hands the poller on
        assert [h for h, _ in leader_log(store)] == [polling[0].leader.holder]


def test_a_replica_whose_session_is_cut_stops_polling_and_another_takes_over(
        store: PostgresStore, pg_database: str) -> None:
    with _Replica(store, "r1") as r1:
        _wait(lambda: r1.polls >= 1)
        with _Replica(store, "r2") as r2:
            time.sleep(INTERVAL * 2)  # r2 keeps trying while r1 leads
            assert r2.polls == 0
            with psycopg.connect(pg_database, autocommit=True) as admin:
                (cut,) = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE "
                    "locktype = 'advisory' AND objid = %s AND granted",
                    (POLLER_LOCK & 0xFFFFFFFF,)).fetchone()
            assert cut is True
            tries = r2.leader.tries
            _wait(lambda: r2.polls >= 1)
            # taken at its next try (or the one after, had that try raced the session's
            # end): within one poll interval of the lock's release
            assert r2.leader.tries - tries <= 2
            _wait(lambda: not r1.leader.leading.is_set())
            before = r1.polls
            time.sleep(INTERVAL * 2)
            assert r1.polls == before  # r1 no longer polls
    assert [h for h, _ in leader_log(store)][:2] == ["r1", "r2"]


_HOLDER = textwrap.dedent("""
    import sys, threading
    from bridges.postgres.store import PostgresStore
    from bridges.postgres.replicas import Leadership
    store = PostgresStore(sys.argv[1])
    leader = Leadership(store, "poller", holder="killed-replica")
    def cycle(stop):
        print("polling", flush=True)
        return 0.2
    leader.run(threading.Event(), 0.2, cycle)
""")


def test_poller_leadership_moves_within_one_interval_when_its_process_is_killed(
        store: PostgresStore, pg_database: str, tmp_path: Path) -> None:
    script = tmp_path / "holder.py"
    script.write_text(_HOLDER)
    holder = subprocess.Popen([sys.executable, str(script), pg_database],
                              stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).parents[2],
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    try:
        assert holder.stdout.readline().strip() == "polling"
        with _Replica(store, "survivor") as survivor:
            time.sleep(INTERVAL * 2)
            assert survivor.polls == 0
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(10)
            tries = survivor.leader.tries
            _wait(lambda: survivor.polls >= 1)
            assert survivor.leader.tries - tries <= 2  # within one poll interval
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert [h for h, _ in leader_log(store)] == ["killed-replica", "survivor"]


def test_the_write_budget_counts_every_replicas_writes(pg_database: str) -> None:
    one, two = PostgresStore(pg_database), PostgresStore(pg_database)
    first = SharedWriteBudget(one, per_minute=3, per_hour=100, spacing=0.0)
    second = SharedWriteBudget(two, per_minute=3, per_hour=100, spacing=0.0)
    assert first.wait() == 0.0
    first.spend()
    second.spend()
    assert first.wait() == 0.0 and second.wait() == 0.0
    first.spend()  # 3 writes in the minute, from two replicas
    assert 55.0 < second.wait() <= 60.0 and 55.0 < first.wait() <= 60.0
    one.close()
    two.close()


def test_writes_are_spaced_a_second_apart_across_replicas(pg_database: str) -> None:
    one, two = PostgresStore(pg_database), PostgresStore(pg_database)
    # a long spacing, so the check holds however slowly this machine runs
    SharedWriteBudget(one, spacing=60.0).spend()
    assert 50.0 < SharedWriteBudget(two, spacing=60.0).wait() <= 60.0
    one.close()
    two.close()


def test_a_rate_limit_one_replica_hit_stops_the_others_without_a_request(
        pg_database: str) -> None:
    one, two = PostgresStore(pg_database), PostgresStore(pg_database)
    first = SharedRateGuard(one, "core", max_wait=900)
    second = SharedRateGuard(two, "core", max_wait=900)
    second.check()  # open
    reset = datetime.now(UTC) + timedelta(minutes=5)
    first.close(reset)
    with pytest.raises(RateLimited) as caught:
        second.check()
    assert abs((caught.value.reset_at - reset).total_seconds()) < 1
    second.clear()
    first.check()
    one.close()
    two.close()


def test_the_clients_are_built_with_shared_guards_on_postgresql_only(
        pg_database: str, tmp_path: Path) -> None:
    """Issue 20 §2: the guards are given when the clients are built (no swap at run time):
    shared through the database where the store declares itself shared, else each
    process's own."""
    from bridges.github.client import GitHubClient, RateGuard
    from bridges.github.graphql import GraphQLClient
    from bridges.postgres.replicas import rate_guards
    from engine.store.sqlite import SqliteStore

    one, two = PostgresStore(pg_database), PostgresStore(pg_database)
    local = SqliteStore(tmp_path / "loopgate.db")
    try:
        rest = GitHubClient("http://127.0.0.1:9", "t", guards=rate_guards(one))
        graphql = GraphQLClient("http://127.0.0.1:9/graphql", "t", guards=rate_guards(two))
        assert isinstance(rest.guard, SharedRateGuard) and rest.guard.resource == "core"
        assert isinstance(graphql.guard, SharedRateGuard)
        assert graphql.guard.resource == "graphql"
        rest.guard.close(datetime.now(UTC) + timedelta(minutes=5))
        other = SharedRateGuard(two, "core", max_wait=900)  # another replica sees it
        with pytest.raises(RateLimited):
            other.check()
        other.clear()
        alone = GitHubClient("http://127.0.0.1:9", "t", guards=rate_guards(local))
        assert type(alone.guard) is RateGuard and rate_guards(local) is RateGuard
    finally:
        one.close()
        two.close()
        local.close()

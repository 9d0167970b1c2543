"""The replica fault test (issue 15, "Benchmark and fault test"), at test scale: three
``loopgate serve`` replicas on one PostgreSQL behind a round-robin sender, the scripted
mixed deliveries (tests/e2e/replicas.py) over 20 items with 10% sent twice to different
replicas, the poller's leader SIGKILLed mid-run and restarted. Every item ends exactly as in
a single-process SQLite run of the same script (``check --all --format json``), no comment
is posted twice (counted by marker), and poller leadership moved once. The 1,000-delivery
run with its figures is bench/replicas_bench.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.e2e.replicas import DELIVERIES_PER_ITEM, Cluster, normalized, run_script
from tests.e2e.stack import REPO
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack
from tests.pgserver import PASSWORD, PgServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

ITEMS = 20
LEASE_S = 3
RIG = {"LOOPGATE_GITHUB_WRITE_BUDGET": "100000/1000000",
       "LOOPGATE_INBOX_LEASE_SECONDS": str(LEASE_S)}


@pytest.fixture
def fakes() -> Iterator[tuple[FakeGitHub, FakeSlack]]:
    with FakeGitHub() as gh, FakeSlack() as slack:
        gh.create_repo(REPO)
        yield gh, slack


def test_three_replicas_with_a_sigkill_end_exactly_as_one_sqlite_process(
        tmp_path: Path, pg_server: PgServer, fakes: tuple[FakeGitHub, FakeSlack]) -> None:
    with FakeGitHub() as gh_single, FakeSlack() as slack_single:
        gh_single.create_repo(REPO)
        single = Cluster(tmp_path / "sqlite", gh_single, slack_single, 1, env=RIG).start()
        try:
            alone_run = run_script(single, gh_single, ITEMS)
        finally:
            single.stop()
    gh, slack = fakes
    name = pg_server.create_database()
    cluster = Cluster(tmp_path / "pg", gh, slack, 3, database_url=pg_server.url(name),
                      password=PASSWORD, env=RIG).start()
    try:
        run = run_script(cluster, gh, ITEMS, kill_at=0.4, restart_after=LEASE_S + 0.5)
        with psycopg.connect(pg_server.conninfo(name)) as conn:
            holders = [r[0] for r in conn.execute(
                "SELECT holder FROM loopgate_leader_log WHERE role = 'poller' ORDER BY n")]
    finally:
        codes = cluster.stop()
        print(cluster.logs())
        pg_server.drop_database(name)
    replicated, doc, alone, alone_doc = run.script, run.doc, alone_run.script, alone_run.doc
    assert replicated.sent == alone.sent == ITEMS * DELIVERIES_PER_ITEM
    assert replicated.duplicates > 0
    assert cluster.servers[0].earlier, "the leader was killed and started again"
    assert normalized(doc, replicated.numbers) == normalized(alone_doc, alone.numbers)
    markers = replicated.markers()
    assert markers == alone.markers()  # the same comments, item by item
    assert all(count == 1 for found in markers.values() for count in found.values())
    assert len(holders) == 2 and holders[0] != holders[1]  # leadership moved once
    assert codes == [0, 0, 0]
    assert "Traceback" not in cluster.logs()

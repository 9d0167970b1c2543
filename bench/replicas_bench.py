"""Replicas benchmark and fault run (issue 15, "Benchmark and fault test"). Not run by the
tests (tests/e2e/test_e2e_replicas_fault.py is the same run at 20 items).

The scripted mixed deliveries of tests/e2e/replicas.py — per item: start label, execute
reply, an approval at a node that does not take it, an unauthorized reply, a hide/unhide
edit; 10% sent a second time to a different replica — over ``--items`` work items
(default 200: 1,000 deliveries), against the loopback fake GitHub and fake Slack:

1. one ``loopgate serve`` on SQLite (the reference);
2. one replica on PostgreSQL;
3. three replicas on one PostgreSQL behind the round-robin sender, the poller's leader
   SIGKILLed 40% into the run and started again.

For each: deliveries per second (deliveries ÷ time from the first delivery until every item
settled with nothing owed) and the webhook ack p99. For run 3: every item ends as in run 1
(``check --all --format json``, times and ids taken out), no marker posted twice, and how
often poller leadership moved. GitHub's write budget and spacing are lifted for the run
(test-rig knobs), so the figures are loopgate's own, not GitHub's pacing.

Prints a Markdown table. Usage: ``.venv/bin/python bench/replicas_bench.py [--items 200]``
(needs PostgreSQL's binaries, as the tests do).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.*

import psycopg  # noqa: E402

from tests.e2e.replicas import Cluster, Outcome, normalized, run_script  # noqa: E402
from tests.e2e.stack import REPO  # noqa: E402
from tests.fakes.github import FakeGitHub  # noqa: E402
from tests.fakes.slack import FakeSlack  # noqa: E402
from tests.pgserver import PASSWORD, find_bindir, start_server  # noqa: E402

LEASE_S = 5
RIG = {"LOOPGATE_GITHUB_WRITE_BUDGET": "1000000/10000000",
       "LOOPGATE_INBOX_LEASE_SECONDS": str(LEASE_S)}


def _leaders(conninfo: str) -> list[tuple[str, str]]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT holder, at FROM loopgate_leader_log "
                            "WHERE role = 'poller' ORDER BY n").fetchall()


def _run(root: Path, replicas: int, items: int, url: str = "", kill: bool = False,
         conninfo: str = "") -> tuple[Outcome, Cluster, list[tuple[str, str]]]:
    with FakeGitHub() as gh, FakeSlack() as slack:
        gh.create_repo(REPO)
        cluster = Cluster(root, gh, slack, replicas, database_url=url, password=PASSWORD,
                          env=RIG).start()
        try:
            outcome = run_script(cluster, gh, items, kill_at=0.4 if kill else None,
                                 restart_after=LEASE_S + 0.5, settle_timeout=1800)
            outcome.script.markers_found = outcome.script.markers()  # type: ignore[attr-defined]
            # read before the stop: a replica stopping hands the poller on, which counts
            # as a move of the shutdown, not of the run
            leaders = _leaders(conninfo) if conninfo else []
        finally:
            cluster.stop()
    return outcome, cluster, leaders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    args = parser.parse_args()
    bindir = find_bindir()
    if bindir is None:
        sys.exit("no PostgreSQL binaries: apt-get install -y postgresql")
    server = start_server(bindir)
    root = Path(tempfile.mkdtemp(prefix="loopgate-replicas-bench-"))
    try:
        single, _, _ = _run(root / "sqlite", 1, args.items)
        one_db = server.create_database()
        one, _, _ = _run(root / "pg1", 1, args.items, server.url(one_db))
        three_db = server.create_database()
        three, cluster, log = _run(root / "pg3", 3, args.items, server.url(three_db),
                                   kill=True, conninfo=server.conninfo(three_db))
        holders = [h for h, _ in log]
    finally:
        server.stop()
    same = normalized(three.doc, three.script.numbers) == normalized(single.doc,
                                                                     single.script.numbers)
    markers = three.script.markers_found  # type: ignore[attr-defined]
    twice = sum(1 for found in markers.values() for count in found.values() if count > 1)
    print("| run | deliveries (2nd sends) | deliveries/s | ack p99 |")
    print("|---|---|---|---|")
    for name, run in (("1 serve, SQLite", single), ("1 replica, PostgreSQL", one),
                      ("3 replicas, PostgreSQL, leader SIGKILLed + restarted", three)):
        print(f"| {name} | {run.script.sent} ({run.script.duplicates}) | "
              f"{run.per_second:.1f} | {run.script.p99_ms():.1f} ms |")
    print(f"\n3 vs 1 replica on PostgreSQL: deliveries/s ×{three.per_second / one.per_second:.2f},"
          f" ack p99 ×{three.script.p99_ms() / one.script.p99_ms():.2f}")
    print(f"items as in the SQLite run: {same}; markers posted twice: {twice}; "
          f"poller leadership moves: {len(holders) - 1}; failovers: {three.script.failovers}; "
          f"Tracebacks: {cluster.logs().count('Traceback')}")
    print("poller leaders: " + ", ".join(f"{h} at {a}" for h, a in log))
    for line in cluster.logs().splitlines():
        if "leadership" in line or "SIGTERM" in line:
            print(line)


if __name__ == "__main__":
    main()

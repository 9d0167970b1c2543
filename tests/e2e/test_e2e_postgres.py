"""``loopgate serve`` on PostgreSQL (issue 15): the scenario-1 walk with two replicas on one
database — webhooks alternate between them, a redelivery goes to the other replica — ends
exactly as on SQLite: the item complete, no comment posted twice (counted by marker),
one poller for both."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
import yaml

from tests.e2e import expect
from tests.e2e.stack import GITHUB_SECRET, REPO, Home, ServeProcess, Walk
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack
from tests.pgserver import PASSWORD, PgServer

pytestmark = pytest.mark.e2e


@dataclass
class ReplicaWalk(Walk):
    """A walk whose webhooks go round-robin to every replica; each delivery is also sent
    again to the next replica (GitHub redelivering to another instance behind the URL)."""

    replicas: list[ServeProcess] = field(default_factory=list)
    sent: int = 0

    def webhook(self, event: str, action: str, *, number: int | None = None,
                wait: bool = True, **kwargs: Any) -> requests.Response:
        self.server = self.replicas[self.sent % len(self.replicas)]
        self.sent += 1
        headers, body = self.gh.webhook(event, action, repo=REPO,
                                        number=number or self.number, secret=GITHUB_SECRET,
                                        **kwargs)
        first = requests.post(f"{self.server.url}/github/webhook", data=body,
                              headers=headers, timeout=10)
        again = self.replicas[self.sent % len(self.replicas)]
        second = requests.post(f"{again.url}/github/webhook", data=body, headers=headers,
                               timeout=10)
        assert first.status_code == 202, first.text
        # the other replica sees it kept and in hand (or handled): a duplicate, not queued
        assert (second.status_code, second.json()["status"]) == (200, "duplicate")
        delivery = headers["X-GitHub-Delivery"]
        self.deliveries.append(delivery)
        if wait:
            self.server.wait_log(f"delivery={delivery} ")
        return first


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)


@pytest.mark.parametrize("gh", ["token"], indirect=True)
def test_two_replicas_on_postgresql_walk_a_work_item_with_nothing_doubled(
        tmp_path: Path, gh: FakeGitHub, slack: FakeSlack, pg_url: str,
        pg_server: PgServer) -> None:
    homes = [Home(tmp_path / f"replica-{i}", gh, slack, poll_interval=1,
                  database_url=pg_url, database_password=PASSWORD) for i in range(2)]
    for home in homes:
        home.root.mkdir(parents=True)
        home.write()
        # One checkout for both replicas (as one shared volume behind a deployment).
        config = yaml.safe_load(home.config.read_text("utf-8"))
        config["workspace"] = str(homes[0].workspace)
        home.config.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    servers = [ServeProcess(home).start() for home in homes]
    try:
        walk = ReplicaWalk(homes[0], servers[0], webhooks=True, replicas=servers)
        try:
            expect.walk_to_human_approval(walk)
        except AssertionError:
            with psycopg.connect(pg_server.conninfo(pg_url.rsplit("/", 1)[1])) as conn:
                for row in conn.execute("SELECT id, kind, status, attempts, last_error, "
                                        "claimed_by, data FROM effects ORDER BY id"):
                    print("EFFECT", row)
                for row in conn.execute("SELECT seq, kind, data FROM events ORDER BY seq"):
                    print("EVENT", row)
            raise
        expect.complete(walk, walk.approve_to_complete())
        with psycopg.connect(pg_server.conninfo(pg_url.rsplit("/", 1)[1])) as conn:
            holders = [r[0] for r in conn.execute(
                "SELECT holder FROM loopgate_leader_log WHERE role = 'poller'")]
        assert len(holders) == 1  # one poller for both replicas, never moved
        assert not any(PASSWORD in s.log() for s in servers)
    finally:
        codes = [s.stop() for s in servers]
        for server in servers:
            print(f"--- replica stderr ---\n{server.log()}")
    assert codes == [0, 0]
    assert not any("Traceback" in s.log() for s in servers)

"""The webhook inbox, one suite over its SQLite file, memory and PostgreSQL: what a put finds, owed
deliveries in arrival order, the handled cap; the file lives beside the state database,
survives a reopen, and takes over rows an older loopgate kept in the state database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bridges.ingress import inbox as inbox_module
from bridges.ingress.bridge_state import SqliteBridgeState
from bridges.ingress.inbox import (
    HANDLED,
    NEW,
    OWED,
    InboxEntry,
    InboxError,
    MemoryInbox,
    SqliteInbox,
    WebhookInbox,
    adopt_legacy_inbox,
    inbox_path,
    webhook_inbox,
)
from engine.store.memory import MemoryStore
from engine.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def inbox(request: pytest.FixtureRequest, tmp_path: Path) -> WebhookInbox:
    if request.param == "memory":
        return MemoryInbox()
    if request.param == "postgresql":  # issue 15 §2: shared by replicas
        from bridges.postgres.store import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_database"))
        request.addfinalizer(store.close)
        return webhook_inbox(store)
    kept = SqliteInbox(tmp_path / "loopgate.db.inbox.db")
    request.addfinalizer(kept.close)
    return kept


def test_a_put_says_whether_the_delivery_is_new_owed_or_handled(inbox: WebhookInbox) -> None:
    assert inbox.put("guid-1", "issues", b'{"action": "labeled"}') == NEW
    assert inbox.put("guid-1", "issues", b"a second put keeps the first") == OWED
    inbox.done("guid-1", "handled")
    assert inbox.put("guid-1", "issues", b"a redelivery") == HANDLED
    assert inbox.owed() == []


def test_the_backlog_counts_what_is_owed_and_since_when(inbox: WebhookInbox) -> None:
    # Issue 13 (/readyz, /metrics) through the declared WebhookInbox.backlog (issue 20 §2).
    assert inbox.backlog() == (0, "")
    before = datetime.now(UTC)
    inbox.put("guid-1", "issues", b"{}")
    inbox.put("guid-2", "issues", b"{}")
    inbox.done("guid-1", "handled")
    count, oldest = inbox.backlog()
    assert count == 1
    if isinstance(inbox, MemoryInbox):
        assert oldest == ""  # memory keeps no arrival times
    else:  # ISO-8601 UTC with microseconds, when guid-2 arrived
        at = datetime.strptime(oldest, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert before - timedelta(seconds=1) <= at <= datetime.now(UTC)
    inbox.done("guid-2", "handled")
    assert inbox.backlog() == (0, "")


def test_owed_deliveries_come_back_in_arrival_order_until_done(inbox: WebhookInbox) -> None:
    inbox.put("guid-2", "issue_comment", b'{"action": "edited"}')
    inbox.put("guid-1", "issues", b'{"action": "labeled"}')
    inbox.put("guid-3", "issue_comment", b'{"action": "created"}')
    inbox.done("guid-1", "duplicate")
    inbox.done("guid-9", "handled")  # never kept: nothing to do
    assert inbox.owed() == [InboxEntry("guid-2", "issue_comment", b'{"action": "edited"}'),
                            InboxEntry("guid-3", "issue_comment", b'{"action": "created"}')]


def test_only_the_newest_handled_deliveries_are_remembered(
        inbox: WebhookInbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inbox_module, "HANDLED_CAP", 2)
    for n in range(1, 5):
        inbox.put(f"guid-{n}", "issues", b"{}")
    inbox.put("guid-owed", "issues", b"{}")
    for n in range(1, 5):
        inbox.done(f"guid-{n}", "handled")
    # remembered while among the newest 2 arrivals (4 and the owed 5): 1 to 3 are forgotten
    assert [inbox.put(f"guid-{n}", "issues", b"{}") for n in range(1, 5)] == [
        NEW, NEW, NEW, HANDLED]
    assert inbox.put("guid-owed", "issues", b"{}") == OWED  # an owed one is never dropped


def test_the_inbox_file_lives_beside_the_database_and_survives_a_reopen(
        tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state" / "loopgate.db")
    first = webhook_inbox(store)
    assert isinstance(first, SqliteInbox)
    assert first.path == tmp_path / "state" / "loopgate.db.inbox.db"
    assert inbox_path(store.path) == first.path
    first.put("guid-1", "issues", b'{"a": 1}')
    first.put("guid-2", "issues", b'{"a": 2}')
    first.done("guid-2", "handled")
    first.close()
    again = SqliteInbox(first.path)
    assert again.owed() == [InboxEntry("guid-1", "issues", b'{"a": 1}')]
    assert again.put("guid-2", "issues", b"{}") == HANDLED
    again.close()
    store.close()
    assert isinstance(webhook_inbox(MemoryStore()), MemoryInbox)


def test_a_closed_inbox_refuses_instead_of_touching_a_closed_connection(tmp_path: Path) -> None:
    kept = SqliteInbox(tmp_path / "loopgate.db.inbox.db")
    kept.close()
    with pytest.raises(InboxError, match="closed"):
        kept.put("guid-1", "issues", b"{}")


def test_rows_an_older_loopgate_kept_in_the_state_database_are_moved(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db")
    SqliteBridgeState(store)  # its migrations create the legacy github_inbox table
    with store.writing() as db:
        db.conn.executemany(
            "INSERT INTO github_inbox (delivery_id, event, body, received_at) "
            "VALUES (?, ?, ?, ?)", [("old-1", "issues", b"{1}", "2026-01-01T00:00:00Z"),
                                    ("old-2", "issue_comment", b"{2}", "2026-01-01T00:00:01Z")])
    kept = webhook_inbox(store)
    kept.put("old-2", "issue_comment", b"{2}")  # a crash after copying, before deleting
    assert adopt_legacy_inbox(store, kept) == 2
    assert kept.owed() == [InboxEntry("old-2", "issue_comment", b"{2}"),
                           InboxEntry("old-1", "issues", b"{1}")]
    assert store.db().execute("SELECT COUNT(*) FROM github_inbox").fetchone() == (0,)
    assert adopt_legacy_inbox(store, kept) == 0
    kept.close()
    store.close()

"""The Slack bot's tables on both backends (issue 15 §1-2): the outbox (written inside the
engine's transaction, claimed by one worker), threads, links and codes behave the same on
SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.slack.notifier import OutboxNotifier
from bot.slack.slack_identity import (
    confirm_link_from_comment,
    create_link_code,
    resolve_login,
    slack_users_for_login,
    unlink,
)
from bot.slack.slack_schema import ensure_slack_tables
from bot.slack.slack_tables import SlackOutbox, load_thread, save_thread
from engine.ports import Comment
from engine.refs import WorkItemRef
from engine.store.base import SqlSession, SqlTables
from engine.store.sqlite import SqliteStore

REF = WorkItemRef("acme", "widgets", 7)
OTHER = WorkItemRef("acme", "widgets", 8)
NOW = "2026-03-01T12:00:00Z"
LATER = "2026-03-01T12:02:00Z"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgresql":
        from bridges.postgres.store import PostgresStore

        pg = PostgresStore(request.getfixturevalue("pg_database"))
        yield pg
        pg.close()
        return
    sqlite = SqliteStore(tmp_path / "loopgate.db")
    yield sqlite
    sqlite.close()


def test_both_stores_offer_the_declared_sql_tables_protocol(store: Any) -> None:
    assert isinstance(store, SqlTables) and isinstance(store.db(), SqlSession)
    ensure_slack_tables(store)
    with store.writing() as db:
        assert isinstance(db, SqlSession)
        db.execute("INSERT INTO slack_links (slack_user, github_login, linked_at, via) "
                   "VALUES (?, ?, ?, ?)", ("U1", "alice", NOW, "test"))
    assert store.db().execute("SELECT github_login FROM slack_links WHERE slack_user = ?",
                              ("U1",)).fetchone() == ("alice",)


def _outbox(store: Any) -> list[tuple[Any, ...]]:
    return store.db().execute("SELECT item, event, data FROM slack_outbox ORDER BY id"
                              ).fetchall()


def test_a_notice_commits_and_rolls_back_with_the_item_transaction(store: Any) -> None:
    notifier = OutboxNotifier(store)
    with store.transaction(REF) as tx:
        tx.create("loop")
        notifier.send(REF, "quiz-pending", {"node": "spec-quiz"})
    with pytest.raises(RuntimeError), store.transaction(REF):
        notifier.send(REF, "never-sent", {})
        raise RuntimeError("the transition did not happen")
    assert _outbox(store) == [(str(REF), "quiz-pending", '{"node": "spec-quiz"}')]


def test_an_outbox_row_is_claimed_by_one_worker_until_its_claim_runs_out(store: Any) -> None:
    OutboxNotifier(store).send(REF, "quiz-pending", {})
    (row_id,) = store.db().execute("SELECT id FROM slack_outbox").fetchone()
    assert SlackOutbox(store).claim(row_id, "replica-1", "2026-03-01T12:01:00Z", NOW)
    assert not SlackOutbox(store).claim(row_id, "replica-2", "2026-03-01T12:01:00Z", NOW)
    assert SlackOutbox(store).claim(row_id, "replica-1", "2026-03-01T12:03:00Z", NOW)  # renew
    assert SlackOutbox(store).claim(row_id, "replica-2", "2026-03-01T12:09:00Z",
                            "2026-03-01T12:05:00Z")  # replica-1's claim ran out
    with store.writing() as db:
        db.execute("UPDATE slack_outbox SET sent_at = ? WHERE id = ?", (LATER, row_id))
    assert not SlackOutbox(store).claim(row_id, "replica-3", "2026-03-01T13:00:00Z",
                                "2026-03-01T12:59:00Z")  # sent: nobody takes it again


def test_a_thread_round_trips_and_keeps_its_author_when_none_is_given(store: Any) -> None:
    assert load_thread(store, REF) is None
    save_thread(store, REF, channel="C1", ts="1.1", revision=1, kind="card", author="alice")
    save_thread(store, REF, channel="C1", ts="1.2", revision=2, kind="status", node="design")
    assert load_thread(store, REF) == {"channel": "C1", "ts": "1.2", "revision": 2,
                                       "kind": "status", "node": "design", "author": "alice"}


class _Clock:
    def now(self) -> datetime:
        return datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class _Config:
    def section(self, name: str) -> dict[str, Any]:
        return {"github": {"repos": ["acme/widgets"]},
                "slack": {"identities": {"UCONF": "carol"}}}.get(name, {})


def test_links_and_codes_behave_the_same(store: Any) -> None:
    services = SimpleNamespace(store=store, config=_Config(),
                               ports=SimpleNamespace(clock=_Clock()))
    code = create_link_code(services, "UALICE", "@Alice")
    comment = Comment(id=5, author="alice", body=f"loopgate link {code.code}",
                      created_at=NOW, updated_at=NOW)
    wrong = Comment(id=6, author="mallory", body=f"loopgate link {code.code}",
                    created_at=NOW, updated_at=NOW)
    assert confirm_link_from_comment(services, REF, wrong) is None
    assert confirm_link_from_comment(services, REF, comment) == "UALICE"
    assert confirm_link_from_comment(services, REF, comment) is None  # a code is used once
    assert resolve_login(services, "UALICE") == "alice"
    assert resolve_login(services, "UCONF") == "carol"
    assert slack_users_for_login(services, "alice") == ["UALICE"]
    assert unlink(services, "UALICE") is True and unlink(services, "UALICE") is False
    assert resolve_login(services, "UALICE") is None


def test_the_readiness_check_reads_the_slack_outbox_on_both_backends(store: Any) -> None:
    # issue 13 x issue 15: /readyz and /metrics read the Slack outbox's depth and oldest
    # age on PostgreSQL too (it was read through sqlite-utils' table API there and failed)
    from bot.ops.health import Backlog, _slack_backlog

    ensure_slack_tables(store)
    now = datetime(2026, 3, 1, 12, 10, 0, tzinfo=UTC)
    assert _slack_backlog(store, now) == Backlog(0)
    with store.writing() as db:
        db.execute("INSERT INTO slack_outbox (item, event, data, created_at, "
                   "next_attempt_at) VALUES (?, ?, ?, ?, ?)",
                   (str(REF), "quiz-pending", "{}", NOW, NOW))
    assert _slack_backlog(store, now) == Backlog(1, 600.0)


def test_the_listeners_reads_and_writes_behave_the_same_on_both_backends(store: Any) -> None:
    """Issue 20 §2: the listeners' SQL lives in bot.slack.slack_tables (one set of statements
    for SQLite and PostgreSQL): a card redraw owed, an approval message's revision and
    done state, the threads' recorded authors."""
    from bot.slack.slack_tables import (
        approval_message_revision,
        card_redraw_owed,
        homes,
        mark_approval_message_done,
        save_home,
        thread_authors,
    )

    ensure_slack_tables(store)
    assert not card_redraw_owed(store, REF)
    OutboxNotifier(store).send(REF, "phase-selection-changed", {"node": "phase-selection"})
    assert card_redraw_owed(store, REF) and not card_redraw_owed(store, OTHER)

    assert approval_message_revision(store, REF, "design", "C1", "1.5") is None
    with store.writing() as db:
        db.execute("INSERT INTO slack_messages (item, node, kind, slack_user, channel, ts, "
                   "revision, data) VALUES (?, ?, 'approval', '', ?, ?, 2, '{}')",
                   (str(REF), "design", "C1", "1.5"))
    assert approval_message_revision(store, REF, "design", "C1", "1.5") == 2
    assert approval_message_revision(store, REF, "design", "C1", "9.9") is None
    mark_approval_message_done(store, REF, "design", "C1", "1.5", revision=3, gate="g")
    (revision, data), = store.db().execute(
        "SELECT revision, data FROM slack_messages WHERE item = ?", (str(REF),)).fetchall()
    assert (revision, json.loads(data)) == (3, {"gate": "g", "state": "done"})

    assert homes(store) == []
    save_home(store, "U1", "alice", [str(REF)])
    save_home(store, "U1", "alice", [str(REF), str(OTHER)])  # replaced, not added
    assert homes(store) == [("U1", {"login": "alice", "items": [str(REF), str(OTHER)]})]

    save_thread(store, REF, channel="C1", ts="1.0", revision=1, kind="card",
                author="Carol")
    save_thread(store, OTHER, channel="C1", ts="2.0", revision=1, kind="card")
    assert thread_authors(store) == {str(REF): "Carol"}


def test_the_outbox_backlog_of_a_sqlite_file_before_the_bot_made_its_tables_is_empty(
        tmp_path: Path) -> None:
    from bot.slack.slack_tables import outbox_backlog

    fresh = SqliteStore(tmp_path / "fresh.db")
    try:
        assert outbox_backlog(fresh) == (0, "")
        ensure_slack_tables(fresh)
        OutboxNotifier(fresh).send(REF, "gate-waiting", {"node": "design"})
        count, oldest = outbox_backlog(fresh)
        assert count == 1 and oldest.endswith("Z")
    finally:
        fresh.close()


def test_the_workers_outbox_and_messages_behave_the_same_on_both_backends(store: Any) -> None:
    """Issue 20 §2: what the Slack worker reads and writes, through bot.slack.slack_tables."""
    from bot.slack.slack_tables import (
        mark_outbox_failed,
        mark_outbox_retry,
        mark_outbox_sent,
        node_messages,
        open_approval_items,
        pending_outbox_rows,
        reminder_record,
        save_message,
    )

    ensure_slack_tables(store)
    notifier = OutboxNotifier(store)
    for event in ("gate-waiting", "item-started", "gate-passed"):
        notifier.send(REF, event, {"node": "design"})
    rows = pending_outbox_rows(store)
    assert [r[2] for r in rows] == ["gate-waiting", "item-started", "gate-passed"]
    first, second, third = (r[0] for r in rows)
    assert SlackOutbox(store).claim(first, "me", LATER, NOW)
    mark_outbox_sent(store, first, LATER)
    mark_outbox_retry(store, second, 1, LATER, "timeout")
    mark_outbox_failed(store, third, LATER, 5, "channel_not_found")
    assert [(r[0], r[4], r[5]) for r in pending_outbox_rows(store)] == [(second, 1, LATER)]
    assert SlackOutbox(store).claim(first, "other", LATER, NOW) is False  # sent: no claim

    save_message(store, REF, "design", "approval", "", "C1", "1.5", 1,
                 {"state": "open", "gate": "g"})
    save_message(store, REF, "design", "reminder", "U1", "D1", "2.5", 0, {"gate": "g"})
    assert open_approval_items(store) == [str(REF)]
    assert reminder_record(store, REF, "design", "U1") == {"gate": "g"}
    assert reminder_record(store, REF, "design", "U2") is None
    assert [(m["kind"], m["slack_user"], m["data"]) for m in node_messages(store, REF,
                                                                           "design")] == [
        ("approval", "", {"gate": "g", "state": "open"}), ("reminder", "U1", {"gate": "g"})]
    save_message(store, REF, "design", "approval", "", "C1", "1.5", 2,
                 {"state": "done", "gate": "g"})
    assert open_approval_items(store) == []

"""Issue 20 §2: the schema is written twice — SQLite migrations (engine, GitHub bridge,
inbox, Slack bot) and PostgreSQL's by hand (``bridges/postgres/migrate.py``) — so this
test proves the two equal where they share a table: the same tables, with the same
columns in the same order. What only one backend has is named here, with why."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from bot.slack.slack_schema import ensure_slack_tables
from bridges.ingress.bridge_state import SqliteBridgeState
from bridges.ingress.inbox import SqliteInbox
from bridges.postgres.store import PostgresStore
from engine.store.sqlite import SqliteStore

#: Only on SQLite: the migrations' bookkeeping; the offline thread's comments (the local
#: tracker, used without a github section); the pre-issue-10 inbox table kept so
#: adopt_legacy_inbox can move its rows.
SQLITE_ONLY = {"_sqlite_migrations", "sqlite_sequence", "comments", "comment_edits",
               "github_inbox"}
#: Only on PostgreSQL: the migrations' bookkeeping; the item row locks (SQLite locks the
#: file); what replicas share (issue 15 §3: write pacing, rate guard, poller leader).
POSTGRES_ONLY = {"loopgate_migrations", "item_locks", "github_writes", "github_rate_guard",
                 "loopgate_leaders", "loopgate_leader_log"}
#: Columns only PostgreSQL's table has: ``n`` orders rows as SQLite's implicit rowid does
#: (the oldest forgotten first); the inbox's replica claim (issue 15 §3).
POSTGRES_EXTRA_COLUMNS = {"github_seen": ["n"], "github_deliveries": ["n"],
                          "inbox": ["n", "claimed_by", "claimed_until"]}


def _sqlite_columns(tmp_path: Path) -> dict[str, list[str]]:
    store = SqliteStore(tmp_path / "loopgate.db")
    try:
        SqliteBridgeState(store)
        ensure_slack_tables(store)
        SqliteInbox(tmp_path / "loopgate.db.inbox.db").close()
        out: dict[str, list[str]] = {}
        for path in (tmp_path / "loopgate.db", tmp_path / "loopgate.db.inbox.db"):
            with sqlite3.connect(path) as conn:
                names = [r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")]
                for name in names:
                    out[name] = [r[1] for r in conn.execute(f"PRAGMA table_info({name})")]
        return out
    finally:
        store.close()


def _postgres_columns(conninfo: str) -> dict[str, list[str]]:
    PostgresStore(conninfo).close()  # migrates every set at open
    out: dict[str, list[str]] = {}
    with psycopg.connect(conninfo) as conn:
        for table, column in conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"):
            out.setdefault(table, []).append(column)
    return out


def test_both_backends_have_the_same_tables_and_columns(tmp_path: Path,
                                                       pg_database: str) -> None:
    lite, pg = _sqlite_columns(tmp_path), _postgres_columns(pg_database)
    assert set(lite) - set(pg) == SQLITE_ONLY
    assert set(pg) - set(lite) == POSTGRES_ONLY
    extra = {t: [c for c in pg[t] if c in POSTGRES_EXTRA_COLUMNS.get(t, [])] for t in pg}
    assert {t: cols for t, cols in extra.items() if cols} == POSTGRES_EXTRA_COLUMNS
    differ = {t: (lite[t], pg[t]) for t in set(lite) & set(pg)
              if lite[t] != [c for c in pg[t] if c not in extra[t]]}
    assert differ == {}

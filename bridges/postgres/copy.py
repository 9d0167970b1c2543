"""``loopgate db copy``: move an existing SQLite installation onto PostgreSQL (issue 15 §4).

Every table both backends hold is copied in one PostgreSQL transaction (all or nothing):
work items and their child rows, the event log, kv, the effect outbox, the GitHub bridge's
cursors, seen keys and handled deliveries, the Slack outbox, threads, messages, links and
codes, and the webhook inbox file beside the database (``<db>.inbox.db``). Ids are kept
(event ``seq``, outbox ids) and the sequences moved past them; rows whose age order
matters (seen keys, deliveries, inbox) are inserted oldest first. The target must be
empty of work: copying twice, or over a live installation, is refused.

SQLite-only tables are not copied: the offline local tracker's thread (``comments``,
``comment_edits``: PostgreSQL serves the GitHub bridge) and the legacy ``github_inbox``
(moved into the inbox file on start).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridges.ingress.inbox import inbox_path
from engine.errors import StoreError

if TYPE_CHECKING:  # types only
    from bridges.postgres.store import PostgresStore

__all__ = ["CopyReport", "copy_sqlite_to_postgres", "TABLES"]

#: ``(table, SQLite order)`` copied, parents first; the order keeps age order for the
#: tables whose ``n`` column (PostgreSQL) stands for SQLite's rowid.
TABLES = (
    ("items", "rowid"), ("node_records", "rowid"), ("skips", "rowid"), ("opt_ins", "rowid"),
    ("decisions", "rowid"), ("completions", "rowid"), ("forced_moves", "rowid"),
    ("visits", "rowid"),
    ("events", "seq"), ("kv", "rowid"), ("effects", "id"),
    ("github_poll", "rowid"), ("github_seen", "rowid"), ("github_deliveries", "rowid"),
    ("slack_outbox", "id"), ("slack_threads", "rowid"), ("slack_messages", "rowid"),
    ("slack_links", "rowid"), ("slack_link_codes", "rowid"),
)
#: Serial columns given explicit values: their sequences are moved past the copied ids.
_SERIALS = (("events", "seq"), ("effects", "id"), ("slack_outbox", "id"))
#: SQLite tables deliberately left behind, with why.
SKIPPED = {"comments": "the offline tracker's thread", "comment_edits": "the offline "
           "tracker's thread", "github_inbox": "legacy; moved into the inbox file on start"}


@dataclass
class CopyReport:
    """What was copied: ``{table: rows}``; ``skipped``: ``{table: (rows, why)}``."""

    copied: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, tuple[int, str]] = field(default_factory=dict)


def _sqlite_tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _sqlite_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _pg_columns(db: Any, table: str) -> set[str]:
    rows = db.execute("SELECT column_name FROM information_schema.columns WHERE "
                      "table_schema = current_schema() AND table_name = ?", (table,))
    return {r[0] for r in rows}


def copy_sqlite_to_postgres(source: Path, store: PostgresStore) -> CopyReport:
    """Copy the SQLite database ``source`` (and its inbox file) into ``store``.

    Args:
        source: the SQLite state database file.
        store: an open :class:`~bridges.postgres.store.PostgresStore` (migrated).

    Returns:
        The :class:`CopyReport`.

    Raises:
        StoreError: ``source`` is missing, or the target already holds work items,
            events or outbox rows (nothing is written then).
    """
    if not source.is_file():
        raise StoreError(f"no SQLite database at {source}")
    conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    report = CopyReport()
    try:
        with store.writing() as db:
            _refuse_a_used_target(db)
            present = _sqlite_tables(conn)
            for table, order in TABLES:
                if table in present:
                    report.copied[table] = _copy_table(conn, db, table, order)
            db.execute("INSERT INTO item_locks (item) SELECT item FROM items "
                       "ON CONFLICT DO NOTHING")
            for table, column in _SERIALS:
                db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                           f"COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)")
            report.copied["inbox"] = _copy_inbox(inbox_path(source), db)
        for table, why in SKIPPED.items():
            if table in present:
                rows = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                if rows:
                    report.skipped[table] = (int(rows), why)
    finally:
        conn.close()
    return report


def _refuse_a_used_target(db: Any) -> None:
    for table in ("items", "events", "effects"):
        if db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
            raise StoreError(f"the target database already holds {table}: copy into an "
                             "empty database (a copy is not a merge)")


def _copy_table(conn: sqlite3.Connection, db: Any, table: str, order: str) -> int:
    columns = [c for c in _sqlite_columns(conn, table) if c in _pg_columns(db, table)]
    names = ", ".join(f'"{c}"' for c in columns)
    rows = conn.execute(f"SELECT {names} FROM {table} ORDER BY {order}").fetchall()
    if rows:
        marks = ", ".join("?" for _ in columns)
        db.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
    return len(rows)


def _copy_inbox(path: Path, db: Any) -> int:
    if not path.is_file():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT delivery_id, event, body, received_at, handled_at, status "
                            "FROM inbox ORDER BY rowid").fetchall()
    finally:
        conn.close()
    if rows:
        db.executemany("INSERT INTO inbox (delivery_id, event, body, received_at, handled_at, "
                       "status) VALUES (?, ?, ?, ?, ?, ?)",
                       [(i, e, bytes(b), r, h, s) for i, e, b, r, h, s in rows])
    return len(rows)

"""PostgreSQL schema as forward migrations, one history per set, applied at start.

Each migration is a name and its DDL statements; applied ones are recorded in
``loopgate_migrations (migration_set, name, applied_at)``. All pending migrations of a set
are applied in one transaction holding a transaction-scoped advisory lock, so replicas that
start together migrate once and wait for each other. Never edit an applied migration: add
a new one. (The SQLite history is ``engine.store.migrations``; the tables and columns are
the same, the types are PostgreSQL's: ``BIGSERIAL`` ids, ``TEXT`` JSON as in SQLite so
both stores share one row mapping.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

__all__ = ["Migration", "MigrationSet", "ENGINE", "apply", "applied"]

# pg_advisory_xact_lock key for "migrating" (any constant unique to loopgate).
_MIGRATE_LOCK = 0x6C6F6F70_6D696772 & 0x7FFFFFFFFFFFFFFF


@dataclass(frozen=True)
class Migration:
    """One forward step: ``name`` and the statements it runs, in order."""

    name: str
    statements: tuple[str, ...]


@dataclass(frozen=True)
class MigrationSet:
    """A named, ordered migration history (one per owner of tables)."""

    name: str
    migrations: tuple[Migration, ...]


def applied(conn: psycopg.Connection, set_name: str) -> list[str]:
    """Names of the applied migrations of ``set_name``, in the order applied."""
    _ensure_table(conn)
    rows = conn.execute("SELECT name FROM loopgate_migrations WHERE migration_set = %s "
                        "ORDER BY applied_order", (set_name,)).fetchall()
    return [r[0] for r in rows]


def _ensure_table(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS loopgate_migrations ("
                 "migration_set TEXT NOT NULL, name TEXT NOT NULL, "
                 "applied_order BIGSERIAL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
                 "PRIMARY KEY (migration_set, name))")


def apply(conn: psycopg.Connection, sets: Sequence[MigrationSet]) -> list[str]:
    """Apply every pending migration of ``sets`` in one transaction; returns their names.

    Args:
        conn: an autocommit connection (a transaction is opened here).
    """
    done: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        _ensure_table(conn)
        for mset in sets:
            have = set(applied(conn, mset.name))
            for migration in mset.migrations:
                if migration.name in have:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO loopgate_migrations (migration_set, name) "
                             "VALUES (%s, %s)", (mset.name, migration.name))
                done.append(f"{mset.name}/{migration.name}")
    return done


def _node_keyed(table: str, via: bool) -> str:
    extra = ", via TEXT" if via else ""
    return (f"CREATE TABLE {table} (item TEXT NOT NULL, node TEXT NOT NULL, ord INTEGER, "
            f"data TEXT{extra}, PRIMARY KEY (item, node))")


#: The engine's tables (items, their child rows, event log, kv, effects outbox).
ENGINE = MigrationSet("loopgate-engine", (
    Migration("0001_item_state", (
        "CREATE TABLE items (item TEXT PRIMARY KEY, owner TEXT NOT NULL, repo TEXT NOT NULL, "
        "number INTEGER NOT NULL, loop TEXT, current_node TEXT, status TEXT, parked TEXT, "
        "surface TEXT, started_at TEXT, revision INTEGER, updated_at TEXT)",
        "CREATE INDEX items_ref ON items (owner, repo, number)",
        # One row per item ever written: the row a transaction locks (FOR UPDATE), also
        # for an item that has no state yet.
        "CREATE TABLE item_locks (item TEXT PRIMARY KEY)",
        "CREATE TABLE node_records (item TEXT NOT NULL, node TEXT NOT NULL, ord INTEGER, "
        "attempts INTEGER, outcome TEXT, entered_at TEXT, exited_at TEXT, last_block TEXT, "
        "forced INTEGER, PRIMARY KEY (item, node))",
        _node_keyed("skips", True),
        _node_keyed("opt_ins", True),
        _node_keyed("decisions", False),
        _node_keyed("completions", False),
        'CREATE TABLE forced_moves (item TEXT NOT NULL, ord INTEGER NOT NULL, from_node TEXT, '
        'to_node TEXT, "by" TEXT, reason TEXT, at TEXT, data TEXT, PRIMARY KEY (item, ord))',
    )),
    Migration("0002_event_log", (
        "CREATE TABLE events (seq BIGSERIAL PRIMARY KEY, item TEXT, at TEXT, kind TEXT, "
        "data TEXT)",
        "CREATE INDEX events_item_seq ON events (item, seq)",
    )),
    Migration("0004_kv", (
        "CREATE TABLE kv (namespace TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
        "updated_at TEXT, PRIMARY KEY (namespace, key))",
    )),
    Migration("0005_effects", (
        "CREATE TABLE effects (id BIGSERIAL PRIMARY KEY, key TEXT NOT NULL UNIQUE, "
        "item TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL, status TEXT NOT NULL, "
        "attempts INTEGER NOT NULL DEFAULT 0, not_before TEXT NOT NULL DEFAULT '', "
        "last_error TEXT NOT NULL DEFAULT '', result TEXT NOT NULL DEFAULT '{}', "
        "created_at TEXT, claimed_by TEXT NOT NULL DEFAULT '', "
        "claimed_until TEXT NOT NULL DEFAULT '')",
        "CREATE INDEX effects_item_status ON effects (item, status, id)",
        "CREATE INDEX effects_status ON effects (status, id)",
    )),
))

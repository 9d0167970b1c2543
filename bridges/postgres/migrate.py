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

__all__ = ["Migration", "MigrationSet", "ENGINE", "GITHUB", "INBOX", "SLACK", "REPLICAS",
           "ALL", "apply", "applied"]

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
    # Each visit to a node with its own decision (issue 19 §2); SQLite's 0006_visits.
    Migration("0006_visits", (_node_keyed("visits", False),)),
))


#: The GitHub bridge's state (bridges/ingress/bridge_state.py): poll cursors and ETags, seen
#: keys, handled deliveries. ``n`` orders rows as SQLite's rowid does (oldest forgotten).
GITHUB = MigrationSet("loopgate-github", (
    Migration("0001_poll_seen_deliveries", (
        "CREATE TABLE github_poll (repo TEXT NOT NULL, stream TEXT NOT NULL, cursor TEXT, "
        "etag TEXT, etag_since TEXT, updated_at TEXT, PRIMARY KEY (repo, stream))",
        "CREATE TABLE github_seen (n BIGSERIAL UNIQUE, scope TEXT NOT NULL, kind TEXT NOT NULL, "
        "key TEXT NOT NULL, at TEXT, PRIMARY KEY (scope, kind, key))",
        "CREATE INDEX github_seen_order ON github_seen (scope, kind, n)",
        "CREATE TABLE github_deliveries (n BIGSERIAL UNIQUE, key TEXT PRIMARY KEY, status TEXT, "
        "at TEXT)",
    )),
))

#: The webhook inbox (bridges/ingress/inbox.py): a row per acknowledged delivery, claimed by
#: the replica handling it (``claimed_by``/``claimed_until``) so no two replicas replay it.
INBOX = MigrationSet("loopgate-inbox", (
    Migration("0001_inbox", (
        "CREATE TABLE inbox (n BIGSERIAL UNIQUE, delivery_id TEXT PRIMARY KEY, event TEXT, "
        "body BYTEA, received_at TEXT, handled_at TEXT, status TEXT, "
        "claimed_by TEXT NOT NULL DEFAULT '', claimed_until TEXT NOT NULL DEFAULT '')",
        "CREATE INDEX inbox_owed ON inbox (n) WHERE handled_at IS NULL",
    )),
))

#: The Slack bot's tables (bot/slack/slack_schema.py: outbox, threads, messages, links, codes), the
#: same columns as SQLite's ``loopgate-slack`` set, plus the outbox claim.
SLACK = MigrationSet("loopgate-slack", (
    Migration("m001_outbox_threads_identity", (
        "CREATE TABLE slack_outbox (id BIGSERIAL PRIMARY KEY, item TEXT NOT NULL, "
        "event TEXT NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL, "
        "attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at TEXT NOT NULL, "
        "sent_at TEXT, failed_at TEXT, last_error TEXT NOT NULL DEFAULT '')",
        "CREATE INDEX slack_outbox_pending ON slack_outbox (sent_at, next_attempt_at)",
        "CREATE TABLE slack_threads (item TEXT PRIMARY KEY, channel TEXT NOT NULL, "
        "ts TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, kind TEXT NOT NULL, "
        "node TEXT NOT NULL DEFAULT '', author TEXT NOT NULL DEFAULT '', "
        "updated_at TEXT NOT NULL)",
        "CREATE TABLE slack_messages (item TEXT NOT NULL, node TEXT NOT NULL, "
        "kind TEXT NOT NULL, slack_user TEXT NOT NULL DEFAULT '', channel TEXT NOT NULL, "
        "ts TEXT NOT NULL, revision INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL, "
        "PRIMARY KEY (item, node, kind, slack_user))",
        "CREATE TABLE slack_links (slack_user TEXT PRIMARY KEY, github_login TEXT NOT NULL, "
        "linked_at TEXT NOT NULL, via TEXT NOT NULL)",
        "CREATE TABLE slack_link_codes (code TEXT PRIMARY KEY, slack_user TEXT NOT NULL, "
        "github_login TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, "
        "used_at TEXT)",
    )),
    Migration("m002_outbox_claims", (
        "ALTER TABLE slack_outbox ADD COLUMN claimed_by TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE slack_outbox ADD COLUMN claimed_until TEXT NOT NULL DEFAULT ''",
    )),
))

#: What replicas share besides the work (issue 15 §3): GitHub writes sent (the write
#: budget and spacing), rate-limit guards, and which replica leads a role (the poller).
#: Times are the server's clock (epoch seconds), so replicas agree on them.
REPLICAS = MigrationSet("loopgate-replicas", (
    Migration("0001_pacing_leaders", (
        "CREATE TABLE github_writes (n BIGSERIAL PRIMARY KEY, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX github_writes_at ON github_writes (at)",
        "CREATE TABLE github_rate_guard (resource TEXT PRIMARY KEY, "
        "until_epoch DOUBLE PRECISION NOT NULL)",
        "CREATE TABLE loopgate_leaders (role TEXT PRIMARY KEY, holder TEXT NOT NULL, "
        "since TEXT NOT NULL)",
        "CREATE TABLE loopgate_leader_log (n BIGSERIAL PRIMARY KEY, role TEXT NOT NULL, "
        "holder TEXT NOT NULL, at TEXT NOT NULL)",
    )),
))

#: Every set, applied by :class:`bridges.postgres.store.PostgresStore` at open.
ALL = (ENGINE, GITHUB, INBOX, SLACK, REPLICAS)

"""The SQLite schema as forward migrations (``sqlite_utils.Migrations``, set ``loopgate-engine``).

Every table stores JSON text (never pickles). Each migration is applied once and recorded
in sqlite-utils' ``_sqlite_migrations`` table; a database written by an older loopgate is
brought forward on open. Never edit an applied migration: add a new one.

Tables (issue 2 §5):

* ``items`` — one row per work item: pointer, status, parked, surface, revision.
* ``node_records`` — attempts, outcome, enteredAt, exitedAt, lastBlock, forced per node.
* ``skips``, ``opt_ins``, ``decisions``, ``completions`` — node id -> JSON entry.
* ``forced_moves`` — the list of forced moves, in order.
* ``visits`` — node id -> the JSON list of the node's visits (issue 19 §2); ``decisions``
  is read only for items written before (no ``visits`` rows) and no longer written.
* ``events`` — the event log: ``seq, item, at, kind, data``.
* ``comments``, ``comment_edits`` — the local thread (the offline tracker).
* ``kv`` — ``(namespace, key) -> value`` JSON for bridges (labels, pull requests, polls).
* ``effects`` — the outbox of effects (issue 10): ``id, key, item, kind, data, status,
  attempts, not_before, last_error, result, created_at, claimed_by, claimed_until``.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

from engine.store.schema import MIGRATION_NAMES, MIGRATION_SET

__all__ = ["MIGRATIONS", "MIGRATION_SET", "MIGRATION_NAMES"]

MIGRATIONS = Migrations(MIGRATION_SET)

# Child tables keyed by (item, node) holding one JSON entry; ``ord`` keeps insertion order.
_NODE_KEYED = ("skips", "opt_ins", "decisions", "completions")


@MIGRATIONS(name="0001_item_state")
def _item_state(db: Database) -> None:
    db.table("items").create(
        {
            "item": str,
            "owner": str,
            "repo": str,
            "number": int,
            "loop": str,
            "current_node": str,
            "status": str,
            "parked": str,
            "surface": str,
            "started_at": str,
            "revision": int,
            "updated_at": str,
        },
        pk="item",
        not_null={"owner", "repo", "number"},
    )
    db.table("items").create_index(["owner", "repo", "number"])
    db.table("node_records").create(
        {
            "item": str,
            "node": str,
            "ord": int,
            "attempts": int,
            "outcome": str,
            "entered_at": str,
            "exited_at": str,
            "last_block": str,
            "forced": int,
        },
        pk=("item", "node"),
    )
    for table in _NODE_KEYED:
        # ``via`` is kept as a column beside the exact JSON entry so it can be queried.
        columns = {"item": str, "node": str, "ord": int, "data": str}
        if table in ("skips", "opt_ins"):
            columns["via"] = str
        db.table(table).create(columns, pk=("item", "node"))
    db.table("forced_moves").create(
        {
            "item": str,
            "ord": int,
            "from_node": str,
            "to_node": str,
            "by": str,
            "reason": str,
            "at": str,
            "data": str,
        },
        pk=("item", "ord"),
    )


@MIGRATIONS(name="0002_event_log")
def _event_log(db: Database) -> None:
    db.table("events").create(
        {"seq": int, "item": str, "at": str, "kind": str, "data": str},
        pk="seq",
    )
    db.table("events").create_index(["item", "seq"])


@MIGRATIONS(name="0003_local_thread")
def _local_thread(db: Database) -> None:
    db.table("comments").create(
        {
            "id": int,
            "item": str,
            "author": str,
            "body": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
    )
    db.table("comments").create_index(["item", "id"])
    db.table("comment_edits").create(
        {
            "id": int,
            "comment_id": int,
            "editor": str,
            "editor_type": str,
            "edited_at": str,
            "previous_body": str,
        },
        pk="id",
    )
    db.table("comment_edits").create_index(["comment_id", "id"])


@MIGRATIONS(name="0004_kv")
def _kv(db: Database) -> None:
    db.table("kv").create(
        {"namespace": str, "key": str, "value": str, "updated_at": str},
        pk=("namespace", "key"),
    )


@MIGRATIONS(name="0005_effects")
def _effects(db: Database) -> None:
    # The outbox of effects (issue 10 §1): written with the item transaction that emitted
    # them, carried out after commit. ``key`` is the idempotency key a posted comment carries.
    db.table("effects").create(
        {
            "id": int,
            "key": str,
            "item": str,
            "kind": str,
            "data": str,
            "status": str,
            "attempts": int,
            "not_before": str,
            "last_error": str,
            "result": str,
            "created_at": str,
            "claimed_by": str,
            "claimed_until": str,
        },
        pk="id",
        not_null={"key", "item", "kind", "data", "status"},
        defaults={"attempts": 0, "not_before": "", "last_error": "", "result": "{}",
                  "claimed_by": "", "claimed_until": ""},
    )
    db.table("effects").create_index(["key"], unique=True)
    db.table("effects").create_index(["item", "status", "id"])
    db.table("effects").create_index(["status", "id"])


@MIGRATIONS(name="0006_visits")
def _visits(db: Database) -> None:
    # Each visit to a node with its own decision (issue 19 §2): ``data`` is the node's
    # JSON list of visits. Items written before have none; they are read from
    # ``decisions`` and ``node_records`` (engine.visits.legacy_visits).
    db.table("visits").create({"item": str, "node": str, "ord": int, "data": str},
                        pk=("item", "node"))

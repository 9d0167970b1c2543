"""What the SQLite store's schema is made of, without sqlite-utils (issue 21 §3).

A store opened on a database whose migrations are all applied reads it with the standard
library's ``sqlite3`` alone: importing sqlite-utils (which :mod:`engine.store.migrations`
needs to apply them) cost ``check`` 0.06 s before its first item. The names here are the
migrations of :data:`engine.store.migrations.MIGRATIONS`, in order;
``tests/engine/test_store_conformance.py`` holds the two equal.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATION_SET", "MIGRATION_NAMES", "up_to_date"]

#: The engine's migration set in sqlite-utils' ``_sqlite_migrations`` table.
MIGRATION_SET = "loopgate-engine"
#: Every migration of the set, in the order they apply.
MIGRATION_NAMES = ("0001_item_state", "0002_event_log", "0003_local_thread", "0004_kv",
                   "0005_effects", "0006_visits")


def up_to_date(conn: sqlite3.Connection) -> bool:
    """True when every migration of :data:`MIGRATION_NAMES` is recorded as applied in the
    database of ``conn`` (a read; a database without the table, missing one, or that
    could not be read now, is not).

    Raises:
        sqlite3.DatabaseError: the file is not a database.
    """
    try:
        applied = {name for (name,) in conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", (MIGRATION_SET,))}
    except sqlite3.OperationalError:  # no such table yet (or busy): migrate as before
        return False
    return applied.issuperset(MIGRATION_NAMES)

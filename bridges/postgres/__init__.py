"""PostgreSQL as loopgate's shared store (issue 15): psycopg 3 with a connection pool.

Why a bridge and not ``engine/store``: the engine is pure — it imports no network code
(tests/test_layout.py) — and a PostgreSQL driver talks to a server over a socket. So, like the
GitHub bridge implementing the engine's ``Tracker`` port, this package implements the
engine's ``Store`` and ``EffectQueue`` protocols (and the bridges' state protocols) and is
chosen at start by configuration (``database: postgresql://…``). The SQL it runs for the
item tables and the outbox is the engine's own (:mod:`engine.store.rows`,
:class:`engine.store.sqlite_effects.SqlEffectQueue`), placeholders converted by
:func:`bridges.postgres.sql.to_pg`; only the schema (types, sequences) and the locking
differ, and those live here with their own migration history (:mod:`.migrate`).
"""

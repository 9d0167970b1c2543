"""The test PostgreSQL server is a real one from the machine's binaries (issue 15 §2)."""

from __future__ import annotations

import psycopg
import pytest

from tests.pgserver import PgServer


def test_the_test_server_is_real_postgresql_with_password_auth(pg_server: PgServer) -> None:
    with psycopg.connect(pg_server.conninfo()) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()[0]
    assert int(version) >= 120000
    assert str(pg_server.bindir).startswith(("/usr/lib/postgresql/", "/"))
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_server.conninfo().replace("password=", "password=wrong"))


def test_each_test_database_starts_empty(pg_database: str) -> None:
    with psycopg.connect(pg_database) as conn:
        tables = conn.execute("SELECT count(*) FROM information_schema.tables "
                              "WHERE table_schema = 'public'").fetchone()[0]
    assert tables == 0

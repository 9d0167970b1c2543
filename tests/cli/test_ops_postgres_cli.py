"""``backup`` and ``db migrate`` read a SQLite file: on PostgreSQL (issue 15) they exit 2
naming the database (never its password) and what to do instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli

URL = "postgresql://loopgate@db.internal:5432/loopgate"


@pytest.mark.parametrize(("args", "instead"), [
    (["backup", "out.db"], "back it up with pg_dump"),
    (["db", "migrate", "--check"], "applies PostgreSQL's migrations"),
])
def test_sqlite_file_commands_name_a_postgresql_database_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], instead: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PGPASSWORD", "s3cret-pg-password")
    result = CliRunner().invoke(cli, ["--db", URL, *args])
    assert result.exit_code == 2
    assert "this one is PostgreSQL loopgate@db.internal:5432/loopgate" in result.output
    assert instead in result.output
    assert "s3cret-pg-password" not in result.output
    assert not (tmp_path / "out.db").exists()

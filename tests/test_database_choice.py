"""Choosing PostgreSQL (issue 15 §1): ``database: postgresql://…`` in loopgate.yaml or
``LOOPGATE_DATABASE_URL``; the password comes from the environment and never reaches a log
line, an error or ``--help``."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.config import load_config, validate_mapping
from bot.database import DATABASE_URL_ENV, database_url, open_store
from engine.errors import ConfigError
from engine.store.sqlite import SqliteStore
from tests.pgserver import PASSWORD, PgServer

GITHUB = {"repos": ["acme/widgets"]}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOPGATE_DB", DATABASE_URL_ENV, "PGPASSWORD", "LOOPGATE_PG_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


def test_database_postgresql_url_in_loopgate_yaml_chooses_postgresql(
        pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    name = pg_server.create_database()
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    config = validate_mapping({"github": GITHUB, "database": pg_server.url(name)})
    store = open_store(config)
    try:
        assert store.backend == "postgresql"
        assert store.where == f"loopgate@127.0.0.1:{pg_server.port}/{name}"
    finally:
        store.close()
        pg_server.drop_database(name)


def test_loopgate_database_url_chooses_postgresql_with_password_env(
        pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    name = pg_server.create_database()
    monkeypatch.setenv(DATABASE_URL_ENV, pg_server.url(name))
    monkeypatch.setenv("LOOPGATE_PG_PASSWORD", PASSWORD)
    config = validate_mapping({"github": GITHUB, "database": "ignored.db",
                               "databasePasswordEnv": "LOOPGATE_PG_PASSWORD"})
    store = open_store(config)
    try:
        assert store.backend == "postgresql"
    finally:
        store.close()
        pg_server.drop_database(name)


def test_a_file_path_stays_sqlite_unchanged_for_users(tmp_path: Path) -> None:
    config = validate_mapping({"database": str(tmp_path / "state.db")})
    assert database_url(config) is None
    store = open_store(config)
    assert isinstance(store, SqliteStore) and store.path == tmp_path / "state.db"
    store.close()


def test_a_password_inside_loopgate_yaml_is_refused_without_echoing_it() -> None:
    config = validate_mapping({"github": GITHUB,
                               "database": "postgresql://bot:hunter2@db:5432/loopgate"})
    with pytest.raises(ConfigError, match="^database: the URL carries a password") as caught:
        open_store(config)
    assert "hunter2" not in str(caught.value)


def test_postgresql_without_the_github_section_is_a_config_error_naming_database() -> None:
    config = validate_mapping({"database": "postgresql://bot@db:5432/loopgate"})
    with pytest.raises(ConfigError, match="^database: PostgreSQL is for"):
        open_store(config)


def test_the_password_never_reaches_a_log_line(
        pg_server: PgServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    name = pg_server.create_database()
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    store = open_store(validate_mapping({"github": GITHUB, "database": pg_server.url(name)}))
    store.close()
    monkeypatch.setenv("PGPASSWORD", PASSWORD + "-wrong")
    with pytest.raises(Exception, match="password authentication failed") as caught:
        open_store(validate_mapping({"github": GITHUB, "database": pg_server.url(name)}))
    pg_server.drop_database(name)
    assert f"PostgreSQL loopgate@127.0.0.1:{pg_server.port}/{name}" in caplog.text
    assert PASSWORD not in caplog.text and PASSWORD not in str(caught.value)


def test_help_names_the_postgresql_database_without_the_password(
        pg_server: PgServer, tmp_path: Path) -> None:
    config = tmp_path / "loopgate.yaml"
    config.write_text(yaml.safe_dump({"github": GITHUB, "database": pg_server.url("x")}))
    env = {"PATH": "/usr/bin:/bin", "PGPASSWORD": PASSWORD,
           DATABASE_URL_ENV: pg_server.url("y", password=True)}
    loopgate = str(Path(sys.executable).parent / "loopgate")
    out = subprocess.run([loopgate, "--config", str(config), "--help"],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).parents[1],
                         check=True).stdout
    assert f"PostgreSQL loopgate@127.0.0.1:{pg_server.port}/y" in " ".join(out.split())
    assert PASSWORD not in out
    assert load_config(config).data["database"] == pg_server.url("x")

"""A PostgreSQL password never reaches the CLI's output: ``config show`` describes the
database as ``user@host:port/dbname`` and masks the URL in its settings; ``status`` never
opens a URL as a SQLite file (issue 15 §1: logs and errors name no password)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli

SECRET = "secretpw"


@pytest.fixture(autouse=True)
def _clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOPGATE_DB", "LOOPGATE_DATABASE_URL", "LOOPGATE_CONFIG", "PGPASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _run(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), *args], catch_exceptions=False)


def _config(tmp_path: Path, database: str | None) -> Path:
    file = tmp_path / "loopgate.yaml"
    lines = ["authorizedUsers: [alice]", "github:", "  repos: [acme/widgets]"]
    if database:
        lines.append(f"database: {database}")
    file.write_text("\n".join(lines) + "\n")
    return file


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_config_show_never_prints_an_inline_database_password(tmp_path: Path) -> None:
    config = _config(tmp_path, f"postgresql://u:{SECRET}@db.internal/loopgate")
    text = _run(config, "config", "show")
    assert SECRET not in text.output
    assert "postgresql:/u" not in text.output  # never a URL mangled into a path
    assert "# database: refused: database: the URL carries a password" in text.output
    assert "database: postgresql://u:***@db.internal/loopgate" in text.output
    shown = json.loads(_run(config, "config", "show", "--format", "json").output)
    assert SECRET not in json.dumps(shown)
    assert shown["settings"]["database"] == "postgresql://u:***@db.internal/loopgate"


def test_config_show_names_the_database_url_from_the_environment_without_its_password(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGATE_DATABASE_URL", f"postgresql://u:{SECRET}@db.internal/lg")
    config = _config(tmp_path, None)
    result = _run(config, "config", "show", "--format", "json")
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    shown = json.loads(result.output)
    assert shown["database"] == "PostgreSQL u@db.internal:5432/lg"
    assert shown["databaseFrom"] == "$LOOPGATE_DATABASE_URL"


def test_status_without_a_server_does_not_open_a_database_url_as_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPGATE_DATABASE_URL", f"postgresql://u:{SECRET}@db.internal/lg")
    config = _config(tmp_path, None)
    result = _run(config, "status", "--url", f"http://127.0.0.1:{_free_port()}")
    assert result.exit_code == 1
    assert SECRET not in result.output
    assert "ok   database           not probed: PostgreSQL u@db.internal:5432/lg" in (
        result.output)
    assert not list(tmp_path.glob("postgresql*"))  # no file was created from the URL


def test_status_names_an_inline_password_as_the_failing_check(tmp_path: Path) -> None:
    config = _config(tmp_path, f"postgresql://u:{SECRET}@db.internal/lg")
    result = _run(config, "status", "--url", f"http://127.0.0.1:{_free_port()}")
    assert result.exit_code == 1
    assert SECRET not in result.output
    assert "FAIL database           database: the URL carries a password" in result.output

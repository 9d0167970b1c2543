"""``loopgate config show`` (issue 14 §2), through the console script: the effective
configuration, the file it came from, and the database commands use here with the rule
that chose it (the same database ``--help`` names)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_db_default_cli import script


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    clean["XDG_STATE_HOME"] = str(tmp_path / "state")
    return clean


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "loopgate.yaml").write_text("authorizedUsers: [alice]\ngithub:\n  repos: [a/b]\n")
    return folder


def test_config_show_prints_the_effective_config_and_the_database_beside_it(
        tmp_path: Path, env: dict[str, str]) -> None:
    folder = _project(tmp_path)
    result = script(folder, env, "config", "show")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"# config file: {folder / 'loopgate.yaml'}"
    assert lines[1] == f"# database: {folder / '.loopgate' / 'loopgate.db'}"
    assert lines[2] == "#   chosen by: beside loopgate.yaml (.loopgate/loopgate.db)"
    assert "pollIntervalSeconds: 60" in result.stdout  # a default filled in
    assert "- a/b" in result.stdout


def test_config_show_json_names_the_rule_that_chose_the_database(
        tmp_path: Path, env: dict[str, str]) -> None:
    folder = _project(tmp_path)
    flag = script(folder, env, "--db", str(tmp_path / "flag.db"), "config", "show",
                  "--format", "json")
    shown = json.loads(flag.stdout)
    assert (shown["database"], shown["databaseFrom"]) == (str(tmp_path / "flag.db"), "--db")
    assert shown["settings"]["github"]["repos"] == ["a/b"]
    from_env = script(folder, {**env, "LOOPGATE_DB": str(tmp_path / "env.db")}, "config",
                      "show", "--format", "json")
    shown = json.loads(from_env.stdout)
    assert (shown["database"], shown["databaseFrom"]) == (str(tmp_path / "env.db"),
                                                          "$LOOPGATE_DB")
    bare = tmp_path / "bare"
    bare.mkdir()
    shown = json.loads(script(bare, env, "config", "show", "--format", "json").stdout)
    assert shown["configFile"] is None
    assert shown["database"] == str(tmp_path / "state" / "loopgate" / "loopgate.db")
    assert shown["databaseFrom"] == "no loopgate.yaml found: the XDG state folder"


def test_help_and_config_show_name_the_same_database(
        tmp_path: Path, env: dict[str, str]) -> None:
    folder = _project(tmp_path)
    help_text = script(folder, env, "--help").stdout
    in_use = "".join(help_text.split("In use here:", 1)[1].split("--config", 1)[0].split())
    shown = json.loads(script(folder, env, "config", "show", "--format", "json").stdout)
    assert in_use == shown["database"]
    assert "`loopgate config show` says which rule chose it" in " ".join(help_text.split())


def test_config_show_prints_a_relative_database_resolved_against_the_config_file(
        tmp_path: Path, env: dict[str, str]) -> None:
    folder = _project(tmp_path)
    (folder / "loopgate.yaml").write_text("authorizedUsers: [alice]\ndatabase: data/lg.db\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = script(elsewhere, env, "--config", str(folder / "loopgate.yaml"), "config", "show")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == f"# database: {folder / 'data' / 'lg.db'}"
    assert lines[2] == "#   chosen by: the config's `database`"


def test_config_show_output_saved_as_loopgate_yaml_passes_config_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from bot.cli import cli
    from bot.config import load_config

    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "LOOPGATE_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    folder = _project(tmp_path)
    shown = CliRunner().invoke(cli, ["--config", str(folder / "loopgate.yaml"), "config",
                                     "show"])
    assert shown.exit_code == 0, shown.output
    assert "app: {}" not in shown.output and "slack:" not in shown.output
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "loopgate.yaml").write_text(shown.output)
    checked = CliRunner().invoke(cli, ["--config", str(saved / "loopgate.yaml"), "config",
                                       "check"])
    assert checked.exit_code == 0, checked.output
    before, after = load_config(folder / "loopgate.yaml"), load_config(saved / "loopgate.yaml")
    assert after.data == before.data
    assert {k for k in after.present if isinstance(after.data[k], dict)} == {"github"}

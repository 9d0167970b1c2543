"""Help (issue 14 §8), through the ``loopgate`` console script: the command list is never
cut with "...", --db/--config name their environment variables, one word for formats
(text|json; the old `table` still accepted), and one example in every command's help."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pytest

from bot.cli import cli
from tests.cli.test_db_default_cli import script

ITEM = "acme/widgets#7"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    clean["XDG_STATE_HOME"] = str(tmp_path / "state")
    return clean


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        out.append(path)
        if isinstance(command, click.Group):
            out += _paths(command, path)
    return out


COMMANDS = _paths(cli)


def test_top_level_descriptions_are_not_cut(tmp_path: Path, env: dict[str, str]) -> None:
    result = script(tmp_path, env, "--help")
    assert result.returncode == 0, result.stderr
    listing = result.stdout.split("Commands:", 1)[1]
    assert "..." not in listing
    assert "Re-evaluate ITEM's current gate, with the given comments as the\n" in listing
    for sub in ("config", "effects", "explainer", "graph"):
        sub_listing = script(tmp_path, env, sub, "--help").stdout.split("Commands:", 1)[1]
        assert "..." not in sub_listing, sub


def test_db_and_config_help_name_their_environment_variables(
        tmp_path: Path, env: dict[str, str]) -> None:
    text = " ".join(script(tmp_path, env, "--help").stdout.split())
    db = text.split("--db PATH", 1)[1].split("--config PATH", 1)[0]
    config = text.split("--config PATH", 1)[1].split("--version", 1)[0]
    assert "environment variable LOOPGATE_DB" in db and "[env var: LOOPGATE_DB]" in db
    assert "environment variable LOOPGATE_CONFIG" in config
    assert "[env var: LOOPGATE_CONFIG]" in config


@pytest.mark.parametrize("path", [("check",), ("events",), ("graph", "show"),
                                  ("effects", "list"), ("config", "show")])
def test_every_format_option_offers_text_and_json(
        path: tuple[str, ...], tmp_path: Path, env: dict[str, str]) -> None:
    text = " ".join(script(tmp_path, env, *path, "--help").stdout.split())
    assert re.search(r"--format \[text\|json(\|mermaid)?\]", text), text
    assert "`table` is accepted as the old name of `text`" in text


def test_the_old_table_format_is_still_accepted(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    assert script(tmp_path, env, "start", ITEM).returncode == 0
    old = script(tmp_path, env, "check", ITEM, "--format", "table")
    new = script(tmp_path, env, "check", ITEM, "--format", "text")
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout == new.stdout and "phase-selection" in new.stdout
    assert script(tmp_path, env, "effects", "list", "--format", "table").returncode == 0
    bad = script(tmp_path, env, "check", ITEM, "--format", "yaml")
    assert bad.returncode == 2 and "'yaml'" in bad.stderr and "'text'" in bad.stderr
    assert "'table'" not in bad.stderr  # the alias is accepted, not advertised


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_every_command_help_has_one_example(
        path: tuple[str, ...], tmp_path: Path, env: dict[str, str]) -> None:
    result = script(tmp_path, env, *path, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Example:") == 1, result.stdout
    example = result.stdout.split("Example:", 1)[1].strip().splitlines()[0].strip()
    assert example.startswith("loopgate "), example
    assert path[-1] in example.split(), (path, example)

"""The root group imports a command's module only when that command runs (issue 21 §3:
importing every command's module cost ``check`` 0.4 s before its first item), yet lists,
helps and runs exactly the commands the modules register."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
from click.testing import CliRunner

from bot.cli import COMMAND_MODULES, cli


def _eager() -> click.Group:
    # Every module's register(group) on a plain group, in the order they were once
    # registered: the commands the lazy table must give.
    group = click.Group()
    for module in ("graph_cmd", "item_cmd", "check_cmd", "effects_cmd", "explainer_cmd",
                   "serve_cmd", "config_cmd", "ops_cmd", "db_cmd", "procedure_cmd", "simulate_cmd",
                   "verify_cmd", "slack_cmd"):
        importlib.import_module(f"bot.cli.{module}").register(group)
    return group


def test_the_table_names_every_registered_command_and_its_module() -> None:
    eager = _eager()
    assert sorted(COMMAND_MODULES) == sorted(eager.commands)
    for name, command in eager.commands.items():
        lazy = cli.commands[name]
        assert type(lazy) is type(command) and lazy.help == command.help, name
        assert [p.name for p in lazy.params] == [p.name for p in command.params], name
        assert command.callback is not None and lazy.callback is not None
        assert lazy.callback.__module__ == command.callback.__module__, name
        assert command.callback.__module__ == f"bot.cli.{COMMAND_MODULES[name][0]}", name
    lazy_db, eager_db = cli.commands["db"], eager.commands["db"]
    assert isinstance(lazy_db, click.Group) and isinstance(eager_db, click.Group)
    assert sorted(lazy_db.commands) == sorted(eager_db.commands) == ["copy", "migrate"]


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:", 1)[1]
    for name in COMMAND_MODULES:
        assert f"\n  {name} " in listed, name


def _imported_after(*argv: str) -> list[str]:
    code = ("import sys\nfrom bot.cli import main\ntry:\n    main()\nexcept SystemExit:\n"
            "    pass\nprint('\\n' + __import__('json').dumps(sorted(m for m in sys.modules "
            "if m.startswith('bot.cli.'))), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=120, check=True)
    loaded: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return loaded


def test_a_command_imports_only_its_own_module() -> None:
    loaded = _imported_after("check", "--help")
    assert "bot.cli.check_cmd" in loaded
    for other in ("item_cmd", "serve_cmd", "verify_cmd", "explainer_cmd", "ops_cmd", "config_cmd",
                  "simulate_cmd", "slack_cmd", "graph_cmd", "effects_cmd", "db_cmd"):
        assert f"bot.cli.{other}" not in loaded, other
    assert "bot.cli.db_cmd" in _imported_after("db", "--help")


def test_an_unknown_command_is_still_refused() -> None:
    result = CliRunner().invoke(cli, ["chek"])
    assert result.exit_code == 2
    assert "chek" in result.output

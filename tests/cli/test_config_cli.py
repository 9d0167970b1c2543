"""``loopgate config check`` and ``config reference``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bot.cli import cli


def _check(tmp_path: Path, text: str):
    (tmp_path / "loopgate.yaml").write_text(text)
    return CliRunner().invoke(cli, ["--config", str(tmp_path / "loopgate.yaml"), "config", "check"])


def test_config_check_compiles_the_configured_graph(tmp_path: Path) -> None:
    result = _check(tmp_path, "loop: pdlc-work-item-loop\n")
    assert result.exit_code == 0
    assert "graph pdlc-work-item-loop, 24 nodes" in result.output


def test_config_check_refuses_an_unknown_loop(tmp_path: Path) -> None:
    result = _check(tmp_path, "loop: nope\n")
    assert result.exit_code == 2
    assert "loop:" in result.output and "nope" in result.output


def test_config_check_names_an_unknown_key(tmp_path: Path) -> None:
    result = _check(tmp_path, "slack:\n  chanel: C1\n")
    assert result.exit_code == 2
    assert "unknown key slack.chanel" in result.output

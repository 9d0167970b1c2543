"""Issue 24 §2, bad input: ``config check`` counts ``agentAuthored.approvals`` against
the people who may approve, as it counts ``approvals``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli


def test_config_check_refuses_an_agent_count_no_approvers_can_meet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (home / "loopgate.yaml").write_text(
        "authorizedUsers: [alice, bob]\n"
        "gates:\n  human-approval: {agentAuthored: {approvals: 3}}\n")
    result = CliRunner().invoke(cli, ["--db", str(home / "db.sqlite"), "--config",
                                      str(home / "loopgate.yaml"), "config", "check"])
    assert result.exit_code == 2
    assert ("gates.human-approval.agentAuthored.approvals: 3 approvals needed but only 2 "
            "people may approve (authorizedUsers)") in result.output

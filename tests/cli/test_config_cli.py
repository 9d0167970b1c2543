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


def test_config_check_refuses_an_inline_database_password(tmp_path: Path) -> None:
    result = _check(tmp_path, "github:\n  repos: [acme/widgets]\n"
                              "database: postgresql://u:secretpw@db.internal/lg\n")
    assert result.exit_code == 2
    assert "database: the URL carries a password" in result.output
    assert "secretpw" not in result.output


def test_config_check_refuses_postgresql_without_a_github_section(tmp_path: Path) -> None:
    result = _check(tmp_path, "database: postgresql://u@db.internal/lg\n")
    assert result.exit_code == 2
    assert ("database: PostgreSQL is for the GitHub bridge's replicas; the offline local "
            "tracker (no github section) keeps its thread in a SQLite file") in result.output


def test_config_check_reports_every_gate_rule_error_at_once(tmp_path: Path) -> None:
    result = _check(tmp_path, "authorizedUsers: [alice]\n"
                              "gates:\n  design: {approvals: 2}\n"
                              "  human-approval: {attester: assignee-or-author}\n"
                              "mergeGate: {after: nowhere}\n")
    assert result.exit_code == 2
    lines = [line.split(": ", 2)[2] for line in result.output.strip().splitlines()]
    assert lines == [
        "gates.design: pdlc-work-item-loop has no human gate 'design'",
        "gates.human-approval: attester applies to quiz gates (quiz-attested), not to a "
        "review gate",
        "mergeGate.after: 'nowhere' is not a node of pdlc-work-item-loop",
    ]


def test_config_check_refuses_more_approvals_than_possible_approvers(tmp_path: Path) -> None:
    listed = _check(tmp_path, "authorizedUsers: [alice, bob, carol]\n"
                              "gates:\n  human-approval: {approvals: 3, approvers: [alice, bob]}\n")
    assert listed.exit_code == 2
    assert ("gates.human-approval.approvals: 3 approvals needed but only 2 people may "
            "approve (gates.human-approval.approvers)") in listed.output
    authorized = _check(tmp_path, "authorizedUsers: [alice]\n"
                                  "gates:\n  human-approval: {approvals: 2}\n")
    assert authorized.exit_code == 2
    assert ("gates.human-approval.approvals: 2 approvals needed but only 1 people may "
            "approve (authorizedUsers)") in authorized.output
    enough = _check(tmp_path, "authorizedUsers: [alice, bob]\n"
                              "gates:\n  human-approval: {approvals: 2}\n")
    assert enough.exit_code == 0, enough.output


def test_config_check_reports_gate_rule_errors_with_the_schema_errors(tmp_path: Path) -> None:
    result = _check(tmp_path, "authorizedUsers: [alice]\nslack:\n  chanel: C1\n"
                              "gates:\n  design: {approvals: 2}\n"
                              "  human-approval: {approvals: 3}\n")
    assert result.exit_code == 2
    assert "unknown key slack.chanel" in result.output
    assert "gates.design: pdlc-work-item-loop has no human gate 'design'" in result.output
    assert ("gates.human-approval.approvals: 3 approvals needed but only 1 people may "
            "approve (authorizedUsers)") in result.output

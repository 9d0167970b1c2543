"""Config errors (issue 14 §7), through the ``loopgate`` console script: every error is
shown, each with its key path, file:line and, for an unknown key, a suggestion; a bad
repository reads as words, not a regular expression; a YAML error names the file and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_db_default_cli import script

BROKEN = """\
authorizedUsers: [alice]
github:
  repos:
    - acme/widgets
    - not a repo
  pollInterval: 5
server:
  port: eighty
slack:
  chanel: C1
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LOOPGATE_DB", "LOOPGATE_CONFIG")}
    clean["XDG_STATE_HOME"] = str(tmp_path / "state")
    return clean


def _check(tmp_path: Path, env: dict[str, str], text: str) -> tuple[int, str, str]:
    config = tmp_path / "loopgate.yaml"
    config.write_text(text)
    result = script(tmp_path, env, "config", "check")
    return result.returncode, result.stderr, str(config)


def test_config_check_shows_every_error_with_its_path_line_and_a_suggestion(
        tmp_path: Path, env: dict[str, str]) -> None:
    code, err, _ = _check(tmp_path, env, BROKEN)
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0] == "loopgate: loopgate.yaml: 4 errors"
    assert lines[1:] == [
        "  loopgate.yaml:5: github.repos.1: 'not a repo' is not a repository: write it as "
        "owner/repo, e.g. acme/widgets",
        "  loopgate.yaml:6: unknown key github.pollInterval — did you mean "
        "`pollIntervalSeconds`?",
        "  loopgate.yaml:8: server.port: expected a whole number, got 'eighty'",
        "  loopgate.yaml:10: unknown key slack.chanel — did you mean `channel`?",
    ]


def test_a_bad_repo_reads_as_words_not_a_regular_expression(
        tmp_path: Path, env: dict[str, str]) -> None:
    code, err, _ = _check(tmp_path, env, "github:\n  repos: [widgets]\n")
    assert code == 2
    assert err.strip() == ("loopgate: loopgate.yaml:2: github.repos.0: 'widgets' is not a "
                           "repository: write it as owner/repo, e.g. acme/widgets")
    assert "^[A-Za-z0-9]" not in err


def test_a_yaml_error_names_the_file_and_line_not_unicode_string(
        tmp_path: Path, env: dict[str, str]) -> None:
    code, err, _ = _check(tmp_path, env, "authorizedUsers: [alice\nloop: x\n")
    assert code == 2
    assert "<unicode string>" not in err
    assert err.startswith("loopgate: loopgate.yaml:2:")
    assert "not valid YAML" in err


def test_an_unknown_key_far_from_any_known_one_gets_no_suggestion(
        tmp_path: Path, env: dict[str, str]) -> None:
    code, err, _ = _check(tmp_path, env, "authorizedUsers: [alice]\nzzz: 1\n")
    assert code == 2
    assert err.strip() == "loopgate: loopgate.yaml:2: unknown key zzz"


def test_help_with_a_broken_config_counts_the_errors_in_one_line(
        tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "loopgate.yaml").write_text(BROKEN)
    result = script(tmp_path, env, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert ("In use here: unknown until the config is fixed (loopgate.yaml: 4 errors; see "
            "`loopgate config check`)") in text

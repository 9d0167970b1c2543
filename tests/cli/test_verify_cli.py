"""``loopgate verify`` bad input (issue 22 §3, "Bad input"): each is exit 2 with one
``loopgate:`` line and nothing on stdout — no ITEM or both ITEM and --sha, a sha that is no
sha, a configuration without GitHub (the offline thread holds no one else's records), an
item never started, a sha no open pull request has as head, and GitHub unreachable
(never a false "agrees"). The verification itself is tested end to end
(tests/e2e/test_e2e_verify.py) and in engine/bridges unit tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli import cli
from tests.fakes.github import FakeGitHub

REPO = "acme/widgets"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def gh(clean_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.create_repo(REPO)
        monkeypatch.setenv("GITHUB_TOKEN", fake.token)
        yield fake


def _run(tmp_path: Path, config: str, *args: str) -> Result:
    (tmp_path / "loopgate.yaml").write_text(config)
    argv = ["--db", str(tmp_path / "db" / "loopgate.db"), "--config",
            str(tmp_path / "loopgate.yaml"), "verify", *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def _github(gh: FakeGitHub) -> str:
    return (f"authorizedUsers: [alice, bob]\ngithub:\n  repos: [{REPO}]\n"
            f"  apiUrl: {gh.api_url}\n  graphqlUrl: {gh.graphql_url}\n")


def _one_line(result: Result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    return line


@pytest.mark.parametrize(("args", "message"), [
    ((), "loopgate: give either ITEM or --sha SHA"),
    (("acme/widgets#7", "--sha", "abc1234"), "loopgate: give either ITEM or --sha SHA"),
    (("--sha", "not-a-sha"), "loopgate: --sha: 'not-a-sha' is not a commit sha (7 to 40 hex "
                             "digits)"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path, clean_env: None,
                                               args: tuple[str, ...], message: str) -> None:
    assert _one_line(_run(tmp_path, "authorizedUsers: [alice]\n", *args)) == message


def test_without_github_there_is_nothing_to_verify_against(tmp_path: Path,
                                                           clean_env: None) -> None:
    line = _one_line(_run(tmp_path, "authorizedUsers: [alice]\n", "acme/widgets#7"))
    assert line.startswith("loopgate: verify reads GitHub's records: this configuration has "
                           "no `github` section")


def test_an_item_never_started_is_named(tmp_path: Path, gh: FakeGitHub) -> None:
    line = _one_line(_run(tmp_path, _github(gh), "acme/widgets#7"))
    assert line == "loopgate: acme/widgets#7 is not started: nothing to verify"


def test_a_sha_no_open_pull_request_has_as_head_is_named(tmp_path: Path,
                                                         gh: FakeGitHub) -> None:
    line = _one_line(_run(tmp_path, _github(gh), "--sha", "abc1234"))
    assert line == ("loopgate: no started work item is delivered by an open pull request "
                    "(or a merge group loopgate answered) whose head is abc1234")


def test_github_unreachable_is_exit_2_never_agrees(tmp_path: Path, gh: FakeGitHub) -> None:
    gh.fail_route("GET", "pulls", 503, times=3)  # the client retries a 503 twice
    line = _one_line(_run(tmp_path, _github(gh), "--sha", "abc1234"))
    assert line.startswith("loopgate: GitHub could not be read, nothing verified: open pull "
                           "requests of acme/widgets: ")


def test_an_item_that_cannot_be_read_is_exit_3(tmp_path: Path, gh: FakeGitHub) -> None:
    # Not bad input: the stored item is (exit 3, as every verb; its parked column cut short).
    assert _run(tmp_path, _github(gh), "acme/widgets#7").exit_code == 2  # the file is made
    conn = sqlite3.connect(tmp_path / "db" / "loopgate.db", isolation_level=None)
    try:
        conn.execute("INSERT INTO items (item, owner, repo, number, loop, current_node, "
                     "status, parked, surface, started_at, revision, updated_at) VALUES "
                     "('acme/widgets#7', 'acme', 'widgets', 7, 'pdlc', 'design', 'running', "
                     "'{\"by\":', '{}', 't', 1, 't')")
    finally:
        conn.close()
    line = _one_line(_run(tmp_path, _github(gh), "acme/widgets#7"), code=3)
    assert line.startswith("loopgate: acme/widgets#7: unreadable: column parked: not JSON (")

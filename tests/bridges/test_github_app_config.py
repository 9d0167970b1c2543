"""Bad GitHub App settings are refused before anything is polled (issue 9, "Bad input"):
``loopgate config check`` and ``loopgate serve`` exit 2 naming the setting for a wrong App
id, an unreadable or malformed private key, a configured repository the App is not
installed on, and a revoked installation; the key never appears in what they print."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from bot.cli import cli
from tests.fakes.github import FakeGitHub
from tests.fakes.github_app import FakeApp, generate_private_key

APP_ID = 4242
KEY_ENV = "LOOPGATE_TEST_APP_KEY"
ACME = "acme/widgets"
GLOBEX = "globex/gadgets"
COMMANDS = {"config check": ("config", "check"), "serve": ("serve", "--insecure-webhooks")}


@pytest.fixture
def app() -> FakeApp:
    return FakeApp(generate_private_key(), app_id=APP_ID, slug="loopgate")


@pytest.fixture
def gh(app: FakeApp) -> Iterator[FakeGitHub]:
    """acme/widgets has the App installed; globex/gadgets exists without it."""
    with FakeGitHub(app=app) as fake:
        fake.create_repo(ACME)
        fake.create_repo(GLOBEX)
        app.install("acme")
        yield fake


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_TOKEN", "GITHUB_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, generate_private_key())
    monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")


def _run(tmp_path: Path, gh: FakeGitHub, command: str, repos: tuple[str, ...] = (ACME,),
         **app: Any) -> Result:
    config = {"authorizedUsers": ["alice"],
              "github": {"repos": list(repos), "apiUrl": gh.api_url,
                         "graphqlUrl": gh.graphql_url, "pollIntervalSeconds": 1,
                         "app": {"appId": APP_ID, "privateKeyEnv": KEY_ENV, **app}},
              "server": {"host": "127.0.0.1", "port": 0}}
    (tmp_path / "loopgate.yaml").write_text(yaml.safe_dump(config))
    argv = ["--db", str(tmp_path / "loopgate.db"), "--config", str(tmp_path / "loopgate.yaml"),
            *COMMANDS[command]]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def _refused(result: Result, gh: FakeGitHub, setting: str, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert f"{setting}:" in result.output, result.output
    for needle in needles:
        assert needle in result.output, result.output
    body = "".join(generate_private_key().splitlines()[1:-1])
    assert body[:40] not in result.output.replace("\n", "")
    assert "BEGIN RSA" not in result.output
    # nothing was polled
    assert gh.count(route="repo-comments") == gh.count(route="repo-issues") == 0


@pytest.fixture(params=list(COMMANDS))
def command(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_config_check_accepts_a_good_app_and_names_its_installation(
        tmp_path: Path, gh: FakeGitHub, app: FakeApp) -> None:
    result = _run(tmp_path, gh, "config check")
    assert result.exit_code == 0, result.output
    installation = next(iter(app.installations))
    assert f"ok: github app installation {installation}: {ACME}" in result.output


def test_an_unset_key_variable_is_named(tmp_path: Path, gh: FakeGitHub, command: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    _refused(_run(tmp_path, gh, command), gh, "github.app.privateKeyEnv", KEY_ENV,
             "unset or empty")
    assert gh.count() == 0  # GitHub was never asked


def test_an_unreadable_key_file_is_named(tmp_path: Path, gh: FakeGitHub, command: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "missing.pem"))
    _refused(_run(tmp_path, gh, command), gh, "github.app.privateKeyEnv", KEY_ENV,
             "neither a PEM private key nor the path of a readable key file")
    assert gh.count() == 0


def test_a_malformed_key_is_named_and_not_echoed(tmp_path: Path, gh: FakeGitHub, command: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pem = generate_private_key().splitlines()
    broken = "\n".join([pem[0], *pem[1:4], "Zm9vYmFy" * 8, pem[-1]])
    monkeypatch.setenv(KEY_ENV, broken)
    result = _run(tmp_path, gh, command)
    _refused(result, gh, "github.app.privateKeyEnv", KEY_ENV, "is malformed")
    assert pem[2] not in result.output
    assert gh.count() == 0


def test_a_key_file_path_is_read(tmp_path: Path, gh: FakeGitHub,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "loopgate-app.pem"
    key_file.write_text(generate_private_key())
    monkeypatch.setenv(KEY_ENV, str(key_file))
    assert _run(tmp_path, gh, "config check").exit_code == 0


def test_a_wrong_app_id_is_named(tmp_path: Path, gh: FakeGitHub, command: str) -> None:
    result = _run(tmp_path, gh, command, appId=999)
    _refused(result, gh, "github.app.appId", "Integration not found")


def test_a_key_of_another_app_is_named_as_the_app_id_and_key_mismatch(
        tmp_path: Path, gh: FakeGitHub, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, generate_private_key(seed=1))
    _refused(_run(tmp_path, gh, command), gh, "github.app.appId",
             "A JSON web token could not be decoded", KEY_ENV)


def test_a_repository_without_the_app_is_named(tmp_path: Path, gh: FakeGitHub,
                                               command: str) -> None:
    _refused(_run(tmp_path, gh, command, repos=(ACME, GLOBEX)), gh, "github.repos",
             f"not installed on {GLOBEX}")


def test_a_revoked_installation_is_named(tmp_path: Path, gh: FakeGitHub, app: FakeApp,
                                         command: str) -> None:
    app.revoke(next(iter(app.installations)))
    _refused(_run(tmp_path, gh, command), gh, "github.repos", f"not installed on {ACME}")


def test_a_revoked_configured_installation_is_named(tmp_path: Path, gh: FakeGitHub,
                                                    app: FakeApp, command: str) -> None:
    installation = next(iter(app.installations))
    app.revoke(installation)
    _refused(_run(tmp_path, gh, command, installationId=installation), gh,
             "github.app.installationId", f"installation {installation}",
             "the installation does not exist")

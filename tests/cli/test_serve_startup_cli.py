"""``loopgate serve`` start-up through the console script against the loopback fakes: a
refused Slack or GitHub token, or an unreachable Slack or GitHub, is one line on stderr
naming the cause (the variable's name, never the token; the host), exit 2 for a refused
token (systemd does not restart it: RestartPreventExitStatus=2) and exit 1 for an
unreachable service (Restart=on-failure tries again)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import forkserver
from tests.e2e.stack import free_port, loopgate_argv, wait_until
from tests.fakes.github import FakeGitHub
from tests.fakes.slack import FakeSlack
from tests.fakes.slack_socket import FakeSocketMode

APP_TOKEN = "xapp-1-A111-startup-secret"  # test values, never real secrets
BOT_TOKEN = "xoxb-startup-bot-secret"


class SlackHome:
    """An installation with a slack section (Socket Mode) and no github section."""

    def __init__(self, root: Path, api_url: str) -> None:
        self.root = root
        self.port = free_port()
        (root / "loopgate.yaml").write_text(
            "authorizedUsers: [alice]\n"
            f"server: {{host: 127.0.0.1, port: {self.port}}}\n"
            f"slack: {{channel: C0LOOPGATE, apiUrl: '{api_url}'}}\n")
        drop = ("LOOPGATE_DB", "LOOPGATE_CONFIG", "LOOPGATE_LOG_FORMAT", "SLACK_APP_TOKEN",
                "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env.update(SLACK_APP_TOKEN=APP_TOKEN, SLACK_BOT_TOKEN=BOT_TOKEN)

    def argv(self) -> list[str]:
        return [*loopgate_argv(), "--db", str(self.root / "loopgate.db"), "--config",
                str(self.root / "loopgate.yaml"), "serve"]

    def serve(self) -> subprocess.CompletedProcess[str]:
        return forkserver.run(self.argv(), cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=120, check=False)


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack()
    fake.start()
    yield fake
    fake.stop()


def test_a_refused_app_token_exits_2_with_one_line_naming_its_variable(
        tmp_path: Path, slack: FakeSlack) -> None:
    slack.fail_method("apps.connections.open", "invalid_auth")
    done = SlackHome(tmp_path, slack.base_url).serve()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "loopgate: slack: apps.connections.open refused: invalid_auth — check the "
        "app-level token in $SLACK_APP_TOKEN"]
    assert "listening on" not in done.stdout
    [call] = slack.all_calls_to("apps.connections.open")
    assert call.headers["authorization"] == f"Bearer {APP_TOKEN}"  # the token was tried
    assert APP_TOKEN not in done.stderr + done.stdout


def test_a_refused_bot_token_exits_2_with_one_line_naming_its_variable(
        tmp_path: Path, slack: FakeSlack) -> None:
    slack.fail_method("auth.test", "invalid_auth")
    done = SlackHome(tmp_path, slack.base_url).serve()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "loopgate: slack: auth.test refused: invalid_auth — check the bot token in "
        "$SLACK_BOT_TOKEN"]
    assert BOT_TOKEN not in done.stderr + done.stdout
    assert slack.all_calls_to("apps.connections.open") == []  # stopped at the first refusal


def test_an_unreachable_slack_exits_1_with_one_line_naming_the_host_and_reason(
        tmp_path: Path) -> None:
    port = free_port()  # nobody listens there: the connection is refused
    done = SlackHome(tmp_path, f"http://127.0.0.1:{port}/api/").serve()
    assert done.returncode == 1  # transient: systemd's Restart=on-failure tries again
    assert done.stderr.splitlines() == [
        f"loopgate: slack: cannot reach 127.0.0.1:{port} (auth.test): Connection refused "
        "— check slack.apiUrl and the network"]


def test_a_slack_outage_at_start_exits_1_naming_the_status(
        tmp_path: Path, slack: FakeSlack) -> None:
    slack.set_down(True)
    done = SlackHome(tmp_path, slack.base_url).serve()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"loopgate: slack: auth.test failed: HTTP 503 service_unavailable from "
        f"127.0.0.1:{slack.port}; Slack is unavailable"]


def _serve_until_listening(home: SlackHome, ready: Callable[[], bool]) -> tuple[int, str, str]:
    """Start ``serve``, wait for ``ready`` and the listening line, SIGTERM it; returns
    ``(exit code, stdout, stderr)``."""
    proc = subprocess.Popen(home.argv(), cwd=home.root, env=home.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.extend(s), daemon=True)
               for s, into in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        wait_until(lambda: ready() or proc.poll() is not None, "the Slack side", 60)
        wait_until(lambda: any("listening on" in x for x in out) or proc.poll() is not None,
                   "the listening line", 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        for reader in readers:
            reader.join(10)
    return code, "".join(out), "".join(err)


def test_serve_with_socket_mode_starts_without_bolts_token_unused_warning(
        tmp_path: Path, slack: FakeSlack) -> None:
    home = SlackHome(tmp_path, slack.base_url)
    with FakeSocketMode() as socket_mode:
        socket_mode.attach(slack)
        code, out, log = _serve_until_listening(
            home, lambda: socket_mode.open_connections == 1)
    assert code == 0, log
    assert f"loopgate: listening on http://127.0.0.1:{home.port}\n" in out
    assert "will be unused" not in log  # Bolt builds the client from the token itself
    [auth] = slack.calls_to("auth.test")  # the start-up check, with the bot token
    assert auth.headers["authorization"] == f"Bearer {BOT_TOKEN}"
    assert APP_TOKEN not in log and BOT_TOKEN not in log


def test_serve_in_slack_http_mode_starts_without_bolts_token_unused_warning(
        tmp_path: Path, slack: FakeSlack) -> None:
    home = SlackHome(tmp_path, slack.base_url)
    del home.env["SLACK_APP_TOKEN"]  # no app-level token: Slack posts to /slack/events
    home.env["SLACK_SIGNING_SECRET"] = "startup-signing-secret"
    code, out, log = _serve_until_listening(home, lambda: True)
    assert code == 0, log
    assert f"loopgate: listening on http://127.0.0.1:{home.port}\n" in out
    assert "will be unused" not in log
    assert len(slack.calls_to("auth.test")) == 1
    assert slack.all_calls_to("apps.connections.open") == []

class GitHubHome:
    """An installation with a github section (token mode, no poller) and no slack."""

    def __init__(self, root: Path, gh: FakeGitHub | None, api_url: str = "",
                 bot_login: str = "") -> None:
        self.root = root
        api = api_url or (gh.api_url if gh else "")
        graphql = gh.graphql_url if gh and not api_url else f"{api}/graphql"
        login = f"botLogin: {bot_login}, " if bot_login else ""
        (root / "loopgate.yaml").write_text(
            "authorizedUsers: [alice]\n"
            f"server: {{host: 127.0.0.1, port: {free_port()}}}\n"
            f"github: {{{login}repos: [acme/widgets], apiUrl: '{api}', "
            f"graphqlUrl: '{graphql}', pollIntervalSeconds: 0}}\n")
        drop = ("LOOPGATE_DB", "LOOPGATE_CONFIG", "LOOPGATE_LOG_FORMAT", "GITHUB_TOKEN")
        self.env = {k: v for k, v in os.environ.items() if k not in drop}
        self.env.update(GITHUB_TOKEN=gh.token if gh else "ghp-unused",
                        GITHUB_WEBHOOK_SECRET="startup webhook secret")

    def serve(self) -> subprocess.CompletedProcess[str]:
        argv = [*loopgate_argv(), "--db", str(self.root / "loopgate.db"), "--config",
                str(self.root / "loopgate.yaml"), "serve"]
        return forkserver.run(argv, cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=120, check=False)


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.create_repo("acme/widgets")
    yield fake
    fake.stop()


REFUSED_TOKEN = ("loopgate: github: read the token's owner: GitHub refused loopgate's "
                 "credentials (401 Bad credentials) — check the token in $GITHUB_TOKEN")


def test_a_revoked_github_token_at_start_exits_2_with_one_line_naming_its_variable(
        tmp_path: Path, gh: FakeGitHub) -> None:
    gh.revoke_token()
    done = GitHubHome(tmp_path, gh).serve()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [REFUSED_TOKEN]  # no "tried again later" first
    assert gh.token not in done.stderr + done.stdout
    assert "botLogin" not in done.stderr  # setting it would not help


def test_a_revoked_github_token_is_refused_at_start_even_with_bot_login_set(
        tmp_path: Path, gh: FakeGitHub) -> None:
    gh.revoke_token()
    done = GitHubHome(tmp_path, gh, bot_login="loopgate-bot").serve()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [REFUSED_TOKEN]
    assert "listening on" not in done.stdout


def test_an_unreachable_github_at_start_exits_1_with_one_line_naming_the_host(
        tmp_path: Path) -> None:
    port = free_port()  # nobody listens there
    done = GitHubHome(tmp_path, None, api_url=f"http://127.0.0.1:{port}").serve()
    assert done.returncode == 1  # transient: systemd's Restart=on-failure tries again
    assert done.stderr.splitlines() == [  # and no urllib3 "Retrying" lines before it
        f"loopgate: github: read the token's owner: GitHub unreachable at 127.0.0.1:{port} "
        "(Connection refused) — check github.apiUrl and the network"]


def test_a_rate_limited_slack_at_start_exits_1_not_blaming_the_token(
        tmp_path: Path, slack: FakeSlack) -> None:
    slack.rate_limit_once("auth.test", retry_after=30)
    done = SlackHome(tmp_path, slack.base_url).serve()
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"loopgate: slack: auth.test was rate-limited by 127.0.0.1:{slack.port} (HTTP 429); "
        "try again later"]


def test_github_answering_502_at_start_exits_1_without_blaming_bot_login(
        tmp_path: Path, gh: FakeGitHub) -> None:
    gh.fail_route("GET", "user", 502, times=10, message="Server Error")
    done = GitHubHome(tmp_path, gh).serve()
    assert done.returncode == 1  # GitHub's trouble: systemd tries again
    assert done.stderr.splitlines() == [
        "loopgate: github: read the token's owner: GitHub answered 502 Server Error; "
        "GitHub is unavailable, try again later"]

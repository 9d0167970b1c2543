"""``loopgate serve`` and ``loopgate poll --once``: clear startup errors, the listening line,
a webhook handled by the server process, and a graceful SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml
from click.testing import CliRunner, Result

from bot.cli import cli
from tests.bridges.conftest import REPO, SECRET
from tests.fakes.github import FakeGitHub, wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    config = {"authorizedUsers": ["alice"],
              "github": {"repos": [REPO], "apiUrl": fake.api_url,
                         "graphqlUrl": fake.graphql_url, "pollIntervalSeconds": 0},
              "server": {"host": "127.0.0.1", "port": 0}}
    (tmp_path / "loopgate.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def run(home: Path, *args: str) -> Result:
    argv = ["--db", str(home / "loopgate.db"), "--config", str(home / "loopgate.yaml"), *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def test_serve_refuses_to_start_without_a_webhook_secret(home: Path, fake: FakeGitHub,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    result = run(home, "serve")
    assert result.exit_code == 2
    assert "set the environment variable GITHUB_WEBHOOK_SECRET" in result.output
    assert "--insecure-webhooks" in result.output
    assert fake.count() == 0


def test_serve_names_the_missing_token_variable(home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    result = run(home, "serve")
    assert result.exit_code == 2
    assert "GITHUB_TOKEN" in result.output
    assert SECRET not in result.output


def test_poll_once_runs_one_cycle_and_reports_it(home: Path, fake: FakeGitHub,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
    number = fake.create_issue(REPO, "t", author="alice")
    fake.add_comment(REPO, number, "the-loop start", as_user="alice")
    result = run(home, "poll", "--once")
    assert result.exit_code == 0, result.output
    # comments, labels and (issue 11) open pull requests' heads
    assert result.output.startswith(f"{REPO}: requests=3 not_modified=0 deliveries=1 "
                                    "(handled=1) retries=0")
    check = run(home, "check", f"{REPO}#{number}", "--format", "json")
    assert '"currentNode": "phase-selection"' in check.output
    again = run(home, "poll", "--once")
    assert "deliveries=0" in again.output


def test_poll_needs_a_github_section(tmp_path: Path) -> None:
    (tmp_path / "loopgate.yaml").write_text("authorizedUsers: [alice]\n")
    result = run(tmp_path, "poll", "--once")
    assert result.exit_code == 2 and "github section" in result.output


class ServeProcess:
    """``loopgate serve`` in a subprocess; stdout lines collected in a thread."""

    def __init__(self, home: Path, env: dict[str, str], *args: str) -> None:
        argv = [sys.executable, "-c", "from bot.cli import main; main()",
                "--db", str(home / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
                "serve", *args]
        self.proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines),
                         daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors),
                         daemon=True).start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line.rstrip("\n"))

    def url(self) -> str:
        assert wait_for(lambda: any("listening on" in x for x in self.lines)
                        or self.proc.poll() is not None, timeout=30), self.errors
        line = next((x for x in self.lines if "listening on" in x), "")
        assert line, "\n".join(self.errors)
        return line.rsplit(" ", 1)[1]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


@pytest.fixture
def serve_env(fake: FakeGitHub) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_WEBHOOK_SECRET", "LOOPGATE_CONFIG", "LOOPGATE_DB")}
    env.update(GITHUB_TOKEN=fake.token, LOOPGATE_GITHUB_WRITE_INTERVAL="0",
               PYTHONPATH=str(REPO_ROOT))
    return env


@pytest.fixture
def served(home: Path, serve_env: dict[str, str]) -> Iterator[ServeProcess]:
    process = ServeProcess(home, {**serve_env, "GITHUB_WEBHOOK_SECRET": SECRET})
    yield process
    if process.proc.poll() is None:
        process.proc.kill()
        process.proc.wait(10)


def test_serve_prints_its_url_handles_a_webhook_and_stops_on_sigterm(
        served: ServeProcess, fake: FakeGitHub) -> None:
    url = served.url()
    assert url.startswith("http://127.0.0.1:")
    assert requests.get(f"{url}/healthz", timeout=5).json() == {"ok": True, "dispatcher": True}
    number = fake.create_issue(REPO, "t", author="alice")
    comment = fake.add_comment(REPO, number, "the-loop start", as_user="alice")
    headers, body = fake.webhook("issue_comment", "created", repo=REPO, number=number,
                                 comment_id=comment.id, secret=SECRET)
    response = requests.post(f"{url}/github/webhook", data=body, headers=headers, timeout=5)
    assert response.status_code == 202
    assert wait_for(lambda: len(fake.comments_on(REPO, number)) >= 2, timeout=15)
    forged = requests.post(f"{url}/github/webhook", data=body, timeout=5,
                           headers={**headers, "X-Hub-Signature-256": "sha256=" + "1" * 64})
    assert forged.status_code == 401
    assert served.stop() == 0
    log = "\n".join(served.errors)
    assert "stopped" in log
    assert f"delivery={headers['X-GitHub-Delivery']}" in log  # one line per event, its id
    assert fake.token not in log and SECRET not in log


def test_insecure_webhooks_start_without_a_secret(home: Path, serve_env: dict[str, str]) -> None:
    process = ServeProcess(home, serve_env, "--insecure-webhooks")
    try:
        assert process.url().startswith("http://127.0.0.1:")
        assert process.stop() == 0
        assert any("insecure webhooks" in line for line in process.errors)
    finally:
        if process.proc.poll() is None:
            process.proc.kill()


def test_serve_polls_and_stops_gracefully(home: Path, fake: FakeGitHub,
                                          serve_env: dict[str, str]) -> None:
    config = yaml.safe_load((home / "loopgate.yaml").read_text())
    config["github"]["pollIntervalSeconds"] = 1
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    number = fake.create_issue(REPO, "t", author="alice")
    fake.add_comment(REPO, number, "the-loop start", as_user="alice")
    process = ServeProcess(home, {**serve_env, "GITHUB_WEBHOOK_SECRET": SECRET})
    try:
        process.url()
        assert wait_for(lambda: len(fake.comments_on(REPO, number)) >= 2, timeout=15)
        assert process.stop() == 0
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
    # the cursor was persisted: a fresh one-shot poll finds nothing new
    env_run = CliRunner(env={"GITHUB_TOKEN": fake.token}).invoke(
        cli, ["--db", str(home / "loopgate.db"), "--config", str(home / "loopgate.yaml"),
              "poll", "--once"], catch_exceptions=False)
    assert "deliveries=0" in env_run.output, env_run.output


def test_a_second_serve_on_the_same_database_exits_2_naming_the_first(
        home: Path, fake: FakeGitHub, serve_env: dict[str, str]) -> None:
    env = {**serve_env, "GITHUB_WEBHOOK_SECRET": SECRET}
    first = ServeProcess(home, env)
    third: ServeProcess | None = None
    try:
        first.url()
        asked = fake.count()
        second = subprocess.run(first.proc.args, cwd=REPO_ROOT, env=env, capture_output=True,
                                text=True, timeout=60, check=False)
        assert second.returncode == 2, second.stderr
        db = home / "loopgate.db"
        expected = (f"loopgate: another loopgate serve is running on {db}: pid "
                    f"{first.proc.pid} on {socket.gethostname()}, started ")
        [line] = [x for x in second.stderr.splitlines() if x.startswith("loopgate: ")]
        assert line.startswith(expected), line
        started = line[len(expected):].split(" ", 1)[0]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", started), line
        assert line.endswith(f"(stop it first; lock file {db}.lock)")
        assert "listening on" not in second.stdout
        assert fake.count() == asked  # it refused before talking to GitHub
        first.proc.kill()  # SIGKILL: no shutdown code runs; the kernel drops the lock
        assert first.proc.wait(10) == -signal.SIGKILL
        third = ServeProcess(home, env)
        assert third.url().startswith("http://127.0.0.1:")
        assert third.stop() == 0
    finally:
        for process in (first, third):
            if process is not None and process.proc.poll() is None:
                process.proc.kill()
                process.proc.wait(10)


def test_a_polling_loop_on_a_database_a_server_holds_exits_2(home: Path, fake: FakeGitHub,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # A continuous `loopgate poll` is a server of the database too: never two pollers.
    from bot.web.server_lock import ServerLock

    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    held = ServerLock(home / "loopgate.db")
    held.acquire()
    try:
        result = run(home, "poll")
    finally:
        held.release()
    assert result.exit_code == 2
    assert "another loopgate serve is running on" in result.output
    assert fake.count() == 0  # refused before anything talked to GitHub


def test_a_symlink_to_the_database_names_the_same_lock(tmp_path: Path) -> None:
    # Review finding F9: the lock belongs to the file, not to the spelling of its path.
    from bot.web.server_lock import DatabaseInUseError, ServerLock

    db = tmp_path / "s.db"
    db.write_bytes(b"")
    (tmp_path / "link.db").symlink_to(db)
    held = ServerLock(db)
    held.acquire()
    try:
        with pytest.raises(DatabaseInUseError):
            ServerLock(tmp_path / "link.db").acquire()
    finally:
        held.release()

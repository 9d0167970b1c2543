"""``loopgate poll --once`` beside a running ``serve`` (issue 21 §5): it commits what it
polled and leaves the effects to the server's paced worker, so it never waits behind a
backlog of writes that server owns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.web.server_lock import ServerLock
from tests.bridges.conftest import REPO
from tests.bridges.test_serve_cmd import home, run  # noqa: F401 - the fixture
from tests.fakes.github import FakeGitHub

WRITES = ("POST", "PATCH", "PUT", "DELETE")


def test_poll_once_leaves_the_effects_to_the_running_serve(
        home: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.delenv("LOOPGATE_GITHUB_WRITE_INTERVAL", raising=False)  # GitHub's pacing
    numbers = [fake.create_issue(REPO, f"t{i}", author="alice") for i in range(3)]
    for n in numbers:
        fake.add_comment(REPO, n, "the-loop start", as_user="alice")
    fake.reset_log()
    with ServerLock(home / "loopgate.db"):  # a serve holds the database
        result = run(home, "poll", "--once")
    assert result.exit_code == 0, result.output
    assert "deliveries=3 (handled=3)" in result.output
    assert "effects: left queued for the running serve (pid " in result.output
    # nothing written by the CLI; a GraphQL query is a POST that writes nothing (the
    # start keyword's authorship lookup, issue 19 §1)
    writes = sum(fake.count(method=m) for m in WRITES) - fake.count(route="graphql")
    assert writes == 0
    doc = json.loads(run(home, "check", f"{REPO}#{numbers[0]}", "--format", "json").output)
    assert doc["currentNode"] == "phase-selection"
    assert doc["report"]["effects"]  # queued for the server's worker


def test_poll_once_alone_carries_its_effects_out(
        home: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
    number = fake.create_issue(REPO, "t", author="alice")
    fake.add_comment(REPO, number, "the-loop start", as_user="alice")
    result = run(home, "poll", "--once")
    assert result.exit_code == 0 and "left queued" not in result.output
    assert fake.count(method="POST", route="comment-create") >= 1
    lock = ServerLock(home / "loopgate.db")  # the probe let go of the lock: a serve can start
    lock.acquire()
    lock.release()

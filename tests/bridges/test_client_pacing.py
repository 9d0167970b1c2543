"""Reads never wait on write pacing (issue 21 §2): the client's writes are spaced by one
:class:`WritePacer` shared by every thread, and a read on another thread is answered while
a write sleeps for its turn or is in flight at GitHub."""

from __future__ import annotations

import threading
import time

from bridges.github.client import GitHubClient, WritePacer
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub

#: Spacing used here: long enough that a read waiting behind it could not go unnoticed.
INTERVAL = 2.0


def _writes_at(fake: FakeGitHub) -> list[float]:
    with fake.lock:
        return [r.at for r in fake.requests if r.route == "comment-create"]


def test_a_read_is_answered_while_a_paced_write_sleeps(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t", labels=["bug"])
    client = GitHubClient(fake.api_url, fake.token, seconds_between_writes=INTERVAL)
    writer = threading.Thread(target=lambda: [
        client.add_comment("acme", "widgets", number, f"w{i}") for i in range(2)])
    writer.start()
    try:
        assert client.pacer.sleeping.wait(30), "the second write never waited for its turn"
        started = time.monotonic()
        assert client.labels("acme", "widgets", number) == ["bug"]
        comments = client.list_comments("acme", "widgets", number)
        took = time.monotonic() - started
        # Answered while the paced write still slept: GitHub has seen one write only.
        assert len(_writes_at(fake)) == 1 and [c.body for c in comments] == ["w0"]
        assert took < INTERVAL
    finally:
        writer.join(30)
    assert not writer.is_alive()
    first, second = _writes_at(fake)
    assert second - first >= INTERVAL * 0.95  # the writes kept their spacing
    assert client.pacer.paced == 1


def test_writes_from_two_threads_keep_the_spacing(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    client = GitHubClient(fake.api_url, fake.token, seconds_between_writes=0.5)
    threads = [threading.Thread(target=client.add_comment,
                                args=("acme", "widgets", number, f"t{i}")) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    times = sorted(_writes_at(fake))
    assert len(times) == 3
    assert all(b - a >= 0.5 * 0.95 for a, b in zip(times, times[1:], strict=False))


def test_a_read_is_answered_while_a_write_is_in_flight(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t", labels=["bug"])
    client = GitHubClient(fake.api_url, fake.token, seconds_between_writes=INTERVAL)
    hold = fake.hold("POST", "comment-create", apply=True)
    writer = threading.Thread(target=client.add_comment, args=("acme", "widgets", number, "x"))
    writer.start()
    try:
        assert hold.arrived.wait(30)
        assert client.labels("acme", "widgets", number) == ["bug"]
        assert _writes_at(fake) == []  # the write is still held at GitHub
    finally:
        hold.release()
        writer.join(30)
    assert not writer.is_alive() and len(_writes_at(fake)) == 1


def test_the_pacer_spaces_from_the_end_of_the_previous_write() -> None:
    now = [100.0]
    pacer = WritePacer(1.0, monotonic=lambda: now[0])
    with pacer.turn():
        now[0] = 100.4  # the write took 0.4 s
    now[0] = 101.5  # 1.1 s after it ended: no wait
    with pacer.turn():
        pass
    assert pacer.paced == 0 and not pacer.sleeping.is_set()
    assert WritePacer(0).interval == 0.0

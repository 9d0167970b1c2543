"""Issue 19 §6 at the HTTP front (the real waitress server, the real receiver): a body nested
too deep or a delivery id too long is a 400 with one log line, never a 500 (after the
signature check: a forged one is still a 401 first), and 150 clients trickling their
headers a byte at a time do not keep ``/healthz`` or a signed webhook from answering
within 2 s."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest
import requests

from bot.web.server import HTTP_SETTINGS
from bridges.github.webhook import MAX_DELIVERY_ID, MAX_DEPTH, sign
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.fakes.github import wait_for

SLOW_CLIENTS = 150


def _nested(levels: int) -> bytes:
    # {"action": "created", "x": [[[...]]]}: the payload object is level 1
    return b'{"action": "created", "x": ' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def _post(world: GitHubWorld, body: bytes, delivery: str = "d-1",
          secret: str = SECRET) -> requests.Response:
    return world.post({"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": delivery,
                       "X-Hub-Signature-256": sign(body, secret)}, body)


def _receiver_lines(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.name == "bridges.github.receiver"]


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5000])
def test_a_body_nested_too_deep_is_a_400_with_one_log_line(
        world: GitHubWorld, caplog: pytest.LogCaptureFixture, levels: int) -> None:
    world.serve()
    with caplog.at_level(logging.INFO, logger="bridges.github.receiver"):
        response = _post(world, _nested(levels))
    assert response.status_code == 400
    assert f"nests deeper than {MAX_DEPTH} levels" in response.json()["error"]
    [line] = _receiver_lines(caplog.records)
    assert "nests deeper" in line and "Traceback" not in caplog.text
    assert not world.dispatcher.known("d-1")


def test_a_body_at_the_depth_limit_is_read(world: GitHubWorld) -> None:
    world.serve()
    response = _post(world, _nested(MAX_DEPTH))
    assert response.status_code == 200  # read and routed: no repository, so ignored
    assert response.json()["status"] == "ignored"


def test_a_delivery_id_over_100_characters_is_a_400_with_one_log_line(
        world: GitHubWorld, caplog: pytest.LogCaptureFixture) -> None:
    world.serve()
    body = b'{"action": "created"}'
    with caplog.at_level(logging.INFO, logger="bridges.github.receiver"):
        too_long = _post(world, body, delivery="d" * (MAX_DELIVERY_ID + 1))
    assert too_long.status_code == 400
    assert f"at most {MAX_DELIVERY_ID}" in too_long.json()["error"]
    [line] = _receiver_lines(caplog.records)
    assert "d" * (MAX_DELIVERY_ID + 1) not in line  # the oversized id is not echoed
    assert _post(world, body, delivery="d" * MAX_DELIVERY_ID).status_code == 200


def test_a_forged_signature_is_still_a_401_before_any_parsing(world: GitHubWorld) -> None:
    world.serve()
    assert _post(world, _nested(5000), delivery="x" * 500,
                 secret="a guess").status_code == 401


class _Tricklers:
    """``count`` sockets sending a request's headers one byte at a time, round robin,
    until stopped; every socket is closed and the thread joined by :meth:`close`."""

    def __init__(self, url: str, count: int) -> None:
        parts = urlsplit(url)
        self.sockets = [socket.create_connection((parts.hostname, parts.port), timeout=5)
                        for _ in range(count)]
        self.request = (f"GET /healthz HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                        + "X-Slow: " + "a" * 4096).encode()
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tricklers", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        position = 0
        while not self._stop.is_set() and position < len(self.request):
            for sock in self.sockets:
                sock.sendall(self.request[position:position + 1])
            position += 1
            self.sent = position
            self._stop.wait(0.02)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.sockets:
            sock.close()


def test_slow_clients_do_not_keep_health_or_a_webhook_from_answering(
        world: GitHubWorld) -> None:
    url = world.serve()
    assert world.server is not None
    server = world.server._server
    assert server.adj.connection_limit == HTTP_SETTINGS["connection_limit"] > SLOW_CLIENTS
    tricklers = _Tricklers(url, SLOW_CLIENTS)
    try:
        # every slow socket accepted by the server (listener and trigger are in the map too)
        assert wait_for(lambda: len(server._map) >= SLOW_CLIENTS + 2, timeout=10)
        assert wait_for(lambda: tricklers.sent >= 5, timeout=10)  # they are trickling
        started = time.monotonic()
        health = requests.get(f"{url}/healthz", timeout=2)
        health_took = time.monotonic() - started
        assert health.status_code == 200 and health.json()["ok"] is True
        ref = world.issue()
        comment = world.comment(ref, "hello", as_user="carol")
        headers, body = world.fake.webhook("issue_comment", "created", repo=REPO,
                                           number=ref.number, comment_id=comment.id,
                                           secret=SECRET)
        started = time.monotonic()
        answer = requests.post(f"{url}/github/webhook", data=body, headers=headers, timeout=2)
        webhook_took = time.monotonic() - started
        assert answer.status_code == 202, answer.text
        assert health_took < 2 and webhook_took < 2
        assert tricklers.sent < len(tricklers.request)  # still trickling while answered
    finally:
        tricklers.close()
    assert json.loads(body)["comment"]["id"] == comment.id

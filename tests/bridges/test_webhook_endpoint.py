"""``POST /github/webhook`` answered straight from WSGI (issue 21 §1): the framework-free
:class:`WebhookEndpoint` in front of Flask answers exactly as the Flask route did (the same
status and bytes), through the real waitress server for the transfer details (a chunked
body, a GET), and refuses before reading what it must not read."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask
from werkzeug.datastructures import EnvironHeaders

from bridges.github.receiver import WebhookEndpoint, webhook_blueprint
from bridges.github.webhook import MAX_BODY_BYTES, header, sign, verify_signature
from tests.bridges.conftest import REPO, SECRET, GitHubWorld


def _flask_answer(world: GitHubWorld, headers: dict[str, str], body: bytes
                  ) -> tuple[int, bytes]:
    """What the Flask route alone answers for the same request (the reference)."""
    app = Flask("reference")
    app.register_blueprint(webhook_blueprint(world.dispatcher, _router(world), secret=SECRET))
    response = app.test_client().post("/github/webhook", data=body, headers=headers)
    return response.status_code, response.get_data()


def _router(world: GitHubWorld) -> Any:
    from bot.web.server import _router_config

    return _router_config(world.services)


def _comment_delivery(world: GitHubWorld, text: str) -> tuple[dict[str, str], bytes]:
    """A signed ``issue_comment.created`` delivery of a new comment on a new item."""
    ref = world.issue()
    comment = world.comment(ref, text)
    return world.fake.webhook("issue_comment", "created", repo=REPO, number=ref.number,
                              comment_id=comment.id, secret=SECRET)


@pytest.fixture
def served(world: GitHubWorld) -> Iterator[GitHubWorld]:
    world.serve()
    yield world


def test_the_fast_path_answers_byte_for_byte_as_the_flask_route(served: GitHubWorld) -> None:
    headers, body = _comment_delivery(served, "a note")
    fast = served.post(headers, body)
    assert fast.status_code == 202
    assert fast.content == b'{"kind":"comment","status":"queued"}\n'
    assert fast.headers["Content-Type"] == "application/json"
    assert served.dispatcher.wait_idle(10)
    # the same delivery again: the Flask route and the fast path both call it a duplicate
    again = served.post(headers, body)
    assert (again.status_code, again.content) == _flask_answer(served, headers, body)
    assert again.content == b'{"status":"duplicate"}\n'


def test_a_forged_signature_is_refused_before_parsing_and_nothing_is_kept(
        served: GitHubWorld) -> None:
    ref = served.issue()
    headers, body = served.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                        label="loop", secret="not-the-secret")
    answer = served.post(headers, body)
    assert (answer.status_code, answer.content) == (401, b'{"error":"invalid signature"}\n')
    assert served.dispatcher.inbox.backlog() == (0, "")


def test_a_chunked_body_is_read_whole_through_waitress(served: GitHubWorld) -> None:
    """waitress de-chunks the body and sets CONTENT_LENGTH before the app sees it."""
    headers, body = _comment_delivery(served, "chunked")
    assert served.server is not None
    chunks = (body[i:i + 700] for i in range(0, len(body), 700))  # a generator: chunked
    answer = requests.post(f"{served.server.url}/github/webhook", data=chunks,
                           headers=headers, timeout=10)
    assert answer.request.headers["Transfer-Encoding"] == "chunked"
    assert (answer.status_code, answer.json()["status"]) == (202, "queued")


def test_a_get_of_the_webhook_path_is_flasks_405(served: GitHubWorld) -> None:
    assert served.server is not None
    answer = requests.get(f"{served.server.url}/github/webhook", timeout=10)
    assert answer.status_code == 405
    assert set(answer.headers["Allow"].split(", ")) == {"OPTIONS", "POST"}


def test_a_body_over_the_limit_is_refused_unread(world: GitHubWorld) -> None:
    endpoint = WebhookEndpoint(world.dispatcher, _router(world), secret=SECRET, max_body=1000)

    class Unreadable(io.RawIOBase):
        def read(self, size: int = -1) -> bytes:
            raise AssertionError("the body of a refused request was read")

    statuses: list[str] = []
    app = endpoint.wsgi(lambda environ, start: [b"not the endpoint"])
    out = app({"REQUEST_METHOD": "POST", "PATH_INFO": "/github/webhook",
               "CONTENT_LENGTH": "1001", "wsgi.input": Unreadable()},
              lambda status, headers: statuses.append(status))
    assert statuses == ["413 Request Entity Too Large"]
    assert b"".join(out) == b'{"error":"the body is larger than GitHub sends"}\n'
    out = app({"REQUEST_METHOD": "POST", "PATH_INFO": "/github/webhook",
               "CONTENT_LENGTH": "twelve", "wsgi.input": Unreadable()},
              lambda status, headers: statuses.append(status))
    assert statuses[-1] == "400 Bad Request"
    assert b"".join(out) == b'{"error":"the Content-Length is not a number"}\n'


def test_other_requests_go_to_the_wrapped_app(world: GitHubWorld) -> None:
    endpoint = WebhookEndpoint(world.dispatcher, _router(world), secret=SECRET)
    app = endpoint.wsgi(lambda environ, start: [environ["PATH_INFO"].encode()])
    assert list(app({"REQUEST_METHOD": "POST", "PATH_INFO": "/slack/events"},
                    lambda *a: None)) == [b"/slack/events"]
    assert list(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/github/webhook"},
                    lambda *a: None)) == [b"/github/webhook"]


def test_environ_headers_are_found_in_any_case() -> None:
    """The endpoint reads a WSGI environ's headers through werkzeug's EnvironHeaders: the
    webhook module's lookups and signature check work on it as on Flask's."""
    body = b'{"zen": "x"}'
    environ = {"HTTP_X_GITHUB_EVENT": "ping", "HTTP_X_HUB_SIGNATURE_256": sign(body, SECRET),
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "12",
               "wsgi.input": io.BytesIO(body)}
    items = dict(EnvironHeaders(environ).items())
    assert items == {"X-Github-Event": "ping", "X-Hub-Signature-256": sign(body, SECRET),
                     "Content-Type": "application/json", "Content-Length": "12"}
    headers = EnvironHeaders(environ)
    assert header(headers, "x-github-event") == "ping"
    verify_signature(headers, body, SECRET)  # raises when the signature is not found


def test_no_secret_refuses_to_build_the_endpoint(world: GitHubWorld) -> None:
    from bridges.github.errors import SignatureError

    with pytest.raises(SignatureError, match="no webhook secret"):
        WebhookEndpoint(world.dispatcher, _router(world), secret=None)


def test_a_raw_http_request_without_a_length_is_answered(served: GitHubWorld) -> None:
    """A POST with neither Content-Length nor chunking has an empty body (RFC 9112 §6.3):
    waitress passes CONTENT_LENGTH 0, and an empty body is not a signed delivery."""
    assert served.server is not None
    host, port = served.server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"POST /github/webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 401 ")


def test_serve_refuses_a_declared_oversized_body_before_receiving_it(
        served: GitHubWorld) -> None:
    """The 413 must come from the headers alone through serve's real server: waitress
    otherwise takes the whole body (to a temporary file, up to its 1 GB default) before
    the endpoint can refuse it unread."""
    assert served.server is not None
    host, port = served.server.url.removeprefix("http://").split(":")
    declared = MAX_BODY_BYTES + 1
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(b"POST /github/webhook HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: " + str(declared).encode() + b"\r\n\r\n")
        reply = conn.recv(4096)  # no body byte sent: only a refusal can answer
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert served.dispatcher.inbox.backlog() == (0, "")


def test_serve_takes_a_body_of_exactly_the_limit() -> None:
    """The server's cap is the endpoint's: a body of MAX_BODY_BYTES is let through to it
    (waitress refuses a length equal to its setting, so the setting is one more)."""
    from bot.web.server import HTTP_SETTINGS

    assert HTTP_SETTINGS["max_request_body_size"] == MAX_BODY_BYTES + 1


def _post_environ(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    environ: dict[str, Any] = {"REQUEST_METHOD": "POST", "PATH_INFO": "/github/webhook",
                               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
    for name, value in headers.items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    return environ


def test_only_a_signed_delivery_is_an_ack_in_hand(world: GitHubWorld) -> None:
    """Anyone can POST unsigned bodies: counted as acks, a stream of them would hold the
    dispatcher's acks-first pause at its bound (four deliveries a second). A signed one is
    counted from its check until the server closes its response."""
    endpoint = WebhookEndpoint(world.dispatcher, _router(world), secret=SECRET)
    acks = world.dispatcher.acks
    app = endpoint.wsgi(lambda environ, start: [b"flask"])
    ref = world.issue()
    headers, body = world.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                       label="loop", secret="not-the-secret")
    statuses: list[str] = []
    refused = app(_post_environ(headers, body), lambda status, h: statuses.append(status))
    assert statuses == ["401 Unauthorized"] and acks.in_hand == 0
    assert list(refused) == [b'{"error":"invalid signature"}\n']
    headers, body = _comment_delivery(world, "a note")
    accepted = app(_post_environ(headers, body), lambda status, h: statuses.append(status))
    assert statuses[-1] == "202 Accepted"
    assert acks.in_hand == 1  # answered, not yet written out by the server
    assert list(accepted) == [b'{"kind":"comment","status":"queued"}\n']
    accepted.close()  # type: ignore[attr-defined]
    assert acks.in_hand == 0
    app({"REQUEST_METHOD": "GET", "PATH_INFO": "/github/webhook"}, lambda *a: None)
    assert acks.in_hand == 0 and acks.pauses == 0

"""A loopback fake of the Slack Web API, and helpers to sign requests into a Bolt app.

The fake is a real HTTP server on 127.0.0.1 (port 0) so the real ``slack_sdk.WebClient``
talks to it through ``base_url``. It records every call (method, query/form params, JSON
body, headers) and answers with the shapes of
``/work/shared/fixtures/slack/web-api/examples.json``. It can be told to answer one call
with HTTP 429 + ``Retry-After``, to answer a method with an ``ok: false`` error, or to be
"down" (HTTP 503 for every call) to simulate a Slack outage.

Any POST outside ``/api/`` is recorded as a ``response_url`` call (slash-command replies
go to the payload's ``response_url``; tests point it here).

What Slack enforces, the fake enforces too (platform-facts §C1, §C4):

- ``views.open`` exchanges a ``trigger_id`` Slack issued in an interaction payload (tests
  get one from :meth:`FakeSlack.issue_trigger_id`), once, within 3 s of issue. A reused one
  answers ``exchanged_trigger_id``, a late one ``expired_trigger_id`` (error names from
  Slack's ``views.open`` method data, mirrored in ``slack-ruby/slack-api-ref``
  ``methods/views/views.open.json`` and hex.pm ``slack_kit`` ``views.open.json``; the
  3 s window: bolt-js "Opening modals" and docs.slack.dev/interactivity/handling-user-
  interaction). One Slack never issued answers ``invalid_arguments`` with the message
  ``invalid `trigger_id``` (the documented error example of ``views.open``). Time comes
  from :attr:`FakeSlack.clock` (monotonic seconds), so tests move it instead of sleeping.
- "You can include up to 50 blocks in each message, and 100 blocks in modals or Home
  tabs" (https://docs.slack.dev/reference/block-kit/blocks). A section's ``text`` is 1 to
  3,000 characters (Slack's Block Kit type definitions, ``slackapi/node-slack-sdk``
  ``packages/types/src/block-kit/blocks.ts``). ``chat.postMessage``/``chat.update`` over a
  limit answer ``invalid_blocks`` (their documented error for blocks that are not valid);
  ``views.publish``/``views.open`` answer ``invalid_arguments`` (the views methods list no
  ``invalid_blocks``) with a ``response_metadata.messages`` line naming the JSON pointer.

The e2e suite reuses :class:`FakeSlack` with ``loopgate serve`` in a subprocess, so this
module depends on nothing but the standard library.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import itertools
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes import LoopbackServer

__all__ = [
    "EXAMPLES_PATH",
    "SlackCall",
    "FakeSlack",
    "HttpReply",
    "sign",
    "signed_post",
    "interaction_body",
    "command_body",
]

#: ../shared beside the checkout; override with LOOPGATE_SHARED (as tests/conftest.py does).
EXAMPLES_PATH = (
    Path(os.environ.get("LOOPGATE_SHARED", Path(__file__).resolve().parents[2].parent / "shared"))
    / "fixtures" / "slack" / "web-api" / "examples.json"
)


def _examples() -> dict[str, Any]:
    try:
        return json.loads(EXAMPLES_PATH.read_text("utf-8"))["methods"]
    except OSError:  # pragma: no cover - the fixtures are part of the workspace
        return {}


@dataclass
class SlackCall:
    """One recorded request.

    Attributes:
        method: the Web API method (``chat.postMessage``), or ``response_url`` for a
            POST outside ``/api/``.
        params: query-string and form fields (single values).
        json: the JSON body, or ``{}``.
        headers: request headers (lower-case names).
        path: the request path.
        status: the HTTP status the fake answered.
        response: the JSON body the fake answered with (e.g. the ``ts`` it gave a post).
    """

    method: str
    params: dict[str, str]
    json: dict[str, Any]
    headers: dict[str, str]
    path: str
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def args(self) -> dict[str, Any]:
        """Params and JSON body merged (JSON wins): what the caller sent."""
        merged: dict[str, Any] = dict(self.params)
        merged.update(self.json)
        return merged


@dataclass
class _Plan:
    rate_limits: dict[str, list[int]] = field(default_factory=dict)  # method -> Retry-After
    errors: dict[str, str] = field(default_factory=dict)  # method -> error code
    down: bool = False
    users: dict[str, dict[str, Any]] = field(default_factory=dict)  # users.info overrides
    socket_url: str = ""  # what apps.connections.open answers (Socket Mode)


class FakeSlack(LoopbackServer):
    """The fake server. Use as a context manager, or call :meth:`start`/:meth:`stop`.

    Attributes:
        calls: every request received, in arrival order.
    """

    def __init__(self, clock: Any = time.monotonic) -> None:
        #: Monotonic seconds for trigger_id expiry; tests replace it to move time.
        self.clock = clock
        self._triggers: dict[str, tuple[float, bool]] = {}  # id -> (issued at, exchanged)
        self._trigger_seq = itertools.count(12345)
        self.calls: list[SlackCall] = []
        self._plan = _Plan()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._ts = itertools.count(1)
        self._examples = _examples()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle (start/stop/with: LoopbackServer) --------------------------------------
    def _make_server(self) -> ThreadingHTTPServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                fake._handle(self)

            def do_GET(self) -> None:  # noqa: N802
                fake._handle(self)

            def log_message(self, *args: Any) -> None:
                return None

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._server is not None, "FakeSlack is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The Web API base URL to give ``WebClient(base_url=...)`` (ends with ``/``)."""
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def response_url(self) -> str:
        """A ``response_url`` that records into :attr:`calls` as method ``response_url``."""
        return f"http://127.0.0.1:{self.port}/response/1"

    # -- programming the fake ----------------------------------------------------------
    def rate_limit_once(self, method: str, retry_after: int = 1) -> None:
        """Answer the next call of ``method`` with HTTP 429 and ``Retry-After``."""
        with self._lock:
            self._plan.rate_limits.setdefault(method, []).append(retry_after)

    def fail_method(self, method: str, error: str | None) -> None:
        """Answer every call of ``method`` with ``{"ok": false, "error": error}``
        (``None`` clears it)."""
        with self._lock:
            if error is None:
                self._plan.errors.pop(method, None)
            else:
                self._plan.errors[method] = error

    def set_user(self, user_id: str, **fields: Any) -> None:
        """Answer ``users.info`` for ``user_id`` with these fields over the example's
        (e.g. ``deleted=True``, ``is_bot=True``)."""
        with self._lock:
            self._plan.users[user_id] = dict(fields)

    def set_socket_url(self, url: str) -> None:
        """Answer ``apps.connections.open`` with this WebSocket URL (a
        :class:`tests.fakes.slack_socket.FakeSocketMode`'s)."""
        with self._lock:
            self._plan.socket_url = url

    def set_down(self, down: bool) -> None:
        """While down, every call answers HTTP 503 (a Slack outage)."""
        with self._lock:
            self._plan.down = down

    def issue_trigger_id(self) -> str:
        """A fresh ``trigger_id`` as Slack puts in an interaction payload (valid for one
        ``views.open`` within 3 s of :attr:`clock` now)."""
        with self._lock:
            n = next(self._trigger_seq)
            trigger = f"{n}.98765.{hashlib.sha1(str(n).encode()).hexdigest()[:12]}"
            self._triggers[trigger] = (float(self.clock()), False)
        return trigger

    # -- reading what happened ---------------------------------------------------------
    def calls_to(self, method: str) -> list[SlackCall]:
        """Recorded calls of ``method`` that were answered 200."""
        with self._lock:
            return [c for c in self.calls if c.method == method and c.status == 200]

    def all_calls_to(self, method: str) -> list[SlackCall]:
        """Recorded calls of ``method``, whatever the fake answered."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[SlackCall]:
        """Block until ``count`` successful calls of ``method`` were recorded.

        Raises:
            AssertionError: when they did not arrive within ``timeout`` seconds (a
                liveness bound, not a timing assertion).
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [c for c in self.calls if c.method == method and c.status == 200]
                if len(found) >= count:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [c.method for c in self.calls]
                    raise AssertionError(f"expected {count} x {method}; calls were {seen}")
                self._cond.wait(left)

    def clear(self) -> None:
        """Forget recorded calls."""
        with self._lock:
            self.calls.clear()

    # -- serving -----------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query).items()}
        body: dict[str, Any] = {}
        ctype = headers.get("content-type", "")
        if raw and "json" in ctype:
            body = json.loads(raw.decode("utf-8"))
        elif raw:
            form = urllib.parse.parse_qs(raw.decode("utf-8"), keep_blank_values=True)
            params.update({k: v[-1] for k, v in form.items()})
        if parsed.path.startswith("/api/"):
            method = parsed.path[len("/api/"):]
        else:
            method = "response_url"
        call = SlackCall(method, params, body, headers, parsed.path)
        status, reply, extra = self._answer(call)
        call.status = status
        call.response = reply
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()
        data = json.dumps(reply).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in extra.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, call: SlackCall) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            if self._plan.down:
                return 503, {"ok": False, "error": "service_unavailable"}, {}
            pending = self._plan.rate_limits.get(call.method)
            if pending:
                retry_after = pending.pop(0)
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after)}
            error = self._plan.errors.get(call.method)
        if error is not None:
            return 200, {"ok": False, "error": error}, {}
        refused = _token_refusal(call)
        if refused:
            return 200, {"ok": False, "error": refused}, {}
        invalid = _block_refusal(call) or self._trigger_refusal(call)
        if invalid:
            return 200, invalid, {}
        return 200, self._success(call), {}

    def _trigger_refusal(self, call: SlackCall) -> dict[str, Any] | None:
        if call.method != "views.open":
            return None
        trigger = str(call.args.get("trigger_id") or "")
        with self._lock:
            issued = self._triggers.get(trigger)
            if issued is None:
                return {"ok": False, "error": "invalid_arguments",
                        "response_metadata": {"messages": ["invalid `trigger_id`"]}}
            at, exchanged = issued
            if exchanged:
                return {"ok": False, "error": "exchanged_trigger_id"}
            if float(self.clock()) - at > TRIGGER_TTL_S:
                return {"ok": False, "error": "expired_trigger_id"}
            self._triggers[trigger] = (at, True)
        return None

    def _success(self, call: SlackCall) -> dict[str, Any]:
        example = copy.deepcopy(self._examples.get(call.method, {}).get("200") or {"ok": True})
        args = call.args
        if call.method == "chat.postMessage":
            ts = f"1503435956.{next(self._ts):06d}"
            example.update({"channel": args.get("channel", example.get("channel")), "ts": ts})
            example["message"] = {**example.get("message", {}), "ts": ts,
                                  "text": args.get("text", "")}
        elif call.method == "chat.update":
            example.update({"channel": args.get("channel"), "ts": args.get("ts"),
                            "text": args.get("text", "")})
        elif call.method == "conversations.open":
            users = str(args.get("users", ""))
            example["channel"] = {"id": "D" + users.replace(",", "").upper()[:10]}
        elif call.method == "users.info":
            user_id = str(args.get("user", ""))
            with self._lock:
                override = dict(self._plan.users.get(user_id, {}))
            example["user"] = {**example.get("user", {}), "id": user_id, **override}
        elif call.method == "chat.postEphemeral":
            example["message_ts"] = f"1502210682.{next(self._ts):06d}"
        elif call.method == "apps.connections.open":
            with self._lock:
                example = {"ok": True, "url": self._plan.socket_url}
        elif call.method in ("views.publish", "views.open"):
            view = args.get("view")
            view = json.loads(view) if isinstance(view, str) else dict(view or {})
            example = {"ok": True, "view": {**view, "id": "V" + f"{next(self._ts):08d}"}}
        return example


#: Slack's limits the fake enforces (see the module docstring for sources).
TRIGGER_TTL_S = 3.0
MESSAGE_BLOCKS_MAX = 50
VIEW_BLOCKS_MAX = 100
SECTION_TEXT_MAX = 3000


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return value


def _block_problem(blocks: Any, limit: int, pointer: str) -> str:
    if not isinstance(blocks, list):
        return ""
    if len(blocks) > limit:
        return f"[ERROR] must provide at most {limit} items [json-pointer:{pointer}]"
    for index, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "section":
            continue
        text = (block.get("text") or {}).get("text")
        if text is not None and not 1 <= len(str(text)) <= SECTION_TEXT_MAX:
            return (f"[ERROR] must be between 1 and {SECTION_TEXT_MAX} characters "
                    f"[json-pointer:{pointer}/{index}/text/text]")
    return ""


def _block_refusal(call: SlackCall) -> dict[str, Any] | None:
    args = call.args
    if call.method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
        problem = _block_problem(_decoded(args.get("blocks")), MESSAGE_BLOCKS_MAX, "/blocks")
        error = "invalid_blocks"
    elif call.method in ("views.publish", "views.open"):
        view = _decoded(args.get("view")) or {}
        problem = _block_problem(view.get("blocks") if isinstance(view, dict) else None,
                                 VIEW_BLOCKS_MAX, "/view/blocks")
        error = "invalid_arguments"
    else:
        return None
    if not problem:
        return None
    return {"ok": False, "error": error, "response_metadata": {"messages": [problem]}}


def _token_refusal(call: SlackCall) -> str:
    # Slack's token types: apps.connections.open takes only the app-level token (xapp-);
    # every other method here takes the bot token (xoxb-). The wrong type answers
    # not_allowed_token_type (docs.slack.dev, apps.connections.open "Errors").
    auth = call.headers.get("authorization", "")
    if not auth.startswith("Bearer "):
        return ""
    app_token = auth.startswith("Bearer xapp-")
    if call.method == "apps.connections.open" and not app_token:
        return "not_allowed_token_type"
    if call.method != "apps.connections.open" and app_token:
        return "not_allowed_token_type"
    return ""


# -- signing helpers -------------------------------------------------------------------
def sign(body: str | bytes, secret: str, timestamp: int | None = None) -> dict[str, str]:
    """The two Slack signing headers for ``body`` (v0 HMAC-SHA256, NOTES.md §3).

    Args:
        body: the exact request body.
        secret: the signing secret.
        timestamp: Unix seconds (default now).

    Returns:
        ``{"X-Slack-Request-Timestamp": ..., "X-Slack-Signature": "v0=<hex>"}``.
    """
    raw = body.encode("utf-8") if isinstance(body, str) else body
    ts = str(int(time.time()) if timestamp is None else timestamp)
    base = b"v0:" + ts.encode("ascii") + b":" + raw
    digest = hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


@dataclass
class HttpReply:
    """What :func:`signed_post` got back."""

    status: int
    body: str
    headers: Mapping[str, str]

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


def signed_post(
    url: str,
    body: str | bytes,
    secret: str,
    timestamp: int | None = None,
    *,
    content_type: str | None = None,
    signature: str | None = None,
) -> HttpReply:
    """POST ``body`` to ``url`` signed like Slack does.

    Args:
        url: e.g. ``http://127.0.0.1:PORT/slack/events``.
        body: the exact body (form-encoded or JSON text).
        secret: the signing secret.
        timestamp: Unix seconds to sign with (default now; pass an old one to test the
            replay window).
        content_type: defaults to JSON when the body starts with ``{``, else form.
        signature: send this signature instead of the computed one (forgery tests).

    Returns:
        The status, body and headers of the answer (4xx/5xx do not raise).
    """
    raw = body.encode("utf-8") if isinstance(body, str) else body
    headers = sign(raw, secret, timestamp)
    if signature is not None:
        headers["X-Slack-Signature"] = signature
    if content_type is None:
        content_type = (
            "application/json" if raw.lstrip().startswith(b"{")
            else "application/x-www-form-urlencoded"
        )
    headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=raw, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return HttpReply(resp.status, resp.read().decode("utf-8"), dict(resp.headers))
    except urllib.error.HTTPError as err:
        return HttpReply(err.code, err.read().decode("utf-8"), dict(err.headers))


def interaction_body(payload: Mapping[str, Any]) -> str:
    """An interactivity request body: ``payload=<url-encoded JSON>`` (NOTES.md §2)."""
    return "payload=" + urllib.parse.quote(json.dumps(payload))


def command_body(fields: Mapping[str, str]) -> str:
    """A slash-command request body (plain form fields)."""
    return urllib.parse.urlencode(dict(fields))

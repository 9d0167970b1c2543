"""The Bolt app, built in one place from loopgate.yaml (issue 4 §1).

* :func:`build_app` — the ``slack_bolt.App`` with every listener registered (by kind, from
  ``bot.slack.listeners.{actions,commands,events,views}``) and one ``@app.error`` handler.
  Listeners reach the wired services through ``context["services"]``.
* :func:`register_http_routes` — ``POST /slack/events`` (events, interactivity, slash
  commands) on the Flask app that also serves the GitHub webhook. The Slack signature is
  verified (v0 HMAC-SHA256, 5-minute window, constant-time compare; NOTES.md §3) *before*
  the body is parsed; a forged or stale request gets 401, and a signed body that is not
  UTF-8 gets 400 (one log line, never a traceback).
* :func:`start_socket_mode` — Socket Mode (no public URL) when an app token is set.
* :func:`build_web_client` — the ``slack_sdk.WebClient`` with the 429 retry handler, at
  ``slack.apiUrl``.

Secrets come only from the environment variables the config names; a missing one is a
:class:`~engine.errors.ConfigError` naming the variable, never a value.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltContext
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from bot.slack.blocks.escaping import slack_text
from bot.slack.listeners import actions, commands, events, views
from bot.slack.listeners.events.dedupe import dedupe_events
from bot.slack.slack_origin import origin_middleware
from bridges.github.webhook import HeaderItems
from engine.errors import ConfigError

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services
    from bridges.ingress.ack_first import AckFirst

__all__ = [
    "SLACK_PATH",
    "GENERIC_ERROR",
    "read_secret",
    "app_token",
    "build_web_client",
    "build_app",
    "verify_request",
    "is_utf8",
    "register_http_routes",
    "start_socket_mode",
]

log = logging.getLogger(__name__)

#: The one HTTP path for events, interactivity and slash commands.
SLACK_PATH = "/slack/events"
#: What a person sees when a listener failed after its ack (details go to the log).
GENERIC_ERROR = "loopgate could not finish that request; the error was logged."
#: Slack's replay window (NOTES.md §3), seconds.
MAX_SKEW_SECONDS = 60 * 5


def _slack(config: Any) -> dict[str, Any]:
    return dict(config.section("slack"))


def read_secret(env_name: str, what: str) -> str:
    """The value of environment variable ``env_name``.

    Args:
        env_name: the variable the config names (e.g. ``SLACK_BOT_TOKEN``).
        what: what it holds, for the message (``the Slack bot token``).

    Raises:
        ConfigError: the variable is unset or empty; the message names the variable only.
    """
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise ConfigError(f"{what} is missing: set the environment variable {env_name}")
    return value


def app_token(config: Any) -> str | None:
    """The Socket Mode app-level token (``slack.appTokenEnv``), or None when unset."""
    value = os.environ.get(str(_slack(config).get("appTokenEnv") or "SLACK_APP_TOKEN"), "")
    return value.strip() or None


def build_web_client(config: Any, *, token: str | None = None) -> WebClient:
    """A WebClient at ``slack.apiUrl`` that retries HTTP 429 after ``Retry-After``.

    Args:
        config: the validated configuration.
        token: the bot token (default: read from ``slack.botTokenEnv``).

    Raises:
        ConfigError: no token given and the bot token variable is not set.
    """
    if token is None:
        token = bot_token(config)
    return _configure_client(WebClient(token=token), config)


def bot_token(config: Any) -> str:
    """The bot token (``slack.botTokenEnv``).

    Raises:
        ConfigError: the variable is not set; the message names it.
    """
    return read_secret(str(_slack(config).get("botTokenEnv") or "SLACK_BOT_TOKEN"),
                       "the Slack bot token")


def _configure_client(client: WebClient, config: Any) -> WebClient:
    # slack.apiUrl, a 15 s timeout and up to two retries of HTTP 429 after Retry-After.
    base_url = str(_slack(config).get("apiUrl") or "https://slack.com/api/")
    client.base_url = base_url if base_url.endswith("/") else base_url + "/"
    client.timeout = 15
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=2))
    return client


def _services_middleware(services: Services) -> Callable[..., Any]:
    def inject(context: BoltContext, next: Callable[[], Any]) -> Any:  # noqa: A002 - Bolt's name
        context["services"] = services
        return next()

    return inject


def _on_error(error: Exception, body: Mapping[str, Any], respond: Any = None) -> None:
    # The one error handler: log the failure (type and traceback, no payload: it may hold
    # personal data) and tell the person in one plain sentence, never a stack trace.
    log.error("slack listener failed: %s", type(error).__name__, exc_info=error)
    if respond is not None and isinstance(body, Mapping) and body.get("response_url"):
        try:
            respond(text=slack_text(GENERIC_ERROR), response_type="ephemeral",
                    replace_original=False)
        except Exception as exc:  # noqa: BLE001 - nothing more can be said to the user
            log.warning("could not report the failure to Slack: %s", type(exc).__name__)


def build_app(
    services: Services, *, client: WebClient | None = None, socket_mode: bool | None = None,
    executor: Executor | None = None,
) -> App:
    """The Bolt app for ``services``.

    Args:
        services: the wired :class:`bot.services.Services`.
        client: a WebClient to use (tests pass one at the fake); default: built from the
            config with the bot token from ``slack.botTokenEnv``.
        socket_mode: build for Socket Mode (no request signing). Default: when the app
            token variable is set.
        executor: where listeners run after the ack (``serve`` passes a supervised
            :class:`bot.ops.supervisor.ThreadPool`'s, so those threads are joined before the
            store closes); default: Bolt's own.

    Returns:
        The app, listeners registered, acking first and working after the ack.

    Raises:
        ConfigError: the bot token (no ``client`` given) or, in HTTP mode, the signing
            secret is missing; the message names the variable.
    """
    config = services.config
    slack = _slack(config)
    # Bolt is handed the token, not a client, when it builds the client itself: given a
    # client while SLACK_BOT_TOKEN is set it warns on every start that the token is unused.
    token = bot_token(config) if client is None else None
    if socket_mode is None:
        socket_mode = app_token(config) is not None
    secret_env = str(slack.get("signingSecretEnv") or "SLACK_SIGNING_SECRET")
    secret = os.environ.get(secret_env, "") if socket_mode else read_secret(
        secret_env, "the Slack signing secret")
    app = App(
        name="loopgate",
        client=client,
        token=token,
        signing_secret=secret,
        token_verification_enabled=False,  # no auth.test at build time; first use checks
        request_verification_enabled=not socket_mode,
        process_before_response=False,  # ack returns at once; the work runs after it
        listener_executor=executor,
    )
    if client is None:
        _configure_client(app.client, config)
    app.use(origin_middleware(services))  # another workspace or app: ignored (issue 19 §6)
    app.use(_services_middleware(services))
    app.use(dedupe_events)  # an Events API retry (same event_id) is handled once (§6)
    for kind in (actions, commands, events, views):
        kind.register(app)
    app.error(_on_error)
    return app


def verify_request(
    secret: str,
    body: bytes,
    headers: HeaderItems,
    *,
    now: Callable[[], float] = time.time,
) -> bool:
    """Slack request signing, v0 (NOTES.md §3), over the exact bytes received.

    Args:
        secret: the signing secret.
        body: the raw request body.
        headers: request headers (names case-insensitive).
        now: the clock, Unix seconds (tests inject one).

    Returns:
        True only for a present, numeric timestamp within 5 minutes of ``now`` and a
        signature equal (constant-time) to ``v0=HMAC-SHA256(secret, "v0:ts:body")``. The
        HMAC runs over the bytes as received, so a body that is not UTF-8 is checked (and
        refused later), never a decoding error.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    timestamp = lowered.get("x-slack-request-timestamp", "")
    signature = lowered.get("x-slack-signature", "")
    if not timestamp.isdigit() or not signature.startswith("v0="):
        return False
    if abs(now() - int(timestamp)) > MAX_SKEW_SECONDS:
        return False
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode("ascii"), signature.encode("utf-8"))


def is_utf8(body: bytes) -> bool:
    """Whether ``body`` decodes as UTF-8 (Slack's request bodies always do).

    Args:
        body: the raw request body.

    Returns:
        True when it decodes; False otherwise (never raises).
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def register_http_routes(
    flask_app: Any, services: Services, *, app: App | None = None, client: WebClient | None = None,
    executor: Executor | None = None, acks: AckFirst | None = None,
) -> App:
    """Add ``POST /slack/events`` to ``flask_app``.

    Args:
        flask_app: the Flask app of ``loopgate serve`` (GitHub webhook on the same server).
        services: the wired services.
        app: a Bolt app (default: :func:`build_app` in HTTP mode).
        client: passed to :func:`build_app` when ``app`` is None.
        executor: passed to :func:`build_app` when ``app`` is None.
        acks: the dispatcher's acks-first count (``serve``): a request whose signature
            holds is counted in until its response is closed (issue 21 §1).

    Returns:
        The Bolt app serving the route.

    Raises:
        ConfigError: the signing secret (or bot token) variable is not set.
    """
    from flask import Response, request
    from slack_bolt.adapter.flask import SlackRequestHandler

    secret = read_secret(str(_slack(services.config).get("signingSecretEnv")
                             or "SLACK_SIGNING_SECRET"), "the Slack signing secret")
    bolt = app or build_app(services, client=client, socket_mode=False, executor=executor)
    handler = SlackRequestHandler(bolt)

    def slack_events() -> Any:
        raw = request.get_data(cache=True)  # the exact bytes, kept for Bolt afterwards
        if not verify_request(secret, raw, request.headers):
            log.warning("slack request refused: bad or stale signature")
            return Response('{"error":"invalid signature"}', status=401,
                            mimetype="application/json")
        if not is_utf8(raw):
            log.warning("slack request refused: the body is not UTF-8 (%d bytes)", len(raw))
            return Response('{"error":"body is not UTF-8"}', status=400,
                            mimetype="application/json")
        if acks is None:
            return handler.handle(request)
        acks.enter()
        try:
            response = handler.handle(request)
        except BaseException:
            acks.leave()
            raise
        response.call_on_close(acks.leave)
        return response

    flask_app.add_url_rule(SLACK_PATH, endpoint="slack_events", view_func=slack_events,
                           methods=["POST"])
    return bolt


def start_socket_mode(app: App, app_token_value: str) -> Any:
    """Connect ``app`` over Socket Mode in background threads.

    Args:
        app: the Bolt app (built with ``socket_mode=True``).
        app_token_value: the app-level token (``xapp-``), read from ``slack.appTokenEnv``.

    Returns:
        The ``SocketModeHandler``; call ``close()`` on shutdown.
    """
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(app, app_token_value)
    handler.connect()  # returns once connected; the session runs in its own threads
    return handler


def stop_socket_mode(handler: Any, timeout: float = 10.0) -> bool:
    """Close a :func:`start_socket_mode` handler and wait for its threads.

    slack_sdk's builtin client has a race: its session runner sets the session state's
    ``terminated`` back to False when it starts receiving, so a ``close()`` that lands
    just as a session starts (right after connecting, or after a reconnect) leaves the
    runner looping forever and ``close()`` waiting on it. While ``close()`` runs, the
    state is marked terminated again every 0.1 s, which lets that loop end.

    Args:
        handler: the ``SocketModeHandler``.
        timeout: seconds to wait for ``close()`` before giving up.

    Returns:
        True when it closed within ``timeout``.
    """
    closing = threading.Thread(target=handler.close, name="socket-mode-close", daemon=True)
    closing.start()
    deadline = time.monotonic() + timeout
    while closing.is_alive() and time.monotonic() < deadline:
        state = getattr(handler.client, "current_session_state", None)
        if state is not None:
            state.terminated = True
        closing.join(0.1)
    return not closing.is_alive()

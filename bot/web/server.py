"""The HTTP side of ``loopgate serve``: one Flask app served by waitress.

Routes: ``POST /github/webhook`` and ``GET /healthz`` (the GitHub bridge's receiver),
``GET /readyz`` and ``GET /metrics`` (:mod:`bot.ops.health`, :mod:`bot.ops.metrics`),
plus ``POST /slack/events`` when Slack runs in HTTP mode
(``bot.slack.bolt_app.register_http_routes``),
and the details pages, sign-in and ``POST /api/simulate`` (:mod:`bot.itempage.routes`).
:class:`Server` and the inbox replay (:func:`inbox_replay`) run as members of the
process's :class:`bot.ops.supervisor.Supervisor`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from flask import Flask

from bridges.github.webhook import MAX_BODY_BYTES
from engine.errors import ConfigError

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services
    from bridges.ingress.dispatcher import Dispatcher

__all__ = ["build_wsgi_app", "inbox_replay", "Server", "MAX_BODY_BYTES", "HTTP_SETTINGS"]

logger = logging.getLogger(__name__)


#: waitress settings that keep the front answering while slow clients hold connections
#: (issue 19 §6). waitress reads every request in its event loop and hands a worker thread
#: only a complete one, so a client trickling its headers costs a connection, never a
#: thread; what runs out is connections: waitress 3 stops accepting at
#: ``connection_limit`` (default 100), which 150 trickling sockets exceed. So: room for
#: 1000 connections, ``poll()`` rather than ``select()`` (whose FD_SETSIZE stops at 1024
#: descriptors), a silent connection closed after 30 s (checked every 10 s), and request
#: headers capped at 64 KiB (a trickler cannot hold one open for days). A body is capped
#: at GitHub's 25 MB too: waitress receives a whole body (spooled to a temporary file, up
#: to its 1 GB default) before any app sees it, so only its own cap refuses an oversized
#: declared length from the headers alone (413; it refuses a length equal to the setting,
#: hence the one more byte: a body of exactly MAX_BODY_BYTES reaches the endpoint).
HTTP_SETTINGS: dict[str, Any] = {
    "connection_limit": 1000,
    "asyncore_use_poll": True,
    "channel_timeout": 30,
    "cleanup_interval": 10,
    "max_request_header_size": 64 * 1024,
    "max_request_body_size": MAX_BODY_BYTES + 1,
}


def _slack_http_mode(services: Services) -> bool:
    if not services.config.has("slack"):
        return False
    try:
        from bot.slack.bolt_app import app_token
    except ImportError:
        return False
    return app_token(services.config) is None


def _auto_slack_routes(app: Flask, services: Services, executor: Executor | None,
                       dispatcher: Dispatcher) -> None:
    try:
        from bot.slack import bolt_app as slack_app
    except ImportError:
        logger.warning("slack is configured but bot.slack.bolt_app is missing; "
                       "no /slack/events route")
        return
    register = getattr(slack_app, "register_http_routes", None)
    if register is None:
        logger.warning("bot.slack.bolt_app has no register_http_routes; no /slack/events route")
        return
    # A signed Slack request is an ack: the dispatcher steps aside meanwhile (issue 21 §1).
    register(app, services, executor=executor, acks=dispatcher.acks)


def _router_config(services: Services) -> Any:
    from bridges.github.router import RouterConfig

    section = services.config.section("github")
    return RouterConfig.build(section.get("repos") or (), section.get("startLabel") or "",
                              services.settings.bot)


def build_wsgi_app(services: Services, dispatcher: Dispatcher, *, webhook_secret: str | None,
                   insecure_webhooks: bool = False,
                   slack_routes: Callable[[Flask, Any], Any] | bool | None = None,
                   slack_executor: Executor | None = None, health: Any = None,
                   metrics: Any = None) -> Flask:
    """The Flask app of ``loopgate serve``.

    Args:
        services: the wired :class:`bot.services.Services`.
        dispatcher: the running :class:`bridges.ingress.dispatcher.Dispatcher`.
        webhook_secret: the GitHub webhook secret (the value of ``github.webhookSecretEnv``).
        insecure_webhooks: accept unsigned deliveries when no secret is set.
        slack_routes: a callable ``(flask_app, services)`` adding the Slack routes; False
            for none; None (default) adds ``bot.slack.bolt_app.register_http_routes`` when Slack is
            configured in HTTP mode (no app token).
        slack_executor: where those default Slack routes run listeners after the ack
            (``serve``: a supervised :class:`bot.ops.supervisor.ThreadPool`'s executor).
        health: the :class:`bot.ops.health.Health` behind ``GET /readyz`` (default: the
            database, the dispatcher and the queues).
        metrics: the :class:`bot.ops.metrics.Metrics` behind ``GET /metrics`` (None: no
            such route, ``server.metrics: false``).

    Returns:
        The app. It queues nothing by itself: deliveries a previous process acknowledged
        but did not handle are replayed by :func:`inbox_replay`'s thread.

    Raises:
        ConfigError: ``github`` is configured, no secret is set and ``insecure_webhooks``
            is False (the message names the variable); or ``server.signIn`` is set and
            a secret's variable is unset or too short, or ``server.publicUrl`` is unset.
    """
    from bridges.github.receiver import WebhookEndpoint, health_blueprint, webhook_blueprint

    app = Flask("loopgate", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.register_blueprint(health_blueprint(dispatcher))
    from bot.ops import health as ops

    checks = health if health is not None else ops.Health(services, dispatcher=dispatcher)
    app.register_blueprint(ops.blueprint(checks, metrics))
    if services.config.has("github"):
        section = services.config.section("github")
        if not webhook_secret and not insecure_webhooks:
            variable = section.get("webhookSecretEnv") or "GITHUB_WEBHOOK_SECRET"
            raise ConfigError(
                f"webhook secret missing: set the environment variable {variable}, or pass "
                "--insecure-webhooks to accept unsigned deliveries (development only)")
        router = _router_config(services)
        app.register_blueprint(webhook_blueprint(dispatcher, router, secret=webhook_secret,
                                                 insecure=insecure_webhooks))
        # The same endpoint answers POST /github/webhook before Flask sees it (issue 21 §1:
        # an ack is what a burst waits on; see WebhookEndpoint).
        endpoint = WebhookEndpoint(dispatcher, router, secret=webhook_secret,
                                   insecure=insecure_webhooks)
        app.wsgi_app = endpoint.wsgi(app.wsgi_app)  # type: ignore[method-assign,assignment]
    # Issue 22 §2 / 24 §4: the details page, sign-in and POST /api/simulate (when
    # server.publicUrl or server.signIn is set; a missing sign-in secret is a ConfigError).
    from bot.itempage.routes import register_item_pages

    register_item_pages(app, services)
    if callable(slack_routes):
        slack_routes(app, services)
    elif slack_routes is None and _slack_http_mode(services):
        _auto_slack_routes(app, services, slack_executor, dispatcher)
    return app


def inbox_replay(services: Services, dispatcher: Dispatcher, *,
                 every: float | None = None) -> Callable[[threading.Event], None] | None:
    """The body of the ``inbox-replay`` loop: replay the webhook inbox at once (what a
    previous process acknowledged and did not handle), then every ``every`` seconds (what
    is still owed, e.g. after a rate-limited lookup), until its stop event is set.

    Args:
        services: the wired services.
        dispatcher: the dispatcher the deliveries are queued on.
        every: seconds between replays (default
            :data:`bridges.github.receiver.REPLAY_SECONDS`, 60).

    Returns:
        ``body(stop)`` for :meth:`bot.ops.supervisor.Supervisor.add_loop`, or None when GitHub
        is not configured (no webhooks, so no inbox).
    """
    if not services.config.has("github"):
        return None
    from bridges.github.receiver import REPLAY_SECONDS, replay_loop

    router = _router_config(services)
    interval = REPLAY_SECONDS if every is None else every

    def body(stop: threading.Event) -> None:
        replay_loop(dispatcher, router, stop, every=interval)

    return body


class Server:
    """A waitress server running in a background thread, stoppable from any thread.

    Nothing runs before :meth:`start`: waitress starts its request threads when the
    server is created, so the server is created (and the socket bound) there, with
    :data:`HTTP_SETTINGS` (slow clients cannot starve it, issue 19 §6).

    Args:
        app: the WSGI app.
        host: bind address.
        port: port (0 = any free port).
        threads: waitress worker threads.
    """

    def __init__(self, app: Any, host: str, port: int, *, threads: int = 8) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._threads = threads
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` actually bound (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("the server is not started: no address is bound yet")
        return f"http://{self._server.effective_host}:{self._server.effective_port}"

    def start(self) -> Server:
        """Bind the socket and serve in the background.

        Raises:
            OSError: the address cannot be bound (e.g. the port is taken).
        """
        from waitress import create_server

        self._server = create_server(self._app, host=self._host, port=self._port,
                                     threads=self._threads, ident="loopgate",
                                     **HTTP_SETTINGS)
        self._thread = threading.Thread(target=self._server.run, name="loopgate-http",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        """True while the serving thread or any of waitress' request threads is alive."""
        if self._server is None or self._thread is None:
            return False
        return self._thread.is_alive() or bool(self._server.task_dispatcher.threads)

    def stop(self, grace: float = 5.0) -> None:
        """Stop listening, let requests in hand finish (up to ``grace`` seconds), close,
        and wait (up to ``grace`` seconds more) for waitress' request threads to end.
        A server never started has nothing to stop."""
        if self._server is None or self._thread is None:
            return
        from waitress import wasyncore

        server = self._server
        # Close only the listening socket first (waitress' own close() would also close
        # the trigger we still need): no new connections, requests in hand go on.
        _in_loop(server, lambda: wasyncore.dispatcher.close(server))
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _busy(server):
            time.sleep(0.05)

        def close_all() -> None:  # the channels and the trigger: the loop then ends
            for channel in list(server._map.values()):
                try:
                    channel.close()
                except OSError:  # already closed under us: it is gone all the same
                    continue

        _in_loop(server, close_all)
        self._thread.join(grace)
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=grace)


def _in_loop(server: Any, thunk: Callable[[], None]) -> None:
    """Run ``thunk`` in waitress' loop thread; here when its trigger is already closed
    (seen under load as EBADF): the stop must still close everything and join."""
    try:
        server.trigger.pull_trigger(thunk)
    except OSError as exc:
        logger.warning("http: the loop's trigger is closed (%s); closing from this thread",
                       exc.strerror or exc)
        thunk()


def _busy(server: Any) -> bool:
    dispatcher = server.task_dispatcher
    with dispatcher.lock:
        return bool(dispatcher.queue) or getattr(dispatcher, "active_count", 0) > 0

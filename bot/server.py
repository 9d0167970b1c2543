"""The HTTP side of ``loopgate serve``: one Flask app served by waitress.

Routes: ``POST /github/webhook`` and ``GET /healthz`` (the GitHub bridge's receiver),
plus ``POST /slack/events`` when Slack runs in HTTP mode (``bot.app.register_http_routes``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from flask import Flask

from engine.errors import ConfigError

__all__ = ["build_wsgi_app", "serve_forever", "Server", "MAX_BODY_BYTES"]

logger = logging.getLogger(__name__)

#: GitHub caps webhook payloads at 25 MB; anything larger is refused before reading.
MAX_BODY_BYTES = 25 * 1024 * 1024 + 1024


def _slack_http_mode(services: Any) -> bool:
    if not services.config.has("slack"):
        return False
    try:
        from bot.app import app_token
    except ImportError:
        return False
    return app_token(services.config) is None


def _auto_slack_routes(app: Flask, services: Any) -> None:
    try:
        from bot import app as slack_app
    except ImportError:
        logger.warning("slack is configured but bot.app is missing; no /slack/events route")
        return
    register = getattr(slack_app, "register_http_routes", None)
    if register is None:
        logger.warning("bot.app has no register_http_routes; no /slack/events route")
        return
    register(app, services)


def _router_config(services: Any) -> Any:
    from bridges.github.router import RouterConfig

    section = services.config.section("github")
    return RouterConfig.build(section.get("repos") or (), section.get("startLabel") or "",
                              services.settings.bot)


def build_wsgi_app(services: Any, dispatcher: Any, *, webhook_secret: str | None,
                   insecure_webhooks: bool = False,
                   slack_routes: Callable[[Flask, Any], Any] | bool | None = None) -> Flask:
    """The Flask app of ``loopgate serve``.

    Args:
        services: the wired :class:`bot.services.Services`.
        dispatcher: the running :class:`bridges.dispatcher.Dispatcher`.
        webhook_secret: the GitHub webhook secret (the value of ``github.webhookSecretEnv``).
        insecure_webhooks: accept unsigned deliveries when no secret is set.
        slack_routes: a callable ``(flask_app, services)`` adding the Slack routes; False
            for none; None (default) adds ``bot.app.register_http_routes`` when Slack is
            configured in HTTP mode (no app token).

    Returns:
        The app. Webhook deliveries a previous process acknowledged but did not handle
        (the receiver's persisted inbox) are queued on ``dispatcher`` again.

    Raises:
        ConfigError: ``github`` is configured, no secret is set and ``insecure_webhooks``
            is False (the message names the variable).
    """
    from bridges.github.receiver import health_blueprint, replay_inbox, webhook_blueprint

    app = Flask("loopgate", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.register_blueprint(health_blueprint(dispatcher))
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
        replayed = replay_inbox(dispatcher, router)
        if replayed:
            logger.info("replayed %d webhook deliveries acknowledged before a restart",
                        replayed)
    if callable(slack_routes):
        slack_routes(app, services)
    elif slack_routes is None and _slack_http_mode(services):
        _auto_slack_routes(app, services)
    return app


#: Seconds between re-tries of webhook deliveries whose handling ended ``retry``/``failed``
#: (e.g. a rate-limited GraphQL lookup): with the poller off nothing else would retry them.
INBOX_RETRY_SECONDS = 60.0


def start_inbox_retry(services: Any, dispatcher: Any, stop: threading.Event, *,
                      every: float = INBOX_RETRY_SECONDS) -> threading.Thread | None:
    """Replay the persisted webhook inbox every ``every`` seconds until ``stop`` is set.

    Deliveries handled for good have left the inbox, and the dispatcher drops a delivery it
    already handled, so a replay only re-tries what is still owed (issue 3: a limited query
    makes the gate wait and is retried).

    Args:
        services: the wired services (``github`` must be configured, else nothing starts).
        dispatcher: the running dispatcher.
        stop: set to end the loop.
        every: seconds between replays.

    Returns:
        The daemon thread, or None when GitHub is not configured.
    """
    if not services.config.has("github"):
        return None
    from bridges.github import receiver

    router = _router_config(services)

    def loop() -> None:
        while not stop.wait(every):
            queued = receiver.replay_inbox(dispatcher, router)
            if queued:
                logger.info("re-tried %d webhook deliveries still owed", queued)

    thread = threading.Thread(target=loop, name="loopgate-inbox-retry", daemon=True)
    thread.start()
    return thread


class Server:
    """A waitress server running in a background thread, stoppable from any thread.

    Args:
        app: the WSGI app.
        host: bind address.
        port: port (0 = any free port).
        threads: waitress worker threads.
    """

    def __init__(self, app: Any, host: str, port: int, *, threads: int = 8) -> None:
        from waitress import create_server

        self._server: Any = create_server(app, host=host, port=port, threads=threads,
                                          ident="loopgate")
        self._thread = threading.Thread(target=self._server.run, name="loopgate-http",
                                        daemon=True)

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` actually bound."""
        return f"http://{self._server.effective_host}:{self._server.effective_port}"

    def start(self) -> Server:
        """Serve in the background."""
        self._thread.start()
        return self

    def stop(self, grace: float = 5.0) -> None:
        """Stop listening, let requests in hand finish (up to ``grace`` seconds), close."""
        from waitress import wasyncore

        server = self._server
        # Close only the listening socket first (waitress' own close() would also close
        # the trigger we still need): no new connections, requests in hand go on.
        server.trigger.pull_trigger(lambda: wasyncore.dispatcher.close(server))
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _busy(server):
            time.sleep(0.05)

        def close_all() -> None:  # the channels and the trigger: the loop then ends
            for channel in list(server._map.values()):
                channel.close()

        server.trigger.pull_trigger(close_all)
        self._thread.join(grace)
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=grace)


def _busy(server: Any) -> bool:
    dispatcher = server.task_dispatcher
    with dispatcher.lock:
        return bool(dispatcher.queue) or getattr(dispatcher, "active_count", 0) > 0


def serve_forever(app: Any, host: str, port: int, *, stop: threading.Event,
                  on_listening: Callable[[str], None] | None = None) -> None:
    """Serve ``app`` until ``stop`` is set, then shut down gracefully.

    Args:
        app: the WSGI app.
        host: ``server.host``.
        port: ``server.port`` (0 picks a free port).
        stop: set it (e.g. from a SIGTERM handler) to stop.
        on_listening: called once with ``http://HOST:PORT`` when the socket is bound.
    """
    server = Server(app, host, port).start()
    if on_listening is not None:
        on_listening(server.url)
    logger.info("listening url=%s", server.url)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()

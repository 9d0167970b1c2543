"""``loopgate serve`` and ``loopgate poll``.

``serve`` runs one process: the dispatcher (a worker thread), the poller loop (skipped when
``github.pollIntervalSeconds`` is 0), the HTTP server (GitHub webhook, ``/healthz`` and,
in Slack HTTP mode, ``/slack/events``) and, when Slack is configured, the Slack outbox
worker plus Socket Mode when an app token is set. It prints
``loopgate: listening on http://HOST:PORT`` once the socket is bound. SIGTERM/SIGINT stop
it gracefully: the HTTP server stops taking requests, the poller finishes the repository
in hand (its cursor and ETag are already persisted), the dispatcher finishes the event in
hand and drains its queue, the Slack worker stops after the notice in hand.

``poll --once`` runs one poll cycle in the foreground and prints what it cost.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from bot.cli.context import CliContext, fail
from engine.errors import LoopgateError

__all__ = ["register", "configure_logging"]

logger = logging.getLogger("loopgate.serve")


def configure_logging(level: int = logging.INFO) -> None:
    """One line per event on stderr (``time level logger message``); idempotent."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, level=level,
                            format="%(asctime)s %(levelname)s %(name)s %(message)s")


def _webhook_secret(config: Any, insecure: bool) -> str | None:
    if not config.has("github"):
        return None
    variable = config.section("github").get("webhookSecretEnv") or "GITHUB_WEBHOOK_SECRET"
    secret = os.environ.get(variable, "").strip()
    if secret:
        return secret
    if not insecure:
        fail(f"webhook secret missing: set the environment variable {variable}, or pass "
             "--insecure-webhooks to accept unsigned deliveries (development only)")
    logger.warning("insecure webhooks: deliveries are accepted without a signature")
    return None


def _verify_github(services: Any) -> None:
    """A GitHub App's id, key and installations are checked before anything is polled;
    a mismatch exits 2 naming the setting."""
    from bot.services import verify_github

    try:
        lines = verify_github(services.config, services.credentials)
    except LoopgateError as exc:
        services.close()
        fail(str(exc))
    for line in lines:
        logger.info("github app %s", line)


def _install_signals(stop: threading.Event) -> None:
    def handler(signum: int, frame: Any) -> None:
        logger.info("signal=%s stopping", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def _start_poller(services: Any, dispatcher: Any, stop: threading.Event) -> threading.Thread | None:
    if not services.config.has("github"):
        return None
    interval = int(services.config.section("github").get("pollIntervalSeconds") or 0)
    if interval <= 0:
        logger.info("poller off (pollIntervalSeconds is 0): webhooks only")
        return None
    from bridges.github.poller import Poller

    poller = Poller.from_services(services, dispatcher)
    thread = threading.Thread(target=poller.run, args=(interval, stop), name="loopgate-poller",
                              daemon=True)
    thread.start()
    return thread


def _start_slack(services: Any, dispatcher: Any) -> list[Callable[[], Any]]:
    """Start the Slack side; returns the stop callables."""
    if not services.config.has("slack"):
        return []
    stops: list[Callable[[], Any]] = []
    try:
        from bot.identity import comment_observer

        dispatcher.comment_observers.append(comment_observer(services))
    except ImportError:
        logger.warning("bot.identity is missing: Slack link confirmations are off")
    try:
        from bot.worker import SlackWorker

        worker = SlackWorker(services)
        worker.start()
        stops.append(worker.stop)
    except ImportError:
        logger.warning("bot.worker is missing: Slack notices are not sent")
    try:
        from bot import app as slack_app
    except ImportError:
        return stops
    token = slack_app.app_token(services.config)
    if token:
        handler = slack_app.start_socket_mode(slack_app.build_app(services, socket_mode=True),
                                              token)
        stops.append(handler.close)
    return stops


def _serve(ctx: CliContext, insecure_webhooks: bool) -> None:
    from bot.server import build_wsgi_app, serve_forever, start_inbox_retry
    from bridges.dispatcher import Dispatcher

    # Configuration errors are reported before anything talks to GitHub.
    secret = _webhook_secret(ctx.config, insecure_webhooks)
    services = ctx.services
    _verify_github(services)  # a GitHub App's settings, before anything is polled
    if not services.config.has("github"):
        logger.info("offline: no github section in %s, so no poller and no webhook "
                    "deliveries; work items live in the local tracker (see the CLI)",
                    services.config.path or "the configuration (defaults in use)")
    stop = threading.Event()
    _install_signals(stop)
    dispatcher = Dispatcher(services).start()
    stops: list[Callable[[], Any]] = []
    poller = None
    try:
        stops = _start_slack(services, dispatcher)
        app = build_wsgi_app(services, dispatcher, webhook_secret=secret,
                             insecure_webhooks=insecure_webhooks)
        poller = _start_poller(services, dispatcher, stop)
        start_inbox_retry(services, dispatcher, stop)
        server = services.config.section("server")

        def listening(url: str) -> None:
            click.echo(f"loopgate: listening on {url}")
            sys.stdout.flush()

        serve_forever(app, str(server.get("host") or "127.0.0.1"), int(server.get("port") or 0),
                      stop=stop, on_listening=listening)
    except LoopgateError as exc:
        stop.set()
        fail(str(exc))
    finally:
        stop.set()
        if poller is not None:
            poller.join(30)
        dispatcher.stop()
        for stopper in stops:
            stopper()
        logger.info("stopped")


def _print_report(report: Any) -> None:
    for repo in report.repos:
        results: dict[str, int] = {}
        for result in repo.results:
            results[result.status] = results.get(result.status, 0) + 1
        summary = " ".join(f"{k}={v}" for k, v in sorted(results.items())) or "none"
        tail = f" error={repo.error}" if repo.error else ""
        click.echo(f"{repo.repo}: requests={repo.requests} not_modified={repo.not_modified} "
                   f"deliveries={repo.deliveries} ({summary}) retries={repo.retries}{tail}")


def register(group: click.Group) -> None:
    """Add ``serve`` and ``poll`` to ``group``."""

    @group.command("serve")
    @click.option("--insecure-webhooks", is_flag=True,
                  help="Accept unsigned GitHub webhooks when no secret is set (development only).")
    @click.pass_obj
    def serve(ctx: CliContext, insecure_webhooks: bool) -> None:
        """Run the poller, the webhook receiver, the dispatcher and the Slack bot."""
        configure_logging()
        _serve(ctx, insecure_webhooks)

    @group.command("poll")
    @click.option("--once", is_flag=True, help="Run one cycle and exit.")
    @click.pass_obj
    def poll(ctx: CliContext, once: bool) -> None:
        """Poll the configured repositories (one cycle with --once)."""
        configure_logging(logging.WARNING if once else logging.INFO)
        if not ctx.config.has("github"):
            fail("poll needs a github section in loopgate.yaml")
        from bridges.dispatcher import Dispatcher
        from bridges.github.poller import Poller

        services = ctx.services
        dispatcher = Dispatcher(services)
        poller = Poller.from_services(services, dispatcher)
        if once:
            report = poller.poll_once()
            _print_report(report)
            if any(r.error for r in report.repos):
                raise SystemExit(1)
            return
        stop = threading.Event()
        _install_signals(stop)
        interval = int(ctx.config.section("github").get("pollIntervalSeconds") or 60)
        poller.run(max(interval, 1), stop)

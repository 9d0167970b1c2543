"""``loopgate serve`` and ``loopgate poll``.

``serve`` runs one process whose background threads are members of one
:class:`bot.supervisor.Supervisor`, started in this order: the dispatcher; when Slack is
configured, the Slack outbox worker and the pool Bolt runs listeners in after the ack;
the poller (skipped when ``github.pollIntervalSeconds`` is 0); the inbox replay (at once,
then every 60 s); Socket Mode (when an app token is set); the HTTP server (GitHub webhook,
``/healthz`` and, in Slack HTTP mode, ``/slack/events``). It prints ``loopgate: listening on http://HOST:PORT``
once the socket is bound. SIGTERM/SIGINT stop it gracefully: every loop is told at once,
then the members stop in reverse order (the HTTP server takes no more requests, the
poller finishes the repository in hand, the dispatcher finishes the event in hand and
drains its queue, the Slack worker stops after the notice in hand), and only once every
thread was joined are the inbox and the database closed.

One server per database: ``serve`` first takes an OS lock on ``<db>.lock``
(:mod:`bot.server_lock`); a second one exits 2 naming the holder (pid, host, start time).

``poll --once`` runs one poll cycle in the foreground and prints what it cost.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import click

from bot.cli.context import CliContext, fail
from bot.server_lock import DatabaseInUseError, ServerLock
from bot.supervisor import Supervisor, ThreadPool
from engine.errors import LoopgateError

if TYPE_CHECKING:
    from bot.server import Server

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


def _install_signals(stop: Callable[[], None]) -> None:
    def handler(signum: int, frame: Any) -> None:
        logger.info("signal=%s stopping", signal.Signals(signum).name)
        stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def _poller_loop(services: Any, dispatcher: Any) -> Callable[[threading.Event], None] | None:
    if not services.config.has("github"):
        return None
    interval = int(services.config.section("github").get("pollIntervalSeconds") or 0)
    if interval <= 0:
        logger.info("poller off (pollIntervalSeconds is 0): webhooks only")
        return None
    from bridges.github.poller import Poller

    poller = Poller.from_services(services, dispatcher)
    if getattr(services.store, "backend", "") == "postgresql":
        # Replicas: only the one holding the poller's advisory lock polls (issue 15 §3).
        from bridges.postgres.replicas import Leadership

        leader = Leadership(services.store, "poller")
        return lambda stop: leader.run(stop, interval,
                                       lambda s: poller.cycle(s, interval))
    return lambda stop: poller.run(interval, stop)


class _SocketMode:
    """Socket Mode as a supervised member (slack_sdk runs and, on close, ends its threads;
    the listeners run in ``executor``, a member of its own)."""

    def __init__(self, services: Any, token: str, executor: Executor) -> None:
        self._services = services
        self._token = token
        self._executor = executor
        self._handler: Any = None

    def start(self) -> None:
        from bot import app as slack_app

        bolt = slack_app.build_app(self._services, socket_mode=True, executor=self._executor)
        self._handler = slack_app.start_socket_mode(bolt, self._token)

    def stop(self, timeout: float) -> None:
        if self._handler is not None:
            self._handler.close()

    @property
    def running(self) -> bool:
        return self._handler is not None and not self._handler.client.closed


def _add_slack(supervisor: Supervisor, services: Any, dispatcher: Any) -> ThreadPool | None:
    """The Slack members: the outbox worker and the pool Bolt runs listeners in after the
    ack; returns that pool (None without Slack)."""
    if not services.config.has("slack"):
        return None
    try:
        from bot.identity import comment_observer

        dispatcher.comment_observers.append(comment_observer(services))
    except ImportError:
        logger.warning("bot.identity is missing: Slack link confirmations are off")
    try:
        from bot.worker import SlackWorker

        supervisor.add("slack-worker", SlackWorker(services))
    except ImportError:
        logger.warning("bot.worker is missing: Slack notices are not sent")
    listeners = ThreadPool("slack-listener")
    supervisor.add("slack-listeners", listeners)
    return listeners


def _add_socket_mode(supervisor: Supervisor, services: Any, listeners: ThreadPool | None) -> None:
    if listeners is None:
        return
    try:
        from bot import app as slack_app
    except ImportError:
        return
    token = slack_app.app_token(services.config)
    if token:
        supervisor.add("socket-mode", _SocketMode(services, token, listeners.executor))


def _add_effects_worker(supervisor: Supervisor, services: Any) -> None:
    """With GitHub, effects are carried out by one paced worker thread (issue 10 §1), not
    by the thread that committed them: the dispatcher goes on with the next delivery while
    GitHub's one-write-per-second pacing runs in the worker."""
    if not services.config.has("github"):
        return  # the offline thread is SQLite: carried out right after each commit
    from bridges.github.effects_worker import EffectWorker
    from bridges.postgres.replicas import share_github_limits, shared_write_budget

    share_github_limits(services)  # on PostgreSQL replicas share pacing and limits
    worker = EffectWorker(services.store, services.ports, services.settings,
                          budget=shared_write_budget(services.store))
    services.perform_with(worker.wake)
    supervisor.add_loop("github-effects", worker.run, timeout=30)


def _build(supervisor: Supervisor, services: Any, secret: str | None,
           insecure_webhooks: bool) -> Server:
    """Add every member of ``serve`` to ``supervisor``, in start order; returns the HTTP
    server (its URL is known once started)."""
    from bot.server import Server, build_wsgi_app, inbox_replay
    from bridges.dispatcher import Dispatcher

    dispatcher = Dispatcher(services)
    supervisor.on_close("inbox", dispatcher.close)
    supervisor.add("dispatcher", dispatcher)
    _add_effects_worker(supervisor, services)
    listeners = _add_slack(supervisor, services, dispatcher)
    app = build_wsgi_app(services, dispatcher, webhook_secret=secret,
                         insecure_webhooks=insecure_webhooks,
                         slack_executor=listeners.executor if listeners else None)
    poll = _poller_loop(services, dispatcher)
    if poll is not None:
        supervisor.add_loop("poller", poll, timeout=30)
    replay = inbox_replay(services, dispatcher)
    if replay is not None:
        supervisor.add_loop("inbox-replay", replay)
    _add_socket_mode(supervisor, services, listeners)
    server = services.config.section("server")
    http = Server(app, str(server.get("host") or "127.0.0.1"), int(server.get("port") or 0))
    supervisor.add("http", http)
    return http


def _hold_database(ctx: CliContext) -> ServerLock | None:
    """Take the database's server lock, or exit 2 naming the process holding it. On
    PostgreSQL there is none: replicas share the database (issue 15 §3)."""
    from bot.config import default_db_path
    from bot.database import database_url

    if database_url(ctx.config, ctx.db_path) is not None:
        return None
    lock = ServerLock(default_db_path(ctx.config, ctx.db_path))
    try:
        lock.acquire()
    except DatabaseInUseError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot take the server lock {lock.path}: {exc.strerror or exc}")
    return lock


def _serve(ctx: CliContext, insecure_webhooks: bool) -> None:
    # Configuration errors are reported before anything talks to GitHub.
    secret = _webhook_secret(ctx.config, insecure_webhooks)
    lock = _hold_database(ctx)  # before the services exist: building them calls GitHub
    try:
        _supervise(ctx, secret, insecure_webhooks)
    finally:
        if lock is not None:
            lock.release()


def _supervise(ctx: CliContext, secret: str | None, insecure_webhooks: bool) -> None:
    services = ctx.take_services()  # the supervisor closes them once every thread ended
    _verify_github(services)  # a GitHub App's settings, before anything is polled
    if not services.config.has("github"):
        logger.info("offline: no github section in %s, so no poller and no webhook "
                    "deliveries; work items live in the local tracker (see the CLI)",
                    services.config.path or "the configuration (defaults in use)")
    supervisor = Supervisor()
    supervisor.on_close("store", services.close)
    _install_signals(supervisor.request_stop)
    try:
        http = _build(supervisor, services, secret, insecure_webhooks)
        supervisor.start()
    except (LoopgateError, OSError) as exc:
        supervisor.stop()  # what started is joined, then the store is closed
        fail(str(exc))
    click.echo(f"loopgate: listening on {http.url}")
    sys.stdout.flush()
    logger.info("listening url=%s", http.url)
    supervisor.wait()
    report = supervisor.stop()
    logger.info("stopped")
    if not report.clean:
        fail(f"stopped uncleanly: died {', '.join(report.failed) or 'none'}; still running "
             f"{', '.join(report.stuck) or 'none'} (see the log above)", code=1)


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

        # A polling process is a server of the database too: never two pollers on one.
        lock = None if once else _hold_database(ctx)
        services = ctx.services
        dispatcher = Dispatcher(services)
        try:
            poller = Poller.from_services(services, dispatcher)
            if once:
                report = poller.poll_once()
                _print_report(report)
                if any(r.error for r in report.repos):
                    raise SystemExit(1)
                return
            stop = threading.Event()
            _install_signals(stop.set)
            interval = int(ctx.config.section("github").get("pollIntervalSeconds") or 60)
            poller.run(max(interval, 1), stop)
        finally:
            dispatcher.close()
            if lock is not None:
                lock.release()

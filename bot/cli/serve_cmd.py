"""``loopgate serve`` and ``loopgate poll``.

``serve`` parses its options, holds the database and starts what the composition root
(:func:`bot.composition.build_serve`) builds: one process whose background threads are
members of one :class:`bot.ops.supervisor.Supervisor`, started in this order: the
dispatcher; when Slack is configured, the Slack outbox worker and the pool Bolt runs
listeners in after the ack; the poller (skipped when ``github.pollIntervalSeconds`` is 0);
the inbox replay (at once, then every 60 s); Socket Mode (when an app token is set); the
``health`` loop sampling the queues for ``/readyz``; the HTTP server (GitHub webhook,
``/healthz``, ``/readyz``, ``/metrics`` unless ``server.metrics`` is false and, in Slack
HTTP mode, ``/slack/events``).
It prints ``loopgate: listening on http://HOST:PORT``
once the socket is bound. SIGTERM/SIGINT stop it gracefully: every loop is told at once,
then the members stop in reverse order (the HTTP server takes no more requests, the
poller finishes the repository in hand, the dispatcher finishes the event in hand and
drains its queue, the Slack worker stops after the notice in hand), and only once every
thread was joined are the inbox and the database closed.

One server per database: ``serve`` first takes an OS lock on ``<db>.lock``
(:mod:`bot.web.server_lock`); a second one exits 2 naming the holder (pid, host, start time).
A port already in use and a database that cannot be written are found before that and
exit 2 with one line too (issue 13 §6). ``--log-format json`` logs one JSON object per
line (:mod:`bot.ops.logging_setup`).

``poll --once`` runs one poll cycle in the foreground and prints what it cost.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from bot.cli.context import CliContext, fail
from bot.ops.supervisor import Supervisor
from bot.web.server_lock import DatabaseInUseError, ServerLock
from engine.errors import LoopgateError

if TYPE_CHECKING:
    from bot.services import Services

__all__ = ["register", "configure_logging"]

logger = logging.getLogger("loopgate.serve")


def configure_logging(level: int = logging.INFO, log_format: str = "text",
                      config: Any = None) -> None:
    """One line per event on stderr, text (``time level logger message``) or JSON
    (:mod:`bot.ops.logging_setup`), with the configuration's secrets hidden; idempotent."""
    from bot.ops.logging_setup import configure, secret_values

    configure(log_format, level, secret_values(config))


def _log_format_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    from bot.ops.logging_setup import FORMAT_ENV, FORMATS

    return click.option("--log-format", type=click.Choice(FORMATS), default="text",
                        envvar=FORMAT_ENV, show_default=True,
                        help=f"Log lines as text or as one JSON object each (env {FORMAT_ENV}).",
                        )(fn)


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


def _verify_github(services: Services) -> None:
    """A GitHub App's id, key and installations, and every team an approval rule names,
    are checked before anything is polled; a mismatch exits 2 naming the setting."""
    from bot.services import verify_github, verify_teams

    try:
        lines = verify_github(services.config, services.credentials)
        _verify_token(services)
        lines += verify_teams(services.config, services.graph, services.ports.tracker)
    except LoopgateError as exc:
        services.close()
        fail(str(exc), code=getattr(exc, "exit_code", 2))
    for line in lines:
        logger.info("github app %s", line)


def _verify_slack(services: Services) -> None:
    """Slack's tokens are tried once before anything starts (:mod:`bot.startup_probe`):
    a refused token exits 2, an unreachable Slack exits 1, each with one line."""
    if not services.config.has("slack"):
        return
    from bot.startup_probe import StartupError, verify_slack

    try:
        verify_slack(services.config)
    except StartupError as exc:
        services.close()
        fail(str(exc), code=exc.exit_code)
    except LoopgateError as exc:
        services.close()
        fail(str(exc))


def _start_failure(exc: Exception) -> tuple[str, int]:
    """The one line and exit code for a member that failed to start."""
    from bot.startup_probe import StartupError, unreachable_reason

    if isinstance(exc, StartupError):
        return str(exc), exc.exit_code
    if isinstance(exc, OSError):
        return f"cannot start: {unreachable_reason(exc)}", 2
    return str(exc), 2


def _verify_token(services: Services) -> None:
    """Token mode: ask GitHub once who the token is (``GET /user``), also when
    ``github.botLogin`` is set or the identity was remembered, so a revoked token is one
    line at start (exit 2, naming ``github.tokenEnv``'s variable), not a server that runs
    while every call gets 401."""
    section = services.config.section("github") if services.config.has("github") else {}
    if not section or section.get("app"):
        return  # offline, or App mode (verify_github checked the App)
    tracker = services.github
    if tracker is None or tracker.verified:
        return  # building the services just asked (the identity probe)
    tracker.verify_credentials(str(section.get("tokenEnv") or "GITHUB_TOKEN"))


def _install_signals(stop: Callable[[], None]) -> None:
    def handler(signum: int, frame: Any) -> None:
        logger.info("signal=%s stopping", signal.Signals(signum).name)
        stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


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


def _serve_owner(ctx: CliContext) -> str:
    """Who serves this database (``pid … on HOST, started …``), or "" when nobody does.

    A ``poll --once`` beside a running ``serve`` leaves the effects it commits in the outbox
    for that server's paced worker instead of carrying them out at GitHub's one write a
    second itself, so it never waits behind a backlog the server owns (issue 21 §5). On
    PostgreSQL there is no server lock: "" (the CLI carries its effects out, as before).
    """
    from bot.config import default_db_path
    from bot.database import database_url

    if database_url(ctx.config, ctx.db_path) is not None:
        return ""
    lock = ServerLock(default_db_path(ctx.config, ctx.db_path))
    try:
        lock.acquire()
    except DatabaseInUseError as exc:
        return exc.holder.describe() if exc.holder else "a server that is still starting"
    except OSError:
        return ""  # cannot tell: carry the effects out here, as before
    lock.release()
    return ""


def _check_port(config: Any) -> None:
    """Exit 2 naming the address when ``server.port`` is taken (issue 13 §6): found
    before anything talks to GitHub, not as a traceback from the HTTP server's start."""
    server = config.section("server")
    host, port = str(server.get("host") or "127.0.0.1"), int(server.get("port") or 0)
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc} (server.host)")
        return
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as waitress binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(f"cannot listen on {host}:{port}: address already in use (another "
                     "process holds the port: stop it, or set server.port in loopgate.yaml)")
            fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _check_database(ctx: CliContext) -> None:
    """Exit 2 naming the file when the state database exists and cannot be written."""
    from bot.config import default_db_path
    from bot.database import database_url
    from bot.ops.health import probe_database

    if database_url(ctx.config, ctx.db_path) is not None:
        return  # PostgreSQL: the store's open reports an unreachable server
    path = default_db_path(ctx.config, ctx.db_path)
    if path.exists():
        check = probe_database(path)
        if not check.ok:
            fail(f"the database is not writable: {check.detail}")


def _serve(ctx: CliContext, insecure_webhooks: bool) -> None:
    # Configuration errors are reported before anything talks to GitHub.
    secret = _webhook_secret(ctx.config, insecure_webhooks)
    _check_port(ctx.config)
    lock = _hold_database(ctx)  # before the services exist: building them calls GitHub
    try:
        _check_database(ctx)
        _supervise(ctx, secret, insecure_webhooks)
    finally:
        if lock is not None:
            lock.release()


def _supervise(ctx: CliContext, secret: str | None, insecure_webhooks: bool) -> None:
    services = ctx.take_services()  # the supervisor closes them once every thread ended
    _verify_github(services)  # a GitHub App's settings, before anything is polled
    _verify_slack(services)
    if not services.config.has("github"):
        logger.info("offline: no github section in %s, so no poller and no webhook "
                    "deliveries; work items live in the local tracker (see the CLI)",
                    services.config.path or "the configuration (defaults in use)")
    from bot.composition import build_serve

    supervisor = Supervisor()
    supervisor.on_close("store", services.close)
    _install_signals(supervisor.request_stop)
    try:
        http = build_serve(supervisor, services, secret, insecure_webhooks)
        supervisor.start()
    except (LoopgateError, OSError) as exc:
        supervisor.stop()  # what started is joined, then the store is closed
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            _check_port(services.config)  # names the address (taken since the first look)
        fail(*_start_failure(exc))
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
    @_log_format_option
    @click.pass_obj
    def serve(ctx: CliContext, insecure_webhooks: bool, log_format: str) -> None:
        """Run the poller, the webhook receiver, the dispatcher and the Slack bot.

        \b
        Example:
          loopgate --config loopgate.yaml serve --log-format json
        """
        configure_logging(log_format=log_format, config=ctx.config)
        _serve(ctx, insecure_webhooks)

    @group.command("poll")
    @click.option("--once", is_flag=True, help="Run one cycle and exit.")
    @_log_format_option
    @click.pass_obj
    def poll(ctx: CliContext, once: bool, log_format: str) -> None:
        """Poll the configured repositories (one cycle with --once).

        \b
        Example:
          loopgate poll --once
        """
        configure_logging(logging.WARNING if once else logging.INFO, log_format, ctx.config)
        if not ctx.config.has("github"):
            fail("poll needs a github section in loopgate.yaml")
        from bridges.github.poller import Poller
        from bridges.ingress.dispatcher import Dispatcher

        # A polling process is a server of the database too: never two pollers on one.
        lock = None if once else _hold_database(ctx)
        services = ctx.services
        dispatcher = Dispatcher(services)
        try:
            poller = Poller.from_services(services, dispatcher)
            if once:
                owner = _serve_owner(ctx)
                if owner:  # its paced worker carries the effects out (issue 21 §5)
                    services.perform_with(lambda _ref: None)
                report = poller.poll_once()
                _print_report(report)
                if owner:
                    click.echo(f"effects: left queued for the running serve ({owner})")
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

"""The composition root of ``loopgate serve`` (issue 20 §3): from the wired
:class:`bot.services.Services`, every supervised member in start order.

:func:`build_serve` adds to one :class:`bot.ops.supervisor.Supervisor` the dispatcher, the
paced GitHub effects worker, the Slack outbox worker and listener pool, the poller, the
inbox replay, Socket Mode, the ``health`` loop, ``/metrics``, the self-audit and the HTTP
server; ``loopgate serve`` (:mod:`bot.cli.serve_cmd`) only parses its options, holds the
database and starts what this builds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from bot.ops.supervisor import Supervisor, ThreadPool

if TYPE_CHECKING:
    from bot.services import Services
    from bot.web.server import Server

__all__ = ["build_serve"]

#: The serve command's logger name, kept so its log lines read as before the move.
logger = logging.getLogger("loopgate.serve")


def _poller(services: Services, dispatcher: Any) -> Any:
    """The poller (None when not polling: offline, or ``pollIntervalSeconds`` 0)."""
    if not services.config.has("github"):
        return None
    interval = int(services.config.section("github").get("pollIntervalSeconds") or 0)
    if interval <= 0:
        logger.info("poller off (pollIntervalSeconds is 0): webhooks only")
        return None
    from bridges.github.poller import Poller

    poller = Poller.from_services(services, dispatcher)
    if services.store.capabilities.shared:
        # Replicas: only the one holding the poller's advisory lock polls (issue 15 §3).
        from bridges.postgres.replicas import Leadership

        poller.leadership = Leadership(services.store, "poller")
    return poller


class _SocketMode:
    """Socket Mode as a supervised member (slack_sdk runs and, on close, ends its threads;
    the listeners run in ``executor``, a member of its own)."""

    def __init__(self, services: Services, token: str, executor: Executor) -> None:
        self._services = services
        self._token = token
        self._executor = executor
        self._handler: Any = None

    def start(self) -> None:
        """Connect; a refused app token or an unreachable Slack raises
        :class:`bot.startup_probe.StartupError` (one line, the variable's name only)."""
        from slack_sdk.errors import SlackClientError

        from bot.slack import bolt_app as slack_app
        from bot.startup_probe import slack_failure

        bolt = slack_app.build_app(self._services, socket_mode=True, executor=self._executor)
        slack = self._services.config.section("slack")
        try:
            self._handler = slack_app.start_socket_mode(bolt, self._token)
        except (SlackClientError, OSError) as exc:
            raise slack_failure(exc, "apps.connections.open",
                                str(slack.get("appTokenEnv") or "SLACK_APP_TOKEN"),
                                str(slack.get("apiUrl") or "https://slack.com/api/")) from None

    def stop(self, timeout: float) -> None:
        if self._handler is not None:
            from bot.slack import bolt_app as slack_app

            if not slack_app.stop_socket_mode(self._handler, timeout):
                logger.warning("Socket Mode did not close within %.0f s", timeout)

    @property
    def running(self) -> bool:
        return self._handler is not None and not self._handler.client.closed

    def connected(self) -> bool:
        """True while the Socket Mode session is connected (``/readyz``)."""
        return self._handler is not None and bool(self._handler.client.is_connected())


def _add_slack(supervisor: Supervisor, services: Services, dispatcher: Any,
               progress: dict[str, Callable[[], int]]) -> ThreadPool | None:
    """The Slack members: the outbox worker and the pool Bolt runs listeners in after the
    ack; returns that pool (None without Slack). The worker's sent count goes into
    ``progress`` (readiness)."""
    if not services.config.has("slack"):
        return None
    try:
        from bot.slack.slack_identity import comment_observer

        dispatcher.comment_observers.append(comment_observer(services))
    except ImportError:
        logger.warning("bot.slack.slack_identity is missing: Slack link confirmations are off")
    try:
        from bot.slack.worker import SlackWorker

        worker = SlackWorker(services)
        supervisor.add("slack-worker", worker)
        progress["slack_outbox"] = lambda: worker.sent
    except ImportError:
        logger.warning("bot.slack.worker is missing: Slack notices are not sent")
    listeners = ThreadPool("slack-listener")
    supervisor.add("slack-listeners", listeners)
    return listeners


def _add_socket_mode(supervisor: Supervisor, services: Services,
                     listeners: ThreadPool | None) -> _SocketMode | None:
    if listeners is None:
        return None
    try:
        from bot.slack import bolt_app as slack_app
    except ImportError:
        return None
    token = slack_app.app_token(services.config)
    if not token:
        return None
    member = _SocketMode(services, token, listeners.executor)
    supervisor.add("socket-mode", member)
    return member


def _add_effects_worker(supervisor: Supervisor, services: Services,
                        acks: Any = None) -> dict[str, Callable[[], int]]:
    """With GitHub, effects are carried out by one paced worker thread (issue 10 §1), not
    by the thread that committed them: the dispatcher goes on with the next delivery while
    GitHub's one-write-per-second pacing runs in the worker. With ``acks`` (the
    dispatcher's :class:`~bridges.ingress.ack_first.AckFirst`) the worker pauses before
    each row while an ack is answered (issue 21 §1)."""
    if not services.config.has("github"):
        return {}  # the offline thread is SQLite: carried out right after each commit
    from bridges.github.effects_worker import EffectWorker
    from bridges.postgres.replicas import shared_write_budget

    worker = EffectWorker(services.store, services.ports, services.settings,
                          budget=shared_write_budget(services.store))
    if acks is not None:
        worker.before_row = acks.pauser("github_effects")
    services.perform_with(worker.wake)
    supervisor.add_loop("github-effects", worker.run, timeout=30)
    return {"github_effects": lambda: worker.performed}


def _observability(supervisor: Supervisor, services: Services, dispatcher: Any, poller: Any,
                   socket: _SocketMode | None, progress: dict[str, Callable[[], int]]
                   ) -> tuple[Any, Any]:
    """The readiness checks (``/readyz``) and, unless ``server.metrics`` is false, the
    Prometheus metrics (``/metrics``); both are told what the bridge does through
    :mod:`bridges.telemetry` until the process stops."""
    from bot.ops.health import Health
    from bridges import telemetry

    server = services.config.section("server")
    watch = auth = None
    if services.config.has("github"):
        watch = telemetry.install(telemetry.RateLimitWatch())
        supervisor.on_close("rate-limit-watch", lambda: telemetry.uninstall(watch))
        auth = telemetry.install(telemetry.CredentialsWatch())
        supervisor.on_close("credentials-watch", lambda: telemetry.uninstall(auth))
    health = Health(services, dispatcher=dispatcher, poller=poller,
                    socket=socket.connected if socket is not None else None,
                    rate_watch=watch, auth_watch=auth,
                    stall_minutes=float(server.get("queueStallMinutes") or 10),
                    progress=progress, audit=_add_self_audit(supervisor, services))
    supervisor.add_loop("health", health.run, timeout=5)
    if server.get("metrics") is False:
        return health, None
    from bot.ops.metrics import Metrics

    metrics = telemetry.install(Metrics(health, acks=dispatcher.acks))
    supervisor.on_close("metrics", lambda: telemetry.uninstall(metrics))
    return health, metrics


def _add_self_audit(supervisor: Supervisor, services: Services) -> Any:
    """The self-audit (issue 22 §3, :mod:`bot.ops.self_audit`): with GitHub and
    ``server.auditMinutes`` above 0 (default 15), a supervised loop; else None."""
    if not services.config.has("github"):
        return None
    from bot.ops.self_audit import AuditSettings, BudgetWatch, SelfAudit

    settings = AuditSettings.from_server(services.config.section("server"))
    if settings.minutes <= 0:
        return None
    from bridges import telemetry

    budget = telemetry.install(BudgetWatch())
    supervisor.on_close("audit-budget", lambda: telemetry.uninstall(budget))
    audit = SelfAudit(services, settings, budget=budget)
    supervisor.add_loop("self-audit", audit.run, timeout=30)
    return audit


def build_serve(supervisor: Supervisor, services: Services, secret: str | None,
           insecure_webhooks: bool) -> Server:
    """Add every member of ``serve`` to ``supervisor``, in start order; returns the HTTP
    server (its URL is known once started)."""
    from bot.web.server import Server, build_wsgi_app, inbox_replay
    from bridges.ingress.ack_first import shorter_switch_interval
    from bridges.ingress.dispatcher import Dispatcher

    supervisor.on_close("switch-interval", shorter_switch_interval())  # issue 21 §1
    dispatcher = Dispatcher(services)
    supervisor.on_close("inbox", dispatcher.close)
    supervisor.add("dispatcher", dispatcher)
    progress = _add_effects_worker(supervisor, services, dispatcher.acks)
    progress["inbox"] = lambda: dispatcher.handled
    listeners = _add_slack(supervisor, services, dispatcher, progress)
    poller = _poller(services, dispatcher)
    if poller is not None:
        interval = int(services.config.section("github").get("pollIntervalSeconds") or 0)
        supervisor.add_loop("poller", lambda stop: poller.run(interval, stop), timeout=30)
    replay = inbox_replay(services, dispatcher)
    if replay is not None:
        supervisor.add_loop("inbox-replay", replay)
    socket = _add_socket_mode(supervisor, services, listeners)
    health, metrics = _observability(supervisor, services, dispatcher, poller, socket, progress)
    app = build_wsgi_app(services, dispatcher, webhook_secret=secret,
                         insecure_webhooks=insecure_webhooks,
                         slack_executor=listeners.executor if listeners else None,
                         health=health, metrics=metrics)
    server = services.config.section("server")
    http = Server(app, str(server.get("host") or "127.0.0.1"), int(server.get("port") or 0))
    supervisor.add("http", http)
    return http

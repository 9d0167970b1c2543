"""Liveness and readiness of ``loopgate serve`` (issue 13 §1), and the queue backlogs.

``GET /healthz`` answers while the process serves. ``GET /readyz`` runs the checks below
and answers ``200 {"ready": true, "checks": {...}}`` or ``503`` with ``failing`` naming
every check that failed:

* ``database`` — a fresh connection writes one row of the state database (``kv``,
  namespace ``health``) within :data:`DB_DEADLINE` seconds: a read-only file, a full
  disk or a write lock held too long all fail it;
* ``dispatcher`` — the dispatcher's worker thread is alive;
* ``poller`` (when polling) — the last poll cycle ended less than 3× the interval ago
  (a rate-limit wait the poller announced is no stall);
* ``inbox``, ``github_effects``, ``slack_outbox`` — the queue did not go on growing for
  longer than ``server.queueStallMinutes`` (see :class:`QueueWatch`);
* ``github_rate_limit`` (with GitHub) — no resource exhausted beyond its reset
  (:class:`bridges.telemetry.RateLimitWatch`);
* ``github_auth`` (with GitHub) — GitHub did not answer the last 3 requests in a row with
  ``401 Bad credentials`` (:class:`bridges.telemetry.CredentialsWatch`); the detail names
  the status, when the first refusal came and the token's variable; it passes again with
  GitHub's first accepted request;
* ``slack_socket`` (Socket Mode) — the Socket Mode session is connected;
* ``audit`` (the self-audit, issue 22 §3) — which active items' verdicts differ from what
  GitHub's records give (:class:`bot.ops.self_audit.SelfAudit`); it reports and never fails
  readiness (why: :mod:`bot.ops.self_audit`).

:func:`backlogs` reads each queue's depth and oldest age through its own API; the
metrics (:mod:`bot.ops.metrics`) read the same numbers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.slack.slack_tables import outbox_backlog
from engine.store.sqlite_probe import probe_write

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.config import Config
    from bot.ops.self_audit import SelfAudit
    from bot.services import Services
    from bridges.github.poller import Poller
    from bridges.ingress.dispatcher import Dispatcher
    from bridges.ingress.inbox import WebhookInbox
    from bridges.telemetry import CredentialsWatch, RateLimitWatch
    from engine.store.base import DatabaseStore

__all__ = ["Check", "Health", "QueueWatch", "Backlog", "backlogs", "probe_database",
           "blueprint", "DB_DEADLINE", "SAMPLE_SECONDS", "READY_PATH", "METRICS_PATH"]

logger = logging.getLogger(__name__)

#: Seconds the database probe may take (issue 13 §1: "writable within 1 s").
DB_DEADLINE = 1.0
#: Seconds between samples of the queues by :meth:`Health.run`.
SAMPLE_SECONDS = 15.0
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
#: Queue names, as checks and as the ``queue`` label of the metrics.
INBOX, GITHUB_EFFECTS, SLACK_OUTBOX = "inbox", "github_effects", "slack_outbox"


@dataclass(frozen=True)
class Check:
    """One readiness check.

    Attributes:
        name: ``database``, ``dispatcher``, ``poller`` ...
        ok: True when it passed.
        detail: what was found, for people (never a secret).
    """

    name: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Backlog:
    """One queue: how many entries wait, and since when.

    Attributes:
        depth: entries due and not done.
        oldest: age of the oldest of them in seconds (0 when empty).
    """

    depth: int
    oldest: float = 0.0


def _age(iso_text: str, now: datetime) -> float:
    try:
        moment = datetime.fromisoformat(iso_text.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (now - moment).total_seconds())


def _inbox_backlog(inbox: WebhookInbox, now: datetime) -> Backlog:
    count, oldest = inbox.backlog()  # declared by every inbox: it reads, never leases
    return Backlog(count, _age(oldest, now) if count and oldest else 0.0)


def _effects_backlog(store: DatabaseStore, now: datetime) -> Backlog:
    from engine.effects import PENDING, RUNNING

    # Rows waiting out a back-off or a rate limit are not due yet: only due rows count.
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")  # the outbox's format (engine.perform.iso)
    rows = [r for r in store.effects.rows(statuses=(PENDING, RUNNING))
            if r.status == RUNNING or r.not_before <= stamp]
    if not rows:
        return Backlog(0)
    return Backlog(len(rows), max(_age(max(r.created_at, r.not_before), now) for r in rows))


def _slack_backlog(store: DatabaseStore, now: datetime) -> Backlog:
    count, oldest = outbox_backlog(store)
    return Backlog(count, _age(oldest, now) if count else 0.0)


def backlogs(store: DatabaseStore, config: Config, inbox: WebhookInbox | None = None,
             now: datetime | None = None) -> dict[str, Backlog]:
    """Depth and oldest age of every queue this installation has.

    Args:
        store: the store (its outbox of effects; its Slack outbox).
        config: the configuration (whether Slack is configured).
        inbox: the webhook inbox (``dispatcher.inbox``; None: not served here).
        now: the current UTC time.

    Returns:
        ``{"inbox"?, "github_effects", "slack_outbox"?: Backlog}`` (a queue the
        installation does not have is left out).
    """
    now = now or datetime.now(UTC)
    out: dict[str, Backlog] = {GITHUB_EFFECTS: _effects_backlog(store, now)}
    if inbox is not None:
        out[INBOX] = _inbox_backlog(inbox, now)
    if config.has("slack"):
        out[SLACK_OUTBOX] = _slack_backlog(store, now)
    return out


def probe_database(path: Any, deadline: float = DB_DEADLINE) -> Check:
    """Write one row to the state database through a fresh connection
    (:func:`engine.store.sqlite_probe.probe_write`, where the SQL lives).

    Args:
        path: the database file.
        deadline: seconds the write may take, the lock wait included.

    Returns:
        The ``database`` check (its detail names SQLite's error, e.g. "attempt to write a
        readonly database").
    """
    ok, detail = probe_write(path, deadline)
    return Check("database", ok, detail)


@dataclass
class QueueWatch:
    """Whether a queue has been growing for too long.

    A queue is *stalled* when it is not empty and has not once shrunk (nor been seen
    empty) for ``limit`` seconds: entries arrive and none leave. A queue that drains, even
    slowly, or that keeps a constant depth while its consumer makes progress is fine.

    Args:
        limit: seconds a queue may grow before the check fails.
    """

    limit: float
    since: float | None = None
    last: int = 0
    progress: int = -1

    def observe(self, depth: int, now: float, progress: int = 0) -> None:
        """Record one sample: ``depth`` at ``now`` (monotonic seconds); ``progress`` is
        the consumer's count of finished entries (moves whenever it finished one)."""
        if self.since is None or depth == 0 or depth < self.last or progress != self.progress:
            self.since = now
        self.last = depth
        self.progress = progress

    def stalled(self, now: float) -> bool:
        """True when not empty and growing for longer than :attr:`limit`."""
        return self.last > 0 and self.since is not None and now - self.since > self.limit


@dataclass
class Health:
    """The readiness checks of one ``serve`` (see the module docstring).

    Args:
        services: the wired services.
        dispatcher: the dispatcher (None: none runs here).
        poller: the poller (None: not polling).
        socket: a callable telling whether Socket Mode is connected (None: not used).
        rate_watch: the rate-limit watch (None: no GitHub).
        auth_watch: the credentials watch (None: no GitHub).
        stall_minutes: ``server.queueStallMinutes``.
        progress: ``queue -> callable`` returning its consumer's finished count.
        clock: monotonic seconds (tests).
        audit: the self-audit (:class:`bot.ops.self_audit.SelfAudit`; None: off).
    """

    services: Services
    dispatcher: Dispatcher | None = None
    poller: Poller | None = None
    socket: Callable[[], bool] | None = None
    rate_watch: RateLimitWatch | None = None
    auth_watch: CredentialsWatch | None = None
    stall_minutes: float = 10.0
    progress: dict[str, Callable[[], int]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    watches: dict[str, QueueWatch] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    audit: SelfAudit | None = None

    # -- sampling ------------------------------------------------------------------------
    def backlogs(self) -> dict[str, Backlog]:
        """The queues now (see :func:`backlogs`)."""
        inbox = None
        if self.dispatcher is not None and self.services.config.has("github"):
            inbox = self.dispatcher.inbox
        return backlogs(self.services.store, self.services.config, inbox)

    def sample(self) -> dict[str, Backlog]:
        """Read the queues and feed the watches; returns the backlogs read."""
        found = self.backlogs()
        now = self.clock()
        with self._lock:
            for name, backlog in found.items():
                watch = self.watches.setdefault(name, QueueWatch(self.stall_minutes * 60))
                counter = self.progress.get(name)
                watch.observe(backlog.depth, now, counter() if counter else 0)
        return found

    def run(self, stop: threading.Event, every: float = SAMPLE_SECONDS) -> None:
        """The supervised ``health`` loop: sample the queues every ``every`` seconds, so
        a growing queue is seen even when nobody asks ``/readyz``."""
        while not stop.is_set():
            try:
                self.sample()
            except Exception as exc:  # a locked or closed file now: the next sample tries
                logger.warning("health: could not read the queues: %s", exc)
            stop.wait(every)

    # -- checks --------------------------------------------------------------------------
    def checks(self) -> list[Check]:
        """Run every check that applies here, in a fixed order."""
        path = self.services.store.capabilities.path
        out = [probe_database(path) if path is not None
               else Check("database", True, "not a SQLite file: not probed")]
        if self.dispatcher is not None:
            alive = bool(self.dispatcher.running)
            out.append(Check("dispatcher", alive, "running" if alive else "its thread ended"))
        if self.poller is not None:
            out.append(self._poller_check(self.poller))
        out.extend(self._queue_checks())
        if self.rate_watch is not None:
            out.append(self._rate_check(self.rate_watch))
        if self.auth_watch is not None:
            out.append(self._auth_check(self.auth_watch))
        if self.socket is not None:
            connected = bool(self.socket())
            out.append(Check("slack_socket", connected,
                             "connected" if connected else "Socket Mode is not connected"))
        if self.audit is not None:
            out.append(self.audit.check())
        return out

    def _poller_check(self, poller: Poller) -> Check:
        interval = poller.interval
        last = poller.last_cycle_at
        now = self.clock()
        if interval is None:
            return Check("poller", False, "the poll loop is not running")
        leadership = poller.leadership
        if leadership is not None and not leadership.leading.is_set():
            return Check("poller", True, "standby: another replica holds the poller lock")
        limit = 3 * max(float(interval), 1.0)
        due = poller.next_cycle_at
        if last is None:
            return Check("poller", True, "the first cycle is running")
        age = now - last
        if age <= limit or (due is not None and now <= due + limit / 3):
            return Check("poller", True, f"last cycle {age:.0f} s ago")
        return Check("poller", False, f"last cycle {age:.0f} s ago (limit {limit:.0f} s)")

    def _queue_checks(self) -> list[Check]:
        try:
            found = self.sample()
        except Exception as exc:  # noqa: BLE001 - reported as the failing check
            return [Check("queues", False, f"cannot read the queues: {exc}")]
        now = self.clock()
        out = []
        with self._lock:
            for name, backlog in found.items():
                watch = self.watches[name]
                if watch.stalled(now):
                    minutes = (now - (watch.since or now)) / 60
                    out.append(Check(name, False, f"{backlog.depth} waiting, growing for "
                                     f"{minutes:.0f} min (oldest {backlog.oldest:.0f} s)"))
                else:
                    out.append(Check(name, True, f"{backlog.depth} waiting"))
        return out

    def _rate_check(self, watch: RateLimitWatch) -> Check:
        stuck = watch.exhausted()
        if not stuck:
            return Check("github_rate_limit", True, "not exhausted beyond its reset")
        names = ", ".join(f"{r} (now until {t.strftime('%H:%M:%SZ')})"
                          for r, t in sorted(stuck.items()))
        return Check("github_rate_limit", False, f"exhausted beyond its reset: {names}")

    def _auth_check(self, watch: CredentialsWatch) -> Check:
        refused = watch.refused()
        if refused is None:
            return Check("github_auth", True, "credentials accepted")
        section = self.services.config.section("github")
        fix = ("check github.app (its key, its installation)" if section.get("app") else
               f"check the token in ${section.get('tokenEnv') or 'GITHUB_TOKEN'}")
        since = refused.since.strftime("%Y-%m-%dT%H:%M:%SZ")
        return Check("github_auth", False,
                     f"GitHub answered 401 (bad credentials) to the last {refused.count} "
                     f"requests, the first at {since}; {fix}")

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """``(ready, body)``: the ``/readyz`` answer's JSON body is ``{"ready", "checks":
        {name: {"ok", "detail"}}, "failing": [names]}``."""
        results = self.checks()
        failing = [c.name for c in results if not c.ok]
        body = {"ready": not failing, "failing": failing,
                "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in results}}
        return not failing, body


def blueprint(health: Health, metrics: Any = None) -> Any:
    """``GET /readyz`` (and ``GET /metrics`` when ``metrics`` is given) as a Flask
    blueprint.

    Args:
        health: the checks.
        metrics: a :class:`bot.ops.metrics.Metrics`, or None when ``server.metrics`` is off.

    Returns:
        The blueprint; ``/readyz`` answers 200 when ready, else 503, with
        :meth:`Health.readiness`'s body.
    """
    from flask import Blueprint, Response, jsonify

    bp = Blueprint("loopgate_ops", __name__)

    @bp.get(READY_PATH)
    def readyz() -> Response:
        ready, body = health.readiness()
        response = jsonify(body)
        response.status_code = 200 if ready else 503
        return response

    if metrics is not None:
        @bp.get(METRICS_PATH)
        def prometheus() -> Response:
            from bot.ops.metrics import CONTENT_TYPE_LATEST

            return Response(metrics.render(), mimetype=None,
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    return bp

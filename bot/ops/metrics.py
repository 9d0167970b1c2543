"""Prometheus metrics of ``loopgate serve`` at ``GET /metrics`` (issue 13 §2).

Two kinds of numbers, one registry per server (never the process-global one, so two
stacks in one test process do not mix):

* **counted as they happen** — :class:`Metrics` is a :class:`bridges.telemetry.Sink`:
  ``loopgate_deliveries_total{source,kind,result}``, ``loopgate_dispatch_seconds``
  (histogram), ``loopgate_github_requests_total{endpoint,status}`` (``304`` apart),
  ``loopgate_github_rate_limit_remaining{resource}``, ``loopgate_poll_cycle_seconds``
  (histogram);
* **read from the database at scrape time** (:class:`_StateCollector`), so they hold
  across restarts: ``loopgate_queue_depth{queue}`` and
  ``loopgate_queue_oldest_age_seconds{queue}`` (``inbox``, ``github_effects``,
  ``slack_outbox``), ``loopgate_work_items{node,status}``,
  ``loopgate_gate_wait_seconds{node}`` (histogram of the current waits at human gates),
  ``loopgate_quiz_attestations_total{node}``, ``loopgate_quiz_refusals_total{node}`` and
  ``loopgate_effects_failed_total`` (counted from the event log);
* **read from the self-audit** (issue 22 §3, :mod:`bot.ops.self_audit`) when it runs:
  ``loopgate_audit_disagreements`` (active items whose verdicts differ from GitHub's
  records, as of the latest rounds) and ``loopgate_audit_runs_total`` (rounds done);
* **read from acks first** (issue 21 §1, :class:`bridges.ingress.ack_first.AckFirst`'s
  live counts, read when scraped, never counted twice), by background thread
  (``thread``: ``dispatcher``, ``github_effects`` — each has its own pause reserve):
  ``loopgate_ack_first_pauses_total`` (pauses that waited for an ack in hand),
  ``loopgate_ack_first_overruns_total`` (of those, pauses that gave up at their bound
  with an ack still in hand) and ``loopgate_ack_first_budget_refusals_total`` (pauses
  refused at once, the thread's reserve spent: a sustained stream of acks is holding it
  to its share). They count since the process started.

Labels are low-cardinality: no work item, repository or login is ever a label value
(Prometheus naming: https://prometheus.io/docs/practices/naming/).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from bot.ops.health import Health
from bridges import telemetry

if TYPE_CHECKING:
    from bridges.ingress.ack_first import AckFirst
    from engine.store.base import DatabaseStore

__all__ = ["Metrics", "CONTENT_TYPE_LATEST", "GATE_WAIT_BUCKETS"]

logger = logging.getLogger(__name__)

#: Dispatch latency buckets (seconds): a decision is milliseconds to a few seconds.
DISPATCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
#: Poll cycle buckets (seconds).
POLL_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
#: Gate wait buckets (seconds): a minute to a week, people answer gates.
GATE_WAIT_BUCKETS = (60, 300, 900, 3600, 4 * 3600, 86400, 3 * 86400, 7 * 86400)


class Metrics(telemetry.Sink):
    """The registry of one server and the sink that counts into it.

    Args:
        health: where the queues and the database are read at scrape time (None: only
            the counters; tests of the sink alone).
        acks: the dispatcher's acks first, whose pause counts are read at scrape time
            (None: not exported).
    """

    def __init__(self, health: Health | None = None, *, acks: AckFirst | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.deliveries = Counter("loopgate_deliveries", "Deliveries handled by the "
                                  "dispatcher.", ("source", "kind", "result"), registry=r)
        self.dispatch = Histogram("loopgate_dispatch_seconds", "Time to handle one delivery.",
                                  buckets=DISPATCH_BUCKETS, registry=r)
        self.github = Counter("loopgate_github_requests", "HTTP requests to GitHub (REST "
                              "and GraphQL) by endpoint and status; 304 is apart.",
                              ("endpoint", "status"), registry=r)
        self.remaining = Gauge("loopgate_github_rate_limit_remaining", "Requests left in "
                               "GitHub's rate-limit window, per resource.", ("resource",),
                               registry=r)
        self.limited = Counter("loopgate_github_rate_limited", "Requests GitHub refused for "
                               "a rate limit.", ("resource",), registry=r)
        self.poll = Histogram("loopgate_poll_cycle_seconds", "Time of one poll cycle over "
                              "every repository.", buckets=POLL_BUCKETS, registry=r)
        if health is not None:
            r.register(_StateCollector(health))
        if acks is not None:
            r.register(_AckFirstCollector(acks))

    # -- telemetry.Sink ------------------------------------------------------------------
    def delivery(self, source: str, kind: str, result: str, seconds: float) -> None:
        """Count one delivery and its dispatch time."""
        self.deliveries.labels(source, kind, result).inc()
        self.dispatch.observe(seconds)

    def github_request(self, endpoint: str, status: str) -> None:
        """Count one GitHub request."""
        self.github.labels(endpoint, status).inc()

    def rate_limit(self, resource: str, remaining: int, reset_at: datetime | None) -> None:
        """Set the remaining requests of ``resource``."""
        self.remaining.labels(resource).set(remaining)

    def rate_limited(self, resource: str, reset_at: datetime) -> None:
        """Count a rate-limit refusal; nothing is left of ``resource`` until its reset."""
        self.limited.labels(resource).inc()
        self.remaining.labels(resource).set(0)

    def poll_cycle(self, seconds: float, at: float) -> None:
        """Observe one poll cycle's duration."""
        self.poll.observe(seconds)

    # -- exposition ----------------------------------------------------------------------
    def render(self) -> bytes:
        """The text exposition format (``Content-Type``: :data:`CONTENT_TYPE_LATEST`)."""
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Numbers read from the database (and the inbox file) when Prometheus scrapes."""

    def __init__(self, health: Health) -> None:
        self.health = health

    def describe(self) -> list[Any]:
        return []  # read at collect time only: registering must not touch the database

    def collect(self) -> Iterator[Any]:
        yield from _audit(self.health.audit)
        try:
            yield from self._queues()
            store = self.health.services.store
            yield from _items(store)
            yield from _gate_waits(store, self.health.services.graph)
            yield from _event_counters(store)
        except Exception as exc:  # a scrape must answer even when the file is locked
            logger.warning("metrics: could not read the database: %s", exc)

    def _queues(self) -> Iterator[Any]:
        depth = GaugeMetricFamily("loopgate_queue_depth", "Entries waiting in a queue "
                                  "(inbox, github_effects, slack_outbox).", labels=["queue"])
        age = GaugeMetricFamily("loopgate_queue_oldest_age_seconds", "Age of the oldest "
                                "entry waiting in a queue.", labels=["queue"])
        for name, backlog in sorted(self.health.backlogs().items()):
            depth.add_metric([name], backlog.depth)
            age.add_metric([name], backlog.oldest)
        yield depth
        yield age


class _AckFirstCollector(Collector):
    """Acks first's pause counts by thread, read from the live :class:`AckFirst` when
    Prometheus scrapes (one copy taken under its lock, so the three agree)."""

    #: (name, help, the :class:`~bridges.ingress.ack_first.PauseCounts` field)
    FAMILIES = (
        ("loopgate_ack_first_pauses", "Pauses of a background thread that waited for the "
         "acks in hand to be answered (issue 21 §1).", "pauses"),
        ("loopgate_ack_first_overruns", "Of those pauses, the ones that gave up at their "
         "bound with an ack still in hand.", "overruns"),
        ("loopgate_ack_first_budget_refusals", "Pauses refused at once, an ack being in "
         "hand, because the thread's pause reserve was spent.", "budget_refusals"),
    )

    def __init__(self, acks: AckFirst) -> None:
        self.acks = acks

    def describe(self) -> list[Any]:
        return []  # the threads are known only once they paused

    def collect(self) -> Iterator[Any]:
        counts = sorted(self.acks.counts().items())
        for name, text, field in self.FAMILIES:
            family = CounterMetricFamily(name, text, labels=["thread"])
            for thread, count in counts:
                family.add_metric([thread], getattr(count, field))
            yield family


def _items(store: DatabaseStore) -> Iterator[Any]:
    family = GaugeMetricFamily("loopgate_work_items", "Work items by current node and "
                               "status.", labels=["node", "status"])
    for node, status, count in store.item_counts():
        family.add_metric([node, status], count)
    yield family


def _gate_waits(store: DatabaseStore, graph: Any) -> Iterator[Any]:
    """The age of every current wait at a human gate, as one histogram per node."""
    human = {n.id for n in graph.ordered() if n.is_human}
    now = datetime.now(UTC)
    ages: dict[str, list[float]] = {}
    for node, entered in store.open_waits():
        if node in human and entered:
            moment = datetime.fromisoformat(entered.replace("Z", "+00:00"))
            ages.setdefault(node, []).append(max(0.0, (now - moment).total_seconds()))
    family = HistogramMetricFamily("loopgate_gate_wait_seconds", "How long the work items "
                                   "now waiting at a human gate have waited.",
                                   labels=["node"])
    for node, values in sorted(ages.items()):
        buckets = [(str(float(b)), sum(1 for v in values if v <= b)) for b in GATE_WAIT_BUCKETS]
        buckets.append(("+Inf", len(values)))
        family.add_metric([node], buckets, sum(values))
    yield family


_COUNTED_EVENTS = (
    ("graph.quiz_attested", "loopgate_quiz_attestations", "Quiz attestations accepted."),
    ("graph.quiz_refused", "loopgate_quiz_refusals", "Quiz ticks refused (not by an "
                                                    "authorized person)."),
)


def _event_counters(store: DatabaseStore) -> Iterator[Any]:
    kinds = [k for k, _, _ in _COUNTED_EVENTS] + ["graph.effect_failed"]
    counts = store.event_counts(kinds)
    for kind, name, text in _COUNTED_EVENTS:
        family = CounterMetricFamily(name, text, labels=["node"])
        for (seen, node), count in sorted(counts.items()):
            if seen == kind:
                family.add_metric([node], count)
        yield family
    failed = sum(c for (k, _), c in counts.items() if k == "graph.effect_failed")
    family = CounterMetricFamily("loopgate_effects_failed", "Effects that failed for good "
                                 "(see loopgate effects).")
    family.add_metric([], failed)
    yield family


def _audit(audit: Any) -> Iterator[Any]:
    """The self-audit's numbers (nothing when it is off)."""
    if audit is None:
        return
    gauge = GaugeMetricFamily("loopgate_audit_disagreements", "Active work items whose "
                              "recorded verdicts differ from what GitHub's records give "
                              "(the self-audit's latest rounds; see loopgate verify).")
    gauge.add_metric([], len(audit.disagreements()))
    yield gauge
    runs = CounterMetricFamily("loopgate_audit_runs", "Self-audit rounds done.")
    runs.add_metric([], audit.runs)
    yield runs

"""What the bridge tells operators about its own work: a small facade, no metrics library.

The dispatcher, the poller and the GitHub clients call the module functions below
(:func:`delivery`, :func:`github_request`, :func:`rate_limit`, :func:`rate_limited`,
:func:`poll_cycle`); each call is handed to every installed :class:`Sink`. Nothing is
installed by default, so a CLI command or a test pays one empty loop per call. ``loopgate
serve`` installs :class:`bot.ops.metrics.Metrics` (Prometheus counters, issue 13 §2) and
:class:`RateLimitWatch` (the readiness check of the rate limit, issue 13 §1) and
:class:`CredentialsWatch` (the readiness check of GitHub's credentials).

Labels passed here are low-cardinality by construction: an endpoint is a short verb
phrase (:func:`endpoint_of`), never a repository, a work item or a login.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

__all__ = [
    "Sink", "install", "uninstall", "delivery", "github_request", "rate_limit",
    "rate_limited", "poll_cycle", "endpoint_of", "status_class", "RateLimitWatch",
    "CredentialsWatch", "CredentialsRefused",
]

logger = logging.getLogger(__name__)


class Sink:
    """Receives telemetry; every method is a no-op here (override what you need)."""

    def delivery(self, source: str, kind: str, result: str, seconds: float) -> None:
        """One delivery handled by the dispatcher.

        Args:
            source: ``github`` (webhook) | ``poller`` | ``slack`` ...
            kind: ``start`` | ``comment`` | ``quiz_attestation``.
            result: ``handled`` | ``dropped`` | ``duplicate`` | ``retry`` | ``failed``.
            seconds: how long handling took (wall time, seconds).
        """

    def github_request(self, endpoint: str, status: str) -> None:
        """One HTTP request to GitHub (see :func:`status_class` for ``status``)."""

    def rate_limit(self, resource: str, remaining: int, reset_at: datetime | None) -> None:
        """GitHub's ``x-ratelimit-remaining``/``-reset`` of ``resource`` (core, graphql …)."""

    def rate_limited(self, resource: str, reset_at: datetime) -> None:
        """GitHub refused a request of ``resource`` for its rate limit until ``reset_at``."""

    def poll_cycle(self, seconds: float, at: float) -> None:
        """One poll cycle over every repository took ``seconds``; ended at ``at``
        (``time.monotonic()``)."""


_SINKS: list[Sink] = []
_LOCK = threading.Lock()
_AnySink = TypeVar("_AnySink", bound=Sink)


def install(sink: _AnySink) -> _AnySink:
    """Add ``sink`` (returns it, as its own type); idempotent."""
    with _LOCK:
        if sink not in _SINKS:
            _SINKS.append(sink)
    return sink


def uninstall(sink: Sink) -> None:
    """Remove ``sink`` (nothing when it is not installed)."""
    with _LOCK:
        if sink in _SINKS:
            _SINKS.remove(sink)


def _each(method: str, *args: Any) -> None:
    with _LOCK:
        sinks = list(_SINKS)
    for sink in sinks:
        try:
            getattr(sink, method)(*args)
        except Exception:  # telemetry must never break the work it describes
            logger.exception("telemetry sink %s.%s failed", type(sink).__name__, method)


def delivery(source: str, kind: str, result: str, seconds: float) -> None:
    """See :meth:`Sink.delivery`."""
    _each("delivery", source, kind, result, seconds)


def github_request(endpoint: str, status: int | str) -> None:
    """See :meth:`Sink.github_request`; ``status`` is an HTTP status (0: unreachable)."""
    _each("github_request", endpoint, status_class(status))


def rate_limit(resource: str, headers: Mapping[str, Any] | None) -> None:
    """Report GitHub's rate-limit headers of one answer (nothing when absent).

    Args:
        resource: the resource to assume when ``x-ratelimit-resource`` is missing.
        headers: the answer's headers (any case).
    """
    lower = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    remaining = lower.get("x-ratelimit-remaining", "").strip()
    if not remaining.isdigit():
        return
    reset = lower.get("x-ratelimit-reset", "").strip()
    reset_at = datetime.fromtimestamp(int(reset), UTC) if reset.isdigit() else None
    name = lower.get("x-ratelimit-resource", "").strip() or resource
    _each("rate_limit", name, int(remaining), reset_at)


def rate_limited(resource: str, reset_at: datetime) -> None:
    """See :meth:`Sink.rate_limited`."""
    _each("rate_limited", resource, reset_at)


def poll_cycle(seconds: float, at: float) -> None:
    """See :meth:`Sink.poll_cycle`."""
    _each("poll_cycle", seconds, at)


def status_class(status: int | str) -> str:
    """The ``status`` label: ``304`` apart (a conditional hit costs no rate limit), the
    codes that decide what loopgate does (401, 403, 404, 422, 429) as themselves, other
    answers by class (``2xx``, ``3xx``, ``4xx``, ``5xx``), and ``unreachable`` for 0."""
    text = str(status)
    if not text.isdigit() or int(text) == 0:
        return "unreachable" if text in ("0", "") else text
    code = int(text)
    if code in (304, 401, 403, 404, 422, 429):
        return str(code)
    return f"{code // 100}xx"


def endpoint_of(what: str) -> str:
    """A low-cardinality endpoint name from a client's description of a call:
    the leading words before the first one naming a repository, an item or a number
    (``get issue acme/widgets#3`` → ``get_issue``)."""
    words = []
    for word in what.split():
        if any(c in word for c in "/#:@") or any(c.isdigit() for c in word):
            break
        words.append(word.strip("'\"").lower())
    return "_".join(words[:4]) or "other"


class RateLimitWatch(Sink):
    """Whether GitHub's rate limit is exhausted *beyond its reset* (issue 13 §1).

    A limit that is spent until its announced reset is normal work (loopgate waits, the
    webhook inbox keeps deliveries). It is a fault when the reset passed and GitHub still
    refuses for the limit: a request refused at or after the reset it announced (plus
    ``grace``). That fault lasts until a request of the resource succeeds.

    Args:
        grace: seconds of clock skew tolerated after an announced reset.
        clock: the current UTC time (tests).
    """

    def __init__(self, grace: float = 30.0, clock: Any = None) -> None:
        self.grace = timedelta(seconds=grace)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._reset: dict[str, datetime] = {}
        self._stuck: dict[str, datetime] = {}
        self.remaining: dict[str, int] = {}

    def rate_limit(self, resource: str, remaining: int, reset_at: datetime | None) -> None:
        """Remember the announced reset; a request that still has quota clears a fault."""
        with self._lock:
            self.remaining[resource] = remaining
            if reset_at is not None:
                self._reset[resource] = reset_at
            if remaining > 0:
                self._stuck.pop(resource, None)

    def rate_limited(self, resource: str, reset_at: datetime) -> None:
        """A refusal at or after the last announced reset marks the resource stuck."""
        now = self._clock()
        with self._lock:
            announced = self._reset.get(resource)
            if announced is not None and now >= announced + self.grace:
                self._stuck[resource] = reset_at
            self._reset[resource] = reset_at

    def exhausted(self) -> dict[str, datetime]:
        """``resource -> the reset GitHub now names`` for every resource refused beyond
        its earlier reset."""
        with self._lock:
            return dict(self._stuck)


@dataclass(frozen=True)
class CredentialsRefused:
    """GitHub refusing loopgate's credentials, as :class:`CredentialsWatch` saw it.

    Attributes:
        count: requests answered 401 in a row.
        since: when the first of them was answered (UTC).
        endpoint: the last refused request's endpoint (:func:`endpoint_of`).
    """

    count: int
    since: datetime
    endpoint: str


class CredentialsWatch(Sink):
    """Whether GitHub refuses loopgate's credentials (the ``github_auth`` readiness check).

    GitHub answers ``401 Bad credentials`` to a revoked, expired or mistyped token
    (docs.github.com, "Troubleshooting the REST API"); nothing loopgate writes or reads
    gets through until a person replaces it. After ``threshold`` requests in a row were
    answered 401 (an App refreshes its installation token on a first 401, so one refusal
    alone is normal), the credentials count as refused until GitHub accepts a request
    again: any answer but 401, an unreachable GitHub and a 5xx (which say nothing about
    the credentials).

    Args:
        threshold: requests answered 401 in a row before the check fails.
        clock: the current UTC time (tests).
    """

    def __init__(self, threshold: int = 3, clock: Any = None) -> None:
        self.threshold = threshold
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._count = 0
        self._since: datetime | None = None
        self._endpoint = ""

    def github_request(self, endpoint: str, status: str) -> None:
        """Count a 401; an answer that shows the credentials were taken clears the count."""
        if status in ("unreachable", "5xx"):
            return
        with self._lock:
            if status != "401":
                self._count, self._since, self._endpoint = 0, None, ""
                return
            self._count += 1
            self._endpoint = endpoint
            if self._since is None:
                self._since = self._clock()

    def refused(self) -> CredentialsRefused | None:
        """The refusal, once ``threshold`` requests in a row were answered 401; else None."""
        with self._lock:
            if self._count < self.threshold or self._since is None:
                return None
            return CredentialsRefused(self._count, self._since, self._endpoint)

"""Acks first (issue 21 §1): background work steps aside while an ack is being written.

``loopgate serve`` answers GitHub's webhooks (and Slack's requests) on waitress' threads,
and decides the same burst on the dispatcher's thread, in one process. CPython runs one
thread at a time (the GIL, handed over every 5 ms), so on a loaded 2-core machine an ack
waited, once per hand-over, behind the dispatcher and the effects worker deciding and
carrying out the deliveries it had just acknowledged: ack p99 117–504 ms where a WSGI app
doing nothing measured 22 ms on the same machine (docs/benchmarks.md).

:class:`AckFirst` counts the acking requests in hand: a GitHub webhook or a Slack request
whose signature holds is counted in (:meth:`AckFirst.enter`) until the server closed its
response (:meth:`AckFirst.leave_on_close`). Only signed requests count: anyone can send
unsigned POSTs, and a stream of them counted as acks would hold the background to four
items a second (found in review: 200 unsigned POSTs a second delayed five real deliveries
from 0.05 to 1.27 s). The dispatcher calls :meth:`AckFirst.pause` before
each delivery it takes and the effects worker before each row, so neither starts work
while an ack is being answered. Between two requests of a burst none is in hand for a
moment, so a pause ends only once none has been in hand for :data:`QUIET_S` (the burst
is over): ending it at the first such moment let the dispatcher take a delivery in each
gap, and an ack arriving then waited behind it (21 of a 1,000-delivery burst were decided
during it; 10-12 with the quiet gap, the 0.25 s bound ending a pause about four times a
second). The pause is bounded (:data:`PAUSE_S` by default): an endless stream of
requests slows the background down, never stops it. A delivery is durable before it is
counted out (the inbox's commit is inside the request), so pausing changes only when
work is done, never whether an acknowledged delivery is kept.

``serve`` also lowers CPython's switch interval to :data:`SWITCH_INTERVAL_S`
(:func:`shorter_switch_interval`): a thread woken by I/O waits at most that long for the
GIL, where the default is 5 ms.

Why this and not a receiver process of its own: with the dispatcher and the effects worker
held off for a whole burst (what a separate receiver would give the acks), the acks were
no faster on the heavily shared machine; most of an ack's time there is its own inbox
commit's thread hand-overs, which a second process keeps (docs/benchmarks.md). Measured
with two busy loops, this brings the ack p99 from 52–73 ms to 39–52 ms and the burst is
decided in a comparable time; ``serve`` stays one process to supervise.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["AckFirst", "PAUSE_S", "QUIET_S", "SWITCH_INTERVAL_S", "WsgiApp",
           "shorter_switch_interval"]

#: The longest one pause waits for the acks in hand to end (seconds): long enough to
#: cover a burst's requests, short enough that a stream of them never stops the work.
PAUSE_S = 0.25

#: How long no ack must have been in hand before a pause ends (seconds): longer than the
#: gap between two requests of a burst, short enough that a lone ack delays the next
#: decision unnoticeably.
QUIET_S = 0.02

#: CPython's thread switch interval in ``serve`` (seconds; CPython's default is 0.005): a
#: thread woken by I/O (an ack's commit, its socket) waits at most this long for a thread
#: running Python to hand the GIL over.
SWITCH_INTERVAL_S = 0.001

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class AckFirst:
    """The count of acking requests in hand, and a bounded wait for it to reach zero.

    Args:
        pause_s: the longest one :meth:`pause` waits (seconds; 0 turns pausing off).
        quiet_s: how long no ack must have been in hand for a pause to end (seconds).

    Attributes:
        pauses: pauses that waited for at least one request (tests, metrics).
        overruns: pauses that gave up at ``pause_s`` with requests still in hand.
    """

    def __init__(self, pause_s: float = PAUSE_S, quiet_s: float = QUIET_S) -> None:
        self.pause_s = pause_s
        self.quiet_s = quiet_s
        self._cond = threading.Condition()
        self._in_hand = 0
        self._last_leave = -quiet_s  # monotonic seconds; "long ago" before any ack
        self._waiting = 0
        self.pauses = 0
        self.overruns = 0

    @property
    def in_hand(self) -> int:
        """Acking requests being answered now."""
        with self._cond:
            return self._in_hand

    @property
    def waiting(self) -> int:
        """Threads inside :meth:`pause` now (tests: the dispatcher is stepping aside)."""
        with self._cond:
            return self._waiting

    def enter(self) -> None:
        """Count one acking request in."""
        with self._cond:
            self._in_hand += 1

    def leave(self) -> None:
        """Count one acking request out. Pauses are not woken: each looks again after at
        most :attr:`quiet_s` (a wake-up per ack would cost a burst a thread switch each)."""
        with self._cond:
            self._in_hand = max(0, self._in_hand - 1)
            self._last_leave = time.monotonic()

    @contextmanager
    def receiving(self) -> Iterator[None]:
        """``with acks.receiving():`` around one acking request."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def pause(self) -> float:
        """Wait until no acking request has been in hand for :attr:`quiet_s`, at most
        :attr:`pause_s` seconds.

        Returns:
            Seconds waited (0.0 when it was quiet already).
        """
        with self._cond:
            started = time.monotonic()
            if self.pause_s <= 0 or self._quiet_at(started) <= started:
                return 0.0
            self._waiting += 1
            try:
                deadline = started + self.pause_s
                while (now := time.monotonic()) < (quiet := self._quiet_at(now)):
                    if now >= deadline:
                        self.overruns += 1
                        break
                    self._cond.wait(min(quiet, deadline) - now)
            finally:
                self._waiting -= 1
            self.pauses += 1
            return time.monotonic() - started

    def _quiet_at(self, now: float) -> float:
        """When it is quiet enough for background work (monotonic seconds), as far as is
        known at ``now``: :attr:`quiet_s` after the last ack left, or after ``now`` while
        one is in hand."""
        return (now if self._in_hand else self._last_leave) + self.quiet_s

    def leave_on_close(self, body: Iterable[bytes]) -> Iterable[bytes]:
        """The response body of an ack counted in with :meth:`enter`: :meth:`leave` runs
        once, when the server closes it (after the last byte is written).

        Args:
            body: the WSGI response body.

        Returns:
            The body, wrapped.
        """
        return _Closing(body, self.leave)


def shorter_switch_interval(seconds: float = SWITCH_INTERVAL_S) -> Callable[[], None]:
    """Lower CPython's switch interval to ``seconds`` (never raise it).

    Returns:
        A callable that puts the previous interval back (``serve``'s supervisor calls it
        on close, so a test process running ``serve`` in-process gets its own back).
    """
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, seconds))
    return lambda: sys.setswitchinterval(previous)


class _Closing:
    """A WSGI response body that calls ``done`` once when the server closes it."""

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self._body = body
        self._done: Callable[[], None] | None = done

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()

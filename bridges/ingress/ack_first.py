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
second). The pause is bounded (:data:`PAUSE_S` by default), so no one pause outlasts a
stream of requests, and budgeted (below), so a stream slows the background down and never
starves it. A delivery is durable before it is
counted out (the inbox's commit is inside the request), so pausing changes only when
work is done, never whether an acknowledged delivery is kept.

The bound alone is not enough for a *sustained* stream (an organisation sending 50
deliveries a second for minutes, each less than :data:`QUIET_S` after the last): every
pause would run to its bound, and the dispatcher and the effects worker would each do
about four items a second for as long as it lasts. So each background thread's pauses
also spend a budget, a reserve of paused seconds (:data:`PAUSE_RESERVE_S`, 5 s) refilled
at :data:`PAUSE_SHARE` (0.5) seconds per second: a pause waits at most what the reserve
holds (counting the refill while it waits) and a pause with the reserve spent is refused
at once (:attr:`AckFirst.budget_refusals`). Over any span of ``L`` seconds a thread is
paused at most ``0.5 L + 5`` seconds (a wait that wakes late leaves the reserve in debt,
at most one reserve deep, paid back before the next pause; a share of 1 is no budget).
What that gives:

- a burst of signed requests after a quiet spell keeps the full effect (every pause to
  its bound, as without the budget) for ``PAUSE_RESERVE_S / (1 - PAUSE_SHARE)`` = 10 s of
  pausing (the ingress benchmark's burst of 1,000 deliveries is sent in 2.5–9 s), a
  little longer in wall time since the thread does an item between two pauses;
- under an endless stream, past those 10 s, the thread is paused half the time in short
  pieces (a pause about as long as the item before it): it works at half its own speed,
  e.g. 50 items a second where an item takes 10 ms (about four a second without the
  budget), so decisions keep up with a stream half as fast as the dispatcher can decide;
- once the stream has stopped, the reserve is full again after
  ``PAUSE_RESERVE_S / PAUSE_SHARE`` = 10 s.

The budget is a reserve refilled at a steady rate rather than a sliding window ("at
most F of the last W seconds"): under an endless stream a sliding window repeats its
first window's shape, F·W seconds paused then (1 - F)·W working, every W seconds, so the
background would stop for 10 s every 20 s; the reserve, once spent, hands the pauses out
as it refills. The accounting happens in :meth:`AckFirst.pause` only (per thread, a
``threading.local``); counting an ack in and out costs what it did.

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

import functools
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

__all__ = ["AckFirst", "PAUSE_RESERVE_S", "PAUSE_S", "PAUSE_SHARE", "PauseCounts", "QUIET_S",
           "SWITCH_INTERVAL_S", "WsgiApp", "shorter_switch_interval"]

#: The longest one pause waits for the acks in hand to end (seconds): long enough to
#: cover a burst's requests, short enough that a stream of them never stops the work.
PAUSE_S = 0.25

#: How long no ack must have been in hand before a pause ends (seconds): longer than the
#: gap between two requests of a burst, short enough that a lone ack delays the next
#: decision unnoticeably.
QUIET_S = 0.02

#: The share of its time a background thread may spend paused under a stream of acks
#: that never ends (a fraction of wall time; the reserve refills at this many paused
#: seconds per second): 0.5 leaves the dispatcher and the effects worker half their speed,
#: enough to keep up with a stream half as fast as they can decide, while the acks still
#: get the other half of the machine's turns from them.
PAUSE_SHARE = 0.5

#: The reserve of paused seconds each background thread starts with and refills up to
#: (seconds): a burst keeps the full acks-first effect for
#: ``PAUSE_RESERVE_S / (1 - PAUSE_SHARE)`` = 10 s of pausing, longer than the ingress
#: benchmark's burst of 1,000 deliveries takes to send on the loaded machine (2.5–9 s); it
#: is full again ``PAUSE_RESERVE_S / PAUSE_SHARE`` = 10 s after a stream stopped.
PAUSE_RESERVE_S = 5.0

#: CPython's thread switch interval in ``serve`` (seconds; CPython's default is 0.005): a
#: thread woken by I/O (an ack's commit, its socket) waits at most this long for a thread
#: running Python to hand the GIL over.
SWITCH_INTERVAL_S = 0.001

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class PauseCounts(NamedTuple):
    """What one background thread's pauses did (counts since the process started).

    Attributes:
        pauses: pauses that waited for at least one request.
        overruns: of those, pauses that gave up at their bound (``pause_s``, or what the
            budget left) with requests still in hand.
        budget_refusals: pauses refused at once, an ack being in hand, because the
            thread's reserve was spent (not counted in ``pauses``).
    """

    pauses: int = 0
    overruns: int = 0
    budget_refusals: int = 0


class AckFirst:
    """The count of acking requests in hand, and a bounded, budgeted wait for it to reach
    zero.

    Args:
        pause_s: the longest one :meth:`pause` waits (seconds; 0 turns pausing off).
        quiet_s: how long no ack must have been in hand for a pause to end (seconds).
        share: the share of wall time each thread calling :meth:`pause` may spend paused
            once its reserve is spent (a fraction, 0 to 1; 1 turns the budget off).
        reserve_s: the paused seconds each such thread starts with and the reserve
            refills up to (seconds).
        clock: monotonic seconds (tests pass a fake one).
        wait: waits up to the seconds it is given, or until notified, with the lock
            released (default: the condition's own wait; tests pass one that moves their
            fake clock on, and may count acks in and out from it: the lock is re-entrant).

    The counts of what the pauses did are kept per background thread, by the name it
    pauses as (:meth:`pause`'s ``thread``, :meth:`pauser`): each thread has a reserve of
    its own, so a total of both threads' refusals would not say whose work was held back.
    :meth:`counts` reads them (``serve``'s ``/metrics``, :mod:`bot.ops.metrics`);
    :attr:`pauses`, :attr:`overruns` and :attr:`budget_refusals` are their totals over
    every thread.
    """

    def __init__(self, pause_s: float = PAUSE_S, quiet_s: float = QUIET_S, *,
                 share: float = PAUSE_SHARE, reserve_s: float = PAUSE_RESERVE_S,
                 clock: Callable[[], float] = time.monotonic,
                 wait: Callable[[float], object] | None = None) -> None:
        if not (0.0 <= share <= 1.0 and reserve_s >= 0):  # NaN fails both: refused too
            raise ValueError(f"share must be within [0, 1] and reserve_s >= 0, "
                             f"got {share} and {reserve_s}")
        self.pause_s = pause_s
        self.quiet_s = quiet_s
        self.share = share
        self.reserve_s = reserve_s
        self._clock = clock
        self._cond = threading.Condition(threading.RLock())
        self._wait = self._cond.wait if wait is None else wait
        self._in_hand = 0
        self._last_leave = -quiet_s  # monotonic seconds; "long ago" before any ack
        self._waiting = 0
        self._reserve = _Reserve()
        self._counts: dict[str, PauseCounts] = {}  # by the name a thread pauses as

    @property
    def in_hand(self) -> int:
        """Acking requests being answered now."""
        with self._cond:
            return self._in_hand

    @property
    def pauses(self) -> int:
        """Pauses that waited for at least one request, every thread's (tests)."""
        return sum(c.pauses for c in self.counts().values())

    @property
    def overruns(self) -> int:
        """Pauses that gave up at their bound (``pause_s``, or what the budget left) with
        requests still in hand, every thread's (tests)."""
        return sum(c.overruns for c in self.counts().values())

    @property
    def budget_refusals(self) -> int:
        """Pauses refused at once, an ack being in hand, because the calling thread's
        reserve was spent, every thread's (tests)."""
        return sum(c.budget_refusals for c in self.counts().values())

    def counts(self) -> dict[str, PauseCounts]:
        """What the pauses did so far, by the name each thread pauses as (a copy, read
        at once under the lock). A thread is listed from its :meth:`pauser` or its first
        :meth:`pause` on, its counts zero until a pause waits or is refused."""
        with self._cond:
            return dict(self._counts)

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
            self._last_leave = self._clock()

    @contextmanager
    def receiving(self) -> Iterator[None]:
        """``with acks.receiving():`` around one acking request."""
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def pauser(self, thread: str) -> Callable[[], float]:
        """A background thread's :meth:`pause`, counted as ``thread``; the thread is
        listed in :meth:`counts` from now on (zeros before its first pause), so a scrape
        shows it before any ack arrived.

        Args:
            thread: the name its counts are kept under (``serve``: ``dispatcher``,
                ``github_effects``).
        """
        with self._cond:
            self._counts.setdefault(thread, PauseCounts())
        return functools.partial(self.pause, thread)

    def _count(self, thread: str, *, paused: int = 0, overran: int = 0,
               refused: int = 0) -> None:
        # Under the lock (a pause's wait releases it: the counts are read afresh here).
        counts = self._counts[thread]
        self._counts[thread] = PauseCounts(counts.pauses + paused, counts.overruns + overran,
                                           counts.budget_refusals + refused)

    def pause(self, thread: str = "background") -> float:
        """Wait until no acking request has been in hand for :attr:`quiet_s`, at most
        :attr:`pause_s` seconds and at most what the calling thread's reserve allows (see
        the module's docstring); return at once when it was quiet already or the reserve
        is spent (counted in its ``budget_refusals``).

        Args:
            thread: the name the calling thread's counts are kept under (:meth:`counts`).
                The reserve is the calling thread's whatever the name.

        Returns:
            Seconds waited (0.0 when it was quiet already or the pause was refused).
        """
        with self._cond:
            started = self._clock()
            self._counts.setdefault(thread, PauseCounts())  # listed from its first pause
            if self.pause_s <= 0 or self._quiet_at(started) <= started:
                return 0.0
            reserve = self._reserve
            budgeted = self.share < 1  # a share of 1: no budget, every pause to its bound
            level = self._reserve_at(reserve, started)
            if budgeted and level <= 0:
                self._count(thread, refused=1)
                return 0.0
            bound = self.pause_s
            if budgeted:  # the reserve refills at ``share`` while the pause drains it
                bound = min(bound, level / (1 - self.share))
            self._waiting += 1
            overran = 0
            try:
                deadline = started + bound
                while (now := self._clock()) < (quiet := self._quiet_at(now)):
                    if now >= deadline:
                        overran = 1
                        break
                    self._wait(min(quiet, deadline) - now)
            finally:
                self._waiting -= 1
            self._count(thread, paused=1, overran=overran)
            ended = self._clock()
            # A wait that overran its bound (a late wake-up) leaves the reserve in debt,
            # at most one reserve deep: an hour-long stall (a suspended VM) must not turn
            # acks first off for the hour after it.
            reserve.level = max(-self.reserve_s, level - (1 - self.share) * (ended - started))
            reserve.at = ended
            return ended - started

    def _reserve_at(self, reserve: _Reserve, now: float) -> float:
        """The calling thread's reserve at ``now`` (seconds of pause): its level when it
        last paused, refilled at :attr:`share` since, up to :attr:`reserve_s`."""
        if reserve.at is None:
            return self.reserve_s
        return min(self.reserve_s, reserve.level + self.share * (now - reserve.at))

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


class _Reserve(threading.local):
    """One thread's pause reserve (each thread calling :meth:`AckFirst.pause` has its
    own): ``level`` seconds of pause as of ``at`` (clock seconds; None: never paused, so
    full)."""

    level: float = 0.0
    at: float | None = None


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

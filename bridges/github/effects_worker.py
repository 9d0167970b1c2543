"""The GitHub effects worker: carries out the outbox after commit (issue 10 §1).

``loopgate serve`` runs one :class:`EffectWorker` loop. It takes due rows from the store's
outbox (:class:`~engine.store.effect_queue.EffectQueue`: oldest first, one at a time per
work item so an item's effects keep their order, other items' rows going on while one
waits), claims each, carries it out through the GitHub tracker and records the result
in a second short transaction (:mod:`engine.perform`). No database lock is held while
GitHub is asked.

Pacing is GitHub's (platform-facts B4): content-creating writes go through one
:class:`~bridges.github.client.GitHubClient`, which spaces them ``≥ 1 s`` apart per token
and closes its rate guard on a secondary limit until ``Retry-After`` / the reset; a row
refused that way waits until then (no request is sent before, and the wait is no failed
try), a 5xx waits an exponential back-off, and a 422/403-permission fails for good
(``loopgate effects``). Above that, a :class:`WriteBudget` keeps to GitHub's stated
content-creation limits (about 80 a minute, 500 an hour): a long backlog waits for the
budget instead of running into secondary limits.

The runtime's ``on_commit`` calls :meth:`EffectWorker.wake`, so a committed row is taken
at once; rows written by another process (a CLI ``loopgate complete``) are found by the
loop's poll of the table every :data:`POLL_SECONDS`.
"""

from __future__ import annotations

import logging
import os
import platform
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.effects import EffectRow, Notify, PublishGate, RequestReviews
from engine.perform import RETRY, Outcome, claim_row, iso, perform_row
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.settings import EngineSettings

__all__ = ["EffectWorker", "WriteBudget", "POLL_SECONDS"]

logger = logging.getLogger(__name__)

#: How often the loop looks at the outbox when nobody woke it (seconds).
POLL_SECONDS = 1.0


#: GitHub's content-creation limits (platform-facts B4): writes per minute, per hour.
PER_MINUTE = 80
PER_HOUR = 500


class WriteBudget:
    """A sliding-window budget of GitHub writes (content-creating requests).

    Args:
        per_minute: writes allowed in any 60 s.
        per_hour: writes allowed in any 3,600 s.
    """

    def __init__(self, per_minute: int = PER_MINUTE, per_hour: int = PER_HOUR) -> None:
        self.windows = ((60.0, per_minute), (3600.0, per_hour))
        self._sent: deque[float] = deque()

    def wait(self, now: float) -> float:
        """Seconds until one more write fits (0 when it fits now); ``now`` is monotonic."""
        while self._sent and now - self._sent[0] >= 3600.0:
            self._sent.popleft()
        longest = 0.0
        for span, limit in self.windows:
            inside = [t for t in self._sent if now - t < span]
            if len(inside) >= limit:
                longest = max(longest, span - (now - inside[-limit]))
        return longest

    def spend(self, now: float) -> None:
        """Count one write sent at ``now`` (monotonic seconds)."""
        self._sent.append(now)


def _is_write(row: EffectRow) -> bool:
    # Notices go to the Slack outbox (a database row), not to GitHub.
    return not isinstance(row.effect, Notify)


class EffectWorker:
    """Carries out due effects of every work item until stopped.

    Args:
        store: the store whose outbox is read (``store.effects``).
        ports: the tracker (GitHub) and the notifier.
        settings: loopgate's identity (the idempotency check trusts only its comments).
        poll: seconds between looks at the outbox when not woken.

    Attributes:
        performed: rows finished (done or failed for good) since start (tests, metrics).
        before_row: called before each row is claimed (``serve``: the dispatcher's
            :meth:`~bridges.ingress.ack_first.AckFirst.pause`, so acks go first), or None.
    """

    def __init__(self, store: Any, ports: Ports, settings: EngineSettings, *,
                 poll: float = POLL_SECONDS, budget: WriteBudget | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.ports = ports
        self.settings = settings
        self.poll = poll
        self.budget = budget or WriteBudget()
        self._monotonic = monotonic
        self._resting = False
        self.owner = f"{platform.node()}:{os.getpid()}:effects"
        self.performed = 0
        self._wake = threading.Event()
        self.before_row: Callable[[], object] | None = None

    def wake(self, ref: WorkItemRef | None = None) -> None:
        """Look at the outbox now (the runtime's ``on_commit``)."""
        self._wake.set()

    def release_dead_claims(self) -> int:
        """Free the rows a dead performer of this host had claimed (a ``serve`` killed
        mid-write): they become due at once and, having been tried, are looked for on the
        thread before anything is posted again. Returns how many were freed."""
        host = platform.node()
        freed = 0
        for row_id, owner in self.store.effects.claims():
            owner_host, _, rest = owner.partition(":")
            pid = rest.partition(":")[0]
            if owner_host == host and pid.isdigit() and not _alive(int(pid)):
                self.store.effects.defer(row_id, "", f"its performer (pid {pid}) died while "
                                                     "carrying it out")
                freed += 1
        if freed:
            logger.info("effects: freed %d row(s) claimed by a dead performer", freed)
        return freed

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set: drain what is due, then wait for a wake-up or the
        next poll. A row in hand is finished before returning."""
        self.release_dead_claims()
        while not stop.is_set():
            self._wake.clear()
            self.drain(stop)
            if stop.is_set():
                return
            pause = self.budget.wait(self._monotonic())
            self._rest(stop, max(self.poll, pause))

    def _rest(self, stop: threading.Event, seconds: float) -> None:
        """Wait up to ``seconds`` for a wake-up, looking at ``stop`` at least every
        :attr:`poll` seconds (a spent budget can mean minutes; a stop must not wait)."""
        end = self._monotonic() + seconds
        while not (stop.is_set() or self._wake.is_set()):
            left = end - self._monotonic()
            if left <= 0:
                return
            self._wake.wait(min(left, self.poll))

    def _perform(self, row: EffectRow, now: Any) -> Outcome:
        # The budget counts GitHub writes: a comment or a label is one; a loopgate check
        # is one per pull request it was published on (none before a pull request exists).
        gate = isinstance(row.effect, PublishGate)
        asks = isinstance(row.effect, RequestReviews)  # one write per request it made
        if _is_write(row) and not gate and not asks:
            self.budget.spend(self._monotonic())
        outcome = perform_row(self.store, row, self.ports, self.settings, now)
        for _ in (outcome.result.get("published") or ()) if gate else ():
            self.budget.spend(self._monotonic())
        for _ in range(int(outcome.result.get("sent") or 0) if asks else 0):
            self.budget.spend(self._monotonic())
        return outcome

    def drain(self, stop: threading.Event | None = None) -> int:
        """Carry out every row due now (stopping early when ``stop`` is set).

        Returns:
            How many rows were finished.
        """
        finished = 0
        while stop is None or not stop.is_set():
            now = self.ports.clock.now()
            rows = self.store.effects.due(iso(now), limit=20)
            if not rows:
                return finished
            progressed = False
            for row in rows:
                if stop is not None and stop.is_set():
                    break
                if _is_write(row) and self.budget.wait(self._monotonic()) > 0:
                    if not self._resting:  # said once per pause, not once a poll
                        logger.info("effects: GitHub's write budget is spent; waiting")
                    self._resting = True
                    return finished
                self._resting = False
                if self.before_row is not None:
                    self.before_row()
                now = self.ports.clock.now()
                if not claim_row(self.store, row, self.owner, now):
                    continue  # another performer took it
                progressed = True
                if self._perform(row, now).kind != RETRY:
                    finished += 1
                    self.performed += 1
            if not progressed:
                return finished
        return finished


def _alive(pid: int) -> bool:
    """True when process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True

"""Acks first (issue 21 §1): while an acking request is in hand the dispatcher (and the
effects worker) step aside before their next piece of work, for a bounded time, so the
ack is answered first; a 2xx still means the delivery is in the inbox."""

from __future__ import annotations

import math
import sys
import threading
import time
from pathlib import Path

import pytest

from bridges.github.effects_worker import EffectWorker
from bridges.ingress.ack_first import (
    PAUSE_RESERVE_S,
    PAUSE_S,
    PAUSE_SHARE,
    SWITCH_INTERVAL_S,
    AckFirst,
    shorter_switch_interval,
)
from engine.effects import AddLabel
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.store.sqlite import SqliteStore
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.bridges.test_dispatcher import comment_delivery
from tests.e2e.stack import wait_until
from tests.engine.test_hooks_support import RecordingNotifier


def _pausing(acks: AckFirst) -> tuple[threading.Thread, list[float]]:
    waited: list[float] = []
    thread = threading.Thread(target=lambda: waited.append(acks.pause()))
    thread.start()
    return thread, waited


def test_a_pause_with_no_ack_in_hand_does_not_wait() -> None:
    acks = AckFirst()
    assert acks.pause() == 0.0
    assert (acks.pauses, acks.overruns, acks.in_hand) == (0, 0, 0)


def test_a_pause_lasts_until_the_last_ack_in_hand_is_answered() -> None:
    acks = AckFirst(pause_s=30.0)
    acks.enter()
    acks.enter()
    thread, waited = _pausing(acks)
    wait_until(lambda: acks.waiting == 1, "the pause to start")
    acks.leave()
    assert acks.waiting == 1 and acks.in_hand == 1  # one ack still in hand: still waiting
    acks.leave()
    thread.join(10)
    assert not thread.is_alive()
    assert waited and waited[0] > 0
    assert (acks.pauses, acks.overruns, acks.waiting) == (1, 0, 0)


def test_a_pause_ends_only_once_no_ack_was_in_hand_for_the_quiet_gap() -> None:
    """Between two requests of a burst none is in hand for a moment: that moment does not
    end the pause; the quiet gap after the LAST ack does (measured from its leave)."""
    acks = AckFirst(pause_s=30.0, quiet_s=1.0)
    acks.enter()
    thread, waited = _pausing(acks)
    wait_until(lambda: acks.waiting == 1, "the pause to start")
    acks.leave()  # none in hand for a moment ...
    acks.enter()  # ... and the next request of the burst arrives
    assert acks.waiting == 1
    acks.leave()
    last_leave = time.monotonic()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - last_leave >= 1.0
    assert waited[0] >= 1.0
    assert (acks.pauses, acks.overruns) == (1, 0)


def test_a_pause_just_after_an_ack_waits_for_the_quiet_gap() -> None:
    acks = AckFirst(pause_s=30.0, quiet_s=0.2)
    acks.enter()
    before_leave = time.monotonic()
    acks.leave()
    acks.pause()
    assert time.monotonic() - before_leave >= 0.2  # the gap counts from the leave
    assert acks.pause() == 0.0  # quiet since: no wait


def test_a_pause_is_bounded_so_a_stream_of_acks_never_stops_the_work() -> None:
    acks = AckFirst(pause_s=0.05)
    with acks.receiving():  # never answered while the pause runs
        thread, waited = _pausing(acks)
        thread.join(10)
        assert not thread.is_alive()
    assert acks.overruns == 1 and acks.pauses == 1
    assert waited[0] >= 0.05
    assert acks.in_hand == 0


def test_an_ack_counted_in_leaves_once_its_response_is_closed() -> None:
    acks = AckFirst()
    acks.enter()
    body = acks.leave_on_close([b"queued"])
    assert acks.in_hand == 1  # answered, not yet written out
    assert list(body) == [b"queued"]
    assert acks.in_hand == 1
    body.close()  # type: ignore[attr-defined]
    body.close()  # type: ignore[attr-defined]  # a second close counts nothing twice
    assert acks.in_hand == 0


def test_the_dispatcher_does_not_take_a_delivery_while_an_ack_is_in_hand(
        world: GitHubWorld) -> None:
    dispatcher = world.dispatcher
    dispatcher.acks.pause_s = 30.0
    dispatcher.start()
    ref = world.issue()
    dispatcher.acks.enter()
    future = dispatcher.submit(comment_delivery(ref, world.comment(ref, "one")))
    wait_until(lambda: dispatcher.acks.waiting == 1, "the dispatcher to step aside")
    assert not future.done() and dispatcher.handled == 0
    dispatcher.acks.leave()
    assert future.result(10).reason == "not-started"
    assert (dispatcher.handled, dispatcher.acks.pauses, dispatcher.acks.overruns) == (1, 1, 0)


def test_the_dispatcher_is_not_starved_by_acks_that_never_end(world: GitHubWorld) -> None:
    dispatcher = world.dispatcher
    dispatcher.acks.pause_s = 0.05
    dispatcher.start()
    ref = world.issue()
    with dispatcher.acks.receiving():
        futures = [dispatcher.submit(comment_delivery(ref, world.comment(ref, text)))
                   for text in ("one", "two")]
        assert [f.result(10).reason for f in futures] == ["not-started", "not-started"]
    assert dispatcher.acks.overruns == 2


def test_a_served_webhook_is_kept_and_answered_while_the_dispatcher_waits(
        world: GitHubWorld) -> None:
    world.serve()
    dispatcher = world.dispatcher
    dispatcher.acks.pause_s = 30.0
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    headers, body = world.fake.webhook("issues", "labeled", repo=REPO, number=ref.number,
                                       label="loop:start", sender="alice", secret=SECRET)
    dispatcher.acks.enter()  # another ack in hand: the dispatcher must wait for it
    try:
        assert world.post(headers, body).status_code == 202
        # the served request is counted out once waitress closed its body
        wait_until(lambda: dispatcher.acks.in_hand == 1, "the served ack to be counted out")
        wait_until(lambda: dispatcher.acks.waiting == 1, "the dispatcher to step aside")
        # durable before the 2xx, and not decided while the ack was in hand
        assert [e.delivery_id for e in dispatcher.inbox.owed()] == [
            headers["X-GitHub-Delivery"]]
        assert world.services.store.load(ref) is None
    finally:
        dispatcher.acks.leave()
    assert dispatcher.wait_idle(10)
    assert world.state(ref).current_node == "phase-selection"
    assert dispatcher.inbox.owed() == []
    assert dispatcher.acks.pauses == 1


def test_the_effects_worker_steps_aside_before_each_row(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db")
    refs = [WorkItemRef("acme", "widgets", n) for n in (1, 2)]
    with store.transaction(refs[0]) as tx:
        tx.create("mini")
        for n, ref in enumerate(refs):
            tx.enqueue(f"label-{n}", AddLabel(ref, "loop:x"))
    tracker = MemoryTracker()
    worker = EffectWorker(store, Ports(tracker, MemoryArtifactStore(), RecordingNotifier()),
                          EngineSettings())
    seen: list[int] = []
    worker.before_row = lambda: seen.append(sum(bool(tracker.labels(r)) for r in refs))
    assert worker.drain() == 2
    assert seen == [0, 1]  # called before each row was carried out
    store.close()


def test_serve_shortens_the_switch_interval_and_gives_it_back() -> None:
    previous = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        restore = shorter_switch_interval()
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        restore()
        assert sys.getswitchinterval() == pytest.approx(0.005)
        sys.setswitchinterval(0.0005)  # a shorter one already set is kept
        shorter_switch_interval()()
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(previous)


# -- the pause budget: a sustained stream slows the background, never starves it ----------
#
# Simulated on a fake clock: signed requests arrive every STREAM_GAP_S and are in hand for
# IN_HAND_S each (so none is in hand for 8 ms at a time, less than QUIET_S: every pause
# runs to its bound, as in a real burst); the background thread takes ITEM_S per item and
# calls pause() before each. The fake wait moves the clock on and counts the requests in
# and out that fall within it, as the waitress threads would meanwhile.

STREAM_GAP_S = 0.01
IN_HAND_S = 0.002
ITEM_S = 0.01


class _Sim:
    """A fake clock, the requests of a stream on it, and one background thread's log."""

    def __init__(self, **budget: float) -> None:
        self.now = 0.0
        self.events: list[tuple[float, bool]] = []  # (time, True: counted in / False: out)
        self._next = 0  # the first event not yet happened
        self.acks = AckFirst(clock=lambda: self.now, wait=self._advance, **budget)
        self.pauses: list[tuple[float, float]] = []  # (started, seconds waited)
        self.items: list[float] = []  # when each item started

    def stream(self, start: float, end: float) -> None:
        """Signed requests every STREAM_GAP_S from ``start`` until ``end`` (seconds)."""
        n = round((end - start) / STREAM_GAP_S)
        ahead = self.events[self._next:]
        for k in range(n):
            at = start + k * STREAM_GAP_S
            ahead += [(at, True), (at + IN_HAND_S, False)]
        self.events, self._next = sorted(ahead, key=lambda e: e[0]), 0
        self._advance(0.0)  # a request arriving now is in hand now

    def _advance(self, seconds: float) -> None:
        target = self.now + seconds
        while self._next < len(self.events) and self.events[self._next][0] <= target:
            self.now, entering = self.events[self._next]
            self._next += 1
            if entering:
                self.acks.enter()
            else:
                self.acks.leave()
        self.now = target

    def background(self, until: float) -> None:
        """The dispatcher's loop, one item after each pause, until ``until``."""
        while self.now < until:
            started = self.now
            self.pauses.append((started, self.acks.pause()))
            self.items.append(self.now)
            self._advance(ITEM_S)

    def idle(self, until: float) -> None:
        """No work for the background until ``until`` (it waits on its queue)."""
        self._advance(until - self.now)

    def paused_in(self, start: float, end: float) -> float:
        """Seconds paused within [start, end)."""
        return sum(max(0.0, min(s + w, end) - max(s, start)) for s, w in self.pauses)


def _burst(seconds: float, **budget: float) -> _Sim:
    sim = _Sim(**budget)
    sim.stream(0.0, seconds)
    sim.background(seconds + 1.0)
    return sim


@pytest.mark.parametrize("seconds", [5.0, 10.0])
def test_a_burst_of_seconds_keeps_every_pause_the_budget_did_not_exist(seconds: float) -> None:
    with_budget, without = _burst(seconds), _burst(seconds, share=1.0)
    assert with_budget.pauses == without.pauses  # the same pauses, to the same lengths
    assert with_budget.acks.budget_refusals == 0
    during = [w for s, w in with_budget.pauses if s < seconds - PAUSE_S]
    assert during and all(w == pytest.approx(PAUSE_S) for w in during)  # to the bound
    # the background did an item after each 0.25 s pause during the burst, as before
    assert len([t for t in with_budget.items if t < seconds]) == 1 + math.floor(
        (seconds - PAUSE_S) / (PAUSE_S + ITEM_S))


def test_an_endless_stream_holds_the_background_to_its_share() -> None:
    sim = _Sim()
    sim.stream(0.0, 121.0)
    sim.background(120.0)
    run = sim.now
    # the full effect until the reserve is spent: each 0.26 s (a pause and an item) drains
    # it by 0.25 - 0.5 * 0.26 = 0.12 s, so 5 s of it last 10.83 s
    first_short = next(s for s, w in sim.pauses if w < PAUSE_S - 1e-9)
    assert first_short == pytest.approx(
        PAUSE_RESERVE_S / (PAUSE_S - PAUSE_SHARE * (PAUSE_S + ITEM_S)) * (PAUSE_S + ITEM_S),
        abs=PAUSE_S + ITEM_S)
    assert first_short == pytest.approx(10.83, abs=0.26)
    # after that the reserve is spent: paused half the time, an item each 20 ms
    steady = sim.paused_in(20.0, 120.0) / 100.0
    assert steady == pytest.approx(0.5, abs=1e-6)
    assert len([t for t in sim.items if 20.0 <= t < 120.0]) == pytest.approx(100.0 / 0.02, abs=1)
    # over the whole run: the reserve's 5 s above the share, never more
    share = sim.paused_in(0.0, run) / run
    assert share == pytest.approx(PAUSE_SHARE + PAUSE_RESERVE_S / run, abs=1e-3)
    assert share == pytest.approx(0.5417, abs=1e-3)
    # and over every span, whole seconds apart: paused at most share * span + reserve
    for span in (1.0, 10.0, 30.0, 60.0):
        for start in range(0, int(run - span) + 1):
            assert sim.paused_in(start, start + span) <= (
                PAUSE_SHARE * span + PAUSE_RESERVE_S + 1e-9)
    # without the budget: four items a second for the whole stream
    without = _Sim(share=1.0)
    without.stream(0.0, 121.0)
    without.background(120.0)
    assert len([t for t in without.items if 20.0 <= t < 120.0]) == pytest.approx(
        100.0 / (PAUSE_S + ITEM_S), abs=1)  # 385
    assert (sim.acks.budget_refusals, without.acks.budget_refusals) == (0, 0)


def test_once_a_stream_has_stopped_the_reserve_refills_and_pauses_are_fresh() -> None:
    sim = _Sim()
    sim.stream(0.0, 120.0)
    sim.background(120.0)
    refill = PAUSE_RESERVE_S / PAUSE_SHARE  # 10 s from spent to full
    sim.idle(120.0 + refill)
    sim.pauses.clear()
    sim.stream(sim.now, sim.now + 5.0)  # a 5 s burst after the stream and its refill
    start = sim.now
    sim.background(start + 6.0)
    fresh = _burst(5.0)
    assert [w for _, w in sim.pauses] == pytest.approx([w for _, w in fresh.pauses])
    # 2 s into the refill (1 s of reserve), the same burst keeps the full effect for
    # about 2.2 s, then pauses half the time: the 1 s of reserve and half the burst
    early = _Sim()
    early.stream(0.0, 120.0)
    early.background(120.0)
    early.idle(122.0)
    early.pauses.clear()
    early.stream(early.now, early.now + 5.0)
    early.background(early.now + 6.0)
    paused, fresh_paused = (sum(w for _, w in x.pauses) for x in (early, fresh))
    assert fresh_paused == pytest.approx(4.822, abs=1e-3)  # 19 to the bound, then quiet
    assert paused == pytest.approx(1.0 + PAUSE_SHARE * 5.0, abs=0.01)  # 3.5 s


def test_a_pause_with_the_reserve_spent_is_refused_at_once() -> None:
    now = [0.0]
    waits: list[float] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    acks = AckFirst(pause_s=30.0, share=0.5, reserve_s=0.1, clock=lambda: now[0], wait=wait)
    acks.enter()  # in hand for good
    assert acks.pause() == pytest.approx(0.2)  # 0.1 s of reserve, refilling at half the rate
    assert (acks.pauses, acks.overruns, acks.budget_refusals) == (1, 1, 0)
    calls = len(waits)
    assert acks.pause() == 0.0  # spent: refused without waiting
    assert len(waits) == calls and acks.budget_refusals == 1
    now[0] += 0.1  # the thread works 0.1 s: 0.05 s refilled, a 0.1 s pause
    assert acks.pause() == pytest.approx(0.1)
    # each thread has its own reserve: another one still pauses from a full one
    other: list[float] = []
    thread = threading.Thread(target=lambda: other.append(acks.pause()))
    thread.start()
    thread.join(10)
    assert other == [pytest.approx(0.2)]
    assert (acks.pauses, acks.budget_refusals) == (3, 1)


def test_the_budget_is_checked_when_made() -> None:
    with pytest.raises(ValueError, match="share must be within"):
        AckFirst(share=1.5)
    with pytest.raises(ValueError, match="reserve_s >= 0"):
        AckFirst(reserve_s=-1.0)
    with pytest.raises(ValueError, match="reserve_s >= 0"):
        AckFirst(reserve_s=float("nan"))


def test_a_share_of_one_is_no_budget_even_with_no_reserve() -> None:
    now = [0.0]

    def wait(seconds: float) -> None:
        now[0] += seconds

    acks = AckFirst(pause_s=0.25, share=1.0, reserve_s=0.0, clock=lambda: now[0], wait=wait)
    acks.enter()  # in hand for good
    assert [acks.pause() for _ in range(3)] == [pytest.approx(0.25)] * 3
    assert acks.budget_refusals == 0


def test_a_stalled_wait_leaves_at_most_one_reserve_of_debt() -> None:
    # A wake-up an hour late (a suspended VM) would have left 1,800 s of debt: acks first
    # off for an hour. The debt is one reserve deep at most: 1 s paid back at 0.5 s a
    # second, so pauses are refused for 2 s after it, not 3,600 s.
    now = [0.0]
    stall = [3600.0]

    def wait(seconds: float) -> None:
        now[0] += seconds + stall.pop() if stall else seconds

    acks = AckFirst(pause_s=0.25, share=0.5, reserve_s=1.0, clock=lambda: now[0], wait=wait)
    acks.enter()
    assert acks.pause() == pytest.approx(3600.02)  # its first wait (QUIET_S) stalled
    now[0] += 1.9
    assert acks.pause() == 0.0 and acks.budget_refusals == 1
    now[0] += 0.2  # 2.1 s after the stall: 0.05 s of reserve again
    assert acks.pause() == pytest.approx(0.1)

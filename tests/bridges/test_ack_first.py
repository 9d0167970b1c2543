"""Acks first (issue 21 §1): while an acking request is in hand the dispatcher (and the
effects worker) step aside before their next piece of work, for a bounded time, so the
ack is answered first; a 2xx still means the delivery is in the inbox."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from bridges.github.effects_worker import EffectWorker
from bridges.ingress.ack_first import SWITCH_INTERVAL_S, AckFirst, shorter_switch_interval
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

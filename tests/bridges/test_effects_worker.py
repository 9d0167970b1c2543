"""The GitHub effects worker: GitHub's content-creation budget (platform-facts B4: about 80
writes a minute, 500 an hour) holds a backlog back instead of running into secondary limits;
notices (Slack outbox rows) are not GitHub writes."""

from __future__ import annotations

from pathlib import Path

from bridges.github.effects_worker import EffectWorker, WriteBudget
from engine.effects import AddLabel, Notify, RequestReviews
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.store.sqlite import SqliteStore
from tests.engine.test_hooks_support import RecordingNotifier


def test_the_budget_counts_a_minute_and_an_hour() -> None:
    budget = WriteBudget(per_minute=2, per_hour=3)
    assert budget.wait(0.0) == 0
    budget.spend(0.0)
    budget.spend(1.0)
    assert budget.wait(2.0) == 58.0  # the minute is full until the first write is 60 s old
    budget.spend(60.0)
    assert budget.wait(61.0) == 3539.0  # three in the hour: the oldest frees its slot at 3600
    assert budget.wait(3600.0) == 0


class _Monotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_spent_budget_holds_writes_but_not_notices(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "loopgate.db")
    refs = [WorkItemRef("acme", "widgets", n) for n in (1, 2, 3)]
    with store.transaction(refs[0]) as tx:
        tx.create("mini")
        for n, ref in enumerate(refs):
            tx.enqueue(f"label-{n}", AddLabel(ref, "loop:x"))
        tx.enqueue("notice", Notify(refs[0], "work-item-complete", {"node": "done"}))
    tracker, notifier, clock = MemoryTracker(), RecordingNotifier(), _Monotonic()
    worker = EffectWorker(store, Ports(tracker, MemoryArtifactStore(), notifier),
                          EngineSettings(), budget=WriteBudget(per_minute=2, per_hour=100),
                          monotonic=clock)
    worker.drain()
    assert [ref for ref in refs if tracker.labels(ref)] == refs[:2]
    assert notifier.events() == []  # behind the item's own label, which went out
    clock.now += 60
    worker.drain()
    assert all(tracker.labels(ref) for ref in refs)
    assert notifier.events() == ["work-item-complete"]
    store.close()


def test_a_worker_waiting_out_a_spent_budget_stops_at_once(tmp_path: Path) -> None:
    import threading

    store = SqliteStore(tmp_path / "loopgate.db")
    budget = WriteBudget(per_minute=1, per_hour=1)
    budget.spend(0.0)  # the hour is spent: the worker would rest for most of an hour
    worker = EffectWorker(store, Ports(MemoryTracker(), MemoryArtifactStore(),
                                       RecordingNotifier()), EngineSettings(),
                          poll=0.05, budget=budget, monotonic=lambda: 1.0)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    store.close()


def test_a_review_request_spends_one_write_per_request_it_made(tmp_path: Path) -> None:
    # Issue 24 §3: a refused request (GitHub's 422) asks each name alone: each is a write.
    store = SqliteStore(tmp_path / "loopgate.db")
    ref = WorkItemRef("acme", "widgets", 1)
    with store.transaction(ref) as tx:
        tx.create("mini")
        tx.enqueue("reviews", RequestReviews(ref, "human-approval", 1, (12,),
                                             ("carol", "mallory"), ("web",)))
    tracker = MemoryTracker()
    tracker.refuse_reviewers = {"mallory"}
    budget, clock = WriteBudget(per_minute=10, per_hour=100), _Monotonic()
    worker = EffectWorker(store, Ports(tracker, MemoryArtifactStore(), RecordingNotifier()),
                          EngineSettings(), budget=budget, monotonic=clock)
    assert worker.drain() == 1
    assert len(budget._sent) == 4  # the refused request, then carol, mallory and the team
    assert tracker.review_requests[WorkItemRef("acme", "widgets", 12)] == [
        (("carol",), ()), ((), ("web",))]
    store.close()

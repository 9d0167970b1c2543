"""The supervisor (issue 10 §4): members start in order and stop in reverse, every loop
is told to stop at once, and what the threads use is closed only after every one of them
was joined, even when they are busy in a SQLite transaction when the stop comes. A stuck
thread leaves the resources open; a dead loop stops the process; a failed start leaves
nothing running."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.ops.supervisor import Supervisor, ThreadPool
from engine.store.sqlite import SqliteStore


class Recorder:
    """A :class:`~bot.ops.supervisor.Service` that records its calls in a shared journal."""

    def __init__(self, name: str, journal: list[str],
                 stopping: threading.Event | None = None) -> None:
        self.name = name
        self.journal = journal
        self.stopping = stopping
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        self.journal.append(f"start {self.name}")
        self._thread = threading.Thread(target=self._stop.wait, name=f"test-{self.name}")
        self._thread.start()

    def stop(self, timeout: float) -> None:
        told = " (all told)" if self.stopping is not None and self.stopping.is_set() else ""
        self.journal.append(f"stop {self.name}{told}")
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def test_members_start_in_order_stop_in_reverse_and_closers_run_last() -> None:
    journal: list[str] = []
    supervisor = Supervisor(stop_timeout=5)
    supervisor.on_close("store", lambda: journal.append("close store"))
    supervisor.on_close("inbox", lambda: journal.append("close inbox"))
    supervisor.add("dispatcher", Recorder("dispatcher", journal, supervisor.stopping))
    loop_ended = threading.Event()

    def loop(stop: threading.Event) -> None:
        stop.wait()
        loop_ended.set()

    supervisor.add_loop("replay", loop)
    supervisor.add("http", Recorder("http", journal, supervisor.stopping))
    assert supervisor.names == ("dispatcher", "replay", "http")
    supervisor.start()
    report = supervisor.stop()
    assert report.clean and report.closed == ("inbox", "store")
    assert journal == ["start dispatcher", "start http",
                       "stop http (all told)", "stop dispatcher (all told)",
                       "close inbox", "close store"]
    assert loop_ended.is_set()
    assert supervisor.stop() is report  # idempotent


def test_stopping_while_threads_are_busy_joins_every_one_before_the_store_closes(
        tmp_path: Path) -> None:
    """Two loops use the store's connections (as the inbox replay and the poller do); one
    is inside a write transaction, the other waits for the lock, when the stop comes. The
    store's close runs only once both finished, and sees none of their threads alive."""
    store = SqliteStore(tmp_path / "loopgate.db")
    with store.writing() as db:
        db.execute("CREATE TABLE work (loop TEXT, n INTEGER)")
    first_in_hand: list[str] = []
    in_hand, release = threading.Event(), threading.Event()
    earlier = set(threading.enumerate())
    alive_at_close: list[str] = []
    supervisor = Supervisor(stop_timeout=30)

    def close_store() -> None:
        alive_at_close.extend(t.name for t in threading.enumerate()
                              if t not in earlier and t.name.startswith("loopgate-"))
        store.close()

    def busy_loop(name: str) -> Callable[[threading.Event], None]:
        def body(stop: threading.Event) -> None:
            n = 0
            while not stop.is_set():
                with store.writing() as db:
                    n += 1
                    if not in_hand.is_set():
                        first_in_hand.append(name)
                        in_hand.set()
                        release.wait(10)  # in hand when the stop comes
                    db.execute("INSERT INTO work VALUES (?, ?)", (name, n))
        return body

    supervisor.on_close("store", close_store)
    supervisor.add_loop("replay", busy_loop("replay"))
    supervisor.add_loop("poller", busy_loop("poller"))
    supervisor.start()
    assert in_hand.wait(10)
    stopper = threading.Thread(target=supervisor.stop)
    stopper.start()
    assert supervisor.stopping.wait(10)  # the stop has begun; a transaction is in hand
    assert alive_at_close == [] and stopper.is_alive()
    release.set()
    stopper.join(30)
    report = supervisor.stop()
    assert report.clean and report.closed == ("store",)
    assert alive_at_close == []  # both loop threads had ended before the close
    again = SqliteStore(tmp_path / "loopgate.db")
    rows = again.db().execute("SELECT loop, n FROM work").fetchall()
    again.close()
    assert (first_in_hand[0], 1) in rows  # the transaction in hand finished and committed


def test_a_thread_that_will_not_stop_leaves_the_resources_open() -> None:
    closed: list[str] = []
    release = threading.Event()
    supervisor = Supervisor()
    supervisor.on_close("store", lambda: closed.append("store"))
    supervisor.add_loop("stubborn", lambda stop: release.wait(10), timeout=0.05)
    supervisor.start()
    report = supervisor.stop()
    assert report.stuck == ("stubborn",) and report.closed == () and closed == []
    assert not report.clean
    release.set()


def test_a_loop_that_dies_stops_the_process_and_is_reported() -> None:
    supervisor = Supervisor()
    supervisor.add_loop("steady", lambda stop: stop.wait())

    def broken(stop: threading.Event) -> None:
        raise RuntimeError("a bug")

    supervisor.add_loop("poller", broken)
    supervisor.start()
    supervisor.wait(poll=0.01)  # returns because the poller died
    report = supervisor.stop()
    assert report.failed == ("poller",) and report.stuck == ()


def test_a_member_that_fails_to_start_leaves_nothing_running() -> None:
    journal: list[str] = []

    class Broken(Recorder):
        def start(self) -> None:
            raise OSError("address already in use")

    supervisor = Supervisor()
    supervisor.on_close("store", lambda: journal.append("close store"))
    first = Recorder("dispatcher", journal)
    supervisor.add("dispatcher", first)
    supervisor.add("http", Broken("http", journal))
    with pytest.raises(OSError, match="address already in use"):
        supervisor.start()
    assert journal == ["start dispatcher", "stop dispatcher", "close store"]
    assert not first.running
    with pytest.raises(RuntimeError, match="has started"):
        supervisor.add_loop("late", lambda stop: None)


def test_a_thread_pool_is_up_before_any_work_and_joined_after_its_queued_work() -> None:
    pool = ThreadPool("listeners", workers=2)
    supervisor = Supervisor()
    supervisor.add("listeners", pool)
    supervisor.start()
    assert pool.running  # no thread yet (none is started before work comes), but up
    release = threading.Event()
    done: list[int] = []
    futures = [pool.executor.submit(lambda n=n: (release.wait(10), done.append(n)))
               for n in range(3)]
    stopper = threading.Thread(target=supervisor.stop)
    stopper.start()
    assert supervisor.stopping.wait(10)
    release.set()
    stopper.join(20)
    assert supervisor.stop().clean and not pool.running
    assert sorted(done) == [0, 1, 2] and all(f.done() for f in futures)  # acked work ran

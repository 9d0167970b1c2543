"""The effect outbox (issue 10 §1): one conformance suite over the memory, SQLite and
PostgreSQL stores, the performer's retry rules, and the runtime's decide-then-commit."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.effects import (
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    AddLabel,
    Notify,
    PostComment,
    RemoveLabel,
    effect_from_json,
    effect_to_json,
)
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.perform import MAX_ATTEMPTS, InlinePerformer, backoff, iso
from engine.ports import Ports, TrackerError
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore
from engine.store.sqlite import SqliteStore
from tests.engine.test_hooks_support import RecordingNotifier

REF = WorkItemRef("acme", "widgets", 7)
OTHER = WorkItemRef("acme", "widgets", 8)
T0 = "2026-03-01T12:00:00Z"
LATER = "2026-03-01T13:00:00Z"


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "postgresql":  # issue 15 §2: the same suite on a real server
        from bridges.postgres.store import PostgresStore

        pg = PostgresStore(request.getfixturevalue("pg_database"))
        yield pg
        pg.close()
        return
    sqlite = SqliteStore(tmp_path / "loopgate.db")
    yield sqlite
    sqlite.close()


def _enqueue(store: Any, ref: WorkItemRef, *effects: Any) -> None:
    with store.transaction(ref) as tx:
        if tx.state is None:
            tx.create("mini")
        for n, effect in enumerate(effects):
            tx.enqueue(f"{ref.number}-{n}-{len(store.effects.rows())}", effect)


# -- serialization -------------------------------------------------------------------------
@pytest.mark.parametrize("effect", [
    PostComment(REF, "body", record="quiz:spec-quiz"),
    AddLabel(REF, "loop:design"),
    RemoveLabel(REF, "loop:spec"),
    Notify(REF, "quiz-pending", {"node": "spec-quiz"}, links="quiz:spec-quiz"),
])
def test_effects_round_trip_through_json(effect: Any) -> None:
    assert effect_from_json(effect_to_json(effect)) == effect


def test_an_unknown_effect_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown effect kind 'launch-rocket'"):
        effect_from_json({"kind": "launch-rocket", "target": str(REF)})


# -- the conformance suite -----------------------------------------------------------------
def test_rows_are_stored_with_their_transaction_and_due_in_order(store: Any) -> None:
    _enqueue(store, REF, AddLabel(REF, "a"), PostComment(REF, "b"))
    _enqueue(store, OTHER, AddLabel(OTHER, "c"))
    rows = store.effects.rows()
    assert [(r.ref, r.effect.kind, r.status, r.attempts) for r in rows] == [
        (REF, "add-label", PENDING, 0), (REF, "post-comment", PENDING, 0),
        (OTHER, "add-label", PENDING, 0)]
    assert len({r.key for r in rows}) == 3
    # one row per item at a time: an item's later row waits for its first
    assert [r.id for r in store.effects.due(T0)] == [rows[0].id, rows[2].id]
    assert [r.id for r in store.effects.due(T0, ref=OTHER)] == [rows[2].id]


def test_a_failed_transaction_stores_no_row(store: Any) -> None:
    with pytest.raises(RuntimeError), store.transaction(REF) as tx:
        tx.create("mini")
        tx.enqueue("k", AddLabel(REF, "a"))
        raise RuntimeError("rolled back")
    assert store.effects.rows() == []


def test_a_claim_is_exclusive_until_it_expires(store: Any) -> None:
    _enqueue(store, REF, AddLabel(REF, "a"))
    [row] = store.effects.due(T0)
    assert store.effects.claim(row.id, "one", "2026-03-01T12:02:00Z", T0)
    assert not store.effects.claim(row.id, "two", "2026-03-01T12:02:00Z", T0)
    assert store.effects.due(T0) == []  # held: neither it nor the item's later rows
    assert store.effects.claims() == [(row.id, "one")]
    # the holder died: after the claim runs out the row is due again, still "running"
    [again] = store.effects.due(LATER)
    assert (again.id, again.status) == (row.id, RUNNING)
    assert store.effects.claim(row.id, "two", "2026-03-01T14:00:00Z", LATER)


def test_defer_counts_a_try_and_waits(store: Any) -> None:
    _enqueue(store, REF, AddLabel(REF, "a"), AddLabel(REF, "b"))
    first = store.effects.due(T0)[0]
    store.effects.claim(first.id, "me", LATER, T0)
    store.effects.defer(first.id, "2026-03-01T12:00:30Z", "GitHub answered 502")
    assert store.effects.due(T0) == []  # the item's order holds while it waits
    [due] = store.effects.due("2026-03-01T12:00:30Z")
    assert (due.id, due.attempts, due.last_error) == (first.id, 1, "GitHub answered 502")


def test_finish_and_fail_and_retry(store: Any) -> None:
    _enqueue(store, REF, PostComment(REF, "a"), AddLabel(REF, "b"))
    first, second = store.effects.rows()
    with store.transaction(REF) as tx:
        tx.finish_effect(first.id, {"id": 5_186_334_064, "url": "u"})
    store.effects.fail(second.id, "GitHub answered 422")
    done, failed = store.effects.rows()
    assert (done.status, done.result) == (DONE, {"id": 5_186_334_064, "url": "u"})
    assert (failed.status, failed.attempts, failed.last_error) == (FAILED, 1,
                                                                   "GitHub answered 422")
    assert store.effects.due(LATER) == []
    assert [r.id for r in store.effects.rows(REF, statuses=[FAILED])] == [second.id]
    assert store.effects.retry(OTHER) == 0
    assert store.effects.retry(REF) == 1
    [due] = store.effects.due(T0)
    assert (due.id, due.status, due.attempts) == (second.id, PENDING, 0)


# -- the performer -------------------------------------------------------------------------
class _Clock:
    def __init__(self) -> None:
        self.now_at = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.now_at


def _performer(store: Any, tracker: MemoryTracker, clock: _Clock) -> InlinePerformer:
    ports = Ports(tracker, MemoryArtifactStore(), RecordingNotifier(), clock)
    return InlinePerformer(store, ports, EngineSettings(bot_login="loopgate-bot"))


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff(n) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert backoff(30) == 300.0


def test_a_transient_failure_waits_its_back_off_then_succeeds(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, AddLabel(REF, "loop:design"))
    tracker.failing = {"add_label"}
    assert _performer(store, tracker, clock).drain(REF) == 0
    [row] = store.effects.rows()
    assert (row.status, row.attempts, row.not_before) == (PENDING, 1, "2026-03-01T12:00:02Z")
    tracker.failing = set()
    assert _performer(store, tracker, clock).drain(REF) == 0  # not yet
    clock.now_at += timedelta(seconds=2)
    assert _performer(store, tracker, clock).drain(REF) == 1
    assert tracker.labels(REF) == ["loop:design"]


def test_a_tracker_retry_at_is_honoured(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, AddLabel(REF, "x"))
    reset = clock.now_at + timedelta(minutes=7)

    def limited(*args: object) -> None:
        raise TrackerError("rate limited", retry_at=reset)

    tracker.add_label = limited  # type: ignore[method-assign]
    _performer(store, tracker, clock).drain(REF)
    [row] = store.effects.rows()
    assert row.not_before == iso(reset)


def test_a_permanent_failure_is_not_retried(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, AddLabel(REF, "x"), AddLabel(REF, "y"))
    calls: list[str] = []

    def refused(ref: WorkItemRef, label: str) -> None:
        calls.append(label)
        if label == "x":
            raise TrackerError("GitHub answered 422", permanent=True)

    tracker.add_label = refused  # type: ignore[method-assign]
    _performer(store, tracker, clock).drain(REF)
    clock.now_at += timedelta(hours=1)
    _performer(store, tracker, clock).drain(REF)
    assert calls == ["x", "y"]  # x once, then the item's next row goes on
    assert [r.status for r in store.effects.rows()] == [FAILED, DONE]
    [event] = [e for e in store.events(REF) if e["kind"] == "graph.effect_failed"]
    assert "422" in event["data"]["error"]


def test_a_row_failing_every_time_gives_up_after_max_attempts(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, AddLabel(REF, "x"))
    tracker.down = True
    for _ in range(MAX_ATTEMPTS + 2):
        _performer(store, tracker, clock).drain(REF)
        clock.now_at += timedelta(seconds=400)
    [row] = store.effects.rows()
    assert (row.status, row.attempts) == (FAILED, MAX_ATTEMPTS)
    assert row.last_error.startswith(f"gave up after {MAX_ATTEMPTS} tries")


def test_a_body_over_githubs_limit_is_never_sent(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, PostComment(REF, "x" * 70_000))
    _performer(store, tracker, clock).drain(REF)
    [row] = store.effects.rows()
    assert row.status == FAILED and "GitHub's limit is 65536" in row.last_error
    assert tracker.comments_on(REF) == []


def test_two_performers_never_carry_out_one_row_twice(store: Any) -> None:
    tracker, clock = MemoryTracker(), _Clock()
    for n in range(20):
        _enqueue(store, WorkItemRef("acme", "widgets", 100 + n), PostComment(
            WorkItemRef("acme", "widgets", 100 + n), f"comment {n}"))
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        _performer(store, tracker, clock).drain()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    posted = [c.body.splitlines()[0] for n in range(20)
              for c in tracker.comments_on(WorkItemRef("acme", "widgets", 100 + n))]
    assert sorted(posted) == sorted(f"comment {n}" for n in range(20))
    assert {r.status for r in store.effects.rows()} == {DONE}


def test_rate_limits_never_use_up_a_rows_tries(store: Any) -> None:
    # A secondary limit names its reset: waiting it out is not a failed try (review F3).
    tracker, clock = MemoryTracker(), _Clock()
    _enqueue(store, REF, AddLabel(REF, "x"))
    calls = []

    def limited(ref: WorkItemRef, label: str) -> None:
        calls.append(label)
        if len(calls) <= MAX_ATTEMPTS + 5:
            raise TrackerError("secondary rate limit", retry_at=clock.now_at
                               + timedelta(seconds=60))

    tracker.add_label = limited  # type: ignore[method-assign]
    for _ in range(MAX_ATTEMPTS + 6):
        _performer(store, tracker, clock).drain(REF)
        clock.now_at += timedelta(seconds=61)
    [row] = store.effects.rows()
    assert (row.status, row.attempts) == (DONE, 0)
    assert len(calls) == MAX_ATTEMPTS + 6


@pytest.mark.parametrize("body, kind", [
    ("x\n<!-- the-loop:quiz spec-quiz digest=abc -->\n<!-- the-loop:agent-comment -->",
     "quiz spec-quiz"),
    ("x\n<!-- the-loop:phase-selection -->\n<!-- the-loop:agent-comment -->", "phase-selection"),
    ("x\n<!-- the-loop:entry design rev=3 -->\n<!-- the-loop:assignment design entered=t -->",
     "assignment design"),
    ("plain", "comment"),
])
def test_a_row_says_which_comment_it_posts(body: str, kind: str) -> None:
    from engine.effects import EffectRow

    row = EffectRow(1, "k", REF, PostComment(REF, body))
    assert row.describe() == f"post-comment ({kind}) on {REF}"

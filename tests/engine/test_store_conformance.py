"""One conformance suite for every store (MemoryStore, SqliteStore, PostgresStore on a real
server started by the tests), plus what only the
SQLite store promises (WAL, migrations, the shared connection, the lock bound)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from engine.errors import StoreError
from engine.records import Completion, ForcedMove, OptIn, Parked, Skip
from engine.refs import WorkItemRef
from engine.state import ItemState, NodeRecord
from engine.store.base import StoreCapabilities
from engine.store.memory import MemoryStore
from engine.store.migrations import MIGRATION_NAMES, MIGRATION_SET, MIGRATIONS
from engine.store.schema import up_to_date
from engine.store.sqlite import SqliteStore
from engine.visits import Visit, VisitDecision
from tests.engine.runtime_support import make_store

REF = WorkItemRef("acme", "widgets", 7)


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgresql":  # issue 15 §2: the same suite on a real server
        from bridges.postgres.store import PostgresStore

        store = PostgresStore(request.getfixturevalue("pg_database"))
    else:
        store = make_store(request.param, tmp_path)
    yield store
    store.close()


def _full_state(state: ItemState) -> None:
    state.current_node = "design"
    state.status = "parked"
    state.started_at = "2026-03-01T12:00:00Z"
    state.nodes["phase-selection"] = NodeRecord(1, "selected", "t1", "t2", "", False)
    state.nodes["brainstorming"] = NodeRecord(0, "skipped", "t2", "t2", "", False)
    state.nodes["design"] = NodeRecord(2, "", "t3", "", "design.md is missing", True)
    state.visits["phase-selection"] = (
        Visit(1, "t1", "t2", "selected", VisitDecision.from_json(
            {"by": "@alice", "via": "reply",
             "frozen": {"nodes": [{"id": "a", "optIn": True}]}})),)
    # A gate answered twice: changes requested on visit 1, approved on visit 2 (open: 3).
    state.visits["design"] = (
        Visit(1, "t0", "t1", "changes-requested", VisitDecision.from_json(
            {"by": "@bob", "at": "t1", "outcome": "changes-requested", "comment": "u1",
             "commentId": 11})),
        Visit(2, "t2", "t3", "approved", VisitDecision.from_json(
            {"by": "@carol", "at": "t3", "outcome": "approved", "comment": "",
             "commentId": 0, "via": "slack", "text": "ok ✓"}), forced=True),
        Visit(3, "t3"),
    )
    state.forced = [ForcedMove("a", "b", "r1", "@ops", "t"),
                    ForcedMove("b", "design", "r2 — ünïcode", "@ops", "t")]
    state.parked = Parked("design", "waiting", "t4")
    state.completions["a"] = Completion("agent", "t")
    state.skips = {"brainstorming": Skip("selection", "brainstorming", "@alice", "", "t"),
                   "forged": Skip.from_json({})}
    state.opt_ins = {"design-critic-review": OptIn("selection", "@alice", "t")}
    state.surface = {"pullRequests": [12, 13], "branch": "issue-7", "nested": {"x": None}}


def test_a_new_item_has_no_state_until_created(store: Any) -> None:
    assert store.load(REF) is None
    with store.transaction(REF) as tx:
        assert tx.state is None
        state = tx.create("pdlc-work-item-loop")
        assert tx.state is state and state.ref == REF and state.current_node == ""
    loaded = store.load(REF)
    assert loaded.loop == "pdlc-work-item-loop" and loaded.revision == 1


def test_create_twice_is_refused(store: Any) -> None:
    with store.transaction(REF) as tx:
        tx.create("x")
        with pytest.raises(StoreError, match="already has state"):
            tx.create("x")


def test_every_key_round_trips_exactly(store: Any) -> None:
    with store.transaction(REF) as tx:
        _full_state(tx.create("loop"))
        expected = tx.state.to_document()
    loaded = store.load(REF)
    assert loaded.to_document() == expected
    assert list(loaded.nodes) == ["phase-selection", "brainstorming", "design"]
    assert [m.reason for m in loaded.forced] == ["r1", "r2 — ünïcode"]


def test_visits_round_trip_with_their_decisions(store: Any) -> None:
    with store.transaction(REF) as tx:
        _full_state(tx.create("loop"))
    loaded = store.load(REF)
    assert [(v.number, v.outcome, v.decision.by if v.decision else None, v.forced)
            for v in loaded.history("design")] == [
        (1, "changes-requested", "@bob", False), (2, "approved", "@carol", True),
        (3, "", None, False)]
    assert loaded.history("design")[1].decision.text == "ok ✓"
    # decisions: the current visit's; design's visit 3 is open and undecided.
    assert set(loaded.decisions) == {"phase-selection"}
    assert [s.number for s in next(iter(store.load_all())).history("design")] == [1, 2, 3]


def _old_document() -> dict[str, Any]:
    # Written by loopgate before visits were kept (9b43445): requirements-approval got
    # changes requested by @alice on its first visit and was approved by @bob on its second.
    return json.loads((Path(__file__).parent / "data" / "state_before_visits.json")
                      .read_text("utf-8"))


def _write_old_rows(store: Any, doc: dict[str, Any]) -> None:
    # The rows the old SQL stores wrote for ``doc``: no visits table rows.
    state = ItemState.from_document(doc)
    with store.transaction(REF) as tx:
        tx.create("x")
        tx.state.__dict__.update(state.__dict__)
    old = doc["decisions"]
    with store.writing() as db:
        db.execute("DELETE FROM visits WHERE item = ?", (str(REF),))
        db.execute("DELETE FROM decisions WHERE item = ?", (str(REF),))
        for i, (node, data) in enumerate(old.items()):
            db.execute("INSERT INTO decisions (item, node, ord, data) VALUES (?,?,?,?)",
                       (str(REF), node, i, json.dumps(data)))


def _assert_old_item_read(state: ItemState) -> None:
    gate = state.history("requirements-approval")
    assert [(v.number, v.outcome, v.decision.by, v.decision.outcome, v.decision.comment_id,
             v.inferred) for v in gate] == [
        (1, "changes-requested", "@alice", "changes-requested", 1005, True),
        (2, "approved", "@bob", "approved", 1009, True)]
    assert (gate[0].entered_at, gate[0].exited_at) == ("", "2026-03-01T12:00:30Z")
    assert (gate[1].entered_at, gate[1].exited_at) == ("2026-03-01T12:00:44Z",
                                                       "2026-03-01T12:00:54Z")
    assert state.decisions["requirements-approval"] == {
        "by": "@bob", "at": "2026-03-01T12:00:54Z", "outcome": "approved",
        "comment": "https://github.com/acme/widgets/issues/7#issuecomment-1009",
        "commentId": 1009}
    assert [v.number for v in state.history("design")] == [1]
    assert state.visit("design").open


def test_a_document_written_before_visits_were_kept_loads_with_its_visits() -> None:
    doc = _old_document()
    assert "visits" not in doc and doc["decisions"]["requirements-approval"]["by"] == "@alice"
    state = ItemState.from_document(doc)
    _assert_old_item_read(state)
    again = ItemState.from_document(state.to_document())  # written back: the new shape
    assert again.to_document() == state.to_document()
    _assert_old_item_read(again)


def test_sql_rows_written_before_visits_were_kept_load_with_their_visits(store: Any) -> None:
    if not hasattr(store, "writing"):
        pytest.skip("the memory store keeps documents (the test above)")
    _write_old_rows(store, _old_document())
    _assert_old_item_read(store.load(REF))
    _assert_old_item_read(next(iter(store.load_all())))
    with store.transaction(REF) as tx:  # written back by this loopgate: the new rows
        tx.state.surface["touched"] = True
    with store.writing() as db:
        rows = db.execute("SELECT node FROM visits WHERE item = ? ORDER BY ord",
                          (str(REF),)).fetchall()
    assert [r[0] for r in rows] == ["phase-selection", "requirements-definition",
                                    "requirements-approval", "design"]
    with store.writing() as db:
        assert db.execute("SELECT COUNT(*) FROM decisions WHERE item = ?",
                          (str(REF),)).fetchone()[0] == 0
    _assert_old_item_read(store.load(REF))


def test_load_returns_a_copy(store: Any) -> None:
    with store.transaction(REF) as tx:
        tx.create("loop")
    store.load(REF).skips["x"] = Skip("sneaky")
    assert store.load(REF).skips == {}


def test_revision_counts_commits(store: Any) -> None:
    for _ in range(3):
        with store.transaction(REF) as tx:
            (tx.state or tx.create("loop")).surface["n"] = 1
    assert store.load(REF).revision == 3
    with store.transaction(REF) as tx:
        assert tx.state.revision == 3
    assert tx.state.revision == 4


def test_a_failed_transaction_leaves_no_trace(store: Any) -> None:
    with store.transaction(REF) as tx:
        tx.create("loop").current_node = "a"
        tx.log("graph.started", {"node": "a"})
    with pytest.raises(RuntimeError), store.transaction(REF) as tx:
        tx.state.current_node = "b"
        tx.state.skips["x"] = Skip("declaration")
        tx.log("graph.advanced", {"to": "b"})
        raise RuntimeError("boom")
    state = store.load(REF)
    assert state.current_node == "a" and state.skips == {} and state.revision == 1
    assert [e["kind"] for e in store.events(REF)] == ["graph.started"]


def test_events_are_ordered_with_increasing_seq(store: Any) -> None:
    other = WorkItemRef("acme", "widgets", 8)
    with store.transaction(REF) as tx:
        tx.log("graph.started", {"node": "a"}, at="2026-03-01T12:00:00Z")
    with store.transaction(other) as tx:
        tx.log("graph.started", {"node": "z"})
    with store.transaction(REF) as tx:
        tx.log("graph.advanced", {"from": "a", "to": "b", "list": [1, "two", None]})
    events = store.events(REF)
    assert [e["kind"] for e in events] == ["graph.started", "graph.advanced"]
    assert events[0]["at"] == "2026-03-01T12:00:00Z"
    assert events[1]["data"] == {"from": "a", "to": "b", "list": [1, "two", None]}
    assert events[0]["seq"] < events[1]["seq"]
    assert [e["data"]["node"] for e in store.events(other)] == ["z"]
    assert store.load(REF) is None  # logging alone creates no state


def test_non_json_data_is_refused(store: Any) -> None:
    with pytest.raises(StoreError, match="JSON"), store.transaction(REF) as tx:
        tx.log("graph.started", {"obj": object()})


def test_refs_and_load_all_are_sorted_by_reference(store: Any) -> None:
    refs = [WorkItemRef("b", "r", 1), WorkItemRef("a", "r", 10), WorkItemRef("a", "r", 2),
            WorkItemRef("a", "q", 5)]
    for i, ref in enumerate(refs):
        with store.transaction(ref) as tx:
            state = tx.create("loop")
            state.current_node = f"n{i}"
            state.nodes[f"n{i}"] = NodeRecord(attempts=i)
            state.skips[f"s{i}"] = Skip.from_json({"via": "declaration", "i": i})
            state.forced.append(ForcedMove.from_json({"from": "x", "to": f"n{i}"}))
    expected = sorted(refs)
    assert store.refs() == expected
    states = list(store.load_all())
    assert [s.ref for s in states] == expected
    for state in states:
        assert state.to_document() == store.load(state.ref).to_document()
        assert state.revision == 1


def test_load_all_of_an_empty_store_is_empty(store: Any) -> None:
    assert list(store.load_all()) == [] and store.refs() == []


def test_nested_transactions_on_the_same_item_are_refused(store: Any) -> None:
    other = WorkItemRef("acme", "widgets", 8)
    with store.transaction(REF) as tx:
        tx.create("loop")
        with pytest.raises(StoreError, match="already open"), store.transaction(REF):
            pass
        with store.transaction(other) as inner:
            inner.create("loop")
    assert store.load(other) is not None and store.load(REF) is not None


def test_kv_values_round_trip_as_json(store: Any) -> None:
    assert store.kv_get("labels", "x", []) == []
    store.kv_set("labels", "x", ["loop:design"])
    store.kv_set("labels", "a", {"n": 1})
    store.kv_set("labels", "x", ["loop:tasks"])
    store.kv_set("other", "x", True)
    assert store.kv_get("labels", "x") == ["loop:tasks"]
    assert store.kv_items("labels") == {"a": {"n": 1}, "x": ["loop:tasks"]}
    store.kv_delete("labels", "x")
    store.kv_delete("labels", "never")
    assert store.kv_items("labels") == {"a": {"n": 1}}


def test_threads_never_lose_an_update(store: Any) -> None:
    with store.transaction(REF) as tx:
        tx.create("loop").surface["n"] = 0

    def bump() -> None:
        for _ in range(25):
            with store.transaction(REF) as tx:
                tx.state.surface["n"] += 1
                tx.log("test.bump", {})

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.load(REF).surface["n"] == 200
    assert len(store.events(REF)) == 200
    assert store.load(REF).revision == 201


# -- SQLite only -------------------------------------------------------------------------
def test_sqlite_creates_the_directory_uses_wal_and_records_migrations(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "loopgate.db"
    store = SqliteStore(path)
    db = store.db()
    assert path.is_file()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    applied = [m.name for m in MIGRATIONS.applied(db)]
    assert applied == [m.name for m in MIGRATIONS.pending(Database(memory=True))]
    assert applied[0] == "0001_item_state"
    assert {r[0] for r in db.execute(
        "SELECT DISTINCT migration_set FROM _sqlite_migrations")} == {MIGRATION_SET}
    store.close()
    again = SqliteStore(path)
    assert MIGRATIONS.pending(again.db()) == []
    assert len(MIGRATIONS.applied(again.db())) == len(applied)
    again.close()


def test_sqlite_schema_names_are_the_migrations_in_order(tmp_path: Path) -> None:
    # engine.store.schema lists the migrations without sqlite-utils (a reader's open checks
    # them with sqlite3 alone, issue 21 §3): the list is exactly what MIGRATIONS applies.
    assert MIGRATION_NAMES == tuple(m.name for m in MIGRATIONS.pending(Database(memory=True)))
    store = SqliteStore(tmp_path / "s.db")
    assert up_to_date(store.db().conn) is True
    store.db().conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?",
                            (MIGRATION_NAMES[-1],))
    assert up_to_date(store.db().conn) is False
    store.close()
    assert up_to_date(sqlite3.connect(":memory:")) is False  # no table at all


def test_sqlite_open_reapplies_a_missing_migration(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE visits")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0006_visits'")
    conn.commit()
    conn.close()
    store = SqliteStore(path)  # not up to date: migrated under the write lock as before
    assert "visits" in set(store.db().table_names())
    assert [m.name for m in MIGRATIONS.applied(store.db())] == list(MIGRATION_NAMES)
    store.close()


def test_sqlite_reader_never_imports_sqlite_utils(tmp_path: Path) -> None:
    # Opening a migrated database and reading every item uses sqlite3 alone (issue 21 §3:
    # the import cost check 0.06 s before its first item); a fresh interpreter tells.
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    with store.transaction(REF) as tx:
        tx.state = ItemState(ref=REF, loop="demo", current_node="a")
    store.close()
    code = ("import sys; from engine.store.sqlite import SqliteStore; "
            f"s = SqliteStore({str(path)!r}); n = len(list(s.load_all())); "
            "s.effects.rows(None); print(n, 'sqlite_utils' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60, cwd=str(Path(__file__).parents[2]))
    assert done.stdout.split() == ["1", "False"]


def test_sqlite_has_the_issue_tables(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    names = set(store.db().table_names())
    assert {"items", "node_records", "skips", "opt_ins", "decisions", "completions",
            "forced_moves", "events", "comments", "comment_edits", "kv"} <= names
    store.close()


def test_sqlite_stores_json_text_never_pickles(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    with store.transaction(REF) as tx:
        _full_state(tx.create("loop"))
    db = store.db()
    (parked, surface), = db.execute("SELECT parked, surface FROM items")
    assert json.loads(surface)["branch"] == "issue-7" and json.loads(parked)["node"] == "design"
    for table in ("skips", "opt_ins", "decisions", "visits"):
        for (data,) in db.execute(f"SELECT data FROM {table}"):
            assert isinstance(data, str)
            json.loads(data)
    # A decision lives in its visit only (issue 19 §2): not stored twice.
    assert [n for (n,) in db.execute("SELECT node FROM visits ORDER BY ord")] == [
        "phase-selection", "design"]
    assert list(db.execute("SELECT node FROM decisions")) == []
    assert dict(db.execute("SELECT node, via FROM skips")) == {"brainstorming": "selection",
                                                               "forged": ""}
    store.close()


def test_sqlite_db_inside_a_transaction_joins_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    with pytest.raises(RuntimeError), store.transaction(REF) as tx:
        tx.create("loop")
        store.db()["kv"].insert({"namespace": "n", "key": "k", "value": "1", "updated_at": ""})
        store.kv_set("n", "k2", 2)
        raise RuntimeError("roll back everything")
    assert store.kv_items("n") == {}
    with store.transaction(REF) as tx:
        tx.create("loop")
        store.kv_set("n", "k", 1)
    assert store.kv_items("n") == {"k": 1}
    store.close()


def test_sqlite_gives_up_with_store_error_after_the_lock_bound(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path, busy_timeout_ms=20, lock_retries=2, retry_pause=0.0)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked after 2 attempts"), \
                store.transaction(REF) as tx:
            tx.create("loop")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with store.transaction(REF) as tx:  # the lock is free again
        tx.create("loop")
    assert store.load(REF) is not None
    store.close()


def test_sqlite_readers_are_not_blocked_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    with store.transaction(REF) as tx:
        tx.create("loop").current_node = "a"
    reader = SqliteStore(path, busy_timeout_ms=20, lock_retries=1)
    with store.transaction(REF) as tx:
        tx.state.current_node = "b"
        assert reader.load(REF).current_node == "a"  # WAL: the committed snapshot
        assert [s.current_node for s in reader.load_all()] == ["a"]
    assert reader.load(REF).current_node == "b"
    reader.close()
    store.close()


def test_sqlite_load_all_leaves_the_thread_free_to_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    for n in (1, 2):
        with store.transaction(WorkItemRef("a", "r", n)) as tx:
            tx.create("loop")
    seen = []
    for state in store.load_all():
        with store.transaction(state.ref) as tx:
            tx.state.surface["seen"] = True
        seen.append(state.ref.number)
    assert seen == [1, 2]
    assert all(s.surface == {"seen": True} for s in store.load_all())
    store.close()


def test_each_backend_declares_its_capabilities(store: Any) -> None:
    """Issue 20 §2: a store says what it offers (a frozen record), so no caller probes it;
    ``exclusive`` is a no-op where nothing is shared and a real lock where replicas are."""
    caps = store.capabilities
    path = store.path if isinstance(store, SqliteStore) else None
    expected = {"memory": StoreCapabilities("memory"),
                "sqlite": StoreCapabilities("sqlite", path=path),
                "postgresql": StoreCapabilities("postgresql", shared=True)}
    assert caps == expected[caps.backend]
    assert type(store).__name__ == {"memory": "MemoryStore", "sqlite": "SqliteStore",
                                    "postgresql": "PostgresStore"}[caps.backend]
    with pytest.raises(FrozenInstanceError):
        caps.shared = True  # type: ignore[misc]
    if caps.backend != "memory":
        assert isinstance(caps.path, Path) == (caps.backend == "sqlite")
        with store.exclusive("conformance"):
            assert store.load(REF) is None


def test_what_metrics_reads_is_the_same_on_both_databases(store: Any) -> None:
    """Issue 20 §2: /metrics reads the item counts, the open waits and the event counts
    through the store (its SQL was in bot/ops/metrics.py, and read the events' node with
    SQLite's json_extract, which PostgreSQL lacks)."""
    if isinstance(store, MemoryStore):
        pytest.skip("the memory store is no database: /metrics runs over SQL stores")
    other = WorkItemRef("acme", "widgets", 8)
    with store.transaction(REF) as tx:
        state = tx.create("loop")
        state.current_node, state.status = "design", "parked"
        state.nodes["design"] = NodeRecord(1, "", "2026-03-01T12:00:00Z", "", "", False)
        tx.log("graph.quiz_attested", {"node": "spec-quiz"})
        tx.log("graph.quiz_attested", {"node": "spec-quiz"})
        tx.log("graph.effect_failed", {"effect": "post-comment"})
        tx.log("graph.advanced", {"node": "design"})
    with store.transaction(other) as tx:
        state = tx.create("loop")
        state.current_node, state.status = "done", "complete"
        state.nodes["done"] = NodeRecord(1, "pass", "t1", "t2", "", False)
    assert store.item_counts() == [("design", "parked", 1), ("done", "complete", 1)]
    assert store.open_waits() == [("design", "2026-03-01T12:00:00Z")]
    assert store.event_counts(["graph.quiz_attested", "graph.effect_failed"]) == {
        ("graph.quiz_attested", "spec-quiz"): 2, ("graph.effect_failed", ""): 1}
    assert store.event_counts([]) == {}


def test_the_active_items_are_the_same_on_both_databases(store: Any) -> None:
    """Issue 20 §2: serve's self-audit (issue 22 §3) reads the items still walking through
    the store (its SQL was in bot/ops/self_audit.py): running and parked only, sorted by owner,
    repository and number."""
    if isinstance(store, MemoryStore):
        pytest.skip("the memory store is no database: serve runs over SQL stores")
    statuses = {("acme", "widgets", 10): "parked", ("acme", "widgets", 2): "running",
                ("acme", "gadgets", 7): "parked", ("acme", "widgets", 3): "complete",
                ("acme", "widgets", 4): "escalated", ("zeta", "app", 1): "running"}
    for (owner, repo, number), status in statuses.items():
        with store.transaction(WorkItemRef(owner, repo, number)) as tx:
            state = tx.create("loop")
            state.current_node, state.status = "design", status
    assert store.active_items() == [
        WorkItemRef("acme", "gadgets", 7), WorkItemRef("acme", "widgets", 2),
        WorkItemRef("acme", "widgets", 10), WorkItemRef("zeta", "app", 1)]


# -- records written before the state held typed records (issue 20 §1) ------------------
def _rows_before_typed_records() -> dict[str, Any]:
    # The rows loopgate wrote (f138096, before ItemState held Skip/OptIn) for an item whose
    # phase selection skipped brainstorming and the explainer set and ticked an opt-in, with
    # a `loopgate skip`, an operator skip confirmed by alice, a completion and a force.
    return json.loads((Path(__file__).parent / "data" / "state_rows_before_typed_records.json")
                      .read_text("utf-8"))


_ENTRY_ROWS = (("skips", "skips"), ("opt_ins", "optIns"), ("completions", "completions"))


def _old_record_document(rows: dict[str, Any]) -> dict[str, Any]:
    parked, surface = rows["items"][0]
    doc: dict[str, Any] = {"workItem": rows["item"], "parked": json.loads(parked),
                           "surface": json.loads(surface),
                           "forced": [json.loads(d) for (d,) in rows["forced_moves"]]}
    for table, key in _ENTRY_ROWS:
        doc[key] = {node: json.loads(data) for node, data in rows[table]}
    return doc


def _assert_typed_records(state: ItemState) -> None:
    assert list(state.skips) == ["brainstorming", "spec-explainer", "spec-quiz",
                                 "code-explainer", "code-quiz", "test-planning",
                                 "requirements-approval"]
    confirmed = state.skips["requirements-approval"]
    assert (confirmed.via, confirmed.by, confirmed.reason, confirmed.confirmed_by,
            confirmed.confirmed_via) == ("declaration", "cli", "already approved in the RFC",
                                         "alice", "reply")
    assert len(confirmed.request) == 8 and confirmed.extra == () and confirmed.layout is None
    assert state.skips["spec-quiz"] == Skip("selection", "explainer", "@alice", "",
                                            "2026-12-02T06:35:06Z")
    assert state.opt_ins == {"design-critic-review": OptIn("selection", "@alice",
                                                           "2026-12-02T06:35:06Z")}
    assert state.completions == {"requirements-definition": Completion(
        "cli", "2026-12-02T06:35:06Z")}
    assert state.forced == [ForcedMove("requirements-definition", "design",
                                       "straight to design — ünïcode", "cli",
                                       "2026-12-02T06:35:06Z")]
    assert state.parked == Parked("design", "waiting for design to be claimed complete",
                                  "2026-12-02T06:35:06Z")


def test_records_written_before_they_were_typed_load_and_write_back_byte_for_byte(
        store: Any) -> None:
    rows = _rows_before_typed_records()
    if isinstance(store, MemoryStore):  # the memory store keeps the document
        doc = _old_record_document(rows)
        state = ItemState.from_document(doc)
        _assert_typed_records(state)
        again = state.to_document()
        for key in ("skips", "optIns", "completions", "forced", "parked"):
            assert json.dumps(again[key]) == json.dumps(doc[key])
        return
    item = rows["item"]
    with store.transaction(REF) as tx:
        tx.create("pdlc-work-item-loop")
    with store.writing() as db:
        db.execute("UPDATE items SET parked = ?, surface = ? WHERE item = ?",
                   (*rows["items"][0], item))
        for table, _key in _ENTRY_ROWS:
            for i, (node, data) in enumerate(rows[table]):
                db.execute(f"INSERT INTO {table} (item, node, ord, data) VALUES (?,?,?,?)",
                           (item, node, i, data))
        for i, (data,) in enumerate(rows["forced_moves"]):
            db.execute("INSERT INTO forced_moves (item, ord, data) VALUES (?,?,?)",
                       (item, i, data))
    _assert_typed_records(store.load(REF))
    _assert_typed_records(next(iter(store.load_all())))
    with store.transaction(REF) as tx:  # written back by this loopgate
        tx.state.surface["touched"] = True
    with store.writing() as db:
        for table, _key in _ENTRY_ROWS:
            stored = [list(r) for r in db.execute(
                f"SELECT node, data FROM {table} WHERE item = ? ORDER BY ord", (item,))]
            assert stored == rows[table], table
        assert [list(r) for r in db.execute(
            "SELECT data FROM forced_moves WHERE item = ? ORDER BY ord", (item,))] == rows[
                "forced_moves"]
        assert [r[0] for r in db.execute("SELECT parked FROM items WHERE item = ?",
                                         (item,))] == [rows["items"][0][0]]
        assert [list(r) for r in db.execute(
            "SELECT node, via FROM skips WHERE item = ? ORDER BY ord", (item,))][-1] == [
                "requirements-approval", "declaration"]

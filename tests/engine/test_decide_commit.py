"""Decide, commit, then act (issue 10 §1) through the runtime on the shipped graph: no port
is ever called inside a write transaction, a decision made on a revision that moved is
made again (nothing lost, nothing doubled), and another writer is never held up by a gate
that is reading GitHub."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from engine.graph.compiler import shipped_graph
from engine.hooks.markers import CONFIRMATION_MARKER
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.sqlite import SqliteStore
from tests.engine.runtime_support import StepClock
from tests.engine.test_hooks_support import REF, RecordingNotifier

SETTINGS = EngineSettings(authorized_users=("alice",))


class WatchedTracker(MemoryTracker):
    """A tracker that notes every call made while the calling thread's connection is in
    a write transaction (there must be none)."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__()
        self.store = store
        self.inside: list[str] = []

    def _enter(self, method: str, *args: object) -> None:
        if self.store.db().conn.in_transaction:
            self.inside.append(method)
        super()._enter(method, *args)


def _runtime(tmp_path: Path, tracker_factory: Any = MemoryTracker) -> Runtime:
    store = SqliteStore(tmp_path / "loopgate.db")
    tracker = tracker_factory(store) if tracker_factory is WatchedTracker else tracker_factory()
    ports = Ports(tracker, MemoryArtifactStore(), RecordingNotifier(), StepClock())
    return Runtime(shipped_graph(), store, ports, SETTINGS)


def _execute(rt: Runtime, body: str = "the-loop execute") -> dict[str, Any]:
    reply = rt.ports.tracker.add_comment_as(REF, "alice", body)  # type: ignore[attr-defined]
    return {"comments": [reply]}


def test_no_port_is_called_inside_a_write_transaction(tmp_path: Path) -> None:
    rt = _runtime(tmp_path, WatchedTracker)
    tracker: WatchedTracker = rt.ports.tracker  # type: ignore[assignment]
    rt.start(REF)
    rt.advance(REF, _execute(rt, "the-loop execute\n- [ ] brainstorming"))
    rt.complete(REF, "requirements-definition", "agent")  # blocks: the file is missing
    called = {method for method, _ in tracker.calls}
    assert {"list_comments", "labels", "add_comment", "add_label"} <= called
    assert tracker.inside == []


def test_a_decision_on_a_revision_that_moved_is_made_again(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    tracker: MemoryTracker = rt.ports.tracker  # type: ignore[assignment]
    rt.start(REF)
    reading, declared = threading.Event(), threading.Event()
    original = tracker.list_comments
    first = [True]

    def slow_read(ref: Any) -> Any:
        # The execute decision reads the checklist; meanwhile another writer commits.
        if first[0]:
            first[0] = False
            reading.set()
            assert declared.wait(10)
        return original(ref)

    tracker.list_comments = slow_read  # type: ignore[method-assign]
    event = _execute(rt)
    result: list[Any] = []
    deciding = threading.Thread(target=lambda: result.append(rt.advance(REF, event)))
    deciding.start()
    assert reading.wait(10)
    # Not held up by the gate reading GitHub: this commit goes through at once.
    accepted, _ = rt.declare_skips(REF, ["brainstorming"], "not needed", "bob")
    declared.set()
    deciding.join(10)
    assert not deciding.is_alive()
    assert accepted == {"brainstorming": "brainstorming"}

    [state] = result
    assert state.current_node == "requirements-definition"  # both decisions stand
    assert state.skips["brainstorming"].by == "bob"
    assert state.decisions["phase-selection"]["by"] == "@alice"
    confirmations = [c for c in tracker.comments_on(REF) if CONFIRMATION_MARKER in c.body]
    assert len(confirmations) == 1  # the first decision's effects were thrown away
    kinds = [e["kind"] for e in rt.store.events(REF)]
    assert kinds.count("graph.opt_ins_selected") + kinds.count("graph.skips_declared") >= 1
    assert kinds.count("graph.advanced") == len(set(
        (e["data"].get("from"), e["data"]["to"]) for e in rt.store.events(REF)
        if e["kind"] == "graph.advanced"))  # no move logged twice

"""Issue 20 §1: decisions, skips, opt-ins and a gate's approvals are frozen types with one
(de)serialiser each; state written before (the ``state_before_visits.json`` fixture) and
state the typed door writes read back to the very documents stored, and a chat selection
records what the Execute click fed as a checklist reply recorded."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.approvals import GateApprovals
from engine.graph.compiler import shipped_graph
from engine.hooks.phase_selection import Selection, checklist_rows, reply_body
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.records import OptIn, ReviewDecision, SelectionDecision, Skip
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
NODE = "phase-selection"
SETTINGS = EngineSettings(authorized_users=("alice",))


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _old_state() -> dict[str, Any]:
    path = Path(__file__).parent / "data" / "state_before_visits.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_state_written_before_reads_back_to_the_stored_documents() -> None:
    doc = _old_state()
    for node, entry in doc["surface"]["approvals"].items():
        parsed = GateApprovals.from_json(entry)
        assert parsed is not None and parsed.visit is None, node  # written before visits
        assert parsed.to_json() == entry
        assert parsed.belongs_to(entry["enteredAt"], 7)  # no visit: enteredAt decides
    for decision in doc["decisions"].values():
        assert ReviewDecision.from_json(decision).to_json() == decision
    assert GateApprovals.from_json(None) is None


def _runtime() -> tuple[Runtime, MemoryTracker]:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="carol")
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), SETTINGS)
    runtime.start(REF)
    return runtime, tracker


def test_a_chat_selection_records_what_the_checklist_reply_recorded() -> None:
    graph = shipped_graph()
    rows = checklist_rows(graph)
    skips = (rows.default_on[0].id,)
    opt_ins = (rows.opt_in[0].id,) if rows.opt_in else ()

    typed, _ = _runtime()
    result = typed.advance(REF, ev.Selection(NODE, "alice", skips, opt_ins, via="slack"))
    assert isinstance(result, ev.Moved) and result.outcome == "selected"

    legacy, tracker = _runtime()
    words = reply_body(graph, SETTINGS, Selection(skips=list(skips), opt_ins=list(opt_ins)))
    reply = tracker.add_comment_as(REF, "alice", words)
    before = legacy.advance(REF, {"comments": [reply], "via": "slack", "expectNode": NODE})

    new, old = dict(result.state.decisions[NODE]), dict(before.decisions[NODE])
    assert new.pop("at") and old.pop("at")
    old["comment"], old["commentId"] = "", 0  # the old click's reply had neither
    assert new == old
    assert (new["by"], new["via"], new["skips"], new["optIns"]) == (
        "@alice", "slack", list(skips), list(opt_ins))
    assert result.state.skips == before.skips and result.state.opt_ins == before.opt_ins

    # And every record reads back to its stored document.
    stored = dict(result.state.decisions[NODE])
    assert SelectionDecision.from_json(stored).to_json() == stored
    for doc in result.state.skips.values():
        assert Skip.from_json(doc).to_json() == doc
    for doc in result.state.opt_ins.values():
        assert OptIn.from_json(doc).to_json() == doc


def test_a_chat_decision_on_state_written_before_moves_and_names_its_visit() -> None:
    store = MemoryStore()
    old = ItemState.from_document(_old_state())
    with store.transaction(REF) as tx:
        tx.create("pdlc-work-item-loop")
        tx.state.__dict__.update(old.__dict__)
    runtime = Runtime(shipped_graph(), store,
                      Ports(MemoryTracker(), MemoryArtifactStore(), clock=Clock()),
                      EngineSettings(authorized_users=("alice", "bob")))
    gate = "requirements-approval"
    runtime.force(REF, gate, "test: once more", "t")

    result = runtime.advance(REF, ev.Decision(gate, "approved", "alice", via="slack"))

    assert isinstance(result, ev.Moved) and result.to == "design"
    assert result.visit is not None and result.visit.number == 3  # 1 and 2 were inferred
    assert result.visit.decision is not None
    assert result.visit.decision.to_json() == {
        "by": "@alice", "at": result.visit.decision.at, "outcome": "approved", "comment": "",
        "commentId": 0, "via": "slack", "text": ""}
    assert result.state.decisions[gate] == result.visit.decision.to_json()

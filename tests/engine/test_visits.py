"""Issue 19 §2: decisions per visit, through the runtime on the shipped graph with the real
gate hooks, the memory tracker and the memory store — a gate sent back with ``changes
requested`` on visit 1 and approved on visit 2 shows ``approved`` everywhere that shows
the current decision, and the history keeps both."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.approvals import ApprovalRule, recorded_approvals
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.mergegate import SUCCESS, item_check
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.report import build_report, render_history, render_table, visit_history
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore
from engine.visits import Visit, VisitDecision, legacy_visits, visits_from_document

REF = WorkItemRef("acme", "widgets", 7)
GATE = "requirements-approval"
LOCKED = "---\nstatus: approved\n---\n# Requirements\n\n## Requirements\n\n- R1 it works\n"


class StepClock:
    """One second further on every read (``step=0``: a clock that never moves)."""

    def __init__(self, step: int = 1) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
        self.step = step

    def now(self) -> datetime:
        self.at += timedelta(seconds=self.step)
        return self.at


class Walk:
    """The shipped graph over memory ports, forced onto requirements-definition."""

    def __init__(self, *, step: int = 1, rules: dict[str, ApprovalRule] | None = None) -> None:
        self.tracker, self.artifacts = MemoryTracker(), MemoryArtifactStore()
        settings = EngineSettings(authorized_users=("alice", "bob"), gate_rules=rules or {})
        self.runtime = Runtime(shipped_graph(), MemoryStore(),
                               Ports(self.tracker, self.artifacts, clock=StepClock(step)),
                               settings)
        self.runtime.start(REF)
        self.runtime.force(REF, "requirements-definition", "test: to the requirements", "t")
        self.replies: list[Comment] = []

    def reply(self, author: str, body: str) -> ItemState:
        comment = self.tracker.add_comment_as(REF, author, body)
        self.replies.append(comment)
        return self.runtime.advance(REF, {"comments": [comment]})

    def deliver(self) -> ItemState:
        # Each delivery changes the file: an unchanged artifact after "changes requested"
        # is refused (issue 23).
        self.deliveries = getattr(self, "deliveries", 0) + 1
        self.artifacts.write(REF, "requirements.md",
                             LOCKED + f"- R{self.deliveries + 1} revision {self.deliveries}\n")
        return self.runtime.complete(REF, "requirements-definition", "agent")


@pytest.fixture
def answered_twice() -> tuple[Walk, ItemState]:
    walk = Walk()
    assert walk.deliver().current_node == GATE
    assert walk.reply("alice", "changes requested: R1 is vague").current_node == \
        "requirements-definition"
    assert walk.deliver().current_node == GATE
    state = walk.reply("bob", "approved")
    assert state.current_node == "design"
    return walk, state


def test_the_current_decision_is_the_second_visits(answered_twice: tuple[Walk, ItemState]
                                                   ) -> None:
    walk, state = answered_twice
    assert state.decisions[GATE]["by"] == "@bob"
    assert state.decisions[GATE]["outcome"] == "approved"
    assert state.decision(GATE).comment_id == walk.replies[-1].id
    assert state.decision(GATE).comment == walk.replies[-1].url
    first, second = state.history(GATE)
    assert (first.number, first.outcome, first.decision.by, first.decision.outcome) == (
        1, "changes-requested", "@alice", "changes-requested")
    assert (second.number, second.outcome, second.decision.by) == (2, "approved", "@bob")
    assert first.exited_at < second.entered_at < second.exited_at
    assert not first.inferred and not second.inferred
    doc = state.to_document()
    assert doc["decisions"][GATE]["by"] == "@bob"
    assert [v["decision"]["by"] for v in doc["visits"][GATE]] == ["@alice", "@bob"]


def test_check_and_history_show_the_current_visit_and_keep_both(
        answered_twice: tuple[Walk, ItemState]) -> None:
    walk, state = answered_twice
    report = build_report(walk.runtime.graph, state)
    gate = next(n for n in report["nodes"] if n["id"] == GATE)
    assert (gate["status"], gate["detail"]) == ("passed",
                                                "outcome approved; decided by @bob, visit 2")
    assert report["decisions"][GATE]["outcome"] == "approved"
    assert report["document"]["visits"][GATE][1]["decision"]["by"] == "@bob"
    assert f"  {GATE}" in render_table(report)
    rows = [r for r in visit_history(state.visits) if r["node"] == GATE]
    assert [(r["visit"], r["outcome"], r["current"], r["decision"]["by"]) for r in rows] == [
        (1, "changes-requested", False, "@alice"), (2, "approved", True, "@bob")]
    lines = [line for line in render_history(str(REF), state.visits).splitlines()
             if line.strip().startswith(GATE)]
    first, second = walk.replies
    assert lines[0] == (
        f"  {GATE} visit 1: entered {rows[0]['enteredAt']}, left {rows[0]['exitedAt']} "
        f"with changes-requested; decided by @alice (changes-requested) at "
        f"{rows[0]['decision']['at']} — {first.url}")
    assert lines[1].endswith(f"decided by @bob (approved) at {rows[1]['decision']['at']} — "
                             f"{second.url} — current")
    assert rows[0]["decision"]["at"] <= rows[0]["exitedAt"]


def test_the_event_log_records_each_visits_decision(
        answered_twice: tuple[Walk, ItemState]) -> None:
    walk, _ = answered_twice
    decided = [e["data"] for e in walk.runtime.store.events(REF)
               if e["kind"] == "graph.decided" and e["data"]["node"] == GATE]
    assert [(d["visit"], d["outcome"], d["by"]) for d in decided] == [
        (1, "changes-requested", "@alice"), (2, "approved", "@bob")]


def test_the_merge_check_shows_the_current_visits_decision(
        answered_twice: tuple[Walk, ItemState]) -> None:
    walk, state = answered_twice
    check = item_check(walk.runtime.graph, state, GATE)
    assert check.state == SUCCESS
    assert "outcome approved; decided by @bob, visit 2" in check.summary
    assert "changes-requested" not in check.summary


def test_approvals_belong_to_their_visit_even_within_one_clock_second() -> None:
    # A clock that never moves: both entries of the gate share one enteredAt, so only the
    # visit number tells them apart. Alice's approval on visit 1 must not count on visit 2.
    walk = Walk(step=0, rules={GATE: ApprovalRule(approvals=2)})
    assert walk.deliver().current_node == GATE
    state = walk.reply("alice", "approved")
    assert [a.by for a in recorded_approvals(state, GATE)] == ["alice"]
    walk.runtime.force(REF, "requirements-definition", "test: back", "t")
    state = walk.runtime.force(REF, GATE, "test: again", "t")
    assert state.nodes[GATE].entered_at == state.history(GATE)[0].entered_at
    assert [v.number for v in state.history(GATE)] == [1, 2]
    assert recorded_approvals(state, GATE) == ()
    state = walk.reply("bob", "approved")
    assert state.current_node == GATE  # 1 of 2, not passed on alice's earlier approval
    assert state.surface["approvals"][GATE]["visit"] == 2
    assert [a.by for a in recorded_approvals(state, GATE)] == ["bob"]


def _old_document() -> dict:
    return json.loads((Path(__file__).parent / "data" / "state_before_visits.json")
                      .read_text("utf-8"))


def test_an_old_document_continues_on_the_new_runtime() -> None:
    # State written before visits were kept, loaded and walked on: the next visit is 2.
    store = MemoryStore()
    old = ItemState.from_document(_old_document())
    with store.transaction(REF) as tx:
        tx.create("pdlc-work-item-loop")
        tx.state.__dict__.update(old.__dict__)
    assert store.load(REF).decisions[GATE]["by"] == "@bob"
    runtime = Runtime(shipped_graph(), store,
                      Ports(MemoryTracker(), MemoryArtifactStore(), clock=StepClock()),
                      EngineSettings(authorized_users=("alice", "bob")))
    state = runtime.force(REF, GATE, "test: once more", "t")
    assert [(v.number, v.inferred) for v in state.history(GATE)] == [(1, True), (2, True),
                                                                     (3, False)]
    assert GATE not in state.decisions  # visit 3 is not answered yet


def test_legacy_visits_without_a_later_entry_keep_one_visit() -> None:
    nodes = {"g": {"enteredAt": "2026-03-01T12:00:01Z", "exitedAt": "2026-03-01T12:00:05Z",
                   "outcome": "approved"}, "a": {"enteredAt": "2026-03-01T12:00:06Z"}}
    decisions = {"g": {"by": "@alice", "at": "2026-03-01T12:00:05Z", "outcome": "approved",
                       "comment": "u", "commentId": 3}, "gone": {"by": "@x", "at": "t"}}
    visits = legacy_visits(nodes, decisions)
    assert visits["g"] == (Visit(1, "2026-03-01T12:00:01Z", "2026-03-01T12:00:05Z", "approved",
                                 VisitDecision.from_json(decisions["g"]), inferred=True),)
    assert visits["a"] == (Visit(1, "2026-03-01T12:00:06Z", inferred=True),)
    assert visits["gone"][0].decision.by == "@x" and visits["gone"][0].entered_at == ""
    assert visits_from_document({"nodes": nodes, "decisions": decisions,
                                 "visits": {}}) == {}  # a new document is read as is


def test_a_decision_record_is_frozen() -> None:
    decision = VisitDecision.from_json({"by": "@a", "approvers": ["@a", "@b"]})
    with pytest.raises(TypeError):
        decision.document["by"] = "@mallory"  # type: ignore[index]
    assert decision.to_json() == {"by": "@a", "approvers": ["@a", "@b"]}
    fresh = decision.to_json()  # a plain dict of its own: changing it changes no record
    assert type(fresh) is dict and list(fresh) == ["by", "approvers"]
    fresh["by"] = "@mallory"
    assert decision.document["by"] == "@a" and decision.to_json()["by"] == "@a"
    other = VisitDecision("@a", "", "", "", "", 0, "", {"by": "@a"})  # any Mapping
    assert other.to_json() == {"by": "@a"} and other.to_json() is not other.document
    with pytest.raises(TypeError, match="must be a mapping"):
        Visit.from_json(["not", "a", "visit"])  # type: ignore[arg-type]

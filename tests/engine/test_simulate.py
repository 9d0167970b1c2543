"""Issue 24 §4: ``simulate`` runs the gate's own rules on a copy and writes nothing; its
answers equal what the real walk then does with the same decision. In-memory store and
tracker (the GitHub walk is in tests/bridges/test_simulate_github.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.approvals import ApprovalRule
from engine.errors import ClaimRefused
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.simulate import (
    DryTracker,
    Simulation,
    render,
    simulate_changes,
    simulate_decision,
    simulate_push,
)
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
PR = WorkItemRef("acme", "widgets", 8)
USERS = ("alice", "bob", "carol", "dave")
GATE = "human-approval"
READS = {"list_comments", "labels", "delivering_pull_requests", "issue_info",
         "comment_edits", "team_membership", "items_for_pull_request", "codeowners_file",
         "changed_files"}


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _runtime(tracker: MemoryTracker, rule: ApprovalRule) -> Runtime:
    from engine.settings import EngineSettings

    settings = EngineSettings(authorized_users=USERS, gate_rules={GATE: rule},
                              merge_gate=True)
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    runtime.force(REF, GATE, "test: straight to the gate", "tester")
    return runtime


def _tracker() -> MemoryTracker:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    tracker.add_pull_request(REF, 8, author="bob", head_sha="a" * 40)
    tracker.set_team("acme/reviewers", ["dave"])
    return tracker


def _snapshot(runtime: Runtime, tracker: MemoryTracker) -> dict[str, Any]:
    store = runtime.store
    assert isinstance(store, MemoryStore)
    state = store.load(REF)
    assert state is not None
    return {"revision": state.revision, "document": state.to_document(),
            "events": len(store.events(REF)),
            "effects": [(r.id, r.status) for r in store.effects.rows()],
            "comments": [c.body for c in tracker.comments_on(REF)],
            "labels": tracker.labels(REF), "checks": dict(tracker.checks)}


def _simulate(runtime: Runtime, login: str) -> Simulation:
    return simulate_decision(runtime.graph, runtime.store, runtime.ports, runtime.settings,
                             REF, login, GATE)


def _click(runtime: Runtime, login: str) -> ItemState:
    reply = Comment(0, login, "approved")
    return runtime.advance(REF, {"comments": [reply], "via": "slack", "expectNode": GATE})


def _writes(tracker: MemoryTracker, since: int) -> list[str]:
    return [name for name, _ in tracker.calls[since:] if name not in READS]


def test_simulate_writes_nothing_to_the_store_the_outbox_or_the_tracker() -> None:
    tracker = _tracker()
    runtime = _runtime(tracker, ApprovalRule(approvals=2, approvers=("bob", "carol",
                                                                     "acme/reviewers")))
    before = _snapshot(runtime, tracker)
    calls = len(tracker.calls)

    counted = _simulate(runtime, "carol")
    refused = _simulate(runtime, "mallory")
    by_team = _simulate(runtime, "dave")
    # Issue 24 §4: --codeowners-change, alone and with a decision, changes nothing either.
    files = dict(tracker.pull_files)
    changed = simulate_changes(runtime.graph, runtime.store, runtime.ports, runtime.settings,
                               REF, ["web/new.ts"])
    decided = simulate_decision(runtime.graph, runtime.store, runtime.ports,
                                runtime.settings, REF, "carol", GATE, changes=["web/new.ts"])

    assert (counted.counted, refused.counted, by_team.counted) == (True, False, True)
    assert changed.changes == decided.changes == ("web/new.ts",)
    assert _snapshot(runtime, tracker) == before
    assert _writes(tracker, calls) == []
    assert tracker.pull_files == files
    assert counted.effects  # the walk would post and notify: recorded, never sent


def test_simulate_answers_equal_what_the_walk_then_does() -> None:
    tracker = _tracker()
    rule = ApprovalRule(approvals=2, approvers=("alice", "bob", "carol", "acme/reviewers"),
                        prevent_self_approval=True)
    runtime = _runtime(tracker, rule)

    # The item's author: refused, with the gate's own reason.
    sim = _simulate(runtime, "alice")
    real = _click(runtime, "alice")
    assert not sim.counted
    assert sim.reason == ("@alice opened this work item, and this gate has "
                          "preventSelfApproval: the author cannot approve their own work")
    assert real.surface["approvals"][GATE]["refused"][-1]["reason"] == sim.reason
    assert (sim.after_node, real.current_node) == (GATE, GATE)

    # A delivering pull request's author at the merge gate: refused too.
    sim = _simulate(runtime, "bob")
    real = _click(runtime, "bob")
    assert not sim.counted and sim.reason.startswith("@bob opened acme/widgets#8")
    assert real.surface["approvals"][GATE]["refused"][-1]["reason"] == sim.reason

    # Carol counts and the gate still waits for a second approval.
    sim = _simulate(runtime, "carol")
    assert (sim.counted, sim.after_node, sim.tally) == (True, GATE,
                                                        "1 of 2 approvals: @carol")
    real = _click(runtime, "carol")
    assert real.current_node == GATE
    assert [a["by"] for a in real.surface["approvals"][GATE]["approvals"]] == ["carol"]

    # Dave (through the team) is the second: the item would complete; it does.
    sim = _simulate(runtime, "dave")
    assert (sim.counted, sim.before_node, sim.after_node) == (True, GATE, "complete")
    assert sim.check["state"] == "success"
    real = _click(runtime, "dave")
    assert real.current_node == "complete"
    assert real.surface["mergeGate"]["state"] == sim.check["state"]
    assert real.surface["mergeGate"]["description"] == sim.check["description"]


def test_a_failed_team_lookup_is_said_as_the_gate_says_it() -> None:
    tracker = _tracker()
    tracker.failing.add("team_membership")
    runtime = _runtime(tracker, ApprovalRule(approvers=("acme/reviewers",)))
    sim = _simulate(runtime, "dave")
    real = _click(runtime, "dave")
    assert not sim.counted
    assert "the membership lookup failed for acme/reviewers" in sim.reason
    assert real.surface["approvals"][GATE]["refused"][-1]["reason"] == sim.reason
    assert real.current_node == GATE


def test_a_decision_for_another_node_answers_nothing() -> None:
    runtime = _runtime(_tracker(), ApprovalRule())
    sim = _simulate_at(runtime, "design-approval")
    assert not sim.counted
    assert sim.reason == ("the item is at human-approval, not design-approval: the decision "
                          "would answer no gate")
    assert render(sim)[-1] == "(simulated: nothing was written)"


def _simulate_at(runtime: Runtime, node: str) -> Simulation:
    return simulate_decision(runtime.graph, runtime.store, runtime.ports, runtime.settings,
                             REF, "bob", node)


def test_an_item_not_started_is_refused() -> None:
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(MemoryTracker(), MemoryArtifactStore()))
    with pytest.raises(ClaimRefused) as caught:
        simulate_decision(runtime.graph, runtime.store, runtime.ports, runtime.settings,
                          REF, "bob", GATE)
    assert caught.value.code == "not-started"


def test_a_simulated_push_sends_the_item_back_as_the_real_push_does() -> None:
    tracker = _tracker()
    runtime = _runtime(tracker, ApprovalRule(approvers=("carol",)))
    assert _click(runtime, "carol").current_node == "complete"
    before = _snapshot(runtime, tracker)
    calls = len(tracker.calls)

    sim = simulate_push(runtime.graph, runtime.store, runtime.ports, runtime.settings, REF,
                        [(8, "b" * 40)])

    assert _snapshot(runtime, tracker) == before
    assert _writes(tracker, calls) == []
    tracker.push(8, "b" * 40)
    runtime.publish_gate(REF, pulls=(8,))
    real = runtime.store.load(REF)
    assert real is not None
    assert (sim.before_node, sim.after_node) == ("complete", real.current_node)
    assert sim.after_node == GATE
    assert sim.check["state"] == real.surface["mergeGate"]["state"]


def test_the_dry_tracker_records_writes_it_does_not_know() -> None:
    tracker = MemoryTracker()
    dry = DryTracker(tracker)
    dry.add_label(REF, "x")
    dry.publish_check(PR, object())
    dry.remember_comment(1, "IC_1")
    assert [name for name, _ in dry.writes] == ["add_label", "publish_check",
                                                "remember_comment"]
    assert tracker.calls == []
    assert dry.comments_editable is True


def test_simulate_reads_code_owners_and_agrees_with_the_walk() -> None:
    # Issue 24 §1 meets §4: the dry tracker passes the CODEOWNERS and changed-files reads.
    tracker = _tracker()
    tracker.set_file("acme/widgets", ".github/CODEOWNERS", "/web/ @wendy\n/docs/ @writer\n")
    tracker.set_changed_files(PR, ["web/app.ts", "docs/guide.md"])
    runtime = _runtime(tracker, ApprovalRule.from_json(
        {"approvers": ["codeowners"], "codeowners": "all-files"}))
    calls = len(tracker.calls)

    sim = _simulate(runtime, "writer")
    assert _writes(tracker, calls) == []
    assert (sim.counted, sim.after_node) == (True, GATE)
    assert "no code owner approved web/app.ts yet" in sim.wait
    real = _click(runtime, "writer")
    assert real.current_node == GATE and real.parked.reason == sim.wait

    assert _simulate(runtime, "wendy").after_node == "complete"
    assert _click(runtime, "wendy").current_node == "complete"


def test_a_refusal_recorded_earlier_is_not_this_decisions() -> None:
    # dave was refused while the team lookup failed; it answers again now.
    tracker = _tracker()
    runtime = _runtime(tracker, ApprovalRule(approvers=("acme/reviewers",)))
    tracker.failing.add("team_membership")
    assert _click(runtime, "dave").current_node == GATE
    tracker.failing.clear()
    sim = _simulate(runtime, "dave")
    assert (sim.counted, sim.reason, sim.after_node) == (True, "", "complete")
    assert _click(runtime, "dave").current_node == "complete"

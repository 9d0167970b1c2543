"""Approval rules per human gate (issue 11 §2): counting, self-approval, teams, Slack.

The runtime walks the shipped graph over the in-memory tracker; an item is moved onto
``human-approval`` with ``force`` (no hook runs) and answered with comment events, as the
dispatcher does.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.approvals import (
    Approval,
    ApprovalRule,
    People,
    authorize,
    evaluate,
    tally,
)
from engine.errors import ConfigError
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
USERS = ("alice", "bob", "carol")


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _runtime(rule: ApprovalRule, tracker: MemoryTracker | None = None,
             node: str = "human-approval") -> tuple[Runtime, MemoryTracker]:
    tracker = tracker or MemoryTracker()
    settings = EngineSettings(authorized_users=USERS, gate_rules={node: rule})
    ports = Ports(tracker, MemoryArtifactStore(), clock=Clock())
    runtime = Runtime(shipped_graph(), MemoryStore(), ports, settings)
    runtime.start(REF)
    runtime.force(REF, node, "test: straight to the gate", "tester")
    return runtime, tracker


def _reply(runtime: Runtime, tracker: MemoryTracker, author: str, body: str):
    comment = tracker.add_comment_as(REF, author, body)
    return runtime.advance(REF, {"comments": [comment]})


def _parked(runtime: Runtime) -> str:
    return str(runtime.store.load(REF).parked.reason or "")


# -- the pure rules -------------------------------------------------------------------------
def test_evaluate_counts_each_person_once_and_changes_requested_resets() -> None:
    rule = ApprovalRule(approvals=2)
    people = People(item_author="zoe")
    first = evaluate(rule, (), Approval("alice", "approved", "t1"), authorized_users=USERS,
                     people=people)
    again = evaluate(rule, first.tally.approvals, Approval("Alice", "approved", "t2"),
                     authorized_users=USERS, people=people)
    assert [a.by for a in again.tally.approvals] == ["alice"]
    assert again.tally.summary() == "1 of 2 approvals: @alice"
    changes = evaluate(rule, again.tally.approvals, Approval("bob", "changes-requested", "t3"),
                       authorized_users=USERS, people=people)
    assert changes.tally.approvals == () and changes.tally.passed
    assert changes.tally.outcome == "changes-requested"


def test_rule_reads_config_and_names_the_bad_key_path() -> None:
    rule = ApprovalRule.from_json({"approvals": 2, "approvers": ["alice", "acme/reviewers"],
                                   "preventSelfApproval": True}, "gates.human-approval")
    assert rule.teams() == (("acme", "reviewers"),)
    with pytest.raises(ConfigError, match=r"gates\.human-approval\.approvals"):
        ApprovalRule.from_json({"approvals": 0}, "gates.human-approval")
    with pytest.raises(ConfigError, match=r"gates\.x\.attester"):
        ApprovalRule.from_json({"attester": "anyone"}, "gates.x")


def test_attester_rule_assignee_or_author_admits_only_them() -> None:
    rule = ApprovalRule(attester="assignee-or-author")
    people = People(item_author="zoe", assignees=("bob",))
    allowed = authorize("bob", rule, authorized_users=USERS, people=people, attesting=True)
    refused = authorize("alice", rule, authorized_users=USERS, people=people, attesting=True)
    assert allowed.allowed
    assert not refused.allowed
    assert refused.reason == ("@alice is neither an assignee nor the author of this work item "
                              "(attester: assignee-or-author)")


def test_still_who_drops_counted_approvers_and_keeps_teams_and_code_owners() -> None:
    rule = ApprovalRule(approvals=3, approvers=("alice", "Bob", "acme/reviewers", "codeowners"))
    assert rule.still_who(USERS, ["@ALICE"]) == ("@Bob, @acme/reviewers, the code owners of "
                                                  "the changed files")
    assert rule.still_who(USERS, ["alice", "bob"]) == ("@acme/reviewers, the code owners of "
                                                        "the changed files")
    assert ApprovalRule(approvals=2).still_who(USERS, ["carol"]) == "@alice, @bob"
    assert ApprovalRule(approvals=3, approvers=("alice", "bob")).still_who(
        USERS, ["alice", "bob"]) == ""


def test_a_gate_whose_named_approvers_all_approved_says_so_in_its_wait() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvals=3, approvers=("alice", "bob")))
    _reply(runtime, tracker, "alice", "approved")
    _reply(runtime, tracker, "bob", "approved")
    assert _parked(runtime) == ("2 of 3 approvals: @alice, @bob — waiting on human-approval: "
                                "everyone the rule names has approved and it asks for more "
                                "approvals")


def test_attester_rule_narrows_never_widens_the_authorized_set() -> None:
    # Issue 19 §6: an issue author who is not an approver cannot attest.
    rule = ApprovalRule(attester="assignee-or-author")
    people = People(item_author="mallory", assignees=("dave",))
    refused = authorize("mallory", rule, authorized_users=USERS, people=people,
                        attesting=True)
    assert not refused.allowed
    assert refused.reason == ("@mallory is the work item's author but not authorized to "
                              "attest: @mallory is not among the approvers of this gate "
                              "(@alice, @bob, @carol)")
    control = authorize("carol", rule, authorized_users=USERS,
                        people=People(item_author="carol"), attesting=True)
    assert control.allowed


# -- acceptance: a two-approval gate needs two distinct authorized people -----------------
def test_a_two_approval_gate_needs_two_distinct_authorized_people() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvals=2))
    state = _reply(runtime, tracker, "alice", "approved")
    assert state.current_node == "human-approval"
    # The wait names only who may still approve: @alice's approval is counted already.
    assert _parked(runtime).startswith("1 of 2 approvals: @alice — waiting for @bob, @carol "
                                       "to reply on human-approval")
    # The same person twice is still one approval; an unauthorized one never counts.
    _reply(runtime, tracker, "alice", "LGTM")
    state = _reply(runtime, tracker, "mallory", "approved")
    assert state.current_node == "human-approval"
    assert "1 of 2 approvals: @alice" in _parked(runtime)
    assert "(ignored @mallory: not authorized)" in _parked(runtime)
    state = _reply(runtime, tracker, "bob", "approved with comments\nrename foo")
    assert state.current_node == "complete"
    decision = state.decisions["human-approval"]
    assert decision["by"] == "@bob" and decision["approvers"] == ["@alice", "@bob"]
    assert decision["outcome"] == "approved-with-comments"
    recorded = state.surface["approvals"]["human-approval"]["approvals"]
    assert [(a["by"], a["via"]) for a in recorded] == [("alice", "reply"), ("bob", "reply")]
    assert [c["by"] for c in state.surface["reviewComments"]] == ["@bob"]


def test_check_shows_the_tally() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvals=2))
    _reply(runtime, tracker, "alice", "approved")
    report = runtime.status(REF)
    assert "1 of 2 approvals: @alice" in str(report)


def test_changes_requested_resets_the_count_and_routes_back() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvals=2))
    _reply(runtime, tracker, "alice", "approved")
    state = _reply(runtime, tracker, "bob", "changes requested: the API is wrong")
    assert state.current_node == "implementation"
    runtime.force(REF, "human-approval", "back to the gate", "tester")
    state = _reply(runtime, tracker, "carol", "approved")
    assert state.current_node == "human-approval"
    assert "1 of 2 approvals: @carol" in _parked(runtime)  # alice's approval did not survive


# -- acceptance: self-approval refused with a clear reason in check and on the thread ------
def test_self_approval_refused_with_a_clear_reason_in_check_and_on_the_thread() -> None:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    tracker.add_pull_request(REF, 8, author="bob")
    runtime, _ = _runtime(ApprovalRule(prevent_self_approval=True), tracker)
    state = _reply(runtime, tracker, "alice", "approved")
    assert state.current_node == "human-approval"
    reason = ("@alice opened this work item, and this gate has preventSelfApproval: the "
              "author cannot approve their own work")
    assert reason in _parked(runtime)
    assert reason in str(runtime.status(REF))
    said = [c.body for c in tracker.comments_on(REF) if "Not counted" in c.body]
    assert len(said) == 1 and reason in said[0]
    # At human-approval the delivering pull request's author is refused too.
    state = _reply(runtime, tracker, "bob", "approved")
    assert state.current_node == "human-approval"
    assert "@bob opened acme/widgets#8, which delivers this work item" in _parked(runtime)
    assert ("graph.approval_refused" in
            [e["kind"] for e in runtime.store.events(REF)])
    state = _reply(runtime, tracker, "carol", "approved")
    assert state.current_node == "complete"


# -- acceptance: team membership allows, and a lookup failure refuses ---------------------
def test_team_membership_allows() -> None:
    tracker = MemoryTracker()
    tracker.set_team("acme/reviewers", ["dave"])
    runtime, _ = _runtime(ApprovalRule(approvers=("alice", "acme/reviewers")), tracker)
    state = _reply(runtime, tracker, "dave", "approved")
    assert state.current_node == "complete"
    recorded = state.surface["approvals"]["human-approval"]["approvals"]
    assert recorded[0]["by"] == "dave" and recorded[0]["team"] == "acme/reviewers"


def test_team_lookup_failure_refuses_and_is_logged() -> None:
    tracker = MemoryTracker()
    tracker.set_team("acme/reviewers", ["dave"])
    tracker.failing.add("team_membership")
    runtime, _ = _runtime(ApprovalRule(approvers=("alice", "acme/reviewers")), tracker)
    state = _reply(runtime, tracker, "dave", "approved")
    assert state.current_node == "human-approval"
    assert "the membership lookup failed for acme/reviewers" in _parked(runtime)
    kinds = [e["kind"] for e in runtime.store.events(REF)]
    assert "graph.team_lookup_failed" in kinds


def test_unknown_team_refuses() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvers=("acme/ghosts",)))
    state = _reply(runtime, tracker, "alice", "approved")
    assert state.current_node == "human-approval"
    assert "@alice is not among the approvers of this gate (@acme/ghosts)" in _parked(runtime)


# -- Slack shares the path ------------------------------------------------------------------
def test_a_slack_review_event_is_counted_with_via_slack() -> None:
    runtime, tracker = _runtime(ApprovalRule(approvals=2))
    # the bot's shape: a reply by the clicker's linked login, only in Slack (issue 12 §1)
    runtime.advance(REF, {"comments": [Comment(0, "alice", "approved")], "via": "slack"})
    state = _reply(runtime, tracker, "bob", "approved")
    assert state.current_node == "complete"
    recorded = state.surface["approvals"]["human-approval"]["approvals"]
    assert [(a["by"], a["via"]) for a in recorded] == [("alice", "slack"), ("bob", "reply")]


def test_tally_summary_without_approvals() -> None:
    assert tally(ApprovalRule(approvals=3), ()).summary() == "0 of 3 approvals"


# -- the merge gate (issue 11 §1), over the in-memory tracker ------------------------------
def _gated(tracker: MemoryTracker) -> Runtime:
    settings = EngineSettings(authorized_users=USERS, merge_gate=True)
    ports = Ports(tracker, MemoryArtifactStore(), clock=Clock())
    return Runtime(shipped_graph(), MemoryStore(), ports, settings)


def _last_check(tracker: MemoryTracker, number: int = 8):
    return tracker.checks[WorkItemRef("acme", "widgets", number)][-1]


def test_merge_gate_pending_until_human_approval_then_success() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    runtime = _gated(tracker)
    runtime.start(REF)
    assert _last_check(tracker).state == "pending"
    assert _last_check(tracker).description.startswith("acme/widgets#7: at phase-selection")
    runtime.force(REF, "human-approval", "test", "tester")
    assert _last_check(tracker).state == "pending"
    _reply(runtime, tracker, "alice", "approved")
    check = _last_check(tracker)
    assert check.state == "success"
    assert "human-approval" in check.summary and "acme/widgets\\#7" in check.summary


def test_merge_gate_fails_when_escalated() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    runtime = _gated(tracker)
    runtime.start(REF)
    runtime.force(REF, "escalated", "test", "tester")
    assert _last_check(tracker).state == "failure"


def test_a_pull_request_delivering_two_items_passes_only_when_both_passed() -> None:
    tracker = MemoryTracker()
    other = WorkItemRef("acme", "widgets", 9)
    tracker.add_pull_request(REF, 8)
    tracker.add_pull_request(other, 8)
    runtime = _gated(tracker)
    for ref in (REF, other):
        runtime.start(ref)
        runtime.force(ref, "human-approval", "test", "tester")
    _reply(runtime, tracker, "alice", "approved")
    check = _last_check(tracker)
    assert check.state == "pending"
    assert check.description == "1 of 2 work items passed; waiting: acme/widgets#9"
    comment = tracker.add_comment_as(other, "bob", "approved")
    runtime.advance(other, {"comments": [comment]})
    assert _last_check(tracker).state == "success"


def test_a_forced_complete_never_turns_the_merge_gate_success() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    runtime = _gated(tracker)
    runtime.start(REF)
    state = runtime.force(REF, "complete", "ship it", "tester")
    assert state.status == "complete"
    check = _last_check(tracker)
    assert check.state == "pending"
    assert check.description == ("acme/widgets#7: forced to complete; human-approval "
                                 "never passed its gate")
    assert state.surface["mergeGate"]["state"] == "pending"


def test_a_force_past_the_merge_node_never_turns_the_merge_gate_success() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    runtime = _gated(tracker)
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    runtime.force(REF, "complete", "skip the approval", "tester")
    assert _last_check(tracker).state == "pending"


def test_a_stale_pass_forced_back_and_over_the_merge_node_does_not_count() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    runtime = _gated(tracker)
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    assert _reply(runtime, tracker, "alice", "approved").current_node == "complete"
    assert _last_check(tracker).state == "success"
    assert _last_check(tracker).description == "acme/widgets#7: work item complete"
    runtime.force(REF, "implementation", "rework", "tester")
    assert _last_check(tracker).state == "pending"
    runtime.force(REF, "complete", "ship it anyway", "tester")
    assert _last_check(tracker).state == "pending"


def test_merge_gate_after_complete_counts_a_walk_not_a_force() -> None:
    from engine.mergegate import item_check

    tracker = MemoryTracker()
    settings = EngineSettings(authorized_users=USERS, merge_gate=True,
                              merge_gate_after="complete")
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    forced = runtime.force(REF, "complete", "ship it", "tester")
    assert item_check(runtime.graph, forced, "complete").state == "pending"
    other = WorkItemRef("acme", "widgets", 9)
    runtime.start(other)
    runtime.force(other, "human-approval", "test", "tester")
    comment = tracker.add_comment_as(other, "alice", "approved")
    walked = runtime.advance(other, {"comments": [comment]})
    assert walked.status == "complete"
    assert item_check(runtime.graph, walked, "complete").state == "success"


def test_the_slack_precheck_says_what_the_gate_will_say() -> None:
    # Issue 12's Slack click calls the same functions before it hands the event over.
    from engine.approvals import recorded_approvals
    from engine.hooks.common import people_for, rule_for

    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    runtime, _ = _runtime(ApprovalRule(approvals=2, prevent_self_approval=True), tracker)
    _reply(runtime, tracker, "bob", "approved")
    state = runtime.store.load(REF)
    rule = rule_for(runtime.graph, runtime.settings, "human-approval")
    people = people_for(tracker, REF, "human-approval", rule, runtime.settings)
    recorded = recorded_approvals(state, "human-approval")
    assert [a.by for a in recorded] == ["bob"]
    own = evaluate(rule, recorded, Approval("alice", "approved", "t", "slack"),
                   authorized_users=USERS, people=people)
    assert not own.verdict.allowed and "opened this work item" in own.verdict.reason
    carol = evaluate(rule, recorded, Approval("carol", "approved", "t", "slack"),
                     authorized_users=USERS, people=people)
    assert carol.verdict.allowed and carol.tally.passed
    assert carol.tally.summary() == "2 of 2 approvals: @bob, @carol"


# -- the graph's per-gate rule ---------------------------------------------------------------
def _mini_with(node_update: dict) -> dict:
    # A selection, one agent node, one human gate, the end.
    doc = {"version": 1, "name": "mini", "start": "phase-selection",
           "nodes": [{"id": "phase-selection", "actor": "human", "required": True,
                      "exit": ["classify-phase-selection"]},
                     {"id": "a"},
                     {"id": "gate", "actor": "human", "exit": ["classify-feedback"]},
                     {"id": "done", "actor": "code", "terminal": True}],
           "edges": [{"from": "phase-selection", "to": "a", "on": "selected"},
                     {"from": "a", "to": "gate", "on": "pass"},
                     {"from": "gate", "to": "done", "on": "approved"}]}
    for node in doc["nodes"]:
        if node["id"] == node_update["id"]:
            node.update(node_update)
    return doc


def test_a_graph_gate_carries_its_approval_rule_and_the_config_overrides_it() -> None:
    from engine.graph.compiler import compile_graph
    from engine.hooks.common import rule_for

    graph = compile_graph(_mini_with({"id": "gate", "approval": {"approvals": 2}}))
    assert rule_for(graph, EngineSettings(), "gate") == ApprovalRule(approvals=2)
    configured = EngineSettings(gate_rules={"gate": ApprovalRule(approvals=3)})
    assert rule_for(graph, configured, "gate").approvals == 3
    assert rule_for(graph, EngineSettings(), "phase-selection") == ApprovalRule()


def test_the_compiler_refuses_a_rule_off_a_human_gate_or_one_that_does_not_read() -> None:
    from engine.errors import GraphConfigError
    from engine.graph.compiler import compile_graph

    with pytest.raises(GraphConfigError, match="approval rules belong to human gates"):
        compile_graph(_mini_with({"id": "a", "approval": {"approvals": 2}}))
    with pytest.raises(GraphConfigError, match=r"node 'gate': approval\.attester"):
        compile_graph(_mini_with({"id": "gate", "approval": {"attester": "nobody"}}))
    with pytest.raises(GraphConfigError,
                       match=r"nodes\[gate\]\.approval\.approvers: 'a/b/c' is neither"):
        compile_graph(_mini_with({"id": "gate", "approval": {"approvers": ["a/b/c"]}}))


def test_the_review_request_states_the_gates_rule() -> None:
    from dataclasses import replace

    from tests.engine.test_hooks_support import Harness

    h = Harness()
    rule = ApprovalRule(approvals=2, approvers=("alice", "acme/reviewers"),
                        prevent_self_approval=True)
    h.settings = replace(h.settings, gate_rules={"human-approval": rule, "design-approval": rule})
    for node in ("human-approval", "design-approval"):
        h.enter(node)
        assert h.run(node, "request-review", chain="entry").kind == "pass"
    human, design = [c.body for c in h.tracker.comments_on(REF) if "Review requested" in c.body]
    assert "@alice, @acme/reviewers: please review" in human
    assert "This gate needs 2 approvals from different people" in human
    assert "The work item's author and the pull request's author cannot approve" in human
    assert "The work item's author cannot approve their own work." in design


def test_a_pending_later_check_supersedes_an_earlier_one() -> None:
    # Both rows queued before either is carried out: only the later one writes, and it
    # reads the newest verdict.
    from engine.perform import InlinePerformer

    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8)
    settings = EngineSettings(authorized_users=USERS, merge_gate=True)
    ports = Ports(tracker, MemoryArtifactStore(), clock=Clock())
    store = MemoryStore()
    runtime = Runtime(shipped_graph(), store, ports, settings, on_commit=lambda ref: None)
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    comment = tracker.add_comment_as(REF, "alice", "approved")
    runtime.advance(REF, {"comments": [comment]})
    InlinePerformer(store, ports, settings).drain(REF)
    checks = tracker.checks[WorkItemRef("acme", "widgets", 8)]
    assert [c.state for c in checks] == ["success"]
    rows = store.effects.rows(REF)
    superseded = [r for r in rows if r.result.get("supersededBy")]
    assert len(superseded) == sum(1 for r in rows if r.effect.kind == "publish-gate") - 1

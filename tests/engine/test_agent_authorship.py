"""Issue 24 §2 at the engine: the person whose ``the-loop execute`` dispatched the agent
is an author under ``preventSelfApproval`` (GitHub's rule for its coding agent,
platform-facts F4), and ``agentAuthored: {approvals: 2}`` asks for two approvals when the
work is agent-authored (an agent node claimed complete, or a bot's pull request)."""

from __future__ import annotations

import pytest

from engine.approvals import ApprovalRule
from engine.dispatch import agent_authored, dispatcher
from engine.errors import ConfigError
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
GATE = "requirements-approval"
REQUIREMENTS = "---\nstatus: approved\n---\n# Requirements\n\n## Requirements\n\n1. It works.\n"
AWARE = {"approvals": 1, "preventSelfApproval": True, "agentAuthored": {"approvals": 2}}


def _runtime(tracker: MemoryTracker, rules: dict[str, dict[str, object]]) -> Runtime:
    artifacts = MemoryArtifactStore()
    artifacts.write(REF, "requirements.md", REQUIREMENTS)
    settings = EngineSettings(authorized_users=("alice", "bob", "carol"), gate_rules={
        node: ApprovalRule.from_json(doc, f"gates.{node}") for node, doc in rules.items()})
    return Runtime(shipped_graph(), MemoryStore(), Ports(tracker, artifacts), settings)


def _dispatched_by_alice(rules: dict[str, dict[str, object]]) -> tuple[Runtime, ItemState]:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="dave")
    runtime = _runtime(tracker, rules)
    runtime.start(REF)
    execute = tracker.add_comment_as(REF, "alice", "the-loop execute\n- [ ] brainstorming")
    runtime.advance(REF, {"comments": [execute]})
    state = runtime.complete(REF, "requirements-definition", "agent")
    assert state.current_node == GATE
    return runtime, state


def _click(runtime: Runtime, login: str, node: str = GATE) -> ItemState:
    return runtime.advance(REF, {"comments": [Comment(0, login, "approved")], "via": "slack",
                                 "expectNode": node})


def test_the_dispatcher_and_the_agent_are_read_from_the_walk() -> None:
    runtime, state = _dispatched_by_alice({})
    assert dispatcher(runtime.graph, state) == "alice"
    assert agent_authored(runtime.graph, state) == (
        "an agent claimed requirements-definition complete")


def test_an_agent_authored_item_needs_two_humans_and_the_dispatcher_does_not_count() -> None:
    runtime, _ = _dispatched_by_alice({GATE: AWARE})

    refused = _click(runtime, "alice")
    assert refused.current_node == GATE
    assert refused.surface["approvals"][GATE]["refused"][-1]["reason"] == (
        "@alice dispatched the agent that did this work (the-loop execute), and this gate "
        "has preventSelfApproval: who asked for the work cannot approve it")

    one = _click(runtime, "bob")
    assert one.current_node == GATE
    assert str(one.parked.reason).startswith("1 of 2 approvals (agent-authored): @bob — ")

    two = _click(runtime, "carol")
    assert two.current_node == "design"
    assert two.decisions[GATE]["approvers"] == ["@bob", "@carol"]


def test_without_agent_authored_the_executor_may_still_approve_as_before() -> None:
    runtime, _ = _dispatched_by_alice({GATE: {"preventSelfApproval": True}})
    assert _click(runtime, "alice").current_node == "design"


def test_a_bots_pull_request_makes_the_work_agent_authored() -> None:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="dave")
    tracker.add_pull_request(REF, 8, author="copilot-swe-agent[bot]")
    runtime = _runtime(tracker, {"human-approval": {"agentAuthored": {"approvals": 2}}})
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test: straight to the gate", "tester")
    state = _click(runtime, "bob", "human-approval")
    assert state.current_node == "human-approval"
    assert str(state.parked.reason).startswith("1 of 2 approvals (agent-authored): @bob")
    assert _click(runtime, "carol", "human-approval").current_node == "complete"


def test_work_nobody_handed_to_an_agent_needs_the_plain_count() -> None:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="dave")
    tracker.add_pull_request(REF, 8, author="erin")
    runtime = _runtime(tracker, {"human-approval": {"agentAuthored": {"approvals": 2}}})
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test: forced past every agent node", "tester")
    assert _click(runtime, "bob", "human-approval").current_node == "complete"


@pytest.mark.parametrize(("doc", "message"), [
    ({"agentAuthored": 2},
     "gates.x.agentAuthored: must be a mapping with approvals (e.g. {approvals: 2})"),
    ({"agentAuthored": {"approvals": 0}},
     "gates.x.agentAuthored.approvals: must be a whole number ≥ 1, got 0"),
    ({"agentAuthored": {"approvals": 2, "humans": 1}},
     "gates.x.agentAuthored: must be a mapping with approvals (e.g. {approvals: 2})"),
])
def test_a_bad_agent_rule_is_a_config_error(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ApprovalRule.from_json(doc, "gates.x")
    assert str(caught.value) == message


def test_the_rule_reads_back() -> None:
    rule = ApprovalRule.from_json(AWARE)
    assert rule.agent_approvals == 2
    assert ApprovalRule.from_json(rule.to_json()) == rule



def test_claimed_agent_nodes_are_named_in_graph_order_however_visits_are_ordered() -> None:
    # walk_signals looks the item's few visited nodes up among the agent nodes (issue 21
    # §3: not every agent node per item); the claim still names them in graph order, with
    # few visits and with as many visits as there are agent nodes.
    from engine.dispatch import _roles, walk_signals
    from engine.visits import Visit

    graph = shipped_graph()
    agents = _roles(graph).agents
    assert len(agents) > 3
    passed = (Visit(1, "t", "t", "pass"),)
    forced = (Visit(1, "t", "t", "pass", forced=True),)
    few = ItemState(ref=REF)
    few.visits = {agents[2]: passed, "phase-selection": passed, agents[0]: passed,
                  agents[1]: forced}
    assert walk_signals(graph, few) == [f"an agent claimed {agents[0]}, {agents[2]} complete"]
    many = ItemState(ref=REF)
    many.visits = {node: passed for node in reversed(agents)}
    assert walk_signals(graph, many) == [f"an agent claimed {', '.join(agents)} complete"]
    assert walk_signals(graph, ItemState(ref=REF)) == []

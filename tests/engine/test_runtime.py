"""The runtime (issue 2 §4; docs/ARCHITECTURE.md "Runtime semantics"), on miniature graphs,
over both stores."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.errors import ClaimRefused, LoopgateError
from engine.hooks.registry import REGISTRY
from engine.records import OptIn, Skip
from engine.refs import WorkItemRef
from engine.report import NOT_SELECTED_LINE
from engine.runtime import AMNESTY, Runtime
from engine.settings import EngineSettings
from engine.state import ItemStatus
from tests.engine.runtime_support import (
    REF,
    compile_mini,
    kinds,
    make_runtime,
    make_store,
    mini_mapping,
    say,
)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


@pytest.fixture
def rt(store: Any) -> Runtime:
    return make_runtime(store)


def _events(rt: Runtime, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in rt.store.events(REF) if e["kind"] == kind]


def _entered_nodes(rt: Runtime) -> list[str]:
    return [d["node"] for d in _events(rt, "test.entered")]


def _statuses(rt: Runtime, recompute: bool = False) -> dict[str, str]:
    return {n["id"]: n["status"] for n in rt.status(REF, recompute=recompute)["nodes"]}


def _edit_state(rt: Runtime, change: Any) -> None:
    """Hand-edit the stored state (what a forger with database access could do)."""
    with rt.store.transaction(REF) as tx:
        change(tx.state)


def _graph(change: Any) -> Any:
    mapping = mini_mapping()
    change(mapping)
    return compile_mini(mapping)


# -- start -------------------------------------------------------------------------------
def test_start_parks_at_the_start_gate_after_its_entry_chain(rt: Runtime) -> None:
    state = rt.start(REF)
    assert state.current_node == "select"
    assert state.status == ItemStatus.PARKED
    assert state.parked.reason == "waiting for the phase selection"
    assert kinds(rt.store.events(REF)) == [
        "graph.started", "graph.advanced", "test.entered", "graph.parked"]
    assert rt.ports.tracker.labels(REF) == ["loop:selection"]


def test_start_is_idempotent_and_never_rewinds(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    before = rt.store.load(REF)
    again = rt.start(REF)
    assert again.current_node == "a" == before.current_node
    assert again.to_document() == before.to_document()
    assert kinds(rt.store.events(REF)).count("graph.started") == 1


def test_start_saves_the_started_state_even_when_an_entry_hook_raises(store: Any) -> None:
    graph = _graph(lambda m: m["nodes"][0].update(entry=["t-boom", "t-log"]))
    rt = make_runtime(store, graph)
    state = rt.start(REF)
    assert state.current_node == "select"
    assert rt.store.load(REF).started_at != ""
    degraded = _events(rt, "graph.hook_degraded")
    assert degraded == [{"node": "select", "hook": "t-boom", "chain": "entry",
                         "error": "RuntimeError"}]
    assert "ghp_secretsecret" not in repr(rt.store.events(REF))
    assert _entered_nodes(rt) == []  # the chain stopped at the failing hook


def test_start_repairs_an_item_saved_but_never_entered(rt: Runtime) -> None:
    with rt.store.transaction(REF) as tx:  # a crash right after the first transaction
        state = tx.create("mini")
        state.current_node = "select"
    state = rt.start(REF)
    assert state.nodes["select"].entered_at != ""
    assert _entered_nodes(rt) == ["select"]
    rt.start(REF)
    assert _entered_nodes(rt) == ["select"]


def test_start_routes_through_declared_skips_without_labels_or_log_entries(rt: Runtime) -> None:
    accepted, rejected = rt.declare_skips(REF, ["chain"], "docs-only change", "@bob")
    assert accepted == {"a": "chain", "b": "chain"} and rejected == {}
    rt.start(REF)
    state = rt.advance(REF, say(rt, "alice", "select"))
    assert state.current_node == "gate"
    assert state.nodes["a"].outcome == "skipped"
    assert state.nodes["critic"].outcome == "skipped"
    assert state.nodes["a"].entered_at == state.nodes["a"].exited_at != ""
    assert _entered_nodes(rt) == ["select", "gate"]
    assert rt.ports.tracker.labels(REF) == ["loop:selection", "loop:review"]
    skipped = _events(rt, "graph.node_skipped")
    assert skipped == [{"node": "a", "via": "declaration", "token": "chain"},
                       {"node": "critic", "via": "not-selected"}]
    advanced = [(d.get("from"), d["to"]) for d in _events(rt, "graph.advanced")]
    assert advanced == [(None, "select"), ("critic", "gate")]


def test_a_skip_chosen_at_selection_is_routed_with_outcome_skipped(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select skip=a"))
    state = rt.store.load(REF)
    assert state.current_node == "gate"
    assert state.skips["a"].via == "selection" and state.skips["a"].by == "@alice"
    assert state.nodes["a"].outcome == "skipped"
    assert _events(rt, "graph.skips_declared")[0]["skips"]["a"]["token"] == "a"


# -- opt-in nodes ------------------------------------------------------------------------
def test_unselected_opt_in_node_is_routed_around_with_no_declaration(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "gate"
    assert "critic" not in state.skips and state.opt_ins == {}
    assert state.nodes["critic"].outcome == "skipped"
    assert rt.declared_skips(state)["critic"].to_json() == {"via": "not-selected"}
    for recompute in (False, True):
        node = next(n for n in rt.status(REF, recompute)["nodes"] if n["id"] == "critic")
        assert node["status"] == "not selected"
        assert node["detail"] == NOT_SELECTED_LINE


def test_selected_opt_in_node_is_walked_and_gates_its_artifact(rt: Runtime) -> None:
    rt.start(REF)
    state = rt.advance(REF, say(rt, "alice", "select optin=critic"))
    assert state.opt_ins["critic"].via == "selection"
    assert rt.selected(state, "critic") and "critic" not in rt.declared_skips(state)
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "critic"
    assert state.parked.reason == "waiting for critic to be claimed complete"
    state = rt.complete(REF, "critic", "agent-1")
    assert state.current_node == "critic"
    assert state.nodes["critic"].last_block == "critic.md is missing"
    assert _statuses(rt)["critic"] == "blocked"
    rt.ports.artifacts.write(REF, "critic.md", "# findings\n")
    state = rt.complete(REF, "critic", "agent-1")
    assert state.current_node == "gate"
    assert state.nodes["critic"].outcome == "pass"
    assert state.nodes["critic"].last_block == ""  # issue 14 §9: cleared on the pass
    assert state.nodes["critic"].to_mapping()["lastBlock"] == ""
    assert "critic" in _entered_nodes(rt)
    assert _statuses(rt)["critic"] == "passed"


def test_forged_opt_in_on_a_normal_node_is_inert(rt: Runtime) -> None:
    rt.start(REF)
    _edit_state(rt, lambda s: s.opt_ins.update({"b": OptIn("forged")}))
    state = rt.advance(REF, say(rt, "alice", "select optin=gate"))
    assert not rt.selected(state, "b") and not rt.selected(state, "gate")
    assert "gate" not in state.opt_ins
    assert _events(rt, "graph.skips_rejected") == [
        {"node": "select", "rejected": {"gate": "gate is not an opt-in phase"}}]
    report = rt.status(REF)
    assert report["optIns"] == {}
    assert [i["node"] for i in report["invalidOptIns"]] == ["b"]
    assert rt.declared_skips(state)["critic"].to_json() == {"via": "not-selected"}


def test_deleting_a_selection_reverts_to_not_selected_never_pass(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select optin=critic"))
    _edit_state(rt, lambda s: s.opt_ins.clear())
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "gate"  # routed around: no longer selected
    assert _events(rt, "graph.node_skipped") == [{"node": "critic", "via": "not-selected"}]
    assert _statuses(rt)["critic"] == _statuses(rt, True)["critic"] == "not selected"


def test_deleting_a_selection_after_the_walk_still_reads_not_selected(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select optin=critic"))
    rt.complete(REF, "a", "agent-1")
    rt.ports.artifacts.write(REF, "critic.md", "ok")
    rt.complete(REF, "critic", "agent-1")
    assert _statuses(rt)["critic"] == "passed"
    _edit_state(rt, lambda s: s.opt_ins.clear())
    assert _statuses(rt)["critic"] == _statuses(rt, True)["critic"] == "not selected"


# -- skips -------------------------------------------------------------------------------
def test_forged_skip_on_a_required_node_is_inert_and_reported_not_skippable(rt: Runtime) -> None:
    rt.declare_skips(REF, ["b"], "plan", "@bob")
    _edit_state(rt, lambda s: s.skips.update({
        "select": Skip("forged", "select"), "gate": Skip("forged")}))
    state = rt.start(REF)
    assert state.current_node == "select"  # walked, not skipped
    assert set(rt.declared_skips(state)) == {"b", "critic"}
    state = rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    report = rt.status(REF)
    assert [(i["node"], i["reason"]) for i in report["invalidSkips"]] == [
        ("select", "not skippable"), ("gate", "not skippable")]
    statuses = {n["id"]: n["status"] for n in report["nodes"]}
    assert statuses["select"] == "passed" and statuses["gate"] == "waiting"
    assert set(report["skips"]) == {"b", "critic"}


def test_declare_skips_refuses_entered_nodes_opt_ins_and_protected_nodes(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))  # now at a (entered)
    accepted, rejected = rt.declare_skips(
        REF, ["chain", "critic", "select", "nope"], "too slow", "@bob")
    assert accepted == {"b": "chain"}
    assert rejected["a"] == f"{AMNESTY}: a was already entered"
    assert "opt-in phase" in rejected["critic"] and "says nothing" in rejected["critic"]
    assert rejected["select"] == "'select' is not skippable"
    assert rejected["nope"] == "'nope' is neither a node nor a skip set of mini"
    state = rt.store.load(REF)
    assert state.skips["b"].to_json() == {"via": "declaration", "token": "chain", "by": "@bob",
                                "reason": "too slow", "at": state.skips["b"].at}
    assert "a" not in state.skips
    assert state.current_node == "a"  # no routing happens on a declaration
    assert _events(rt, "graph.skips_declared") == [
        {"via": "declaration", "skips": {"b": "chain"}, "by": "@bob", "reason": "too slow"}]
    assert set(_events(rt, "graph.skips_rejected")[0]["rejected"]) == {
        "a", "critic", "select", "nope"}


@pytest.mark.parametrize("reason", ["", "   "])
def test_declare_skips_requires_a_reason(rt: Runtime, reason: str) -> None:
    with pytest.raises(LoopgateError, match="reason"):
        rt.declare_skips(REF, ["a"], reason, "@bob")


def test_a_selection_cannot_skip_or_add_a_node_already_walked(store: Any) -> None:
    def late_selection(m: dict[str, Any]) -> None:
        m["nodes"][3]["exit"] = ["t-select"]
        m["edges"][5] = {"from": "gate", "to": "b", "on": "selected"}
    rt = make_runtime(store, _graph(late_selection))
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")  # a walked, critic routed around (not selected)
    state = rt.advance(REF, say(rt, "alice", "select skip=a,b optin=critic"))
    assert state.skips == {"b": state.skips["b"]} and state.opt_ins == {}
    assert _events(rt, "graph.skips_rejected") == [{"node": "gate", "rejected": {
        "a": f"{AMNESTY}: a was already entered",
        "critic": "a selection cannot add critic: it was already entered"}}]
    assert state.nodes["a"].outcome == "pass"
    assert state.status == ItemStatus.COMPLETE  # b skipped by the accepted part


def test_declaring_every_phase_away_walks_the_item_to_complete(store: Any) -> None:
    mapping = {
        "version": 1, "name": "tiny", "start": "select",
        "nodes": [
            {"id": "select", "actor": "human", "required": True, "exit": ["t-select"]},
            {"id": "a", "actor": "agent", "skippable": True, "entry": ["t-log"]},
            {"id": "b", "actor": "code", "skippable": True, "entry": ["t-log"]},
            {"id": "extra", "actor": "agent", "optIn": True, "entry": ["t-log"]},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        "edges": [
            {"from": "select", "to": "a", "on": "selected"},
            {"from": "a", "to": "b", "on": "pass"}, {"from": "a", "to": "b", "on": "skipped"},
            {"from": "b", "to": "extra", "on": "pass"},
            {"from": "b", "to": "extra", "on": "skipped"},
            {"from": "extra", "to": "done", "on": "pass"},
            {"from": "extra", "to": "done", "on": "skipped"},
        ],
    }
    rt = make_runtime(store, compile_mini(mapping))
    rt.start(REF)
    state = rt.advance(REF, say(rt, "alice", "the-loop execute select skip=a,b"))
    assert state.current_node == "done" and state.status == ItemStatus.COMPLETE
    assert _entered_nodes(rt) == []
    report = rt.status(REF)
    assert report["ok"] is True and report["unmet"] == []
    assert {n["id"]: n["status"] for n in report["nodes"]} == {
        "select": "passed", "a": "skipped", "b": "skipped", "extra": "not selected",
        "done": "current"}
    assert _events(rt, "graph.completed") == [{"node": "done"}]


# -- complete claims ---------------------------------------------------------------------
def test_complete_is_refused_before_start(rt: Runtime) -> None:
    with pytest.raises(ClaimRefused) as err:
        rt.complete(REF, "a", "agent-1")
    assert err.value.code == "not-started"


@pytest.mark.parametrize(("node", "code"), [
    ("nope", "unknown-node"),
    ("select", "already-past"),
    ("gate", "not-current"),
    ("b", "not-current"),
])
def test_complete_claim_refusals(rt: Runtime, node: str, code: str) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))  # at a
    with pytest.raises(ClaimRefused) as err:
        rt.complete(REF, node, "agent-1")
    assert err.value.code == code
    assert node in str(err.value)
    assert rt.store.load(REF).completions == {}


def test_complete_of_a_skipped_node_is_already_past(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select skip=a"))
    with pytest.raises(ClaimRefused) as err:
        rt.complete(REF, "a", "agent-1")
    assert err.value.code == "already-past"


def test_complete_records_the_claim_and_moves_on(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    state = rt.complete(REF, "a", "agent-1")
    assert state.completions["a"].by == "agent-1"
    assert state.nodes["a"].outcome == "pass" and state.current_node == "gate"


def test_complete_after_the_end_is_refused_as_finished(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select skip=a"))
    rt.advance(REF, say(rt, "alice", "approve"))
    with pytest.raises(ClaimRefused) as err:
        rt.complete(REF, "done", "agent-1")
    assert err.value.code == "finished"


# -- advance -----------------------------------------------------------------------------
def test_advance_before_start_is_refused(rt: Runtime) -> None:
    with pytest.raises(ClaimRefused) as err:
        rt.advance(REF, {})
    assert err.value.code == "not-started"


def test_advance_on_an_agent_node_changes_nothing_and_logs_nothing(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    before, events = rt.store.load(REF), rt.store.events(REF)
    after = rt.advance(REF, say(rt, "alice", "approve"))
    assert after.to_document() == before.to_document()
    assert rt.store.events(REF) == events


def test_the_same_wait_is_logged_once(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "mallory", "select skip=a"))  # unauthorized: still waiting
    rt.advance(REF, {})
    assert len(_events(rt, "graph.parked")) == 1
    assert rt.store.load(REF).current_node == "select"


def test_an_answered_gate_stays_passed_in_check(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    state = rt.advance(REF, say(rt, "alice", "approve"))
    assert state.status == ItemStatus.COMPLETE
    assert state.decisions["gate"]["by"] == "alice"
    for recompute in (False, True):
        report = rt.status(REF, recompute)
        nodes = {n["id"]: n for n in report["nodes"]}
        assert nodes["select"]["status"] == "passed"
        assert nodes["gate"]["status"] == "passed"
        assert nodes["gate"]["detail"] == "outcome approved; decided by alice"
        assert nodes["b"]["status"] == "passed"
        assert report["ok"] is True
    assert rt.status(REF)["phaseSelection"]["via"] == "reply"


def test_gate_decisions_are_kept_per_visit(store: Any) -> None:
    # Issue 19 §2 replaced "first answer wins for the item's life": each visit to the gate
    # has its own decision; ``decisions`` is the current visit's, the history keeps both.
    graph = _graph(lambda m: m["edges"].__setitem__(5, {"from": "gate", "to": "a",
                                                        "on": "approved"}))
    rt = make_runtime(store, graph)
    rt.settings = EngineSettings(authorized_users=("alice", "bob"), loop="mini")
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    rt.advance(REF, say(rt, "alice", "approve"))  # back to a
    rt.complete(REF, "a", "agent-1")
    state = rt.advance(REF, say(rt, "bob", "approve"))
    assert state.decisions["gate"]["by"] == "bob"
    visits = rt.store.load(REF).history("gate")
    assert [(v.number, v.outcome, v.decision.by if v.decision else None)
            for v in visits[:2]] == [(1, "approved", "alice"), (2, "approved", "bob")]
    assert visits[0].exited_at < visits[1].entered_at


def test_within_a_visit_the_first_answer_wins(store: Any) -> None:
    rt = make_runtime(store)
    rt.settings = EngineSettings(authorized_users=("alice", "bob"), loop="mini")
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    with rt.store.transaction(REF) as tx:  # the open visit to a
        assert tx.state.record_decision("a", {"by": "@alice", "outcome": "approved"})
        assert not tx.state.record_decision("a", {"by": "@bob", "outcome": "approved"})
    state = rt.store.load(REF)
    assert state.decision("a").by == "@alice"
    assert [v.number for v in state.history("a")] == [1]


def test_changes_requested_loops_back_and_reenters(rt: Runtime) -> None:
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    state = rt.advance(REF, say(rt, "alice", "changes please"))
    assert state.current_node == "a"
    assert state.nodes["gate"].outcome == "changes-requested"
    assert state.nodes["a"].exited_at == "" and state.nodes["a"].outcome == ""
    assert "gate" not in state.decisions
    assert _entered_nodes(rt) == ["select", "a", "gate", "a"]


def test_a_human_node_whose_answer_is_present_passes_on_entry(store: Any) -> None:
    def no_inputs(m: dict[str, Any]) -> None:
        m["nodes"][3]["exit"] = []
        m["edges"].append({"from": "gate", "to": "b", "on": "pass"})
    rt = make_runtime(store, _graph(no_inputs))
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    state = rt.complete(REF, "a", "agent-1")
    assert state.nodes["gate"].outcome == "pass" and state.status == ItemStatus.COMPLETE


def test_no_edge_for_an_outcome_parks_the_item(store: Any) -> None:
    rt = make_runtime(store, _graph(lambda m: m["edges"].pop(6)))  # gate changes-requested
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    state = rt.advance(REF, say(rt, "alice", "changes"))
    assert state.current_node == "gate" and state.status == ItemStatus.PARKED
    assert state.parked.reason == "no edge leaves gate on 'changes-requested'"
    assert _events(rt, "graph.no_edge") == [{"node": "gate", "outcome": "changes-requested"}]


# -- hook chains -------------------------------------------------------------------------
def test_entry_surface_is_merged_at_once_so_later_hooks_see_it(store: Any) -> None:
    graph = _graph(lambda m: m["nodes"][0].update(entry=[
        {"hook": "t-surface", "with": {"key": "key", "value": "v1"}}, "t-copy-surface"]))
    rt = make_runtime(store, graph)
    state = rt.start(REF)
    assert state.surface == {"key": "v1", "copied": "v1"}


def test_an_entry_wait_never_gates_and_is_noted(store: Any) -> None:
    graph = _graph(lambda m: m["nodes"][1].update(entry=["t-entry-wait", "t-log"]))
    rt = make_runtime(store, graph)
    rt.start(REF)
    state = rt.advance(REF, say(rt, "alice", "select"))
    assert state.current_node == "a"
    assert state.parked.reason == "waiting for a to be claimed complete"
    assert _events(rt, "graph.hook_degraded") == [{
        "node": "a", "hook": "t-entry-wait", "chain": "entry", "kind": "wait",
        "reason": "entry hooks cannot make anyone wait"}]


def test_a_raising_exit_hook_is_a_non_retriable_block(store: Any) -> None:
    rt = make_runtime(store, _graph(lambda m: m["nodes"][1].update(exit=["t-boom"])))
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "a"
    assert state.nodes["a"].attempts == 1
    assert state.nodes["a"].last_block == "the t-boom hook failed to run"
    assert _events(rt, "graph.blocked") == [{"node": "a", "reason": "the t-boom hook failed to run",
                                             "attempts": 1, "retriable": False}]
    assert "ghp_secretsecret" not in repr(rt.store.events(REF))
    # the same block again escalates
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "escalated" and state.status == ItemStatus.ESCALATED
    assert _events(rt, "graph.escalated") == [
        {"node": "a", "reason": "the t-boom hook failed to run", "attempts": 2}]
    assert _statuses(rt)["a"] == "escalated"


def test_blocks_escalate_after_max_attempts(store: Any) -> None:
    graph = _graph(lambda m: m["nodes"][4].update(exit=["t-block"], maxAttempts=3))
    rt = make_runtime(store, graph)
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select skip=a"))
    state = rt.advance(REF, say(rt, "alice", "approve"))  # b (code) blocks on entry
    assert state.current_node == "b" and state.nodes["b"].attempts == 1
    assert _statuses(rt)["b"] == "blocked"
    state = rt.advance(REF, {"why": "second reason"})
    assert state.nodes["b"].attempts == 2 and state.current_node == "b"
    state = rt.advance(REF, {"why": "third reason"})
    assert state.current_node == "escalated"
    assert _events(rt, "graph.escalated")[0]["attempts"] == 3
    assert rt.status(REF)["status"] == "escalated"


def test_escalation_without_an_escalated_node_stops_at_the_node(store: Any) -> None:
    def change(m: dict[str, Any]) -> None:
        m["nodes"].pop()
        m["nodes"][1]["exit"] = ["t-block"]
    rt = make_runtime(store, _graph(change))
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select"))
    rt.complete(REF, "a", "agent-1")
    state = rt.complete(REF, "a", "agent-1")
    assert state.current_node == "a" and state.status == ItemStatus.ESCALATED
    assert _statuses(rt)["a"] == "escalated"


def test_attestation_decisions_are_shown_in_check(store: Any) -> None:
    rt = make_runtime(store, _graph(lambda m: m["nodes"][3].update(exit=["t-attest"])))
    rt.start(REF)
    rt.advance(REF, say(rt, "alice", "select skip=a"))
    rt.advance(REF, {"attestation": {"comment_id": 5, "url": "local://acme/widgets#7/comment-5"}})
    report = rt.status(REF)
    assert report["attestations"] == [{"node": "gate", "attestedBy": "alice",
                                       "attestedAt": "2026-03-01T12:30:00Z",
                                       "comment": "local://acme/widgets#7/comment-5"}]


# -- force -------------------------------------------------------------------------------
def test_force_is_recorded_and_never_satisfies_the_gate(rt: Runtime) -> None:
    rt.start(REF)
    with pytest.raises(LoopgateError, match="reason"):
        rt.force(REF, "a", " ", "@ops")
    state = rt.force(REF, "a", "gate is stuck", "@ops")
    assert state.current_node == "a"
    assert [m.to_json() for m in state.forced] == [{
        "from": "select", "to": "a", "reason": "gate is stuck", "by": "@ops",
        "at": state.forced[0].at}]
    assert state.nodes["select"].forced and state.nodes["a"].forced
    assert state.nodes["select"].outcome == "" and "select" not in state.decisions
    assert _events(rt, "graph.forced") == [{"from": "select", "to": "a",
                                            "reason": "gate is stuck", "by": "@ops"}]
    # A forced move enters ``a`` like any move: its entry chain ran (on a forced visit),
    # its exit chain did not (a forced move decides no gate).
    assert _entered_nodes(rt) == ["select", "a"]
    assert rt.ports.tracker.labels(REF) == ["loop:selection", "loop:build"]
    assert state.visit("a") is not None and state.visit("a").forced
    assert state.nodes["a"].outcome == "" and "a" not in state.decisions
    report = rt.status(REF)
    select = report["nodes"][0]
    assert select["status"] == "forced past" and select["forced"] is True
    assert "select" in [u["node"] for u in report["unmet"]]
    with pytest.raises(ClaimRefused) as err:
        rt.complete(REF, "select", "agent-1")
    assert err.value.code == "already-past"


def test_force_to_the_end_is_not_ok_in_check(rt: Runtime) -> None:
    rt.start(REF)
    state = rt.force(REF, "done", "abandon", "@ops")
    assert state.status == ItemStatus.COMPLETE
    report = rt.status(REF)
    assert report["ok"] is False
    assert [u["node"] for u in report["unmet"]] == ["select", "a", "gate", "b"]
    assert report["forced"][0]["to"] == "done"


def test_force_refusals(rt: Runtime) -> None:
    with pytest.raises(ClaimRefused) as err:
        rt.force(REF, "a", "why", "@ops")
    assert err.value.code == "not-started"
    rt.start(REF)
    with pytest.raises(ClaimRefused) as err:
        rt.force(REF, "nowhere", "why", "@ops")
    assert err.value.code == "unknown-node"


def test_status_of_an_unknown_item_is_refused(rt: Runtime) -> None:
    with pytest.raises(ClaimRefused) as err:
        rt.status(WorkItemRef("acme", "widgets", 99))
    assert err.value.code == "not-started"


def test_hook_data_is_stored_as_json(store: Any) -> None:
    rt = make_runtime(store)
    rt.start(REF)
    event = say(rt, "alice", "select")
    rt.advance(REF, copy.copy(event))
    # The step clock moves a second per reading (the performer reads it after each commit).
    assert rt.store.load(REF).decisions["select"] == {"by": "@alice", "via": "reply",
                                                      "at": "2026-03-01T12:00:10Z"}


# -- with the shipped graph and its real hooks -------------------------------------------
def test_shipped_graph_skips_chosen_at_selection_get_no_label_and_no_log_entry(
    store: Any,
) -> None:
    from engine.graph.compiler import shipped_graph

    rt = make_runtime(store, shipped_graph(), registry=REGISTRY)
    rt.settings = EngineSettings(authorized_users=("alice",))
    rt.start(REF)
    reply = "the-loop execute\n- [ ] brainstorming\n- [ ] requirements-definition\n"
    state = rt.advance(REF, say(rt, "alice", reply))
    assert state.current_node == "requirements-approval"
    assert [state.nodes[n].outcome for n in ("brainstorming", "requirements-definition")] == [
        "skipped", "skipped"]
    assert rt.ports.tracker.labels(REF) == ["loop:phase-selection"]
    entered = [d["node"] for d in _events(rt, "graph.node_entered")]
    assert entered == ["phase-selection", "requirements-approval"]
    assert [d["node"] for d in _events(rt, "graph.node_skipped")] == [
        "brainstorming", "requirements-definition"]
    report = rt.status(REF)
    critic = next(n for n in report["nodes"] if n["id"] == "design-critic-review")
    assert critic["status"] == "not selected"
    brainstorming = next(n for n in report["nodes"] if n["id"] == "brainstorming")
    assert brainstorming["detail"] == (
        "skipped by declaration — via selection, token 'brainstorming', by @alice")


def test_an_event_bound_to_another_node_changes_nothing(tmp_path) -> None:
    """``expectNode`` makes a late ingress (Slack's Execute) a no-op once the pointer moved."""
    from engine.graph.compiler import shipped_graph
    from engine.local.checkout import CheckoutArtifactStore
    from engine.local.memory_tracker import MemoryTracker
    from engine.ports import Comment, Ports
    from engine.refs import WorkItemRef
    from engine.runtime import Runtime
    from engine.settings import EngineSettings
    from engine.store.memory import MemoryStore

    ref = WorkItemRef("acme", "widgets", 9)
    tracker = MemoryTracker()
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, CheckoutArtifactStore(tmp_path, "docs/specs")),
                      EngineSettings(authorized_users=("alice",)))
    runtime.start(ref)
    reply = Comment(id=0, author="alice", body="the-loop execute")
    stale = runtime.advance(ref, {"comments": [reply], "expectNode": "design-approval"})
    assert stale.current_node == "phase-selection" and not stale.decisions
    moved = runtime.advance(ref, {"comments": [reply], "expectNode": "phase-selection"})
    assert moved.decisions["phase-selection"]["by"] == "@alice"

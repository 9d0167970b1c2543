"""The check report (issue 2 §4 provenance lines; opt-in design "Security design")."""

from __future__ import annotations

import pytest

from engine.records import ForcedMove, OptIn, Parked, Skip
from engine.report import (
    NO_DECLARATION_LINE,
    NOT_SELECTED_LINE,
    build_report,
    render_table,
    skip_provenance,
)
from engine.state import ItemState, ItemStatus, NodeRecord
from tests.engine.runtime_support import REF, compile_mini

GRAPH = compile_mini()
DECLARED = Skip("declaration", "chain", "@bob", "tiny change", "t")


def _state(current: str = "gate", status: str = ItemStatus.PARKED, **records: NodeRecord
           ) -> ItemState:
    state = ItemState(ref=REF, loop="mini", current_node=current, status=status)
    state.nodes.update(records)
    return state


def _passed(outcome: str = "pass") -> NodeRecord:
    return NodeRecord(outcome=outcome, entered_at="t1", exited_at="t2")


def _skipped() -> NodeRecord:
    return NodeRecord(outcome="skipped", entered_at="t1", exited_at="t1")


def _nodes(state: ItemState, recompute: bool = False) -> dict[str, tuple[str, str]]:
    report = build_report(GRAPH, state, recompute=recompute)
    return {n["id"]: (n["status"], n["detail"]) for n in report["nodes"]}


def test_provenance_lines_are_exact() -> None:
    assert skip_provenance(DECLARED) == (
        "skipped by declaration — via declaration, token 'chain', by @bob, reason: tiny change")
    assert skip_provenance(Skip("selection", "explainer", "@alice", "")) == (
        "skipped by declaration — via selection, token 'explainer', by @alice")
    assert skip_provenance(Skip("not-selected")) == NOT_SELECTED_LINE
    assert NOT_SELECTED_LINE == (
        "not selected — an opt-in phase, off unless it is ticked at phase-selection")


@pytest.mark.parametrize("recompute", [False, True])
def test_a_skipped_node_is_never_reported_as_passed(recompute: bool) -> None:
    state = _state(select=_passed("selected"), a=_skipped(), critic=_skipped())
    state.skips["a"] = DECLARED
    nodes = _nodes(state, recompute)
    assert nodes["a"] == ("skipped", skip_provenance(DECLARED))
    assert nodes["critic"] == ("not selected", NOT_SELECTED_LINE)
    assert "declaration" not in nodes["critic"][1]


def test_a_declaration_on_a_selected_opt_in_node_reads_as_a_declaration() -> None:
    state = _state(select=_passed("selected"), a=_passed(), critic=_skipped())
    state.opt_ins["critic"] = OptIn("selection", "@alice")
    state.skips["critic"] = DECLARED
    assert _nodes(state)["critic"] == ("skipped", skip_provenance(DECLARED))


@pytest.mark.parametrize("recompute", [False, True])
def test_a_skip_with_no_declaration_on_record_is_unmet(recompute: bool) -> None:
    state = _state(select=_passed("selected"), a=_skipped())
    report = build_report(GRAPH, state, recompute=recompute)
    a = next(n for n in report["nodes"] if n["id"] == "a")
    assert (a["status"], a["detail"]) == ("skipped", NO_DECLARATION_LINE)
    assert "a" in [u["node"] for u in report["unmet"]]


def test_recompute_reads_declarations_instead_of_stored_outcomes() -> None:
    state = _state(select=_passed("selected"), a=_passed())
    state.skips["a"] = DECLARED  # forged after the walk: a did pass
    assert _nodes(state)["a"] == ("passed", "outcome pass")
    assert _nodes(state, recompute=True)["a"] == ("skipped", skip_provenance(DECLARED))


@pytest.mark.parametrize("recompute", [False, True])
def test_a_planned_skip_of_a_node_not_reached_reads_skipped(recompute: bool) -> None:
    state = _state(current="a", status=ItemStatus.PARKED, select=_passed("selected"))
    state.skips["b"] = DECLARED
    assert _nodes(state, recompute)["b"] == ("skipped", skip_provenance(DECLARED))
    assert _nodes(state, recompute)["gate"] == ("not reached", "")


def test_current_node_words() -> None:
    waiting = _state(current="gate")
    waiting.parked = Parked("gate", "waiting for a decision at gate", "t")
    assert _nodes(waiting)["gate"] == ("waiting", "waiting for a decision at gate")
    blocked = _state(current="critic", critic=NodeRecord(attempts=1, last_block="x is missing"))
    blocked.parked = Parked("critic", "x is missing", "t", blocked=True)
    assert _nodes(blocked)["critic"] == ("blocked", "x is missing")
    running = _state(current="b", status=ItemStatus.RUNNING)
    assert _nodes(running)["b"] == ("current", "")
    stuck = _state(current="a", status=ItemStatus.ESCALATED)
    stuck.parked = Parked("a", "same block twice", "t", blocked=True)
    assert _nodes(stuck)["a"] == ("escalated", "same block twice")


def test_a_node_that_escalated_and_the_escalated_node() -> None:
    state = _state(current="escalated", status=ItemStatus.ESCALATED,
                   a=NodeRecord(attempts=2, outcome="escalated", entered_at="t",
                                exited_at="t", last_block="boom"))
    nodes = _nodes(state)
    assert nodes["a"] == ("escalated", "boom")
    assert nodes["escalated"][0] == "escalated"
    report = build_report(GRAPH, state)
    assert report["status"] == "escalated" and report["ok"] is False


def test_an_item_not_started_yet_shows_its_plan() -> None:
    state = ItemState(ref=REF, loop="mini")
    state.skips["a"] = DECLARED
    report = build_report(GRAPH, state)
    assert report["status"] == "not started" and report["currentNode"] == ""
    nodes = {n["id"]: n["status"] for n in report["nodes"]}
    assert nodes == {"select": "not reached", "a": "skipped", "critic": "not selected",
                     "gate": "not reached", "b": "not reached", "done": "not reached",
                     "escalated": "not reached"}


def test_invalid_skips_and_opt_ins_are_listed_and_inert() -> None:
    state = _state(select=_passed("selected"))
    state.skips.update({"select": Skip("forged"), "gate": Skip("forged"),
                        "ghost": Skip("forged")})
    state.opt_ins.update({"a": OptIn("forged"), "critic": OptIn("selection")})
    report = build_report(GRAPH, state)
    assert [(i["node"], i["reason"]) for i in report["invalidSkips"]] == [
        ("select", "not skippable"), ("gate", "not skippable"), ("ghost", "unknown node")]
    assert [(i["node"], i["reason"]) for i in report["invalidOptIns"]] == [
        ("a", "not an opt-in phase")]
    assert set(report["skips"]) == set() and set(report["optIns"]) == {"critic"}
    assert _nodes(state)["select"] == ("passed", "outcome selected")


def test_complete_items_are_ok_and_show_decisions() -> None:
    state = _state(current="done", status=ItemStatus.COMPLETE,
                   select=_passed("selected"), a=_passed(), critic=_skipped(),
                   gate=_passed("approved"), b=_passed(),
                   done=NodeRecord(entered_at="t"))
    state.record_decision("select", {"by": "@alice", "via": "checklist", "at": "t0"})
    state.record_decision("gate", {"attestedBy": "alice", "attestedAt": "t9",
                                   "comment": "local://x/comment-3"})
    report = build_report(GRAPH, state)
    assert report["ok"] is True and report["unmet"] == []
    assert report["phaseSelection"] == {"node": "select", "by": "@alice", "via": "checklist",
                                        "at": "t0"}
    assert report["attestations"] == [{"node": "gate", "attestedBy": "alice",
                                       "attestedAt": "t9", "comment": "local://x/comment-3"}]
    nodes = _nodes(state)
    assert nodes["select"] == ("passed", "outcome selected; decided by @alice via checklist")
    assert nodes["gate"] == ("passed", "outcome approved; attested by alice")
    assert nodes["done"] == ("current", "the walk is complete")
    assert report["document"] == state.to_document()


def test_render_table_lays_out_one_row_per_node() -> None:
    state = _state(current="gate", select=_passed("selected"), a=_skipped(), critic=_skipped())
    state.skips["a"] = DECLARED
    state.parked = Parked("gate", "waiting for a decision at gate", "t")
    state.record_decision("select", {"by": "@alice", "via": "reply"})
    state.forced.append(ForcedMove.from_json({"from": "x", "to": "gate", "by": "@ops",
                                              "reason": "stuck"}))
    state.skips["select"] = Skip("forged")
    text = render_table(build_report(GRAPH, state))
    assert text.splitlines() == [
        "acme/widgets#7 — mini — parked at gate — ok: no",
        "  select     passed        outcome selected; decided by @alice via reply",
        "  a          skipped       " + skip_provenance(DECLARED),
        "  critic     not selected  " + NOT_SELECTED_LINE,
        "  gate       waiting       waiting for a decision at gate",
        "  b          not reached",
        "  done       not reached",
        "  escalated  not reached",
        "unmet: gate, b",
        "forced: x → gate by @ops, reason: stuck",
        "invalid skip: select (not skippable; inert)",
        "phase selection: by @alice via reply",
    ]


def test_report_keys() -> None:
    report = build_report(GRAPH, _state())
    assert set(report) == {
        "workItem", "loop", "currentNode", "status", "ok", "recompute", "unmet", "nodes",
        "decisions", "parked", "forced", "skips", "optIns", "invalidSkips", "invalidOptIns",
        "attestations", "phaseSelection", "completions", "effects", "operatorRequests", "agent",
        "document"}
    assert report["effects"] == []
    assert report["operatorRequests"] == []  # issue 19 §5: none asked
    assert set(report["nodes"][0]) == {"id", "status", "detail", "outcome", "attempts",
                                       "forced"}


@pytest.mark.parametrize(("outcome", "word"), [("changes-requested", "changes requested"),
                                               ("stale", "sent back")])
@pytest.mark.parametrize("recompute", [False, True])
def test_a_gate_that_sent_the_item_back_is_never_reported_as_passed(
        outcome: str, word: str, recompute: bool) -> None:
    # The item went back to `a`: the gate is ahead again, waiting to be walked; it is unmet.
    state = _state("a", select=_passed("selected"), gate=_passed(outcome))
    report = build_report(GRAPH, state, recompute=recompute)
    nodes = {n["id"]: (n["status"], n["detail"]) for n in report["nodes"]}
    assert nodes["gate"] == (word, f"outcome {outcome}; the item went back: this gate waits "
                                   "to be walked again")
    assert {"node": "gate", "status": word} in report["unmet"]
    [row] = [r.split() for r in render_table(report).splitlines() if r.startswith("  gate ")]
    assert " ".join(row[1:3]) == word and "passed" not in row


def test_the_compact_line_names_reached_unmet_nodes_and_counts_the_rest() -> None:
    from engine.report import render_compact

    state = _state("a", select=_passed("selected"), gate=_passed("changes-requested"))
    assert render_compact(build_report(GRAPH, state)) == (
        "acme/widgets#7 — mini — parked at a — ok: no — unmet: a (waiting), gate (changes "
        "requested), 1 not reached")

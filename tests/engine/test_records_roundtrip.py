"""Issue 20 §1: decisions, skips, opt-ins and a gate's approvals are frozen types with one
(de)serialiser each; state written before (the ``state_before_visits.json`` fixture) and
state the typed door writes read back to the very documents stored, and a chat selection
records what the Execute click fed as a checklist reply recorded."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine import events as ev
from engine.approvals import GateApprovals
from engine.graph.compiler import shipped_graph
from engine.hooks.phase_selection import Selection, checklist_rows, reply_body
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.records import (
    NOT_PARKED,
    Completion,
    ForcedMove,
    OptIn,
    Parked,
    ReviewDecision,
    SelectionDecision,
    Skip,
)
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
    for skip in result.state.skips.values():
        assert Skip.from_json(skip.to_json()) == skip
    for opt_in in result.state.opt_ins.values():
        assert OptIn.from_json(opt_in.to_json()) == opt_in


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


# -- skips and opt-ins as the state holds them: any stored shape back byte for byte -------
ODD_SKIPS = [
    {},  # a forged, empty entry
    {"via": "forged"},
    {"token": "x", "via": "selection", "at": "t"},  # a custom hook's order
    {"via": "declaration", "i": 3},  # a key no field names
    {"via": "declaration", "by": None, "reason": 7, "nested": {"a": [1, {"b": None}]}},
    {"at": "t", "via": "selection", "token": "", "by": "", "reason": ""},
    {"via": "selection", "token": "t", "by": "@a", "reason": "", "at": ""},  # at kept empty
]
ODD_OPT_INS = [{}, {"via": "forged"}, {"by": "@a", "via": "selection"},
               {"via": "selection", "by": "@a", "at": "t", "note": ["x"]}]


def test_any_stored_skip_or_opt_in_is_written_back_byte_for_byte() -> None:
    for doc in ODD_SKIPS:
        assert json.dumps(Skip.from_json(doc).to_json()) == json.dumps(doc), doc
    for doc in ODD_OPT_INS:
        assert json.dumps(OptIn.from_json(doc).to_json()) == json.dumps(doc), doc


def test_odd_shapes_read_as_typed_values_and_keep_the_rest_aside() -> None:
    skip = Skip.from_json(ODD_SKIPS[4])
    assert (skip.via, skip.by, skip.reason, skip.token) == ("declaration", "", "", "")
    assert skip.extra == (("by", None), ("reason", 7), ("nested", {"a": [1, {"b": None}]}))
    assert Skip.from_json({"via": "forged"}) == Skip("forged")  # the order is not compared
    assert Skip.from_json({}).layout == () and Skip("forged").layout is None
    # A value kept aside is a copy: changing the document read changes no record.
    doc = {"via": "x", "nested": {"a": [1]}}
    kept = Skip.from_json(doc)
    doc["nested"]["a"].append(2)
    assert kept.to_json() == {"via": "x", "nested": {"a": [1]}}
    kept.to_json()["nested"]["a"].append(3)
    assert kept.to_json() == {"via": "x", "nested": {"a": [1]}}


def test_the_usual_shapes_need_no_layout() -> None:
    usual = {"via": "declaration", "token": "t", "by": "@b", "reason": "r", "at": "t1",
             "confirmedBy": "alice", "confirmedVia": "reply", "request": "3f9a1c2e"}
    skip = Skip.from_json(usual)
    assert skip.layout is None and skip.extra == () and skip.to_json() == usual
    assert skip.confirmed_by == "alice" and skip.request == "3f9a1c2e"
    assert Skip("selection", "t", "@a").to_json() == {"via": "selection", "token": "t",
                                                      "by": "@a", "reason": ""}
    assert OptIn.from_json({"via": "selection", "by": "@a", "at": "t"}).layout is None
    # The usual shape is built slot by slot (engine.records._usual_skip): every field set.
    declared = {"via": "declaration", "token": "t", "by": "@b", "reason": "r", "at": "t1"}
    fast = Skip.from_json(declared)
    assert repr(fast) == repr(Skip("declaration", "t", "@b", "r", "t1"))
    assert fast == Skip("declaration", "t", "@b", "r", "t1") and fast.layout is None
    assert [f.name for f in fields(Skip)] == ["via", "token", "by", "reason", "at",
                                              "confirmed_by", "confirmed_via", "request",
                                              "extra", "layout"]
    chosen = OptIn.from_json({"via": "selection", "by": "@a", "at": "t"})
    assert (repr(chosen), chosen.extra, chosen.layout) == (
        repr(OptIn("selection", "@a", "t")), (), None)
    assert [f.name for f in fields(OptIn)] == ["via", "by", "at", "extra", "layout"]


def test_a_plan_is_stamped_where_empty_and_a_field_set_since_is_written() -> None:
    # The runtime fills via and at of a gate's plan; a custom hook's order is kept and the
    # filled keys follow it, as the dict's setdefault wrote them before.
    custom = Skip.from_json({"token": "x"}).stamped("selection", "T")
    assert json.dumps(custom.to_json()) == json.dumps({"token": "x", "via": "selection",
                                                       "at": "T"})
    given = Skip("declaration", "x", at="t0").stamped("selection", "T")
    assert (given.via, given.at) == ("declaration", "t0")
    assert OptIn("", "@a").stamped("selection", "T") == OptIn("selection", "@a", "T")


def test_any_stored_completion_is_written_back_byte_for_byte() -> None:
    for doc in ({"by": "cli", "at": "t"}, {"at": "t", "by": "cli"}, {"by": "cli"}, {},
                {"by": "cli", "at": "t", "node": "x"}, {"by": 7, "at": None}):
        assert json.dumps(Completion.from_json(doc).to_json()) == json.dumps(doc), doc
    usual = Completion.from_json({"by": "cli", "at": "t"})
    assert (repr(usual), usual.extra, usual.layout) == (repr(Completion("cli", "t")), (), None)
    assert [f.name for f in fields(Completion)] == ["by", "at", "extra", "layout"]
    assert Completion.from_json({"by": 7}).extra == (("by", 7),)


def test_any_stored_forced_move_is_written_back_byte_for_byte() -> None:
    usual = {"from": "a", "to": "b", "reason": "r — ü", "by": "cli", "at": "t"}
    confirmed = {**usual, "confirmedBy": "bob", "confirmedVia": "reply", "request": "3f9a1c2e"}
    for doc in (usual, confirmed, {"from": "x", "to": "n1"}, {"to": "b", "from": "a"}, {},
                {**usual, "note": {"k": [1]}}, {"from": None, "to": "b"}):
        assert json.dumps(ForcedMove.from_json(doc).to_json()) == json.dumps(doc), doc
    move = ForcedMove.from_json(usual)
    assert (move.from_node, move.to_node, move.reason, move.by, move.at) == (
        "a", "b", "r — ü", "cli", "t")
    assert move.layout is None and move.extra == ()
    # An operator's confirmation follows the move's keys, as dict.update wrote it before.
    again = move.confirmed("bob", "reply", "3f9a1c2e")
    assert json.dumps(again.to_json()) == json.dumps(confirmed)
    assert ForcedMove.from_json(confirmed) == again


def test_any_stored_wait_is_written_back_byte_for_byte() -> None:
    wait = {"node": "a", "reason": "r", "at": "t"}
    for doc in ({}, wait, {**wait, "blocked": True}, {**wait, "unverified": True},
                {**wait, "unverified": True, "blocked": True},  # a fresh park's order
                {**wait, "blocked": True, "unverified": True},  # a repeated wait's order
                {**wait, "blocked": False}, {**wait, "blocked": 1}, {"reason": "x"},
                {"node": "", "reason": "", "at": ""}, {**wait, "since": {"n": [1]}}):
        assert json.dumps(Parked.from_json(doc).to_json()) == json.dumps(doc), doc
    assert Parked.from_json({}) is NOT_PARKED and NOT_PARKED.to_json() == {}
    blocked = Parked.from_json({**wait, "blocked": True})
    assert (blocked.node, blocked.reason, blocked.at, blocked.blocked, blocked.unverified) == (
        "a", "r", "t", True, False)
    assert Parked.from_json({**wait, "blocked": 1}).blocked is False  # kept aside, as read
    usual = Parked.from_json(wait)
    assert (repr(usual), usual.layout) == (repr(Parked("a", "r", "t")), None)
    assert [f.name for f in fields(Parked)] == ["node", "reason", "at", "blocked",
                                                "unverified", "extra", "layout"]
    assert usual.at_node("a") is usual and usual.at_node("b") is NOT_PARKED
    assert NOT_PARKED.at_node("").reason == ""


def test_a_typed_record_is_frozen_and_slotted() -> None:
    skip = Skip("selection")
    assert not hasattr(skip, "__dict__") and not hasattr(OptIn("x"), "__dict__")
    try:
        skip.via = "forged"  # type: ignore[misc]
    except AttributeError:  # FrozenInstanceError is one
        pass
    else:
        raise AssertionError("a Skip must be frozen")

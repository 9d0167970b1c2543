"""Issue 20 §1, the typed door: ``Runtime.advance`` takes frozen events and answers with a
frozen result — Moved, Waiting, Refused or Unverified — naming the node, the reason and
the node's visit. A chat decision is decided by the gate's rule once, asks GitHub once, and
records exactly what the Slack click fed as a reply recorded before."""

from __future__ import annotations

import dataclasses
import itertools
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine import events as ev
from engine.approvals import ApprovalRule
from engine.graph.compiler import shipped_graph
from engine.hooks.chat_decision import decision_body, decision_marker
from engine.hooks.phase_selection import (
    Selection,
    checklist_rows,
    parse_selection,
    reply_body,
    ticked_selection,
)
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
GATE = "human-approval"
USERS = ("alice", "bob", "carol")


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _runtime(rule: ApprovalRule, tracker: MemoryTracker, node: str = GATE) -> Runtime:
    settings = EngineSettings(authorized_users=USERS, gate_rules={node: rule})
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    runtime.force(REF, node, "test: straight to the gate", "tester")
    return runtime


def _decide(runtime: Runtime, login: str, outcome: str = "approved", text: str = "",
            node: str = GATE) -> ev.Result:
    return runtime.advance(REF, ev.Decision(node, outcome, login, text, via="slack"))


def _tracker(author: str = "carol") -> MemoryTracker:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author=author)
    return tracker


# -- the events -----------------------------------------------------------------------------
def test_events_are_frozen_and_a_decision_is_bound_to_its_node() -> None:
    decision = ev.Decision(GATE, "approved", "alice", via="slack")
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.outcome = "changes-requested"  # type: ignore[misc]
    assert ev.expected_node(decision) == GATE
    assert ev.expected_node(dataclasses.replace(decision, expected_node="x")) == "x"
    assert ev.expected_node(ev.Comments((), expected_node="y")) == "y"
    assert ev.expected_node(ev.Confirmation("r1", "alice", "slack")) is None
    assert ev.hook_event(decision) == {"decision": decision, "via": "slack"}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"outcome": "lgtm"}, "unknown decision outcome 'lgtm'"),
    ({"by": " "}, "a decision's login must not be empty"),
    ({"via": ""}, "a decision's via must not be empty"),
    ({"node": ""}, "a decision's node must not be empty"),
])
def test_a_bad_decision_is_one_clear_error(kwargs: dict[str, str], message: str) -> None:
    fields = {"node": GATE, "outcome": "approved", "by": "alice", "via": "slack", **kwargs}
    with pytest.raises(ValueError, match=message):
        ev.Decision(**fields)


def test_the_legacy_mapping_reads_as_the_typed_events() -> None:
    c = Comment(5, "alice", "approved")
    assert ev.from_mapping({"comments": [c], "via": "slack", "expectNode": GATE}) == \
        ev.Comments((c,), "slack", GATE)
    assert ev.from_mapping({"comments": [c]}) == ev.Comments((c,))
    assert ev.from_mapping({"attestation": {"comment_id": 9, "url": "u"}}) == \
        ev.Attestation(9, "u")
    assert ev.from_mapping({"attestation": {"comment_id": "9"}}) == ev.Recheck()
    assert ev.from_mapping(None) == ev.Recheck()
    assert ev.from_mapping({"expectNode": "n"}) == ev.Recheck("n")


def test_a_ticked_selection_is_the_one_its_checklist_reply_said() -> None:
    # The Execute click used to be written out as a checklist reply and parsed back; the
    # typed Selection gives the engine the same Selection for every combination of ticks.
    graph = shipped_graph()
    rows = checklist_rows(graph)
    default_on = [n.id for n in rows.default_on][:4]
    opt_in = [n.id for n in rows.opt_in][:3]
    settings = EngineSettings(authorized_users=USERS)
    for k, j, explainer in itertools.product(range(3), range(3), (True, False)):
        chosen = Selection(skips=default_on[:k], opt_ins=opt_in[:j], explainer_on=explainer)
        via_words = parse_selection(reply_body(graph, settings, chosen), graph)
        assert ticked_selection(graph, chosen.skips, chosen.opt_ins, explainer) == via_words


# -- the results ----------------------------------------------------------------------------
def test_waiting_names_the_tally_and_the_visit() -> None:
    runtime = _runtime(ApprovalRule(approvals=2), _tracker())

    result = _decide(runtime, "alice")

    assert isinstance(result, ev.Waiting)
    assert result.node == GATE
    assert result.reason.startswith("1 of 2 approvals: @alice — waiting for ")
    assert result.visit is not None and result.visit.number == 1 and result.visit.open
    assert result.state.current_node == GATE
    assert result.reason == result.state.parked.reason


def test_moved_names_the_outcome_the_target_and_the_closed_visit() -> None:
    tracker = _tracker()
    runtime = _runtime(ApprovalRule(), tracker)

    result = _decide(runtime, "bob", "approved-with-comments", "Rename foo.")

    assert isinstance(result, ev.Moved)
    assert (result.node, result.to, result.outcome) == (GATE, "complete",
                                                        "approved-with-comments")
    assert result.reason == "approved-with-comments by @bob"
    assert result.visit is not None and not result.visit.open and result.visit.number == 1
    assert result.visit.decision is not None
    # The stored decision is the one the Slack click fed as a reply recorded (issue 12 §1).
    assert result.visit.decision.to_json() == {
        "by": "@bob", "at": result.visit.decision.at, "outcome": "approved-with-comments",
        "comment": "", "commentId": 0, "via": "slack", "text": "Rename foo."}
    [counted] = result.state.surface["approvals"][GATE]["approvals"]
    assert counted == {"by": "bob", "outcome": "approved-with-comments",
                       "at": counted["at"], "via": "slack",
                       "body": decision_body("approved-with-comments", "Rename foo.")}
    [echo] = [c.body for c in tracker.comments_on(REF) if decision_marker(GATE) in c.body]
    assert echo.startswith(f"✅ **Approved with comments** at `{GATE}` by @bob — from Slack."
                           "\n\n> Rename foo.")


def test_a_second_visit_is_named_in_the_result() -> None:
    runtime = _runtime(ApprovalRule(), _tracker())
    sent_back = _decide(runtime, "bob", "changes-requested", "Not yet.")
    assert isinstance(sent_back, ev.Moved) and sent_back.visit is not None
    assert sent_back.visit.number == 1 and sent_back.to != GATE

    runtime.force(REF, GATE, "test: back to the gate", "tester")
    again = _decide(runtime, "bob")

    assert isinstance(again, ev.Moved) and again.visit is not None
    assert again.visit.number == 2
    assert again.visit.decision is not None and again.visit.decision.by == "@bob"


def test_refused_by_the_rule_changes_nothing_and_gives_the_rules_reason() -> None:
    tracker = _tracker(author="alice")
    runtime = _runtime(ApprovalRule(prevent_self_approval=True), tracker)
    store = runtime.store
    assert isinstance(store, MemoryStore)
    before = store.load(REF)
    assert before is not None
    events, comments = len(store.events(REF)), len(tracker.comments_on(REF))

    result = _decide(runtime, "alice")

    assert isinstance(result, ev.Refused)
    assert (result.node, result.code, result.by) == (GATE, ev.NOT_ALLOWED, "alice")
    assert result.reason == ("@alice opened this work item, and this gate has "
                             "preventSelfApproval: the author cannot approve their own work")
    assert result.visit is not None and result.visit.number == 1
    after = store.load(REF)
    assert after is not None
    assert after.revision == before.revision and after.to_document() == before.to_document()
    assert len(store.events(REF)) == events
    assert len(tracker.comments_on(REF)) == comments


def test_refused_when_the_item_is_no_longer_at_the_node() -> None:
    runtime = _runtime(ApprovalRule(), _tracker())

    result = _decide(runtime, "alice", node="design-approval")

    assert isinstance(result, ev.Refused)
    assert (result.node, result.code) == ("design-approval", ev.NOT_CURRENT)
    assert result.reason == f"the item is at {GATE}, not design-approval"
    assert result.visit is None  # never entered
    assert result.state.current_node == GATE


def test_unverified_when_whose_work_it_is_cannot_be_read() -> None:
    tracker = _tracker()
    runtime = _runtime(ApprovalRule(prevent_self_approval=True), tracker)
    tracker.failing.add("issue_info")

    result = _decide(runtime, "alice")

    assert isinstance(result, ev.Unverified)
    assert result.node == GATE
    assert "could not read who authored the work" in result.reason
    assert result.visit is not None and result.visit.number == 1
    assert result.state.parked.unverified is True
    assert GATE not in result.state.decisions


def test_one_decision_reads_whose_work_it_is_once() -> None:
    tracker = _tracker()
    runtime = _runtime(ApprovalRule(prevent_self_approval=True,
                                    approvers=("alice", "acme/reviewers")), tracker)
    tracker.set_team("acme/reviewers", ["dave"])
    since = len(tracker.calls)

    result = _decide(runtime, "dave")

    assert isinstance(result, ev.Moved)
    reads = [name for name, _ in tracker.calls[since:]]
    assert reads.count("issue_info") == 1
    assert reads.count("team_membership") == 1


def test_the_legacy_call_still_returns_the_state() -> None:
    tracker = _tracker()
    runtime = _runtime(ApprovalRule(), tracker)
    reply = tracker.add_comment_as(REF, "alice", "approved")

    state = runtime.advance(REF, {"comments": [reply], "expectNode": GATE})

    assert state.current_node == "complete"
    assert state.decisions[GATE]["commentId"] == reply.id


# -- no fake comments at the door -----------------------------------------------------------
#: A Comment built with no author and no body only carries ids somewhere: a made-up one.
BLANK_COMMENT = re.compile(r"""\bComment\(.*(,\s*""\s*,\s*""|author=""\s*,\s*body="")""")


def test_no_surface_fakes_a_comment_to_reach_the_engine() -> None:
    # Issue 20 §1: a click is a typed event, never a Comment with a made-up id; nor is a
    # node id handed to the tracker in one (Tracker.remember_comment takes the ids).
    assert BLANK_COMMENT.search('Comment(int(data["comment_id"]), "", "", node_id=n)')
    assert BLANK_COMMENT.search('Comment(id=7, author="", body="")')
    assert not BLANK_COMMENT.search('Comment(id=-1, author="", body=str(args[-1]))')
    root = Path(__file__).resolve().parents[2]
    needles = ("Comment(id=0", "Comment(0,")
    found = [f"{path.relative_to(root)}:{n}"
             for folder in ("engine", "bot", "bridges")
             for path in sorted((root / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if any(needle in line.replace(" ", "") for needle in needles)
             or BLANK_COMMENT.search(line)]
    assert found == []


def test_the_slack_decision_path_reads_no_engine_words_back() -> None:
    # Issue 20 §1: the Approve / modal / Execute listeners act on the typed result, never
    # on the parked wait's flags or the gate's stored refusals.
    root = Path(__file__).resolve().parents[2]
    files = ("bot/slack/approval_clicks.py", "bot/slack/listeners/actions/approve.py",
             "bot/slack/listeners/actions/execute.py", "bot/slack/listeners/views/decision.py")
    needles = ("parked", '"refused"', "'refused'", "slack_reply_body", "reply_words")
    found = [f"{name}: {needle}" for name in files
             for needle in needles if needle in (root / name).read_text(encoding="utf-8")]
    assert found == []

"""engine.verify (issue 22 §3): each gate's recorded verdict re-derived from the tracker's
records with the gates' own rules, and the published check compared with what the
re-derived verdicts publish. Pure: the records come from a stand-in :class:`Source`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from engine.graph.compiler import shipped_graph
from engine.hooks.quiz import quiz_comment_body
from engine.mergegate import GateCheck
from engine.ports import Comment, CommentEdit, CommentEdits, PullRequest, TrackerError
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.state import ItemState, ItemStatus, NodeRecord
from engine.verify import PublishedCheck, verify_item
from engine.visits import Visit, VisitDecision

REF = WorkItemRef("acme", "widgets", 7)
BOT = "loopgate-bot"
SETTINGS = EngineSettings(authorized_users=("alice", "bob"), bot_login=BOT, bot_kind="User",
                          merge_gate=True)
T0, T1, T2 = "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"
HEAD = "a" * 40
APPROVAL_ID, QUIZ_ID = 101, 202
DIGEST = "0123456789ab"


class Records:
    """GitHub's records as :class:`engine.verify.Source` reads them."""

    comments_editable = True

    def __init__(self) -> None:
        self.threads: dict[int, list[Comment]] = {
            REF.number: [Comment(APPROVAL_ID, "bob", "approved", T1, author_type="User",
                                 url="https://x/101", as_read=True)]}
        self.edits: dict[int, CommentEdits] = {
            APPROVAL_ID: CommentEdits(APPROVAL_ID, "approved", "https://x/101", "bob", None,
                                      "", None, author_type="User"),
            QUIZ_ID: _quiz(ticked=True, editor="alice")}
        self.pulls = [PullRequest(5, "https://x/pull/5", "issue-7", "open", "carol", HEAD)]
        self.published: dict[str, PublishedCheck] = {HEAD: PublishedCheck("success")}
        self.fail = ""

    def _maybe_fail(self) -> None:
        if self.fail:
            raise TrackerError(self.fail)

    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        self._maybe_fail()
        return list(self.threads.get(ref.number, ()))

    def comment_edits(self, ids: Sequence[int]) -> dict[int, CommentEdits]:
        self._maybe_fail()
        return {i: self.edits[i] for i in ids if i in self.edits}

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        self._maybe_fail()
        return list(self.pulls)

    def published_check(self, owner: str, repo: str, sha: str) -> PublishedCheck | None:
        self._maybe_fail()
        return self.published.get(sha)


def _quiz(*, ticked: bool, editor: str, editor_type: str = "User") -> CommentEdits:
    body = quiz_comment_body("code", "code-quiz", DIGEST, "https://x/explainer", [])
    if ticked:
        body = body.replace("- [ ] I have read", "- [x] I have read")
    return CommentEdits(QUIZ_ID, body, "https://x/202", BOT, editor, editor_type, T1,
                        (CommentEdit(editor, editor_type, T1),), author_type="User")


def _state() -> ItemState:
    """An item complete after code-quiz (ticked by alice) and human-approval (bob)."""
    state = ItemState(REF, loop="pdlc-work-item-loop", current_node="complete",
                      status=ItemStatus.COMPLETE)
    state.nodes["code-quiz"] = NodeRecord(outcome="pass", entered_at=T0, exited_at=T1)
    state.nodes["human-approval"] = NodeRecord(outcome="approved", entered_at=T1, exited_at=T2)
    state.visits["code-quiz"] = (Visit(1, T0, T1, "pass", VisitDecision.from_json(
        {"at": T1, "attestedBy": "@alice", "attestedAt": T1, "comment": "https://x/202",
         "commentId": QUIZ_ID, "via": "tick"})),)
    state.visits["human-approval"] = (Visit(1, T1, T2, "approved", VisitDecision.from_json(
        {"by": "@bob", "at": T2, "outcome": "approved", "comment": "https://x/101",
         "commentId": APPROVAL_ID})),)
    state.surface["quiz"] = {"code-quiz": {"digest": DIGEST, "comments": [
        {"id": QUIZ_ID, "url": "https://x/202", "target": "acme/widgets#5"}]}}
    state.surface["approvals"] = {"human-approval": {"enteredAt": T1, "visit": 1, "approvals": [
        {"by": "bob", "outcome": "approved", "at": T2, "via": "reply",
         "comment": "https://x/101", "commentId": APPROVAL_ID}], "refused": []}}
    state.surface["mergeGate"] = GateCheck("success", "acme/widgets#7: work item complete"
                                           ).to_json()
    state.surface["mergeCoverage"] = {"gates": ["code-quiz", "human-approval"], "nodes": {
        "code-quiz": {"at": T1, "heads": {"5": HEAD}, "authors": {"5": "carol"}},
        "human-approval": {"at": T2, "heads": {"5": HEAD}, "authors": {"5": "carol"}}}}
    return state


def _verify(state: ItemState, records: Records, **kw: Any) -> Any:
    return verify_item(shipped_graph(), kw.pop("settings", SETTINGS), state, records, **kw)


def _gate(found: Any, node: str) -> Any:
    return next(g for g in found.gates if g.node == node)


def test_records_that_stand_agree_gate_by_gate_and_on_the_check() -> None:
    found = _verify(_state(), Records())
    assert found.agrees and found.disagreements == 0
    assert found.lines() == [
        "acme/widgets#7 code-quiz (visit 1): agrees — recorded attested by @alice at "
        "comment 202 (tick)",
        "acme/widgets#7 human-approval (visit 1): agrees — recorded approved by @bob at "
        "comment 101",
        "acme/widgets#7 check on #5 @aaaaaaa: agrees — published success, re-derived success"]
    doc = found.to_json()
    assert doc["verdict"] == "agrees" and [g["node"] for g in doc["gates"]] == [
        "code-quiz", "human-approval"]


def test_an_approval_edited_by_someone_else_differs() -> None:
    records = Records()
    records.edits[APPROVAL_ID] = CommentEdits(
        APPROVAL_ID, "approved", "https://x/101", "bob", "mallory", "User", T2,
        (CommentEdit("mallory", "User", T2),), author_type="User")
    found = _verify(_state(), records)
    assert _gate(found, "human-approval").line() == (
        "human-approval (visit 1): differs — recorded approved by @bob at comment 101; "
        "GitHub shows that comment edited by @mallory")
    assert found.to_json()["verdict"] == "differs" and found.disagreements == 2
    assert found.to_json()["gates"][1] == {
        "node": "human-approval", "visit": 1, "verdict": "differs",
        "recorded": "approved by @bob at comment 101",
        "differences": ["GitHub shows that comment edited by @mallory"], "note": ""}
    # the verdict does not stand: the check it would publish is pending
    [check] = found.checks
    assert (check.published, check.expected, check.agrees) == ("success", "pending", False)


def test_a_decision_recorded_for_someone_else_differs() -> None:
    state = _state()
    visit = state.visits["human-approval"][0]
    doc = {**visit.decision.to_json(), "by": "@carol"}  # type: ignore[union-attr]
    state.visits["human-approval"] = (Visit(1, T1, T2, "approved",
                                            VisitDecision.from_json(doc)),)
    assert _gate(_verify(state, Records()), "human-approval").differences == (
        "GitHub shows comment 101 written by @bob, not @carol",)


def test_a_reply_whose_text_changed_or_was_deleted_differs() -> None:
    records = Records()
    records.threads[REF.number] = [Comment(APPROVAL_ID, "bob", "changes requested", T1,
                                           author_type="User", as_read=True)]
    assert _gate(_verify(_state(), records), "human-approval").differences == (
        "GitHub's text of comment 101 now says changes-requested, not approved",)
    records.threads[REF.number] = []
    assert _gate(_verify(_state(), records), "human-approval").differences == (
        "GitHub no longer has comment 101 on the item or its pull requests",)


def test_the_gates_rule_is_applied_to_the_decisions_that_stand() -> None:
    # bob is no longer an approver: the gate's own rule refuses him now
    settings = EngineSettings(authorized_users=("alice",), bot_login=BOT, bot_kind="User",
                              merge_gate=True)
    gate = _gate(_verify(_state(), Records(), settings=settings), "human-approval")
    assert gate.differences[0].startswith("the gate's rule refuses @bob now: ")
    assert gate.differences[-1].startswith(
        "the gate's rule over GitHub's records gives not passed (0 of 1 approval")


def test_a_quiz_box_unticked_by_someone_else_differs() -> None:
    records = Records()
    records.edits[QUIZ_ID] = _quiz(ticked=False, editor="mallory")
    assert _gate(_verify(_state(), records), "code-quiz").differences == (
        "GitHub shows the box of comment 202 is not ticked (last edited by @mallory)",)


def test_a_quiz_ticked_by_someone_else_or_a_bot_differs() -> None:
    records = Records()
    records.edits[QUIZ_ID] = _quiz(ticked=True, editor="bob")
    assert _gate(_verify(_state(), records), "code-quiz").differences == (
        "GitHub shows the box of comment 202 last ticked by @bob, not @alice",)
    records.edits[QUIZ_ID] = _quiz(ticked=True, editor="alice", editor_type="Bot")
    assert _gate(_verify(_state(), records), "code-quiz").differences == (
        "GitHub shows the box of comment 202 last edited by a bot (@alice)",)


def test_a_quiz_comment_not_loopgates_own_differs() -> None:
    records = Records()
    forged = records.edits[QUIZ_ID]
    records.edits[QUIZ_ID] = CommentEdits(QUIZ_ID, forged.body, forged.url, "mallory", "alice",
                                          "User", T1, forged.edits, author_type="User")
    assert _gate(_verify(_state(), records), "code-quiz").differences == (
        "GitHub shows comment 202 is not loopgate's own quiz comment (last edited by @alice)",)


def test_a_removed_attestation_differs() -> None:
    state = _state()
    state.visits["code-quiz"] = (Visit(1, T0, T1, "pass", None),)
    gate = _gate(_verify(state, Records()), "code-quiz")
    assert gate.line() == (
        "code-quiz (visit 1): differs — recorded pass with no attestation; loopgate's record "
        "holds no attestation to check against GitHub")


def test_a_head_the_gates_did_not_cover_differs_from_a_recorded_success() -> None:
    records = Records()
    pushed = "b" * 40
    records.pulls = [PullRequest(5, "https://x/pull/5", "issue-7", "open", "carol", pushed)]
    [check] = _verify(_state(), records).checks
    assert check.line() == (
        "check on #5 @bbbbbbb: differs — published nothing, re-derived pending; loopgate's "
        "coverage: head bbbbbbb was pushed after code-quiz covered aaaaaaa (loopgate "
        "records success); GitHub shows no loopgate check on bbbbbbb; the re-derived "
        "verdicts publish pending: acme/widgets#7: head bbbbbbb was pushed after code-quiz "
        "covered aaaaaaa")


def test_a_published_check_other_than_the_verdicts_differs() -> None:
    records = Records()
    records.published[HEAD] = PublishedCheck("pending", "at human-approval")
    [check] = _verify(_state(), records).checks
    assert check.differences == (
        "GitHub shows pending on aaaaaaa; the re-derived verdicts publish success: "
        "acme/widgets#7: work item complete",)


def test_a_pull_request_delivering_two_items_publishes_both_verdicts() -> None:
    other = ItemState(WorkItemRef("acme", "widgets", 8), current_node="design")
    other.surface["mergeGate"] = GateCheck("pending", "acme/widgets#8: at design").to_json()
    found = _verify(_state(), Records(), load=lambda ref: other, items=lambda n: [7, 8])
    [check] = found.checks
    assert (check.expected, check.published) == ("pending", "success")
    assert "waiting: acme/widgets#8" in check.differences[0]


def test_an_unreadable_tracker_raises_never_agrees() -> None:
    records = Records()
    records.fail = "GitHub core rate limit reached"
    with pytest.raises(TrackerError, match="rate limit"):
        _verify(_state(), records)


def test_without_the_merge_gate_no_check_is_compared() -> None:
    settings = EngineSettings(authorized_users=("alice", "bob"), bot_login=BOT,
                              bot_kind="User")
    found = _verify(_state(), Records(), settings=settings)
    assert found.checks == () and found.agrees
    assert found.notes == ("mergeGate is off: no published check to compare",)


def test_an_item_that_decided_nothing_says_so() -> None:
    records = Records()
    records.pulls = []
    found = _verify(ItemState(REF, current_node="intake"), records)
    assert found.lines() == ["acme/widgets#7: agrees — no gate decided yet, no check to "
                             "compare"]

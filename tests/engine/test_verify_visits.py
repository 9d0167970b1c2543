"""engine.verify (issue 22 §3) binds each recorded decision to the visit it is recorded for
(issue 19 §2, the gates' own rule :meth:`engine.visits.Visit.takes_comment`), and checks a
decision made in Slack against loopgate's mirror on GitHub (issue 12 §1,
:mod:`engine.hooks.chat_decision`): a doctored record never reads "agrees"."""

from __future__ import annotations

from engine.hooks.chat_decision import decision_marker, mirror_text
from engine.hooks.markers import CONFIRMATION_MARKER, attestation_line, with_self_marker
from engine.hooks.phase_selection import confirmation_head
from engine.ports import Comment, CommentEdit, CommentEdits
from engine.state import ItemState
from engine.visits import Visit, VisitDecision
from tests.engine.test_verify import (
    APPROVAL_ID,
    BOT,
    QUIZ_ID,
    REF,
    T0,
    T1,
    T2,
    Records,
    _gate,
    _state,
    _verify,
)

T3, T4 = "2026-01-02T10:00:00Z", "2026-01-02T11:00:00Z"
REPLY_2, TYPED_ID, MIRROR_ID = 303, 404, 505


def _approved_again(state: ItemState, comment_id: int) -> ItemState:
    """human-approval sent back and re-entered at T3 (visit 2), recorded as approved by
    bob at ``comment_id``."""
    old = state.visits["human-approval"][0]
    state.visits["human-approval"] = (old, Visit(2, T3, T4, "approved", VisitDecision.from_json(
        {"by": "@bob", "at": T4, "outcome": "approved", "comment": f"https://x/{comment_id}",
         "commentId": comment_id})))
    state.nodes["human-approval"].entered_at = T3
    entry = state.surface["approvals"]["human-approval"]
    entry.update(enteredAt=T3, visit=2)
    entry["approvals"] = [{"by": "bob", "outcome": "approved", "at": T4, "via": "reply",
                           "comment": f"https://x/{comment_id}", "commentId": comment_id}]
    state.surface["mergeCoverage"]["nodes"]["human-approval"]["at"] = T4
    return state


def test_a_later_visit_recorded_as_decided_by_an_earlier_visits_reply_differs() -> None:
    found = _verify(_approved_again(_state(), APPROVAL_ID), Records())
    gate = _gate(found, "human-approval")
    assert gate.line() == (
        "human-approval (visit 2): differs — recorded approved by @bob at comment 101; "
        "GitHub shows comment 101 written before visit 2 began (2026-01-01T11:00:00Z), so "
        "it cannot answer it")
    [check] = found.checks
    assert (check.published, check.expected) == ("success", "pending")


def test_a_later_visit_decided_by_a_reply_written_during_it_agrees() -> None:
    records = Records()
    records.threads[REF.number].append(Comment(REPLY_2, "bob", "approved", T4,
                                               author_type="User", as_read=True))
    records.edits[REPLY_2] = CommentEdits(REPLY_2, "approved", "https://x/303", "bob", None,
                                          "", None, author_type="User")
    found = _verify(_approved_again(_state(), REPLY_2), records)
    assert _gate(found, "human-approval").differences == () and found.agrees


def test_the_visit_anchor_orders_replies_by_id_not_clock() -> None:
    # after_comment = 101: a reply with an id at or below it predates the visit, whatever
    # its clock says
    state = _approved_again(_state(), APPROVAL_ID)
    old, second = state.visits["human-approval"]
    state.visits["human-approval"] = (old, Visit(2, T0, T4, "approved", second.decision,
                                                 after_comment=APPROVAL_ID))
    assert _gate(_verify(state, Records()), "human-approval").differences == (
        "GitHub shows comment 101 written before visit 2 began (2026-01-01T11:00:00Z), so "
        "it cannot answer it",)


def _typed_on_visit_2(written_at: str) -> tuple[ItemState, Records]:
    state = _state()
    first = state.visits["code-quiz"][0]
    state.visits["code-quiz"] = (first, Visit(2, T3, T4, "pass", VisitDecision.from_json(
        {"at": T4, "attestedBy": "@alice", "attestedAt": T4, "comment": "https://x/404",
         "commentId": TYPED_ID, "via": "typed"})))
    body = attestation_line("code", ticked=True)
    records = Records()
    records.threads[REF.number].append(Comment(TYPED_ID, "alice", body, written_at,
                                               author_type="User", as_read=True))
    records.edits[TYPED_ID] = CommentEdits(TYPED_ID, body, "https://x/404", "alice", None,
                                           "", None, author_type="User")
    return state, records


def test_a_typed_attestation_written_before_the_visit_differs() -> None:
    state, records = _typed_on_visit_2(T1)
    assert _gate(_verify(state, records), "code-quiz").differences == (
        "GitHub shows comment 404 written before visit 2 began (2026-01-01T11:00:00Z), so "
        "it cannot answer it",)
    state, records = _typed_on_visit_2(T4)
    assert _gate(_verify(state, records), "code-quiz").differences == ()


def _ticked_on_visit_2(state: ItemState) -> ItemState:
    first = state.visits["code-quiz"][0]
    state.visits["code-quiz"] = (first, Visit(2, T3, T4, "pass", VisitDecision.from_json(
        {"at": T4, "attestedBy": "@alice", "attestedAt": T4, "comment": "https://x/202",
         "commentId": QUIZ_ID, "via": "tick"})))
    return state


def test_a_tick_on_an_earlier_visits_quiz_comment_differs() -> None:
    state = _ticked_on_visit_2(_state())  # the quiz entry is visit 1's (no visit recorded)
    assert _gate(_verify(state, Records()), "code-quiz").differences == (
        "GitHub shows comment 202 is the quiz comment of an earlier visit, not of visit 2",)
    state.surface["quiz"]["code-quiz"].update(visit=2, earlier=[QUIZ_ID])
    assert _gate(_verify(state, Records()), "code-quiz").differences == (
        "GitHub shows comment 202 is the quiz comment of an earlier visit, not of visit 2",)


def test_a_tick_made_before_the_visit_began_differs() -> None:
    state = _ticked_on_visit_2(_state())
    state.surface["quiz"]["code-quiz"]["visit"] = 2
    records = Records()  # alice's tick is at T1, before visit 2 was entered at T3
    assert _gate(_verify(state, records), "code-quiz").differences == (
        "GitHub shows the box of comment 202 last ticked at 2026-01-01T11:00:00Z, before "
        "visit 2 began",)
    ticked = records.edits[QUIZ_ID]
    records.edits[QUIZ_ID] = CommentEdits(QUIZ_ID, ticked.body, ticked.url, BOT, "alice",
                                          "User", T4, (CommentEdit("alice", "User", T4),),
                                          author_type="User")
    assert _gate(_verify(state, records), "code-quiz").differences == ()


def _slack_state() -> ItemState:
    state = _state()
    state.visits["human-approval"] = (Visit(1, T1, T2, "approved", VisitDecision.from_json(
        {"by": "@alice", "at": T2, "outcome": "approved", "via": "slack"})),)
    state.surface["approvals"]["human-approval"]["approvals"] = [
        {"by": "alice", "outcome": "approved", "at": T2, "via": "slack"}]
    return state


def _mirrored(records: Records, *, author: str = BOT, outcome: str = "approved",
              by: str = "alice", editor: str | None = None) -> Records:
    """loopgate's echo comment of a Slack decision on the thread, as mirror_decision posts
    it (engine.hooks.chat_decision)."""
    body = with_self_marker(mirror_text("human-approval", outcome, by, "", "slack"),
                            decision_marker("human-approval"))
    records.threads[REF.number] = [Comment(MIRROR_ID, author, body, T2, author_type="User",
                                           as_read=True)]
    edits = (CommentEdit(editor, "User", T2),) if editor else ()
    records.edits[MIRROR_ID] = CommentEdits(MIRROR_ID, body, "https://x/505", author, editor,
                                            "User" if editor else "", T2 if editor else None,
                                            edits, author_type="User")
    return records


def test_a_slack_approval_with_no_mirror_on_github_differs() -> None:
    records = Records()
    records.threads[REF.number] = []
    found = _verify(_slack_state(), records)
    assert _gate(found, "human-approval").line() == (
        "human-approval (visit 1): differs — recorded approved by @alice via slack; GitHub "
        "holds no mirror by loopgate of @alice's approved from slack at human-approval "
        "during visit 1 (decided in Slack by @alice: re-derived from loopgate's mirror)")
    assert not found.agrees


def test_a_slack_approval_with_loopgates_mirror_agrees() -> None:
    found = _verify(_slack_state(), _mirrored(Records()))
    assert _gate(found, "human-approval").differences == () and found.agrees


def test_a_mirror_not_matching_the_record_differs() -> None:
    missing = ("GitHub holds no mirror by loopgate of @alice's approved from slack at "
               "human-approval during visit 1",)
    for records in (_mirrored(Records(), author="mallory"),
                    _mirrored(Records(), outcome="changes-requested"),
                    _mirrored(Records(), by="bob")):
        assert _gate(_verify(_slack_state(), records), "human-approval").differences == missing


def test_a_mirror_edited_by_someone_else_differs() -> None:
    records = _mirrored(Records(), editor="mallory")
    assert _gate(_verify(_slack_state(), records), "human-approval").differences == (
        "GitHub shows loopgate's mirror of @alice's approved from slack at human-approval "
        "(comment 505) edited by @mallory",)


def test_a_mirror_written_before_the_visit_differs() -> None:
    state = _slack_state()
    state.visits["human-approval"] = (Visit(1, T0, T1, "approved"),
                                      Visit(2, T3, T4, "approved", VisitDecision.from_json(
                                          {"by": "@alice", "at": T4, "outcome": "approved",
                                           "via": "slack"})))
    state.nodes["human-approval"].entered_at = T3
    state.surface["approvals"]["human-approval"].update(enteredAt=T3, visit=2)
    state.surface["approvals"]["human-approval"]["approvals"][0]["at"] = T4
    assert _gate(_verify(state, _mirrored(Records())), "human-approval").differences == (
        "GitHub holds no mirror by loopgate of @alice's approved from slack at "
        "human-approval during visit 2",)


def _selected_in_slack(records: Records, head: str, *, author: str = BOT,
                       editor: str | None = None) -> tuple[ItemState, Records]:
    """phase-selection decided by alice's Execute click in Slack, and a confirmation
    comment whose first line is ``head`` (engine.hooks.phase_selection)."""
    state = _state()
    state.visits["phase-selection"] = (Visit(1, T0, T0, "selected", VisitDecision.from_json(
        {"by": "@alice", "at": T0, "outcome": "selected", "via": "slack"})),)
    body = with_self_marker(f"{head}\nSkipped: none.", CONFIRMATION_MARKER)
    records.threads[REF.number].append(Comment(MIRROR_ID, author, body, T0,
                                               author_type="User", as_read=True))
    edits = (CommentEdit(editor, "User", T1),) if editor else ()
    records.edits[MIRROR_ID] = CommentEdits(MIRROR_ID, body, "https://x/505", author, editor,
                                            "User" if editor else "", T1 if editor else None,
                                            edits, author_type="User")
    return state, records


def test_an_execute_click_re_derives_from_loopgates_confirmation() -> None:
    state, records = _selected_in_slack(Records(), confirmation_head("alice", "slack"))
    gate = _gate(_verify(state, records), "phase-selection")
    assert gate.line() == (
        "phase-selection (visit 1): agrees — recorded selected by @alice via slack "
        "(decided via slack: re-derived from loopgate's confirmation)")


def test_an_execute_click_without_a_standing_confirmation_differs() -> None:
    missing = ("GitHub holds no mirror by loopgate of @alice's selection from slack during "
               "visit 1",)
    for head, author in ((confirmation_head("bob", "slack"), BOT),
                         (confirmation_head("alice", "slack"), "mallory")):
        state, records = _selected_in_slack(Records(), head, author=author)
        assert _gate(_verify(state, records), "phase-selection").differences == missing
    state, records = _selected_in_slack(Records(), confirmation_head("alice", "slack"),
                                        editor="mallory")
    assert _gate(_verify(state, records), "phase-selection").differences == (
        "GitHub shows loopgate's mirror of @alice's selection from slack (comment 505) "
        "edited by @mallory",)

"""Who edited loopgate's phase-selection checklist (issue 19 §1): a bare ``the-loop execute``
reply reads the checklist ticked in place only when everyone who edited it is loopgate or
a user the gate authorizes; otherwise the gate waits naming the editor, and a failed
lookup of the edit history waits ``unverified`` (fail closed)."""

from __future__ import annotations

from engine.hooks.markers import PHASE_SELECTION_MARKER
from engine.hooks.phase_selection import (
    ChecklistRefused,
    checklist_editor_problem,
    verify_checklist_editors,
)
from engine.ports import Comment, CommentEdit, CommentEdits
from engine.settings import EngineSettings
from tests.engine.test_hooks_support import REF, Harness

UNTICKED = ("requirements-approval", "design-approval")


def _posted(h: Harness) -> Comment:
    h.enter("phase-selection")
    assert h.run("phase-selection", "post-phase-selection", chain="entry").kind == "pass"
    return next(c for c in h.tracker.comments_on(REF) if PHASE_SELECTION_MARKER in c.body)


def _untick(h: Harness, checklist: Comment, editor: str) -> None:
    body = next(c for c in h.tracker.comments_on(REF) if c.id == checklist.id).body
    for token in UNTICKED:
        body = body.replace(f"- [x] {token}", f"- [ ] {token}")
    h.tracker.edit_comment(checklist.id, body, editor)


def _execute(h: Harness, author: str = "alice"):
    reply = h.tracker.add_comment_as(REF, author, "the-loop execute")
    return h.run("phase-selection", "classify-phase-selection", event={"comments": [reply]})


def test_an_unauthorized_editors_unticks_are_not_the_approvers_selection() -> None:
    h = Harness()
    checklist = _posted(h)
    _untick(h, checklist, "mallory")
    result = _execute(h)
    assert result.kind == "wait"
    assert result.reason.startswith(
        "the checklist was edited by @mallory, who may not choose phases; reply with the "
        "checklist in your `the-loop execute` reply")
    assert "skips" not in result.data and "decision" not in result.data
    logged = [data for kind, data in h.log if kind == "graph.checklist_not_counted"]
    assert logged == [{"node": "phase-selection", "reply": logged[0]["reply"], "by": "@alice",
                       "editor": "mallory",
                       "reason": "the checklist was edited by @mallory, who may not choose "
                                 "phases"}]


def test_an_authorized_edit_after_an_unauthorized_one_does_not_launder_it() -> None:
    h = Harness()
    checklist = _posted(h)
    _untick(h, checklist, "mallory")
    current = next(c for c in h.tracker.comments_on(REF) if c.id == checklist.id)
    h.tracker.edit_comment(checklist.id, current.body.replace("- [x] brainstorming",
                                                              "- [ ] brainstorming"), "alice")
    result = _execute(h)
    assert result.kind == "wait" and "@mallory" in result.reason


def test_an_authorized_persons_ticks_still_count() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice", "bob")))
    checklist = _posted(h)
    _untick(h, checklist, "bob")
    result = _execute(h, "alice")
    assert result.kind == "pass"
    decision = result.data["decision"].to_json()
    assert decision["via"] == "checklist" and decision["by"] == "@alice"
    assert sorted(result.data["skips"]) == sorted(UNTICKED)


def test_a_failed_edit_lookup_waits_unverified() -> None:
    h = Harness()
    checklist = _posted(h)
    _untick(h, checklist, "alice")
    h.tracker.failing.add("comment_edits")
    result = _execute(h)
    assert result.kind == "wait" and result.data["unverified"] is True
    assert "could not read the phase-selection checklist" in result.reason
    assert "skips" not in result.data
    assert [k for k, _ in h.log if k == "graph.checklist_unverified"] == [
        "graph.checklist_unverified"]


def test_an_unedited_checklist_and_a_reply_checklist_need_no_refusal() -> None:
    h = Harness()
    _posted(h)
    result = _execute(h)
    assert result.kind == "pass" and result.data["decision"].to_json()["via"] == "checklist"


def _edits(*editors: str | None, complete: bool = True, latest: str | None = "") -> CommentEdits:
    history = tuple(CommentEdit(editor=e, edited_at=f"2026-03-01T11:0{i}:00Z",
                                editor_type="User" if e else "")
                    for i, e in enumerate(editors))
    last = editors[-1] if editors else None
    return CommentEdits(comment_id=7, body="", url="", author="loopgate[bot]",
                        editor=last if latest == "" else latest, editor_type="User",
                        last_edited_at=history[-1].edited_at if history else None,
                        edits=history, complete=complete)


def test_the_editor_rule() -> None:
    settings = EngineSettings(authorized_users=("alice",), bot_login="loopgate[bot]")
    assert checklist_editor_problem(_edits(), settings) is None
    assert checklist_editor_problem(_edits("alice"), settings) is None
    refused = checklist_editor_problem(_edits("alice", "mallory"), settings)
    assert refused is not None and refused.editor == "mallory"
    unknown = checklist_editor_problem(_edits(None), settings)
    assert unknown is not None and "someone GitHub does not name" in unknown.reason
    lagging = checklist_editor_problem(_edits("alice", latest="mallory"), settings)
    assert lagging is not None and lagging.editor == "mallory"
    partial = checklist_editor_problem(_edits("alice", complete=False), settings)
    assert partial is not None and "longer edit history" in partial.reason
    gone = checklist_editor_problem(None, settings)
    assert gone is not None and "could not be found" in gone.reason


class _Offline:
    comments_editable = False

    def comment_edits(self, ids: object) -> dict[int, CommentEdits]:
        raise AssertionError("the offline thread is never asked who edited a comment")


class _Online:
    comments_editable = True

    def comment_edits(self, ids: object) -> dict[int, CommentEdits]:
        return {7: _edits("mallory")}


def test_offline_no_lookup_online_refusal_raises() -> None:
    settings = EngineSettings(authorized_users=("alice",))
    verify_checklist_editors(_Offline(), settings, 7)
    try:
        verify_checklist_editors(_Online(), settings, 7)
    except ChecklistRefused as exc:
        assert exc.editor == "mallory" and str(exc) == exc.reason
    else:
        raise AssertionError("mallory's edit was accepted")

"""Issue 19 §1, the pure rule: whose words a comment read now is, from the tracker's edit
history (``engine.authorship``), failing closed on every unknown."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.authorship import could_matter, judge, screen, wait_note
from engine.identity import Actor
from engine.ports import Comment, CommentEdit, CommentEdits, TrackerError
from engine.settings import EngineSettings

NOW = "2026-12-01T10:00:00Z"
LATER = "2026-12-01T10:05:00Z"


def _read(body: str = "approved", author: str = "alice", cid: int = 5_186_334_064) -> Comment:
    return Comment(cid, author, body, author_type="User", author_id=11, as_read=True)


def _edits(*edits: CommentEdit, editor: str | None = None, author: str = "alice",
           author_type: str = "User", editor_type: str = "User",
           complete: bool = True) -> CommentEdits:
    return CommentEdits(5_186_334_064, "approved", "", author, editor,
                        editor_type if editor else "", LATER if edits else None, tuple(edits),
                        author_type=author_type,
                        author_id={"alice": 11, "": None}.get(author, 99),
                        editor_id=None, complete=complete)


def test_an_unedited_comment_counts() -> None:
    assert judge(_read(), _edits()) is None


def test_the_authors_own_edits_count() -> None:
    assert judge(_read(), _edits(CommentEdit("alice", "User", LATER, 11),
                                 editor="alice")) is None


@pytest.mark.parametrize("edits, why", [
    (_edits(CommentEdit("mallory", "User", LATER), editor="mallory"),
     "@alice's reply was edited by @mallory; not counted"),
    # someone edited, then the author edited again: the body still holds mallory's words
    (_edits(CommentEdit("mallory", "User", NOW), CommentEdit("alice", "User", LATER, 11),
            editor="alice"), "was edited by @mallory"),
    # a deleted account: GraphQL's editor is null (platform-facts A7) → unknown
    (_edits(CommentEdit(None, "", LATER), editor=None),
     "was edited by someone GitHub does not name"),
    (_edits(author=""), "has an author GitHub does not name"),
    (_edits(author="mallory"), "is attributed to @mallory"),
    (_edits(CommentEdit("alice", "User", LATER, 11), editor="alice", complete=False),
     "longer edit history than could be checked"),
    (None, "could not be found"),
])
def test_what_does_not_count_says_why(edits: CommentEdits | None, why: str) -> None:
    refused = judge(_read(), edits)
    assert refused is not None and why in refused.reason


def test_the_latest_editor_counts_even_when_the_history_lags() -> None:
    lagging = CommentEdits(5_186_334_064, "approved", "", "alice", "mallory", "User", LATER,
                           (), author_type="User", author_id=11)
    refused = judge(_read(), lagging)
    assert refused is not None and refused.editor == "mallory"


class _Tracker:
    comments_editable = True

    def __init__(self, answer: dict[int, CommentEdits] | Exception) -> None:
        self.answer = answer
        self.asked: list[list[int]] = []

    def comment_edits(self, ids: Sequence[int]) -> dict[int, CommentEdits]:
        self.asked.append(list(ids))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _matters(c: Comment) -> bool:
    return could_matter(c, EngineSettings())


def test_screen_asks_once_for_what_could_matter_and_keeps_the_rest() -> None:
    plain = _read("a question", cid=1)
    genuine = _read("approved", cid=2)
    forged = _read("lgtm", cid=3)
    tracker = _Tracker({2: _edits(), 3: _edits(CommentEdit("mallory", "User", LATER),
                                                editor="mallory")})
    result = screen([plain, genuine, forged], tracker, matters=_matters)
    assert tracker.asked == [[2, 3]]
    assert result.counted == (plain, genuine)
    assert [n.comment_id for n in result.not_counted] == [3]
    assert wait_note([n.to_json() for n in result.not_counted]) == (
        " (@alice's reply was edited by @mallory; not counted)")


def test_screen_fails_closed_when_the_tracker_cannot_tell() -> None:
    result = screen([_read()], _Tracker(TrackerError("rate limited")), matters=_matters)
    assert result.counted == () and result.unverified
    assert "rate limited" in result.unverified


def test_a_seen_edit_needs_no_lookup_and_an_as_created_body_counts_as_is() -> None:
    tracker = _Tracker({})
    edited = Comment(1, "alice", "approved", edited_by=Actor("mallory", "User"))
    created = Comment(2, "alice", "approved")
    result = screen([edited, created], tracker, matters=_matters)
    assert tracker.asked == []
    assert result.counted == (created,)
    assert "edited by @mallory" in result.not_counted[0].reason


def test_the_offline_thread_is_never_looked_up() -> None:
    tracker = _Tracker(TrackerError("never asked"))
    tracker.comments_editable = False
    assert screen([_read()], tracker, matters=_matters).counted == (_read(),)
    assert tracker.asked == []


def test_an_operator_confirmation_edited_in_by_someone_else_does_not_count() -> None:
    # issue 19 §1 and §5: `the-loop confirm <id>` applies an operator request in the
    # replier's name, so it is screened like a decisive reply.
    forged = _read("the-loop confirm ab12cd34", cid=4)
    tracker = _Tracker({4: _edits(CommentEdit("mallory", "User", LATER), editor="mallory")})
    result = screen([forged], tracker, matters=_matters)
    assert tracker.asked == [[4]]
    assert result.counted == ()
    assert "edited by @mallory" in result.not_counted[0].reason

"""classify-feedback and record-feedback (issue #2 §3)."""

from __future__ import annotations

import pytest

from engine.hooks.feedback import classify_text
from engine.hooks.markers import SELF_MARKER
from tests.engine.test_hooks_support import REF, Harness


@pytest.mark.parametrize(
    ("body", "outcome"),
    [
        ("Approved", "approved"),
        ("LGTM.", "approved"),
        ("**approved** — ship it", "approved"),
        ("- approve", "approved"),
        ("Approved with comments:\n- rename foo", "approved-with-comments"),
        ("lgtm with comments", "approved-with-comments"),
        ("Changes requested: the API is wrong", "changes-requested"),
        ("request changes", "changes-requested"),
        ("approved\nchanges requested", "changes-requested"),  # the cautious word wins
        ("not approved yet", None),
        ("> approved\nI disagree with the quote above", None),  # quoted words never count
        ("approvedly", None),
        ("", None),
        # Asked or hedged, not said (a fresh-eyes trial): the gate waits.
        ("Approve? Not sure yet", None),
        ("approve once CI is green", None),
        ("LGTM except the schema part, which needs changes", None),
        ("Approved by whom?", None),
        ("approved with comments?", None),
        ("LGTM, ship it", "approved"),
        ("approved 🎉", "approved"),
    ],
)
def test_classify_text_reads_the_review_words(body: str, outcome: str | None) -> None:
    assert classify_text(body) == outcome


def _comments(h: Harness, *pairs: tuple[str, str]):
    return [h.tracker.add_comment_as(REF, author, body) for author, body in pairs]


def test_classify_feedback_passes_with_the_outcome_and_decision() -> None:
    h = Harness()
    comments = _comments(h, ("alice", "changes requested"), ("bob", "Approved with comments\nnit"))
    result = h.run("design-approval", "classify-feedback", event={"comments": comments})
    assert result.kind == "pass"
    assert result.data["outcome"] == "approved-with-comments"
    assert result.data["decision"].to_json() == {
        "by": "@bob",
        "at": "2026-03-01T12:00:00Z",
        "outcome": "approved-with-comments",
        "comment": comments[1].url,
        "commentId": comments[1].id,
    }


def test_classify_feedback_ignores_unauthorized_and_self_authored() -> None:
    h = Harness()
    comments = _comments(h, ("mallory", "approved"), ("alice", f"approved\n{SELF_MARKER}"))
    result = h.run("design-approval", "classify-feedback", event={"comments": comments})
    assert result.kind == "wait"
    assert "@alice, @Bob" in result.reason
    assert "approved, approved with comments, or changes requested" in result.reason


def test_classify_feedback_waits_without_a_decisive_comment() -> None:
    h = Harness()
    comments = _comments(h, ("alice", "looking at it now"))
    assert h.run("design-approval", "classify-feedback", event={"comments": comments}).kind == (
        "wait"
    )
    assert h.run("design-approval", "classify-feedback").kind == "wait"


def test_record_feedback_appends_attributed_review_comments() -> None:
    h = Harness()
    h.state.surface["reviewComments"] = [{"node": "x", "by": "@bob", "commentId": 1}]
    [comment] = _comments(h, ("alice", "approved with comments\nplease rename foo"))
    result = h.run("design-approval", "record-feedback", event={"comments": [comment]})
    assert result.kind == "pass"
    assert result.data["outcome"] == "approved-with-comments"
    recorded = h.state.surface["reviewComments"]
    assert recorded[0] == {"node": "x", "by": "@bob", "commentId": 1}
    assert recorded[1]["by"] == "@alice"
    assert recorded[1]["body"] == "approved with comments\nplease rename foo"
    assert recorded[1]["node"] == "design-approval"
    # Evaluated again with the same reply: nothing appended twice.
    h.run("design-approval", "record-feedback", event={"comments": [comment]})
    assert len(h.state.surface["reviewComments"]) == 2


def test_record_feedback_passes_other_outcomes_without_recording() -> None:
    h = Harness()
    comments = _comments(h, ("alice", "approved"))
    result = h.run("design-approval", "record-feedback", event={"comments": comments})
    assert result.kind == "pass"
    assert "surface" not in result.data
    assert "reviewComments" not in h.state.surface

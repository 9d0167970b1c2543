"""post-quiz-attestation and quiz-attested (explainer design C3/C4, issue #3 §5), including
the abuse cases 1, 2, 4 and 6 of the design's Security table."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import pytest

from engine.hooks.markers import SELF_MARKER, attestation_line, quiz_marker
from engine.hooks.quiz import latest_editor, view_commands
from engine.local.memory_tracker import MemoryTracker
from engine.ports import Comment, CommentEdit, CommentEdits
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from tests.engine.test_hooks_support import REF, Harness

REPO_PATH = "docs/specs/issue-7/explainer/explainer.html"
SPEC_TICK = attestation_line("spec", ticked=True)
SPEC_BOX = attestation_line("spec")


def _record(section: str, location: str) -> str:
    published = "own artifact" if location.startswith("http") else "committed HTML"
    return (
        f"## {section}\n\n| Field | Value |\n|---|---|\n| Depth | standard |\n"
        f"| Location | {location} |\n| Published as | {published} |\n| Questions | 3 |\n"
    )


def _spec(h: Harness, location: str = "https://claude.ai/code/artifact/abc") -> None:
    h.artifacts.write(REF, "requirements.md", "requirements v1\n")
    h.artifacts.write(REF, "design.md", "design v1\n")
    h.artifacts.write(REF, "testing-plan.md", "plan v1\n")
    h.artifacts.write(REF, "evidence/spec-explainer.md", _record("Spec explainer", location))


def _post_spec_quiz(h: Harness, **kwargs) -> Comment:
    h.enter("spec-quiz")
    result = h.run("spec-quiz", "post-quiz-attestation", chain="entry", **kwargs)
    assert result.kind == "pass", result.reason
    posted = h.state.surface["quiz"]["spec-quiz"]["comments"]
    return h.tracker.get_comment(posted[-1]["id"])


def _tick(h: Harness, comment: Comment, editor: str | None, **kwargs) -> None:
    body = h.tracker.get_comment(comment.id).body.replace(SPEC_BOX, SPEC_TICK)
    h.tracker.edit_comment(comment.id, body, editor, **kwargs)


def _attest(h: Harness, comment: Comment, **event):
    attestation = {"comment_id": comment.id, "url": comment.url}
    return h.run("spec-quiz", "quiz-attested", event={"attestation": attestation, **event})


class HistoryLessTracker(MemoryTracker):
    """A tracker whose edit lookup returns no history (GitHub naming nobody)."""

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        found = super().comment_edits(comment_ids)
        return {k: replace(v, edits=(), editor=None, last_edited_at=None) for k, v in found.items()}


def _expected_digest(*parts: bytes) -> str:
    return hashlib.sha256(b"".join(parts)).hexdigest()[:12]


# -- post-quiz-attestation ----------------------------------------------------------------
def test_spec_quiz_comment_links_a_url_location_and_carries_markers() -> None:
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    digest = _expected_digest(b"requirements v1\n", b"design v1\n", b"plan v1\n")
    assert comment.body.startswith(
        "🎓 **Spec quiz** — read the spec explainer and take its quiz before code generation "
        "starts: [open the spec explainer](https://claude.ai/code/artifact/abc)"
    )
    assert SPEC_BOX in comment.body.splitlines()
    assert "Ticking the box is enough — no reply needed." in comment.body
    assert quiz_marker("spec-quiz", digest) in comment.body
    assert comment.body.rstrip().endswith(SELF_MARKER)
    entry = h.state.surface["quiz"]["spec-quiz"]
    assert entry["digest"] == digest
    assert entry["comments"] == [{"id": comment.id, "url": comment.url, "target": str(REF)}]
    assert entry["location"] == "https://claude.ai/code/artifact/abc"
    assert entry["viewCommands"] == []


def test_digest_uses_whichever_alternative_exists_and_skips_absent_files() -> None:
    h = Harness()
    _spec(h)
    h.artifacts.delete(REF, "requirements.md")
    h.artifacts.write(REF, "bugfix.md", b"bug\n")
    h.artifacts.delete(REF, "testing-plan.md")
    _post_spec_quiz(h)
    assert h.state.surface["quiz"]["spec-quiz"]["digest"] == _expected_digest(
        b"bug\n", b"design v1\n"
    )


def test_a_quiz_without_digest_param_marks_dash() -> None:
    h = Harness()
    h.artifacts.write(REF, "evidence/explainer.md", _record("Explainer", "https://x.example/a"))
    h.enter("code-quiz")
    params = {"node": "code-quiz", "record": "evidence/explainer.md", "on": "pull-requests"}
    assert h.run("code-quiz", "post-quiz-attestation", chain="entry",
                 params=params).kind == "pass"
    [comment] = h.tracker.comments_on(REF)
    assert quiz_marker("code-quiz", "-") in comment.body
    assert comment.body.startswith("🎓 **Code quiz**")
    assert attestation_line("code") in comment.body.splitlines()


def test_a_repo_path_location_gives_the_two_view_commands() -> None:
    h = Harness()
    h.artifacts.branch_name = "feature/issue-7"
    _spec(h, location=REPO_PATH)
    comment = _post_spec_quiz(h)
    gh = (
        "gh api -H 'Accept: application/vnd.github.raw' "
        "'repos/acme/widgets/contents/docs/specs/issue-7/explainer/explainer.html"
        "?ref=feature/issue-7' > /tmp/issue-7-explainer.html "
        "&& python3 -m webbrowser /tmp/issue-7-explainer.html"
    )
    curl = (
        "curl -fsSL 'https://raw.githubusercontent.com/acme/widgets/feature/issue-7/"
        "docs/specs/issue-7/explainer/explainer.html' -o /tmp/issue-7-explainer.html "
        "&& python3 -m webbrowser /tmp/issue-7-explainer.html"
    )
    assert h.state.surface["quiz"]["spec-quiz"]["viewCommands"] == [gh, curl]
    assert f"```sh\n{gh}\n```" in comment.body
    assert f"```sh\n{curl}\n```" in comment.body


@pytest.mark.parametrize(
    ("branch", "path"),
    [
        ("main'; rm -rf ~; '", REPO_PATH),
        ("main", "docs/specs/$(whoami)/x.html"),
        ("main", "../../etc/passwd"),
        ("-oProxyCommand=x", REPO_PATH),
    ],
)
def test_view_commands_refuse_anything_unsafe_to_quote(branch: str, path: str) -> None:
    assert view_commands(REF, branch, path) == []


def test_posting_is_idempotent_per_node_and_digest() -> None:
    h = Harness()
    _spec(h)
    first = _post_spec_quiz(h)
    again = _post_spec_quiz(h)
    assert again.id == first.id
    assert len(h.tracker.comments_on(REF)) == 1
    h.artifacts.write(REF, "design.md", "design v2\n")  # re-entry after stale
    third = _post_spec_quiz(h)
    assert third.id != first.id
    assert len(h.tracker.comments_on(REF)) == 2


def test_code_quiz_fans_out_to_every_delivering_pull_request() -> None:
    h = Harness()
    h.artifacts.write(REF, "evidence/explainer.md", _record("Explainer", "https://x.example/a"))
    h.tracker.add_pull_request(REF, 12)
    h.tracker.add_pull_request(REF, 15)
    h.enter("code-quiz")
    h.run("code-quiz", "post-quiz-attestation", chain="entry")
    h.run("code-quiz", "post-quiz-attestation", chain="entry")  # idempotent per thread
    pr12, pr15 = WorkItemRef("acme", "widgets", 12), WorkItemRef("acme", "widgets", 15)
    assert len(h.tracker.comments_on(pr12)) == 1
    assert len(h.tracker.comments_on(pr15)) == 1
    assert h.tracker.comments_on(REF) == []
    targets = [c["target"] for c in h.state.surface["quiz"]["code-quiz"]["comments"]]
    assert targets == ["acme/widgets#12", "acme/widgets#15"]


def test_code_quiz_falls_back_to_the_issue_without_pull_requests() -> None:
    h = Harness()
    h.artifacts.write(REF, "evidence/explainer.md", _record("Explainer", "https://x.example/a"))
    h.enter("code-quiz")
    h.run("code-quiz", "post-quiz-attestation", chain="entry")
    assert len(h.tracker.comments_on(REF)) == 1


@pytest.mark.parametrize("broken", ["missing", "unreadable", "no-section"])
def test_a_missing_or_unreadable_record_blocks_naming_it(broken: str) -> None:
    h = Harness()
    _spec(h)
    if broken == "missing":
        h.artifacts.delete(REF, "evidence/spec-explainer.md")
    elif broken == "unreadable":
        h.artifacts.fail = True
    else:
        h.artifacts.write(REF, "evidence/spec-explainer.md", "# nothing here\n")
    h.enter("spec-quiz")
    result = h.run("spec-quiz", "post-quiz-attestation", chain="entry")
    assert result.kind == "block"
    assert "evidence/spec-explainer.md" in result.reason
    assert h.tracker.comments_on(REF) == []


def test_a_post_failure_degrades_and_still_records_the_digest() -> None:
    h = Harness()
    _spec(h)
    h.tracker.down = True
    h.enter("spec-quiz")
    result = h.run("spec-quiz", "post-quiz-attestation", chain="entry")
    assert result.kind == "pass"
    assert h.kinds() == ["graph.hook_degraded"]
    assert h.state.surface["quiz"]["spec-quiz"]["comments"] == []


# -- quiz-attested: the happy path ---------------------------------------------------------
def test_an_authorized_tick_passes_with_the_attestation() -> None:
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "Alice", at="2026-03-01T11:30:00Z")
    result = _attest(h, comment)
    assert result.kind == "pass"
    assert "outcome" not in result.data
    assert result.data["decision"].to_json() == {
        "at": "2026-03-01T12:00:00Z",
        "attestedBy": "@Alice",
        "attestedAt": "2026-03-01T11:30:00Z",
        "comment": comment.url,
        "commentId": comment.id,
        "via": "tick",
    }
    assert (
        "graph.quiz_attested",
        {"node": "spec-quiz", "by": "@Alice", "comment": comment.url},
    ) in h.log
    assert h.notifier.events() == ["quiz-attested"]
    assert ("comment_edits", ((comment.id,),)) in h.tracker.calls


def test_an_unticked_box_waits() -> None:
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    h.tracker.edit_comment(comment.id, comment.body + "\n", "alice")
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert "is not ticked" in result.reason


def test_no_event_waits_naming_the_quiz() -> None:
    h = Harness()
    _spec(h)
    _post_spec_quiz(h)
    result = h.run("spec-quiz", "quiz-attested")
    assert result.kind == "wait"
    assert result.reason == "waiting for an authorized user to tick the spec quiz box on spec-quiz"


# -- quiz-attested: abuse cases ------------------------------------------------------------
def test_quiz_attested_refuses_unauthorized_editor() -> None:
    """Abuse case 1: an unauthorized user ticks → wait + graph.quiz_refused, logged once."""
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "mallory")
    first = _attest(h, comment)
    second = _attest(h, comment)  # the poller and the webhook both deliver the same tick
    assert first.kind == second.kind == "wait"
    assert "@mallory" in first.reason
    assert [e for e in h.log if e[0] == "graph.quiz_refused"] == [
        ("graph.quiz_refused", {"node": "spec-quiz", "editor": "mallory"})
    ]
    assert "decision" not in first.data


def test_latest_unauthorized_editor_after_an_authorized_one_waits() -> None:
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "alice", at="2026-03-01T11:00:00Z")
    body = h.tracker.get_comment(comment.id).body + "\nhi"
    h.tracker.edit_comment(comment.id, body, "mallory", at="2026-03-01T11:05:00Z")
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert "graph.quiz_refused" in h.kinds()


def test_a_bot_editor_never_counts() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice", "renovate")))
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "renovate", editor_type="Bot")
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert "a bot" in result.reason


@pytest.mark.parametrize("case", ["no-edits", "null-editor", "tracker-error", "unknown-id"])
def test_quiz_attested_fails_closed_without_editor(case: str) -> None:
    """Abuse case 2: empty edits, a null editor or a query error → wait + quiz_unverified."""
    h = Harness(tracker=HistoryLessTracker()) if case == "no-edits" else Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    if case == "no-edits":
        _tick(h, comment, "alice")  # ticked, but the lookup names no edit
    elif case == "null-editor":
        _tick(h, comment, None)
    elif case == "tracker-error":
        _tick(h, comment, "alice")
        h.tracker.failing = {"comment_edits"}
    else:
        comment = Comment(id=424242, author="x", body="")
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert "could not be verified" in result.reason
    assert "graph.quiz_unverified" in h.kinds()
    assert "graph.quiz_attested" not in h.kinds()


def test_quiz_attested_ignores_unmarked_and_artifact_text() -> None:
    """Abuse case 4: "approved" or a ticked line outside loopgate's marked comment."""
    h = Harness()
    _spec(h)
    _post_spec_quiz(h)
    # "approved" typed by an authorized user is not an attestation.
    approved = h.tracker.add_comment_as(REF, "alice", "approved")
    assert h.run("spec-quiz", "quiz-attested", event={"comments": [approved]}).kind == "wait"
    # An attestation pointing at an unmarked comment, ticked and edited by alice.
    plain = h.tracker.add_comment_as(REF, "loopgate-bot", f"{SPEC_BOX}\n{SELF_MARKER}")
    h.tracker.edit_comment(plain.id, f"{SPEC_TICK}\n{SELF_MARKER}", "alice")
    result = _attest(h, plain)
    assert result.kind == "wait"
    assert "not the current quiz comment of spec-quiz" in result.reason
    # A ticked line inside an artifact file is never read by the gate.
    h.artifacts.write(REF, "evidence/spec-explainer.md", f"approved\n{SPEC_TICK}\n")
    assert h.run("spec-quiz", "quiz-attested").kind == "wait"
    # A quoted attestation line does not count as typed.
    quoted = h.tracker.add_comment_as(REF, "alice", f"> {SPEC_TICK}")
    assert h.run("spec-quiz", "quiz-attested", event={"comments": [quoted]}).kind == "wait"


def test_quiz_attested_ignores_forged_comment() -> None:
    """Abuse case 6: a look-alike checkbox comment posted by someone else."""
    h = Harness()
    _spec(h)
    genuine = _post_spec_quiz(h)
    forged = h.tracker.add_comment_as(REF, "mallory", genuine.body)
    _tick(h, forged, "alice")  # even an authorized tick on the forgery does not count
    result = _attest(h, forged)
    assert result.kind == "wait"
    assert "not loopgate's own quiz comment" in result.reason
    # Without the self-authored marker the marker check alone refuses it too.
    unmarked = h.tracker.add_comment_as(REF, "loopgate-bot", genuine.body.replace(SELF_MARKER, ""))
    _tick(h, unmarked, "alice")
    assert _attest(h, unmarked).kind == "wait"
    assert "graph.quiz_attested" not in h.kinds()


def test_forged_comment_by_bot_login_mismatch_is_refused_without_surface() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice",), bot_login="loopgate-bot"))
    _spec(h)
    genuine = _post_spec_quiz(h)
    h.state.surface.clear()  # nothing recorded: the author check still applies
    forged = h.tracker.add_comment_as(REF, "mallory", genuine.body)
    _tick(h, forged, "alice")
    assert _attest(h, forged).kind == "wait"


# -- quiz-attested: digest -----------------------------------------------------------------
def test_a_changed_spec_answers_stale_and_ignores_the_old_tick() -> None:
    h = Harness()
    _spec(h)
    old = _post_spec_quiz(h)
    h.artifacts.write(REF, "design.md", "design v2\n")
    _tick(h, old, "alice")
    result = _attest(h, old)
    assert result.kind == "pass"
    assert result.data["outcome"] == "stale"
    assert "decision" not in result.data
    assert h.notifier.events() == ["quiz-stale"]
    # Back through the explainer: a new comment with the new digest; the old tick is ignored.
    new = _post_spec_quiz(h)
    assert new.id != old.id
    result = _attest(h, old)
    assert result.kind == "wait"
    _tick(h, new, "alice")
    assert _attest(h, new).kind == "pass"


def test_unreadable_spec_files_wait() -> None:
    h = Harness()
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "alice")
    h.artifacts.fail = True
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert "could not read the spec files" in result.reason


# -- quiz-attested: typed fallback ---------------------------------------------------------
def test_typed_attestation_by_an_authorized_user_passes() -> None:
    h = Harness()
    _spec(h)
    _post_spec_quiz(h)
    typed = h.tracker.add_comment_as(REF, "bob", f"Done!\n{SPEC_TICK}\n", at="2026-03-01T11:45:00Z")
    result = h.run("spec-quiz", "quiz-attested", event={"comments": [typed]})
    assert result.kind == "pass"
    assert result.data["decision"].to_json()["attestedBy"] == "@bob"
    assert result.data["decision"].to_json()["attestedAt"] == "2026-03-01T11:45:00Z"
    assert result.data["decision"].to_json()["via"] == "typed"


def test_typed_attestation_by_others_or_self_never_passes() -> None:
    h = Harness()
    _spec(h)
    _post_spec_quiz(h)
    mallory = h.tracker.add_comment_as(REF, "mallory", SPEC_TICK)
    own = h.tracker.add_comment_as(REF, "alice", f"{SPEC_TICK}\n{SELF_MARKER}")
    code_line = h.tracker.add_comment_as(REF, "alice", attestation_line("code", ticked=True))
    event = {"comments": [mallory, own, code_line]}
    assert h.run("spec-quiz", "quiz-attested", event=event).kind == "wait"


def test_a_typed_line_of_the_other_quiz_is_named_in_the_wait() -> None:
    # Issue 14 §5: the code quiz's line typed at the spec quiz is ignored, and said so.
    h = Harness()
    _spec(h)
    _post_spec_quiz(h)
    code_line = h.tracker.add_comment_as(REF, "alice", attestation_line("code", ticked=True))
    result = h.run("spec-quiz", "quiz-attested", event={"comments": [code_line]})
    assert result.kind == "wait"
    assert result.reason == (
        "waiting for an authorized user to tick the spec quiz box on spec-quiz"
        " (ignored @alice: typed the code quiz line, but spec-quiz is the spec quiz"
        f" — reply with: {SPEC_TICK})"
    )


def test_a_typed_spec_line_at_the_code_quiz_is_named_in_the_wait() -> None:
    h = Harness()
    h.enter("code-quiz")
    quiz = h.tracker.add_comment_as(REF, "loopgate", "the code quiz")
    h.state.surface.setdefault("quiz", {})["code-quiz"] = {"comments": [{"id": quiz.id}]}
    spec_line = h.tracker.add_comment_as(REF, "bob", SPEC_TICK)
    result = h.run("code-quiz", "quiz-attested", event={"comments": [spec_line]})
    assert result.kind == "wait"
    assert result.reason == (
        "waiting for an authorized user to tick the code quiz box on code-quiz"
        " (ignored @bob: typed the spec quiz line, but code-quiz is the code quiz"
        f" — reply with: {attestation_line('code', ticked=True)})"
    )


# -- latest_editor cross-checks --------------------------------------------------------------
def _edits(edits: Sequence[CommentEdit], editor: str | None, last: str | None) -> CommentEdits:
    return CommentEdits(1, "body", "url", "loopgate-bot", editor, "User", last, tuple(edits))


def test_latest_editor_sorts_by_time_itself() -> None:
    newest_first = [
        CommentEdit("mallory", "User", "2026-03-01T11:05:00Z"),
        CommentEdit("alice", "User", "2026-03-01T11:00:00Z"),
    ]
    assert latest_editor(_edits(newest_first, "mallory", "2026-03-01T11:05:00Z"))[:3] == (
        "mallory",
        "User",
        "2026-03-01T11:05:00Z",
    )


@pytest.mark.parametrize(
    ("edits", "editor", "last", "problem"),
    [
        ([], None, None, "never edited"),
        ([CommentEdit("alice", "User", "2026-03-01T11:00:00Z")], "bob", None, "disagrees"),
        ([CommentEdit("alice", "User", "2026-03-01T11:00:00Z")], None, None, "disagrees"),
        (
            [CommentEdit("alice", "User", "2026-03-01T11:00:00Z")],
            "alice",
            "2026-03-01T11:09:00Z",
            "misses the latest edit",
        ),
        ([CommentEdit(None, "", "2026-03-01T11:00:00Z")], None, None, "names no editor"),
        ([CommentEdit("alice", "User", "yesterday")], "alice", None, "no readable time"),
    ],
)
def test_latest_editor_fails_closed_on_inconsistent_history(
    edits: list[CommentEdit], editor: str | None, last: str | None, problem: str
) -> None:
    assert problem in latest_editor(_edits(edits, editor, last))[3]


# -- offline: the typed way (issue 14 §4) ----------------------------------------------------
class OfflineTracker(MemoryTracker):
    """A thread nobody edits, as the local tracker's: quizzes are attested by typing."""

    comments_editable = False


def test_offline_the_quiz_comment_gives_the_typed_line_and_the_local_path() -> None:
    h = Harness(tracker=OfflineTracker())
    _spec(h, location=REPO_PATH)
    comment = _post_spec_quiz(h)
    assert "gh api" not in comment.body and "raw.githubusercontent.com" not in comment.body
    assert "- [ ]" not in comment.body  # no box to tick
    assert f"`{REPO_PATH}` of the local checkout" in comment.body
    assert f"reply with this line to attest\n\n```\n{SPEC_TICK}\n```" in comment.body
    assert quiz_marker("spec-quiz", h.state.surface["quiz"]["spec-quiz"]["digest"]) in (
        comment.body)
    assert h.state.surface["quiz"]["spec-quiz"]["viewCommands"] == []


def test_offline_the_wait_names_the_line_to_reply_with() -> None:
    h = Harness(tracker=OfflineTracker())
    _spec(h, location=REPO_PATH)
    _post_spec_quiz(h)
    result = h.run("spec-quiz", "quiz-attested", event={})
    assert result.kind == "wait"
    assert result.reason == (
        "waiting for an authorized user to reply on spec-quiz with the spec quiz line: "
        f"{SPEC_TICK}")
    typed = h.tracker.add_comment_as(REF, "alice", SPEC_TICK)
    assert h.run("spec-quiz", "quiz-attested", event={"comments": [typed]}).kind == "pass"


# -- issue 11 §2: the quiz gates' attester rule -------------------------------------------
def _assignee_rule(h: Harness) -> None:
    from engine.approvals import ApprovalRule

    h.settings = replace(h.settings, gate_rules={
        "spec-quiz": ApprovalRule(attester="assignee-or-author")})
    h.tracker.set_issue(REF, "Widgets", author="carol", assignees=["bob"])


def test_attester_assignee_or_author_refuses_another_authorized_ticker() -> None:
    h = Harness()
    _assignee_rule(h)
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "alice")  # authorized, but neither assignee nor author
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert ("@alice is neither an assignee nor the author of this work item "
            "(attester: assignee-or-author)") in result.reason
    _tick(h, comment, "bob")  # the assignee
    assert _attest(h, comment).kind == "pass"


def test_attester_assignee_or_author_refuses_an_author_who_is_not_authorized() -> None:
    # Issue 19 §6: the role narrows the authorized set, never widens it. On a public
    # repository anybody who opens an issue is its author.
    h = Harness()
    _assignee_rule(h)
    _spec(h)
    _post_spec_quiz(h)
    alice = h.tracker.add_comment_as(REF, "alice", SPEC_TICK)
    assert h.run("spec-quiz", "quiz-attested", event={"comments": [alice]}).kind == "wait"
    carol = h.tracker.add_comment_as(REF, "carol", SPEC_TICK)  # the author, not on the list
    result = h.run("spec-quiz", "quiz-attested", event={"comments": [carol]})
    assert result.kind == "wait"
    assert "decision" not in result.data


def test_attester_assignee_or_author_admits_an_authorized_author_typing_the_line() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice", "carol")))
    _assignee_rule(h)
    _spec(h)
    _post_spec_quiz(h)
    carol = h.tracker.add_comment_as(REF, "carol", SPEC_TICK)  # the author, authorized
    result = h.run("spec-quiz", "quiz-attested", event={"comments": [carol]})
    assert result.kind == "pass"
    assert result.data["decision"].to_json()["attestedBy"] == "@carol"


def test_attester_assignee_or_author_refuses_an_unauthorized_assignee_ticking() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice",)))
    _assignee_rule(h)  # bob is the assignee, not authorized here
    _spec(h)
    comment = _post_spec_quiz(h)
    _tick(h, comment, "bob")
    result = _attest(h, comment)
    assert result.kind == "wait"
    assert result.reason == ("the quiz box on spec-quiz was last edited by @bob, who is not "
                             "authorized; an authorized user must tick it")
    # Said on the thread once (issue 23 §2), not again when the same tick is seen again.
    assert _attest(h, comment).kind == "wait"
    said = [c.body for c in h.tracker.comments_on(REF) if "Not counted" in c.body]
    assert len(said) == 1
    assert said[0].startswith(
        "🚫 **Not counted — `spec-quiz`**: the attestation by @bob does not count: the quiz "
        "box was last edited by @bob, who is not authorized. An authorized user must tick it.")
    assert "<!-- the-loop:attestation-refused spec-quiz bob " in said[0]


# -- issue 19 §3: the code quiz covers the delivering pull requests' heads -----------------
def _code_quiz(h: Harness) -> Comment:
    h.enter("code-quiz")
    result = h.run("code-quiz", "post-quiz-attestation", chain="entry")
    assert result.kind == "pass", result.reason
    return h.tracker.get_comment(h.state.surface["quiz"]["code-quiz"]["comments"][-1]["id"])


def _tick_code(h: Harness, comment: Comment) -> None:
    body = h.tracker.get_comment(comment.id).body.replace(
        attestation_line("code", ticked=False), attestation_line("code", ticked=True))
    h.tracker.edit_comment(comment.id, body, "alice")


def test_the_code_quiz_digest_covers_the_pull_requests_heads() -> None:
    import hashlib

    h = Harness()
    h.artifacts.write(REF, "evidence/explainer.md", _record("Explainer", "https://x.example/a"))
    h.tracker.add_pull_request(REF, 12, head_sha="a" * 40)
    quiz = _code_quiz(h)
    digest = hashlib.sha256(f"12={'a' * 40}\n".encode()).hexdigest()[:12]
    assert quiz_marker("code-quiz", digest) in quiz.body
    # a push after the quiz was posted: stale, whatever the tick says
    h.tracker.push(12, "b" * 40)
    _tick_code(h, quiz)
    result = h.run("code-quiz", "quiz-attested",
                   event={"attestation": {"comment_id": quiz.id, "url": quiz.url}})
    assert (result.kind, result.data.get("outcome")) == ("pass", "stale")
    assert result.reason.startswith("the delivering pull requests got new commits since the "
                                    f"quiz was posted (digest {digest} → ")


def test_a_code_quiz_posted_before_it_covered_heads_is_posted_again() -> None:
    h = Harness()
    h.artifacts.write(REF, "evidence/explainer.md", _record("Explainer", "https://x.example/a"))
    h.tracker.add_pull_request(REF, 12, head_sha="a" * 40)
    h.enter("code-quiz")
    legacy = {"node": "code-quiz", "record": "evidence/explainer.md", "on": "pull-requests"}
    h.run("code-quiz", "post-quiz-attestation", chain="entry", params=legacy)
    assert h.state.surface["quiz"]["code-quiz"]["digest"] == "-"
    result = h.run("code-quiz", "quiz-attested")
    assert result.kind == "wait"
    assert "posted again, now covering the pull requests' heads" in result.reason
    assert h.state.surface["quiz"]["code-quiz"]["digest"] not in ("", "-")
    pr12 = WorkItemRef("acme", "widgets", 12)
    assert len(h.tracker.comments_on(pr12)) == 2

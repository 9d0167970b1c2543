"""Routing by ``event.action``: the quiz rewrite before the self-reply guard, dropped
deliveries with their reasons, label starts (real payload shapes, modified copies)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridges.github.router import (
    COMMENT,
    PULL_REQUEST_HEAD,
    QUIZ_ATTESTATION,
    START,
    Dropped,
    RouterConfig,
    body_hash,
    classify_comment,
    is_quiz_tick,
    quiz_key,
    route,
)
from bridges.github.webhook import Delivery
from engine.hooks.markers import SELF_MARKER, attestation_line, quiz_marker
from engine.ports import Comment
from engine.refs import WorkItemRef

CFG = RouterConfig.build(["Codertocat/Hello-World"], "loop:start")
QUIZ = (f"🎓 Spec quiz\n\n{attestation_line('spec')}\n\n"
        f"{quiz_marker('spec-quiz', 'abcdef012345')}\n{SELF_MARKER}\n")
TICKED = QUIZ.replace(attestation_line("spec"), attestation_line("spec", True))


def _payload(fixtures_dir: Path, name: str, **changes: Any) -> dict[str, Any]:
    data = json.loads((fixtures_dir / "github/webhooks" / name).read_text())
    for key, value in changes.items():
        target, _, field = key.partition("__")
        if field:
            data[target][field] = value
        else:
            data[target] = value
    return data


def _delivery(event: str, payload: dict[str, Any]) -> Delivery:
    return Delivery("d-1", "github", event, str(payload.get("action") or ""), payload)


def test_a_new_human_comment_becomes_a_comment_delivery(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json")
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery)
    assert routed.event == COMMENT
    assert routed.action == "issue_comment.created"
    assert routed.data["ref"] == WorkItemRef("Codertocat", "Hello-World", 1)
    assert routed.data["comment"].id == payload["comment"]["id"]
    assert routed.data["comment"].author == "Codertocat"
    assert routed.data["key"] == f"comment:{payload['comment']['id']}"
    assert routed.data["pull_request"] is False


def test_loopgates_own_new_comment_is_dropped_by_the_self_reply_guard(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json",
                       comment__body=f"hello\n{SELF_MARKER}")
    assert route(_delivery("issue_comment", payload), CFG) == Dropped("self-authored")


def test_bot_login_comments_are_self_authored_without_the_marker(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json")
    cfg = RouterConfig.build(["Codertocat/Hello-World"], "loop:start", bot_login="codertocat")
    assert route(_delivery("issue_comment", payload), cfg) == Dropped("self-authored")


def _app_comment(fixtures_dir: Path, login: str, kind: str) -> dict[str, Any]:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json")
    payload["comment"]["user"] = {**payload["comment"]["user"], "login": login, "type": kind,
                                  "id": 149_000_001 if kind == "Bot" else 9}
    return payload


def test_an_apps_bot_comment_is_self_authored_and_a_user_named_like_it_is_not(
        fixtures_dir: Path) -> None:
    cfg = RouterConfig.build(["Codertocat/Hello-World"], "loop:start", bot_login="loopgate[bot]")
    own = _app_comment(fixtures_dir, "loopgate[bot]", "Bot")
    assert route(_delivery("issue_comment", own), cfg) == Dropped("self-authored")
    person = route(_delivery("issue_comment", _app_comment(fixtures_dir, "loopgate", "User")),
                   cfg)
    assert isinstance(person, Delivery) and person.event == COMMENT
    assert person.data["comment"].actor.kind == "User"


def test_a_64_bit_comment_id_round_trips_through_routing(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=TICKED,
                       comment__id=5_186_334_064)
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery)
    assert routed.data["comment_id"] == 5_186_334_064
    # The edit's time is part of the key: an un-tick and re-tick is a new tick.
    assert routed.data["key"] == (f"quiz:5186334064:{body_hash(TICKED)}"
                                  f"@{payload['comment']['updated_at']}")


def test_a_ticked_quiz_edit_is_rewritten_before_the_self_reply_guard(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=TICKED)
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery)
    assert routed.event == QUIZ_ATTESTATION
    comment = payload["comment"]
    assert routed.data["comment_id"] == comment["id"]
    assert routed.data["url"] == comment["html_url"]
    assert routed.data["node_id"] == comment["node_id"]
    assert routed.data["key"] == (f"quiz:{comment['id']}:{body_hash(TICKED)}"
                                  f"@{comment['updated_at']}")
    # attribution never comes from the payload: no sender, no editor travels on
    assert "sender" not in routed.data and "editor" not in routed.data


def test_an_unticked_edit_of_loopgates_comment_is_dropped_with_a_reason(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=QUIZ)
    assert route(_delivery("issue_comment", payload), CFG) == Dropped("self-authored-edit")


@pytest.mark.parametrize("body", [TICKED, "plain words"])
def test_an_edit_that_leaves_the_body_unchanged_is_dropped(fixtures_dir: Path,
                                                           body: str) -> None:
    # GitHub sends issue_comment.edited with changes.body.from == body on hide/unhide.
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=body,
                       changes={"body": {"from": body}})
    assert route(_delivery("issue_comment", payload), CFG) == Dropped("body-unchanged")
    comment = Comment(7, "loopgate[bot]", body, author_type="Bot")
    assert classify_comment(comment, "loopgate[bot]", edited=True,
                            previous_body=body) == Dropped("body-unchanged")


def test_an_edit_that_ticks_the_quiz_still_routes(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=TICKED,
                       changes={"body": {"from": QUIZ}})
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery) and routed.event == QUIZ_ATTESTATION
    del payload["changes"]  # a payload that does not say is classified as before
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery) and routed.event == QUIZ_ATTESTATION


def test_a_human_edit_is_dropped(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json")
    assert route(_delivery("issue_comment", payload), CFG) == Dropped("human-edit-ignored")


def test_deleting_loopgates_comment_is_dropped_with_a_reason(fixtures_dir: Path) -> None:
    own = _payload(fixtures_dir, "issue_comment.deleted.payload.json", comment__body=QUIZ)
    human = _payload(fixtures_dir, "issue_comment.deleted.payload.json")
    assert route(_delivery("issue_comment", own), CFG) == Dropped("self-authored-deleted")
    assert route(_delivery("issue_comment", human), CFG) == Dropped("comment-deleted")


def test_the_start_label_starts_and_other_labels_do_not(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issues.labeled.payload.json")
    assert route(_delivery("issues", payload), CFG) == Dropped("not-start-label")
    payload["label"]["name"] = "loop:start"
    routed = route(_delivery("issues", payload), CFG)
    assert isinstance(routed, Delivery) and routed.event == START
    assert routed.data["ref"] == WorkItemRef("Codertocat", "Hello-World", 1)
    assert routed.data["key"] == "start:codertocat/hello-world#1"


def test_ping_and_unhandled_events_are_dropped(fixtures_dir: Path) -> None:
    ping = _payload(fixtures_dir, "ping.payload.json")
    opened = _payload(fixtures_dir, "issues.opened.payload.json")
    pull = _payload(fixtures_dir, "pull_request.opened.payload.json")
    assert route(_delivery("ping", ping), CFG) == Dropped("ping")
    assert route(_delivery("issues", opened), CFG) == Dropped("unhandled-event")
    closed = {**pull, "action": "closed"}
    assert route(_delivery("pull_request", closed), CFG) == Dropped("unhandled-event")


def test_a_pull_request_head_commit_is_routed_with_its_sha(fixtures_dir: Path) -> None:
    # Issue 11 §1: opened / synchronize / reopened publish the loopgate check again.
    pull = _payload(fixtures_dir, "pull_request.opened.payload.json")
    sha = pull["pull_request"]["head"]["sha"]
    for action in ("opened", "synchronize", "reopened"):
        routed = route(_delivery("pull_request", {**pull, "action": action}), CFG)
        assert isinstance(routed, Delivery) and routed.event == PULL_REQUEST_HEAD
        assert routed.data["ref"] == WorkItemRef("Codertocat", "Hello-World", 2)
        assert routed.data["key"] == f"head:codertocat/hello-world#2@{sha}"
        assert routed.data["head_sha"] == sha


def test_a_repository_not_watched_is_dropped(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.edited.payload.json", comment__body=TICKED)
    other = RouterConfig.build(["acme/widgets"], "loop:start")
    assert route(_delivery("issue_comment", payload), other) == Dropped("not-watched")


def test_repositories_are_matched_case_insensitively(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json")
    cfg = RouterConfig.build(["codertocat/hello-world"], "loop:start")
    assert isinstance(route(_delivery("issue_comment", payload), cfg), Delivery)


def test_a_comment_on_a_pull_request_is_flagged(fixtures_dir: Path) -> None:
    payload = _payload(fixtures_dir, "issue_comment.created.payload.json")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/1"}
    routed = route(_delivery("issue_comment", payload), CFG)
    assert isinstance(routed, Delivery) and routed.data["pull_request"] is True


@pytest.mark.parametrize("body, ticked", [
    (TICKED, True),
    (QUIZ, False),
    (TICKED.replace("<!-- the-loop:quiz", "<!-- other"), False),  # no quiz marker
    (QUIZ + "\n> - [x] I have read the spec explainer and taken the spec quiz.", False),
    (TICKED.replace("[x]", "[X]"), True),
])  # fmt: skip
def test_is_quiz_tick_needs_the_marker_and_a_ticked_line(body: str, ticked: bool) -> None:
    assert is_quiz_tick(body) is ticked


def test_quiz_keys_change_with_the_body() -> None:
    assert quiz_key(7, TICKED) != quiz_key(7, QUIZ)
    assert quiz_key(7, TICKED) == quiz_key(7, TICKED)
    assert len(body_hash(TICKED)) == 16


@pytest.mark.parametrize("body, author, kind, edited, expected", [
    (TICKED, "loopgate[bot]", "Bot", True, QUIZ_ATTESTATION),
    (TICKED, "mallory", "User", True, QUIZ_ATTESTATION),  # GraphQL decides whose it is
    (QUIZ, "loopgate[bot]", "Bot", True, Dropped("self-authored-edit")),
    ("plain words", "loopgate[bot]", "Bot", False, Dropped("self-authored")),
    ("plain words", "loopgate", "User", False, COMMENT),  # a User named like the App
    ("plain words", "alice", "User", True, Dropped("human-edit-ignored")),
    (TICKED, "alice", "User", False, Dropped("self-authored")),  # a creation is no tick
])
def test_one_classifier_for_the_router_and_the_poller(body: str, author: str, kind: str,
                                                      edited: bool, expected: object) -> None:
    comment = Comment(5_186_334_064, author, body, author_type=kind)
    assert classify_comment(comment, "loopgate[bot]", edited=edited) == expected

"""The identity model (issue 9 §1): one actor across REST, webhooks and GraphQL, told apart by
kind and id; a User named like an App's slug is another account."""

from __future__ import annotations

import pytest

from engine.identity import BOT, USER, Actor, canonical_login
from engine.ports import Comment, CommentEdits
from engine.settings import EngineSettings


@pytest.mark.parametrize("login, kind, name", [
    ("loopgate[bot]", "Bot", "loopgate"),
    ("loopgate", "Bot", "loopgate"),
    ("Dependabot[bot]", "", "dependabot"),
    ("@Alice", "User", "alice"),
    ("odd[bot]", "User", "odd[bot]"),  # a User's login keeps whatever it is
    (None, "", ""),
])
def test_canonical_login(login: str | None, kind: str, name: str) -> None:
    assert canonical_login(login, kind) == name


def test_rest_and_graphql_spellings_of_an_apps_bot_are_one_actor() -> None:
    rest = Actor.from_rest({"login": "loopgate[bot]", "type": "Bot", "id": 149_000_001})
    graphql = Actor.from_graphql({"__typename": "Bot", "login": "loopgate",
                                  "databaseId": 149_000_001})
    assert (rest.name, rest.kind, rest.id) == ("loopgate", BOT, 149_000_001)
    assert rest.same_as(graphql) and graphql.same_as(rest)
    # by login alone (no ids), the one normalisation still matches
    assert Actor.from_login("loopgate[bot]").same_as(Actor("loopgate", BOT))


def test_a_user_named_like_the_app_is_another_account() -> None:
    app = Actor.from_login("loopgate[bot]")
    person = Actor.from_graphql({"__typename": "User", "login": "loopgate", "databaseId": 9})
    assert app.kind == BOT and person.kind == USER
    assert not app.same_as(person)
    assert not person.same_as(Actor.from_rest({"login": "loopgate[bot]", "type": "Bot"}))


def test_ids_decide_when_both_are_known() -> None:
    assert not Actor("alice", USER, 1).same_as(Actor("alice", USER, 2))  # a renamed account
    assert Actor("alice", USER, 1).same_as(Actor("alice-renamed", USER, 1))


def test_an_unknown_actor_is_nobody() -> None:
    assert not Actor("").same_as(Actor(""))
    assert not Actor.from_graphql(None).same_as(Actor("loopgate", BOT))
    assert Actor.from_rest(None) == Actor("")


def test_big_int_ids_as_strings_are_read_and_bools_are_not_ids() -> None:
    assert Actor.from_graphql({"__typename": "Bot", "login": "x",
                               "databaseId": "5186334064"}).id == 5_186_334_064
    assert Actor.from_rest({"login": "x", "type": "User", "id": True}).id is None


def test_settings_know_loopgate_by_kind_and_id() -> None:
    app = EngineSettings(bot_login="loopgate[bot]", bot_kind=BOT, bot_id=42)
    assert app.is_loopgate(Actor("loopgate", BOT, 42))
    assert not app.is_loopgate(Actor("loopgate", BOT, 43))  # another App's bot
    assert not app.is_loopgate(Actor("loopgate", USER, 42))
    token = EngineSettings(bot_login="loopgate-ci", bot_kind=USER)
    assert token.is_loopgate(Actor("loopgate-ci", USER)) and not token.is_loopgate(
        Actor("loopgate-ci", BOT))
    assert not EngineSettings().is_loopgate(Actor("loopgate", BOT))  # identity unknown


def test_comments_and_edits_carry_their_actors() -> None:
    comment = Comment(5_186_334_064, "loopgate[bot]", "b", author_type="Bot", author_id=7)
    assert comment.actor == Actor("loopgate[bot]", BOT, 7)
    assert Comment(1, "dependabot[bot]", "b").actor.kind == BOT  # spelled like a bot
    edits = CommentEdits(5_186_334_064, "b", "u", "loopgate", "alice", "User", None,
                         author_type="Bot", author_id=7, editor_id=3)
    assert edits.author_actor.same_as(comment.actor)
    assert edits.editor_actor == Actor("alice", USER, 3)

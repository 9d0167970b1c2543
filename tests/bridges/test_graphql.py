"""GraphQL: every shipped query validates against GitHub's schema; comment_edits batches
⌈K/100⌉ queries, sorts the history itself, drops the creation entry, cross-checks the
latest edit; a rate-limited answer raises and closes the guard (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.requests import RequestsHTTPTransport
from graphql import GraphQLError

from bridges.github.errors import GraphQLQueryError, RateLimited
from bridges.github.graphql import (
    EDITS_WINDOW,
    MAX_IDS,
    GraphQLClient,
    chunks,
    parse_comment_edits,
    query_names,
    query_text,
)
from engine.ports import CommentEdit
from tests.bridges.conftest import REPO
from tests.fakes.github import FIRST_COMMENT_ID, FakeGitHub


@pytest.mark.parametrize("name", query_names())
def test_every_shipped_query_validates_against_the_github_schema(schema_client: Client,
                                                                 name: str) -> None:
    schema_client.validate(gql(query_text(name)))  # raises GraphQLError when invalid


def test_the_shipped_queries_are_the_four_the_bridge_sends() -> None:
    assert query_names() == ["comment_edits", "delivering_pull_requests", "merge_queue_entries",
                             "pull_request_items"]


def test_schema_validation_rejects_a_misspelt_field(schema_client: Client) -> None:
    bad = query_text("comment_edits").replace("lastEditedAt", "lastEditedOn")
    with pytest.raises(GraphQLError, match="lastEditedOn"):
        schema_client.validate(gql(bad))


def _client(fake: FakeGitHub) -> GraphQLClient:
    return GraphQLClient(fake.graphql_url, fake.token)


def _node(**over: Any) -> dict[str, Any]:
    node = {"__typename": "IssueComment", "fullDatabaseId": "5186334064", "body": "b", "url": "u",
            "author": {"__typename": "User", "login": "loopgate-bot"},
            "editor": {"__typename": "User", "login": "alice"},
            "lastEditedAt": "2024-05-01T10:00:05Z", "includesCreatedEdit": True,
            "userContentEdits": {"totalCount": 3, "nodes": [
                {"editedAt": "2024-05-01T10:00:05Z",
                 "editor": {"__typename": "User", "login": "alice"}},
                {"editedAt": "2024-05-01T09:00:00Z",
                 "editor": {"__typename": "User", "login": "loopgate-bot"}},
                {"editedAt": "2024-05-01T10:00:01Z",
                 "editor": {"__typename": "User", "login": "mallory"}},
            ]}}
    node.update(over)
    return node


def test_edits_are_sorted_by_time_and_the_creation_entry_dropped() -> None:
    edits = parse_comment_edits(_node())
    assert edits is not None
    assert edits.edits == (CommentEdit("mallory", "User", "2024-05-01T10:00:01Z"),
                           CommentEdit("alice", "User", "2024-05-01T10:00:05Z"))
    assert edits.latest_edit() == CommentEdit("alice", "User", "2024-05-01T10:00:05Z")
    assert (edits.comment_id, edits.author, edits.editor) == (5186334064, "loopgate-bot", "alice")


def test_the_latest_edit_counts_even_when_listed_first_or_last() -> None:
    node = _node()
    node["userContentEdits"]["nodes"].reverse()
    assert parse_comment_edits(node) == parse_comment_edits(_node())


def test_a_history_disagreeing_with_the_comment_editor_names_nobody() -> None:
    edits = parse_comment_edits(_node(editor={"__typename": "User", "login": "bob"}))
    assert edits is not None and edits.latest_edit() is not None
    assert edits.latest_edit().editor is None  # the gate must wait


def test_a_truncated_history_is_completed_from_editor_and_last_edited_at() -> None:
    node = _node(lastEditedAt="2024-05-01T11:00:00Z", editor={"__typename": "Bot",
                                                               "login": "helper"})
    node["userContentEdits"]["totalCount"] = 30  # more edits than the window returned
    edits = parse_comment_edits(node)
    assert edits is not None
    assert len(edits.edits) == 4  # nothing dropped: the oldest we hold is a real edit
    assert edits.latest_edit() == CommentEdit("helper", "Bot", "2024-05-01T11:00:00Z")


def test_a_history_longer_than_was_read_is_marked_incomplete() -> None:
    # Issue 19 §1: an editor older than the window could be hidden, so the authorship rule
    # must not count such a comment; the whole history read is complete.
    node = _node()
    assert parse_comment_edits(node).complete is True  # type: ignore[union-attr]
    node["userContentEdits"]["totalCount"] = 101
    assert parse_comment_edits(node).complete is False  # type: ignore[union-attr]


def test_a_ghost_editor_is_none_and_never_edited_has_no_edits() -> None:
    ghost = parse_comment_edits(_node(editor=None, userContentEdits={"totalCount": 2, "nodes": [
        {"editedAt": "2024-05-01T09:00:00Z", "editor": {"__typename": "User", "login": "x"}},
        {"editedAt": "2024-05-01T10:00:05Z", "editor": None}]}))
    assert ghost is not None and ghost.latest_edit() == CommentEdit(None, "",
                                                                     "2024-05-01T10:00:05Z")
    fresh = parse_comment_edits(_node(editor=None, lastEditedAt=None, includesCreatedEdit=False,
                                      userContentEdits={"totalCount": 0, "nodes": []}))
    assert fresh is not None and fresh.edits == ()


def test_non_comments_are_ignored() -> None:
    assert parse_comment_edits({"__typename": "Issue", "fullDatabaseId": "1"}) is None
    assert parse_comment_edits(None) is None  # type: ignore[arg-type]


def test_chunks_hold_at_most_one_hundred() -> None:
    assert [len(c) for c in chunks([str(i) for i in range(250)])] == [100, 100, 50]
    assert MAX_IDS == 100


@pytest.mark.parametrize("count, queries", [(1, 1), (100, 1), (150, 2)])
def test_comment_edits_costs_one_query_per_hundred_ids(fake: FakeGitHub, count: int,
                                                       queries: int) -> None:
    number = fake.create_issue(REPO, "t")
    comments = [fake.add_comment(REPO, number, f"c{i}", as_user="loopgate-bot")
                for i in range(count)]
    for c in comments:
        fake.edit_comment(c.id, c.body + "!", "alice")
    client = _client(fake)
    found = client.comment_edits([c.node_id for c in comments])
    assert client.queries_sent == queries == fake.count(route="graphql")
    assert len(found) == count
    first = found[comments[0].node_id]
    assert first.latest_edit() is not None and first.latest_edit().editor == "alice"
    assert {q["variables"]["edits"] for q in fake.graphql_log} == {EDITS_WINDOW}
    assert fake.invalid_queries == []


def test_comment_edits_reads_the_fakes_recorded_history(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "- [ ] box", as_user="loopgate-bot")
    fake.edit_comment(c.id, "- [x] box", "alice")
    fake.advance(2)
    fake.edit_comment(c.id, "- [x] box!", "mallory")
    edits = _client(fake).comment_edits([c.node_id])[c.node_id]
    assert [e.editor for e in edits.edits] == ["alice", "mallory"]  # creation entry dropped
    assert edits.body == "- [x] box!" and edits.comment_id == c.id


def test_unknown_ids_are_absent_not_an_error(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "x")
    found = _client(fake).comment_edits([c.node_id, "MDpOb3RoaW5nSGVyZQ"])
    assert list(found) == [c.node_id]


@pytest.mark.parametrize("mode", ["200", "403"])
def test_a_rate_limited_answer_raises_and_closes_the_guard(fake: FakeGitHub, mode: str) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "x")
    fake.graphql_rate_limit(1, mode=mode)
    client = _client(fake)
    with pytest.raises(RateLimited) as err:
        client.comment_edits([c.node_id])
    assert err.value.resource == "graphql"
    sent = fake.count(route="graphql")
    with pytest.raises(RateLimited):  # still closed: no request sent, no spinning
        client.comment_edits([c.node_id])
    assert fake.count(route="graphql") == sent == 1


def test_a_query_error_is_a_graphql_query_error(fake: FakeGitHub) -> None:
    client = _client(fake)
    with pytest.raises(GraphQLQueryError, match="pull_request_items"):
        client.execute("pull_request_items", {"owner": "acme"})  # missing variables


def test_closing_references_and_pull_request_items(fake: FakeGitHub) -> None:
    issue = fake.create_issue(REPO, "t")
    pr = fake.open_pr(REPO, "feature-x", closes=[issue])
    client = _client(fake)
    [found] = client.closing_pull_requests("acme", "widgets", issue)
    assert (found.number, found.head_branch, found.state) == (pr, "feature-x", "open")
    assert client.pull_request_items("acme", "widgets", pr) == ("feature-x", [issue])
    assert client.pull_request_items("acme", "widgets", issue) == ("", [])


def test_a_tick_in_the_same_second_as_the_post_is_attributed_to_the_ticker() -> None:
    same = "2024-05-01T10:00:00Z"
    for order in (1, -1):
        nodes = [{"editedAt": same, "editor": {"__typename": "User", "login": "alice"}},
                 {"editedAt": same, "editor": {"__typename": "User", "login": "loopgate-bot"}}]
        edits = parse_comment_edits(_node(lastEditedAt=same, userContentEdits={
            "totalCount": 2, "nodes": nodes[::order]}))
        assert edits is not None
        assert edits.edits == (CommentEdit("alice", "User", same),)


def test_a_comment_without_full_database_id_is_not_trusted() -> None:
    # The 32-bit databaseId is never read: a node that only has it names no comment.
    node = _node()
    del node["fullDatabaseId"]
    assert parse_comment_edits({**node, "databaseId": 7}) is None


def test_selecting_database_id_of_a_comment_past_2_31_is_githubs_error(
        fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "x")
    assert c.id > 2**31 - 1  # the fake hands out today's ids by default
    query = gql(query_text("comment_edits").replace("fullDatabaseId", "databaseId"))
    query.variable_values = {"ids": [c.node_id], "edits": 5}
    raw = Client(transport=RequestsHTTPTransport(
        url=fake.graphql_url, headers={"Authorization": f"bearer {fake.token}"}))
    with pytest.raises(TransportQueryError) as err:
        raw.execute(query)
    [error] = err.value.errors or []
    assert error["message"] == ("Int cannot represent non 32-bit signed integer value: "
                                f"{c.id}")
    assert error["path"] == ["nodes", 0, "databaseId"]


def test_the_shipped_query_round_trips_a_64_bit_comment_id(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "- [ ] box", as_user="loopgate[bot]", user_type="Bot")
    fake.edit_comment(c.id, "- [x] box", "alice")
    edits = _client(fake).comment_edits([c.node_id])[c.node_id]
    assert edits.comment_id == c.id == FIRST_COMMENT_ID > 2**31 - 1


def test_graphql_names_an_apps_bot_without_the_suffix_and_with_its_id(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    c = fake.add_comment(REPO, number, "- [ ] box", as_user="loopgate[bot]", user_type="Bot")
    fake.edit_comment(c.id, "- [x] box", "dependabot[bot]", editor_type="Bot")
    edits = _client(fake).comment_edits([c.node_id])[c.node_id]
    rest_user = fake._user("loopgate[bot]", "Bot")
    assert (edits.author, edits.author_type) == ("loopgate", "Bot")
    assert edits.author_id == rest_user["id"]  # the same account id as REST's user.id
    assert (edits.editor, edits.editor_type) == ("dependabot", "Bot")
    assert edits.latest_edit() is not None and edits.latest_edit().editor == "dependabot"

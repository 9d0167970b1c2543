"""bridges.github.audit (issue 22 §3) over the fake GitHub: the published ``loopgate`` check
is loopgate's own only (a status of the same name by someone else, a check run of another
App: platform-facts F2, both ignored), a run in progress reads pending, the edit histories
are asked now (never the poller's prefetched answers), and ``--sha`` finds the pull
requests whose head it is."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from bridges.github.app import AppCredentials, AppInstallations
from bridges.github.audit import AuditSource, pulls_with_head_sha
from bridges.github.client import GitHubClient
from bridges.github.graphql import GraphQLClient
from bridges.github.tracker import GitHubTracker
from engine.mergegate import GateCheck
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.verify import PublishedCheck
from tests.fakes.github import FakeGitHub
from tests.fakes.github_app import FakeApp, generate_private_key

REPO = "acme/widgets"


@dataclass
class Side:
    gh: FakeGitHub
    tracker: GitHubTracker
    source: AuditSource
    issue: WorkItemRef
    pull: WorkItemRef
    sha: str


def _side(gh: FakeGitHub, tracker: GitHubTracker, kind: str) -> Side:
    number = gh.create_issue(REPO, "Widgets")
    pr = gh.open_pr(REPO, f"issue-{number}", closes=[number])
    settings = EngineSettings(bot_login=gh.bot_login, bot_kind=kind)
    return Side(gh, tracker, AuditSource(tracker, settings), WorkItemRef("acme", "widgets",
                number), WorkItemRef("acme", "widgets", pr), gh.head_sha(REPO, pr))


@pytest.fixture
def token_side() -> Iterator[Side]:
    with FakeGitHub() as gh:
        gh.create_repo(REPO)
        tracker = GitHubTracker(GitHubClient(gh.api_url, gh.token, seconds_between_writes=0),
                                GraphQLClient(gh.graphql_url, gh.token), repos=(REPO,))
        yield _side(gh, tracker, "User")


@pytest.fixture
def app_side() -> Iterator[Side]:
    app = FakeApp(generate_private_key(), app_id=31, slug="loopgate")
    with FakeGitHub(app=app, bot_login=app.bot_login, bot_type="Bot") as gh:
        gh.create_repo(REPO)
        app.install("acme")
        source = AppInstallations(gh.api_url, AppCredentials(31, generate_private_key(),
                                                             "KEY"), (REPO,))
        tracker = GitHubTracker(GitHubClient(gh.api_url, auth=source, seconds_between_writes=0),
                                GraphQLClient(gh.graphql_url, auth=source), repos=(REPO,))
        yield _side(gh, tracker, "Bot")


def _status_as(gh: FakeGitHub, login: str, sha: str, state: str) -> None:
    token = gh.add_user_token(login)
    answer = requests.post(f"{gh.api_url}/repos/{REPO}/statuses/{sha}", timeout=10,
                           headers={"Authorization": f"token {token}"},
                           json={"state": state, "context": "loopgate", "description": "forged"})
    assert answer.status_code == 201, answer.text


def test_a_status_named_loopgate_by_someone_else_is_not_loopgates(token_side: Side) -> None:
    side = token_side
    assert side.source.published_check("acme", "widgets", side.sha) is None
    _status_as(side.gh, "mallory", side.sha, "success")
    assert side.source.published_check("acme", "widgets", side.sha) is None
    side.tracker.publish_check(side.pull, GateCheck("pending", "acme/widgets#1: at design"))
    _status_as(side.gh, "mallory", side.sha, "success")  # newer, still someone else's
    assert side.source.published_check("acme", "widgets", side.sha) == PublishedCheck(
        "pending", "acme/widgets#1: at design", "status")


def test_only_loopgates_own_check_run_counts_and_in_progress_is_pending(app_side: Side) -> None:
    side = app_side
    side.tracker.publish_check(side.pull, GateCheck("pending", "acme/widgets#1: at design"))
    assert side.source.published_check("acme", "widgets", side.sha) == PublishedCheck(
        "pending", "acme/widgets#1: at design", "check-run")
    # another App's run of the same name, newer: not loopgate's (platform-facts F2)
    foreign = dict(next(iter(side.gh.check_runs.values())), id=999, status="completed",
                   conclusion="success", app={"id": 99, "slug": "other"})
    side.gh.check_runs[999] = foreign
    assert side.source.published_check("acme", "widgets", side.sha).state == "pending"
    side.tracker.publish_check(side.pull, GateCheck("success", "acme/widgets#1: complete"))
    assert side.source.published_check("acme", "widgets", side.sha) == PublishedCheck(
        "success", "acme/widgets#1: complete", "check-run")


def test_the_edit_history_is_asked_now_not_taken_from_the_pollers_prefetch(
        token_side: Side) -> None:
    side = token_side
    comment = side.gh.add_comment(REPO, side.issue.number, "approved", as_user="bob")
    side.tracker.list_comments(side.issue)
    side.tracker.prefetch([comment.id])  # the poller's cycle holds an answer
    side.gh.edit_comment(comment.id, "approved", "mallory")
    [listed] = side.source.list_comments(side.issue)
    edits = side.source.comment_edits([listed.id])[comment.id]
    assert (edits.author, edits.editor) == ("bob", "mallory")
    # the poller's prefetched answer is still there for its own gates
    assert side.tracker.comment_edits([comment.id])[comment.id].editor is None


def test_a_comment_no_thread_listed_is_gone(token_side: Side) -> None:
    assert token_side.source.comment_edits([123456]) == {}


def test_the_pull_requests_whose_head_is_a_commit(token_side: Side) -> None:
    side = token_side
    assert pulls_with_head_sha(side.tracker, [REPO], side.sha[:7]) == [side.pull]
    assert pulls_with_head_sha(side.tracker, [REPO], "f" * 40) == []


def test_a_verify_never_reaches_a_write(token_side: Side) -> None:
    with pytest.raises(AttributeError):
        token_side.source.add_comment  # noqa: B018 - the attribute must not exist

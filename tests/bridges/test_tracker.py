"""GitHubTracker (the Tracker port over the fake with the real clients) and
ContentsArtifactStore (spec files at the work item's branch)."""

from __future__ import annotations

import pytest

from bot.config import validate_mapping
from bridges.github.client import GitHubClient
from bridges.github.contents_artifacts import ContentsArtifactStore
from bridges.github.errors import RateLimited
from bridges.github.graphql import GraphQLClient
from bridges.github.tracker import GitHubTracker
from engine.errors import ConfigError
from engine.ports import ArtifactStore, Tracker, TrackerCapabilities, TrackerError
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub


def _tracker(fake: FakeGitHub, branch_pattern: str = "issue-{number}") -> GitHubTracker:
    return GitHubTracker(GitHubClient(fake.api_url, fake.token, seconds_between_writes=0),
                         GraphQLClient(fake.graphql_url, fake.token), repos=[REPO],
                         branch_pattern=branch_pattern)


def _ref(number: int) -> WorkItemRef:
    return WorkItemRef("acme", "widgets", number)


def test_the_tracker_and_store_implement_the_ports(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    assert isinstance(tracker, Tracker)
    assert isinstance(ContentsArtifactStore(tracker), ArtifactStore)
    # Issue 20 §2: what it offers beyond the port, declared (no caller probes it).
    assert tracker.capabilities == TrackerCapabilities(codeowners=True, merge_queue=True,
                                                       pull_request_cache=True,
                                                       pull_commits=True, review_requests=True)


def test_from_config_names_the_missing_token_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPGATE_TEST_TOKEN", raising=False)
    config = validate_mapping({"github": {"repos": [REPO], "tokenEnv": "LOOPGATE_TEST_TOKEN"}})
    with pytest.raises(ConfigError, match="LOOPGATE_TEST_TOKEN"):
        GitHubTracker.from_config(config)
    monkeypatch.setenv("LOOPGATE_TEST_TOKEN", "   ")
    with pytest.raises(ConfigError, match="set the environment variable LOOPGATE_TEST_TOKEN"):
        GitHubTracker.from_config(config)


def test_from_config_reads_urls_and_token(monkeypatch: pytest.MonkeyPatch,
                                          fake: FakeGitHub) -> None:
    monkeypatch.setenv("MY_TOKEN", fake.token)
    config = validate_mapping({"github": {"repos": [REPO], "tokenEnv": "MY_TOKEN",
                                          "apiUrl": fake.api_url, "graphqlUrl": fake.graphql_url,
                                          "branchPattern": "work/{number}"}})
    tracker = GitHubTracker.from_config(config)
    number = fake.create_issue(REPO, "Title here", author="carol")
    info = tracker.issue_info(_ref(number))
    assert (info.title, info.author, info.state) == ("Title here", "carol", "open")
    assert info.url == f"https://github.com/{REPO}/issues/{number}"
    assert tracker.branch_for(9) == "work/9"


def test_comments_labels_and_posting(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    ref = _ref(fake.create_issue(REPO, "t"))
    fake.add_comment(REPO, ref.number, "first", as_user="alice")
    posted = tracker.add_comment(ref, "from loopgate")
    assert [c.body for c in tracker.list_comments(ref)] == ["first", "from loopgate"]
    assert posted.author == "loopgate-bot"
    tracker.add_label(ref, "loop:design")
    tracker.add_label(ref, "loop:start")
    tracker.remove_label(ref, "loop:design")
    assert tracker.labels(ref) == ["loop:start"]


def test_comment_edits_maps_numeric_ids_through_node_ids(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    ref = _ref(fake.create_issue(REPO, "t"))
    posted = tracker.add_comment(ref, "- [ ] box")  # remembered: no extra read needed
    fake.edit_comment(posted.id, "- [x] box", "alice")
    before = fake.count(route="comment")
    found = tracker.comment_edits([posted.id])
    assert found[posted.id].latest_edit().editor == "alice"
    assert fake.count(route="comment") == before


def test_an_unseen_comment_id_is_looked_up_over_rest(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    ref = _ref(fake.create_issue(REPO, "t"))
    comment = fake.add_comment(REPO, ref.number, "x", as_user="loopgate-bot")
    fake.edit_comment(comment.id, "y", "bob")
    found = tracker.comment_edits([comment.id, 999999])
    assert list(found) == [comment.id]  # the unknown id is absent
    assert found[comment.id].editor == "bob"
    assert fake.count(route="comment") == 2  # one REST read per unknown id


def test_a_rate_limited_lookup_is_a_tracker_error_and_counted(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    ref = _ref(fake.create_issue(REPO, "t"))
    posted = tracker.add_comment(ref, "x")
    fake.graphql_rate_limit(1)
    with pytest.raises(TrackerError) as err:
        tracker.comment_edits([posted.id])
    assert isinstance(err.value.__cause__, RateLimited)
    assert tracker.failures == 1


def test_prefetched_answers_serve_one_lookup_each(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    ref = _ref(fake.create_issue(REPO, "t"))
    posted = [tracker.add_comment(ref, f"c{i}") for i in range(3)]
    tracker.prefetch([c.id for c in posted])
    assert fake.count(route="graphql") == 1
    for c in posted:
        assert c.id in tracker.comment_edits([c.id])
    assert fake.count(route="graphql") == 1  # served from the batch
    tracker.comment_edits([posted[0].id])
    assert fake.count(route="graphql") == 2  # single use: asked again


def test_delivering_pull_requests_joins_closing_references_and_the_branch_pattern(
        fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    issue = fake.create_issue(REPO, "t")
    by_branch = fake.open_pr(REPO, f"issue-{issue}")
    closing = fake.open_pr(REPO, "feature-x", closes=[issue])
    fake.open_pr(REPO, "unrelated")
    prs = tracker.delivering_pull_requests(_ref(issue))
    assert [(p.number, p.head_branch) for p in prs] == [(by_branch, f"issue-{issue}"),
                                                         (closing, "feature-x")]
    assert prs[1].url == f"https://github.com/{REPO}/pull/{closing}"


def test_items_for_pull_request_reads_closing_references_or_the_branch(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    a = fake.create_issue(REPO, "a")
    b = fake.create_issue(REPO, "b")
    closing = fake.open_pr(REPO, "feature", closes=[a])
    branch = fake.open_pr(REPO, f"issue-{b}")
    other = fake.open_pr(REPO, "misc")
    assert tracker.items_for_pull_request("acme", "widgets", closing) == [a]
    assert tracker.items_for_pull_request("acme", "widgets", branch) == [b]
    assert tracker.items_for_pull_request("acme", "widgets", other) == []
    sent = fake.count(route="graphql")
    tracker.items_for_pull_request("acme", "widgets", closing)
    assert fake.count(route="graphql") == sent  # cached


def test_artifacts_are_read_at_the_first_delivering_pull_requests_branch(fake: FakeGitHub) -> None:
    tracker = _tracker(fake)
    store = ContentsArtifactStore(tracker, "docs/specs")
    ref = _ref(fake.create_issue(REPO, "t"))
    fake.put_file(REPO, f"docs/specs/issue-{ref.number}/design.md", "on main")
    assert store.branch(ref) == "main"
    assert store.read(ref, "design.md") == b"on main"
    fake.open_pr(REPO, "feature-x", closes=[ref.number])
    fake.put_file(REPO, f"docs/specs/issue-{ref.number}/design.md", "on the branch",
                  ref="feature-x")
    fake.put_file(REPO, f"docs/specs/issue-{ref.number}/evidence/explainer.md", "e",
                  ref="feature-x")
    assert store.branch(ref) == "feature-x"
    assert store.read(ref, "design.md") == b"on the branch"
    assert store.read(ref, "missing.md") is None
    assert store.list(ref) == ["design.md", "evidence/explainer.md"]
    assert store.spec_dir(ref) == f"docs/specs/issue-{ref.number}"
    assert store.repo_path_exists(ref, f"docs/specs/issue-{ref.number}/design.md")
    assert not store.repo_path_exists(ref, "nowhere.md")
    with pytest.raises(ValueError, match="escapes"):
        store.read(ref, "../../secrets.txt")


def test_artifact_read_failures_are_tracker_errors(fake: FakeGitHub) -> None:
    store = ContentsArtifactStore(_tracker(fake))
    ref = _ref(fake.create_issue(REPO, "t"))
    fake.rest_rate_limit(5)
    with pytest.raises(TrackerError):
        store.read(ref, "design.md")

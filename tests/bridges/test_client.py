"""The PyGithub wrapper against the fake: comments (all pages), one label at a time,
conditional lists (304 not counted), Link pagination, contents, rate limits (403/429 →
wait until reset, log once, never spin), GitHub Enterprise base URLs."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from bridges.github.client import GitHubClient, RateGuard, rate_limit_reset
from bridges.github.errors import GitHubApiError, RateLimited
from tests.bridges.conftest import REPO
from tests.fakes.github import FakeGitHub


def _client(fake: FakeGitHub, **kwargs: object) -> GitHubClient:
    return GitHubClient(fake.api_url, fake.token, seconds_between_writes=0, **kwargs)


def test_list_comments_follows_every_page(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    for i in range(7):
        fake.add_comment(REPO, number, f"c{i}", as_user="alice")
    comments = _client(fake, per_page=3).list_comments("acme", "widgets", number)
    assert [c.body for c in comments] == [f"c{i}" for i in range(7)]
    assert fake.count(route="issue-comments") == 3
    first = comments[0]
    assert first.author == "alice" and first.issue_number == number and first.node_id
    assert first.url.endswith(f"/issues/{number}#issuecomment-{first.id}")


def test_add_comment_returns_the_created_comment(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    created = _client(fake).add_comment("acme", "widgets", number, "hello")
    assert created.author == "loopgate-bot" and created.body == "hello"
    assert [c.id for c in fake.comments_on(REPO, number)] == [created.id]


def test_labels_are_added_and_removed_one_at_a_time(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t", labels=["bug"])
    client = _client(fake)
    client.add_label("acme", "widgets", number, "loop:design")
    assert fake.labels_of(REPO, number) == ["bug", "loop:design"]
    client.remove_label("acme", "widgets", number, "loop:design")
    client.remove_label("acme", "widgets", number, "never-there")  # absent: not an error
    assert fake.labels_of(REPO, number) == ["bug"]
    assert client.labels("acme", "widgets", number) == ["bug"]
    assert fake.count(route="labels-replace") == 0  # the set is never replaced


def test_a_conditional_list_answers_304_without_cost(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    fake.add_comment(REPO, number, "x")
    client = _client(fake)
    params = {"sort": "updated", "direction": "asc", "since": "2000-01-01T00:00:00Z"}
    first = client.conditional_list("poll", "/repos/acme/widgets/issues/comments", params)
    assert first.status == 200 and len(first.items) == 1 and first.etag
    again = client.conditional_list("poll", "/repos/acme/widgets/issues/comments", params,
                                    etag=first.etag)
    assert again.not_modified and again.items == [] and again.etag == first.etag
    assert fake.count(route="repo-comments", status=304, counted=False) == 1
    fake.add_comment(REPO, number, "y")
    changed = client.conditional_list("poll", "/repos/acme/widgets/issues/comments", params,
                                      etag=first.etag)
    assert changed.status == 200 and len(changed.items) == 2


def test_a_conditional_list_follows_link_pages(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    for i in range(5):
        fake.add_comment(REPO, number, f"c{i}")
    client = _client(fake, per_page=2)
    result = client.conditional_list("poll", "/repos/acme/widgets/issues/comments",
                                     {"sort": "updated", "direction": "asc"})
    assert [c["body"] for c in result.items] == [f"c{i}" for i in range(5)]
    assert result.requests == 3 == fake.count(route="repo-comments")


def test_enterprise_base_urls_keep_their_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGitHub(api_prefix="/api/v3") as fake:
        number = fake.create_issue(REPO, "t")
        for i in range(3):
            fake.add_comment(REPO, number, f"c{i}")
        assert fake.api_url.endswith("/api/v3") and fake.graphql_url.endswith("/api/graphql")
        client = GitHubClient(fake.api_url, fake.token, seconds_between_writes=0, per_page=2)
        result = client.conditional_list("poll", "/repos/acme/widgets/issues/comments", {})
        assert len(result.items) == 3
        assert all(r.path.startswith("/api/v3/repos/") for r in fake.requests)


def test_read_file_and_list_contents(fake: FakeGitHub) -> None:
    fake.put_file(REPO, "docs/specs/issue-1/design.md", b"\x00binary\xffdesign")
    fake.put_file(REPO, "docs/specs/issue-1/evidence/x.md", "x", ref="feature")
    client = _client(fake)
    assert client.read_file("acme", "widgets", "docs/specs/issue-1/design.md", "main") == (
        b"\x00binary\xffdesign")
    assert client.read_file("acme", "widgets", "docs/specs/issue-1/nope.md", "main") is None
    assert client.read_file("acme", "widgets", "docs/specs/issue-1", "main") is None  # a dir
    listing = client.contents("acme", "widgets", "docs/specs/issue-1", "feature")
    assert [(e["type"], e["name"]) for e in listing] == [("file", "design.md"), ("dir", "evidence")]
    assert client.default_branch("acme", "widgets") == "main"


def test_a_403_rate_limit_closes_the_guard_until_the_reset(fake: FakeGitHub,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    number = fake.create_issue(REPO, "t")
    fake.rest_rate_limit(1, status=403, reset_in=120)
    client = _client(fake)
    caplog.set_level(logging.WARNING, logger="bridges.github.client")
    with pytest.raises(RateLimited) as err:
        client.list_comments("acme", "widgets", number)
    reset = err.value.reset_at
    assert timedelta(seconds=100) < reset - datetime.now(UTC) <= timedelta(seconds=121)
    sent = len(fake.requests)
    for _ in range(3):  # never spins: no request while closed
        with pytest.raises(RateLimited):
            client.add_comment("acme", "widgets", number, "x")
    assert len(fake.requests) == sent
    assert len([r for r in caplog.records if "rate limit" in r.getMessage()]) == 1  # logged once
    assert "ghp-test-token" not in caplog.text


def test_a_429_with_retry_after_waits_that_long(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "t")
    fake.rest_rate_limit(1, status=429, retry_after=7)
    with pytest.raises(RateLimited) as err:
        _client(fake).get_issue("acme", "widgets", number)
    wait = (err.value.reset_at - datetime.now(UTC)).total_seconds()
    assert 5 <= wait <= 8


def test_the_guard_opens_again_after_the_reset(fake: FakeGitHub) -> None:
    now = [datetime(2024, 1, 1, tzinfo=UTC)]
    number = fake.create_issue(REPO, "t")
    client = _client(fake, clock=lambda: now[0])
    client.guard.close(now[0] + timedelta(seconds=30))
    with pytest.raises(RateLimited):
        client.get_issue("acme", "widgets", number)
    now[0] += timedelta(seconds=31)
    assert client.get_issue("acme", "widgets", number)["number"] == number


def test_a_limit_is_bounded_by_max_wait() -> None:
    now = datetime(2024, 1, 1, tzinfo=UTC)
    guard = RateGuard("core", max_wait=60, clock=lambda: now)
    err = guard.close(now + timedelta(days=2))
    assert err.reset_at == now + timedelta(seconds=60)


@pytest.mark.parametrize("status, headers, message, expected", [
    (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000100"}, "", 100),
    (403, {"retry-after": "30"}, "", 30),
    (429, {}, "", 60),
    (403, {}, "You have exceeded a secondary rate limit", 60),
    (403, {"x-ratelimit-remaining": "12"}, "Resource not accessible by integration", None),
    (404, {"X-RateLimit-Remaining": "0"}, "", None),
])  # fmt: skip
def test_rate_limit_reset_reads_the_headers(status: int, headers: dict[str, str], message: str,
                                            expected: int | None) -> None:
    now = datetime.fromtimestamp(1700000000, UTC)
    reset = rate_limit_reset(status, headers, message, now=now)
    assert (None if reset is None else int((reset - now).total_seconds())) == expected


def test_other_errors_carry_the_status_and_never_the_token(fake: FakeGitHub) -> None:
    with pytest.raises(GitHubApiError) as err:
        _client(fake).get_issue("acme", "widgets", 999)
    assert err.value.status == 404
    assert fake.token not in str(err.value)
    bad = GitHubClient(fake.api_url, "wrong-token", seconds_between_writes=0)
    with pytest.raises(GitHubApiError) as denied:
        bad.get_issue("acme", "widgets", 1)
    assert denied.value.status == 401 and "wrong-token" not in str(denied.value)

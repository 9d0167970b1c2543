"""Issue 22 §1 over the fake GitHub: the ``loopgate`` check run carries the engine's title
and Markdown summary and links the details page (App); a commit status's ``target_url``
is the details page (token); and the fake refuses an output GitHub refuses
(platform-facts F2: ``output.summary``/``output.text`` at most 65,535 — bytes, per
github/docs#35252; no documented limit on ``output.title``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from bridges.github.app import AppCredentials, AppInstallations, repository_scope
from bridges.github.client import GitHubClient
from bridges.github.errors import GitHubApiError
from bridges.github.graphql import GraphQLClient
from bridges.github.tracker import GitHubTracker
from engine.approvals import ApprovalRule
from engine.checksummary import CUT_NOTE, MAX_SUMMARY
from engine.local.memory_tracker import MemoryTracker
from engine.mergegate import PENDING, GateCheck
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.engine.test_merge_coverage import REF, _runtime
from tests.fakes.github import FakeGitHub, _output_refused
from tests.fakes.github_app import FakeApp, generate_private_key

PAGE = "https://loopgate.example.com/items/acme/widgets/7"


@dataclass
class _AppSide:
    gh: FakeGitHub
    tracker: GitHubTracker
    pull: WorkItemRef
    sha: str


@pytest.fixture
def app_side() -> Iterator[_AppSide]:
    app = FakeApp(generate_private_key(), app_id=31, slug="loopgate")
    with FakeGitHub(app=app) as gh:
        gh.create_repo(REPO)
        app.install("acme")
        number = gh.create_issue(REPO, "Widgets")
        pr = gh.open_pr(REPO, f"issue-{number}", closes=[number])
        source = AppInstallations(gh.api_url, AppCredentials(31, generate_private_key(),
                                                             "KEY"), (REPO,))
        tracker = GitHubTracker(GitHubClient(gh.api_url, auth=source, seconds_between_writes=0),
                                GraphQLClient(gh.graphql_url, auth=source), repos=(REPO,))
        yield _AppSide(gh, tracker, WorkItemRef("acme", "widgets", pr), gh.head_sha(REPO, pr))


def _engine_check() -> GateCheck:
    # The item as the engine sees it: at human-approval, 1 of 2 approvals.
    memory = MemoryTracker()
    memory.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _runtime(memory, gate_rules={"human-approval": ApprovalRule(approvals=2)},
                       public_url="https://loopgate.example.com")
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    runtime.advance(REF, {"comments": [memory.add_comment_as(REF, "alice", "approved")]})
    return memory.checks[WorkItemRef("acme", "widgets", 8)][-1]  # type: ignore[return-value]


def _my_run(side: _AppSide) -> dict:
    [run] = [r for r in side.gh.check_runs.values() if r["head_sha"] == side.sha]
    return run


def test_the_app_check_run_carries_the_title_the_summary_and_the_details_page(
        app_side: _AppSide) -> None:
    check = _engine_check()
    assert "- approvals: 1 of 2 approvals: @alice" in check.summary
    app_side.tracker.publish_check(app_side.pull, check)
    run = _my_run(app_side)
    assert run["status"] == "in_progress"
    assert run["output"]["title"] == check.description
    assert run["output"]["title"].startswith("acme/widgets#7: at human-approval (the merge gate)")
    assert run["output"]["summary"] == check.summary  # sent as the engine wrote it
    assert run["details_url"] == PAGE
    # the update in place carries the new output too
    app_side.tracker.publish_check(app_side.pull, GateCheck(
        "success", "acme/widgets#7: human-approval passed", "**done**", page_url=PAGE))
    run = _my_run(app_side)
    assert (run["conclusion"], run["output"]["title"], run["output"]["summary"]) == (
        "success", "acme/widgets#7: human-approval passed", "**done**")


def test_without_a_details_page_the_quiz_comment_is_the_link_and_the_summary_the_line(
        app_side: _AppSide) -> None:
    quiz = "https://github.com/acme/widgets/issues/7#issuecomment-5"
    app_side.tracker.publish_check(app_side.pull, GateCheck(
        PENDING, "acme/widgets#7: at code-quiz", "", quiz))
    run = _my_run(app_side)
    assert run["details_url"] == quiz
    assert run["output"] == {**run["output"], "title": "acme/widgets#7: at code-quiz",
                             "summary": "acme/widgets#7: at code-quiz"}


def test_a_cut_summary_is_accepted_by_the_fake_at_the_limit(app_side: _AppSide) -> None:
    from engine.checksummary import fit

    summary = fit("🚧 " * 30000, PAGE)  # 150,000 bytes before the cut
    app_side.tracker.publish_check(app_side.pull, GateCheck(
        PENDING, "acme/widgets#7: at design", summary, page_url=PAGE))
    stored = _my_run(app_side)["output"]["summary"]
    assert stored.endswith(f"{CUT_NOTE}: {PAGE}") and len(stored.encode()) <= MAX_SUMMARY


def test_the_fake_refuses_a_summary_or_text_over_65535_bytes_as_github_does(
        app_side: _AppSide) -> None:
    client = app_side.tracker.client
    body = {"name": "loopgate", "head_sha": app_side.sha, "status": "in_progress"}
    too_long = "🚧" * 16384  # 16,384 characters, 65,536 bytes
    for field in ("summary", "text"):
        output = {"title": "t", "summary": "s", field: too_long}
        with pytest.raises(GitHubApiError) as refused, repository_scope(REPO):
            client.create_check_run("acme", "widgets", {**body, "output": output})
        assert refused.value.status == 422
        answer = _output_refused(output, creating=True)  # the body the fake sent
        assert answer is not None and answer.payload["errors"] == [
            {"resource": "CheckRun", "code": "custom", "field": field,
             "message": f"{field} exceeds a maximum bytesize of 65535"}]
    assert not app_side.gh.check_runs
    # exactly at the limit, and a long title (GitHub documents no title limit): accepted
    at_limit = "x" * 65535
    with repository_scope(REPO):
        made = client.create_check_run("acme", "widgets", {**body, "output": {
            "title": "t" * 1000, "summary": at_limit, "text": at_limit}})
    run = app_side.gh.check_runs[int(made["id"])]
    assert (run["output"]["summary"], run["output"]["title"]) == (at_limit, "t" * 1000)
    # an update over the limit changes nothing
    with pytest.raises(GitHubApiError) as refused, repository_scope(REPO):
        client.update_check_run("acme", "widgets", int(made["id"]), {
            "conclusion": "success", "output": {"title": "t", "summary": too_long}})
    assert refused.value.status == 422
    assert (run["status"], run["output"]["summary"]) == ("in_progress", at_limit)
    # a created run needs a title and a summary (OpenAPI checks/create output.required)
    with pytest.raises(GitHubApiError) as refused, repository_scope(REPO):
        client.create_check_run("acme", "widgets", {**body, "output": {"summary": "s"}})
    assert refused.value.status == 422


# -- the token: a commit status whose target_url is the details page -----------------------
@pytest.fixture
def paged_world(world: GitHubWorld) -> GitHubWorld:
    world.close()
    world.overrides["server"] = {"publicUrl": "https://loopgate.example.com/"}
    return world.build()


def test_the_commit_status_target_url_is_the_details_page(paged_world: GitHubWorld) -> None:
    world = paged_world
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    sha = world.fake.head_sha(REPO, pr)
    status = world.fake.statuses[(REPO, sha)][-1]
    assert status["state"] == "pending"
    assert status["target_url"] == (
        f"https://loopgate.example.com/items/acme/widgets/{ref.number}")
    assert status["description"].startswith(f"{ref}: at human-approval (the merge gate)")


def test_without_public_url_the_status_has_no_details_page(world: GitHubWorld) -> None:
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    status = world.fake.statuses[(REPO, world.fake.head_sha(REPO, pr))][-1]
    assert status["target_url"] is None

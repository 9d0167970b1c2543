"""Issue 19 §4 through the real stack over the fake GitHub: ``merge_group`` deliveries
(OpenAPI ``WebhookMergeGroupChecksRequested`` / ``Destroyed``, platform-facts F1) routed
webhook → router → dispatcher → runtime → performer → tracker; and §3's rule that only
loopgate's own App's check runs are updated (platform-facts F2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridges.github.app import repository_scope
from bridges.github.errors import GitHubApiError
from bridges.github.router import MERGE_GROUP, Dropped, RouterConfig, route
from bridges.github.tracker import GitHubTracker
from bridges.github.webhook import parse_delivery
from engine.mergegate import PENDING, SUCCESS, GateCheck
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.fakes.github import FakeGitHub


def _approved_item(world: GitHubWorld, title: str = "Add a widget") -> tuple[WorkItemRef, int]:
    ref = world.issue(title)
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="carol")
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    comment = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == comment.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    return ref, pr


def _deliver(world: GitHubWorld, group: dict, action: str = "checks_requested"):  # noqa: ANN202
    headers, body = world.fake.merge_group_webhook(REPO, group, action=action, secret=SECRET)
    response = world.post(headers, body)
    assert world.dispatcher.wait_idle(10)
    return response


def test_the_router_reads_the_documented_merge_group_payload(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "Widgets")
    pr = fake.open_pr(REPO, f"issue-{number}", closes=[number])
    group = fake.queue(REPO, [pr])
    cfg = RouterConfig.build([REPO], "loop:start")
    headers, body = fake.merge_group_webhook(REPO, group)
    routed = route(parse_delivery(headers, body), cfg)
    assert not isinstance(routed, Dropped)
    assert routed.event == MERGE_GROUP
    assert routed.data["ref"] == WorkItemRef("acme", "widgets", pr)
    assert (routed.data["head_sha"], routed.data["base_sha"]) == (group["head_sha"],
                                                                  group["base_sha"])
    assert routed.data["key"] == f"merge-group:{REPO}@{group['head_sha']}"
    headers, body = fake.merge_group_webhook(REPO, group, action="destroyed", reason="merged")
    assert route(parse_delivery(headers, body), cfg) == Dropped("merge-group-destroyed")
    broken = {**group, "head_ref": "refs/heads/main"}
    headers, body = fake.merge_group_webhook(REPO, broken)
    assert route(parse_delivery(headers, body), cfg) == Dropped("no-merge-group")


def test_a_merge_group_of_a_covered_pull_request_gets_success(world: GitHubWorld) -> None:
    world.serve()
    _, pr = _approved_item(world)
    group = world.fake.queue(REPO, [pr])
    assert _deliver(world, group).status_code == 202
    assert world.fake.commit_state(REPO, group["head_sha"]) == SUCCESS
    [status] = world.fake.statuses[(REPO, group["head_sha"])]
    assert status["description"] == f"every pull request in the group is covered: #{pr}"
    # a redelivery, and the group's end, change nothing
    _deliver(world, group)
    _deliver(world, group, action="destroyed")
    assert len(world.fake.statuses[(REPO, group["head_sha"])]) == 1


def test_a_merge_group_naming_an_uncovered_pull_request_fails(world: GitHubWorld) -> None:
    world.serve()
    _, covered = _approved_item(world)
    other = world.issue("Another")
    waiting = world.fake.open_pr(REPO, f"issue-{other.number}", closes=[other.number])
    world.services.runtime.start(other)
    group = world.fake.queue(REPO, [covered, waiting], squash=True)
    _deliver(world, group)
    assert world.fake.commit_state(REPO, group["head_sha"]) == "failure"
    [status] = world.fake.statuses[(REPO, group["head_sha"])]
    assert status["description"].startswith(f"#{waiting} is not covered: {other}: at ")


def test_a_push_before_the_queue_fails_the_group(world: GitHubWorld) -> None:
    world.serve()
    ref, pr = _approved_item(world)
    first = world.fake.head_sha(REPO, pr)
    second = world.fake.push(REPO, pr)  # its synchronize is late: the queue asks first
    group = world.fake.queue(REPO, [pr])
    _deliver(world, group)
    [status] = world.fake.statuses[(REPO, group["head_sha"])]
    assert (status["state"], status["description"]) == (
        "failure", f"#{pr} is not covered: {ref}: head {second[:7]} was pushed after "
                   f"human-approval covered {first[:7]}")


# -- check runs: only loopgate's own App's ----------------------------------------------------
def test_a_foreign_apps_loopgate_check_run_is_never_updated(tmp_path: Path) -> None:
    from bridges.github.app import AppCredentials, AppInstallations
    from bridges.github.client import GitHubClient
    from bridges.github.graphql import GraphQLClient
    from tests.fakes.github_app import FakeApp, generate_private_key

    app = FakeApp(generate_private_key(), app_id=31, slug="loopgate")
    with FakeGitHub(app=app) as gh:
        gh.create_repo(REPO)
        app.install("acme")
        number = gh.create_issue(REPO, "Widgets")
        pr = gh.open_pr(REPO, f"issue-{number}", closes=[number])
        sha = gh.head_sha(REPO, pr)
        foreign = gh.foreign_check_run(REPO, sha, conclusion="success")
        source = AppInstallations(gh.api_url, AppCredentials(31, generate_private_key(),
                                                             "KEY"), (REPO,))
        tracker = GitHubTracker(GitHubClient(gh.api_url, auth=source, seconds_between_writes=0),
                                GraphQLClient(gh.graphql_url, auth=source), repos=(REPO,))
        pull = WorkItemRef("acme", "widgets", pr)
        tracker.publish_check(pull, GateCheck(PENDING, "acme/widgets#1: at design"))
        tracker.publish_check(pull, GateCheck(PENDING, "acme/widgets#1: at code-quiz"))
        runs = {rid: r for rid, r in gh.check_runs.items() if r["head_sha"] == sha}
        assert runs[foreign]["conclusion"] == "success"  # untouched
        assert runs[foreign]["output"]["title"] == "looks fine"
        [mine] = [r for rid, r in runs.items() if rid != foreign]
        assert (mine["app"]["id"], mine["status"]) == (31, "in_progress")
        assert mine["output"]["title"] == "acme/widgets#1: at code-quiz"  # updated in place
        patched = [r.path for r in gh.requests if r.method == "PATCH"]
        assert patched and all(str(foreign) not in path for path in patched)
        # and the fake refuses a write to another App's run, as GitHub does
        with pytest.raises(GitHubApiError) as refused:
            with repository_scope(REPO):
                tracker.client.update_check_run("acme", "widgets", foreign,
                                                {"conclusion": "failure"})
        assert refused.value.status == 403
        assert gh.check_runs[foreign]["conclusion"] == "success"


# -- issue 19 §3: linking one's own pull request after approving ---------------------------
def test_linking_ones_own_pull_request_after_approving_is_refused(world: GitHubWorld) -> None:
    world.overrides = {"gates": {"human-approval": {"preventSelfApproval": True}}}
    world.restart()
    world.serve()
    ref = world.issue(author="carol")
    # alice's pull request does not deliver the item yet (no closing reference, a branch
    # the pattern does not match) when she approves the item
    pr = world.fake.open_pr(REPO, "alice-widgets", author="alice")
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    approval = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref)
                if c.id == approval.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    # ... then links it: GitHub sends pull_request.edited
    world.fake.link_pr(REPO, pr, [ref.number])
    pull = WorkItemRef("acme", "widgets", pr)
    assert world.webhook("pull_request", "edited", pull).status_code == 202
    sha = world.fake.head_sha(REPO, pr)
    assert world.fake.commit_state(REPO, sha) == "pending"
    assert world.fake.statuses[(REPO, sha)][-1]["description"].startswith(
        f"{ref}: #{pr} started delivering after human-approval passed")
    assert world.state(ref).current_node == "human-approval"
    # her approval again is refused now that her pull request delivers the item
    again = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == again.id]
    state = runtime.advance(ref, {"comments": [latest]})
    assert state.current_node == "human-approval"
    assert f"@alice opened {REPO}#{pr}" in str(state.parked.reason)
    assert world.fake.commit_state(REPO, sha) == "pending"
    # a reviewer who did not write it approves: success on the covered head
    other = world.comment(ref, "approved", as_user="bob")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == other.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    assert world.fake.commit_state(REPO, sha) == "success"


def test_an_edited_pull_request_is_a_head_event_keyed_by_its_body(fake: FakeGitHub) -> None:
    number = fake.create_issue(REPO, "Widgets")
    pr = fake.open_pr(REPO, "somewhere", author="alice")
    cfg = RouterConfig.build([REPO], "loop:start")
    headers, body = fake.webhook("pull_request", "opened", repo=REPO, number=pr)
    opened = route(parse_delivery(headers, body), cfg)
    fake.link_pr(REPO, pr, [number])
    headers, body = fake.webhook("pull_request", "edited", repo=REPO, number=pr)
    edited = route(parse_delivery(headers, body), cfg)
    assert not isinstance(opened, Dropped) and not isinstance(edited, Dropped)
    assert edited.event == opened.event == "pull_request_head"
    assert edited.data["fresh"] is True and "fresh" not in opened.data
    assert edited.data["key"].startswith(opened.data["key"] + ":body:")


# -- the rebase gap: every commit of the group is accounted for ----------------------------
def _status(world: GitHubWorld, group: dict) -> dict:
    return world.fake.statuses[(REPO, group["head_sha"])][-1]


def test_a_rebase_group_carrying_another_pull_requests_commits_fails(
        world: GitHubWorld) -> None:
    # Rebase method: the group's commits are the pull requests' own commits replayed; their
    # titles name no pull request, so only head_ref's #pr is found. mallory's unlinked pull
    # request queued ahead rides along unless every commit must be accounted for.
    world.serve()
    _, pr = _approved_item(world)
    sneaky = world.fake.open_pr(REPO, "mallory-tweak", author="mallory")
    world.fake.push(REPO, sneaky, message="Tweak the widget limits")
    group = world.fake.queue(REPO, [sneaky, pr], method="rebase")
    assert group["head_ref"].endswith(f"/pr-{pr}-{group['base_sha']}")
    # the queue's own list does not name it (GitHub answers no entry for this head):
    # the commit nobody accounts for is named
    entries = world.fake.merge_queue_entries[REPO]["main"]
    world.fake.merge_queue_entries[REPO]["main"] = []
    _deliver(world, group)
    status = _status(world, group)
    [first, *_] = world.fake.queue_commits(REPO, group)
    assert status["state"] == "failure"
    assert status["description"] == (
        f"commit {first['sha'][:7]} (\"Work on mallory-tweak\") is not accounted for by any "
        "pull request loopgate identified in the group")
    # the queue names it: the pull request itself is named, not covered
    world.fake.merge_queue_entries[REPO]["main"] = entries
    again = world.fake.queue(REPO, [sneaky, pr], method="rebase")
    _deliver(world, again)
    assert (_status(world, again)["state"], _status(world, again)["description"]) == (
        "failure", f"#{sneaky} is not covered: #{sneaky} delivers no work item")


def test_a_rebase_group_of_two_covered_pull_requests_gets_success(world: GitHubWorld) -> None:
    # The queue's entries (GraphQL mergeQueue) name the pull request queued ahead, whose
    # replayed commits the title-less group does not name.
    world.serve()
    _, first = _approved_item(world)
    _, second = _approved_item(world, "Add a gadget")
    group = world.fake.queue(REPO, [first, second], method="rebase")
    _deliver(world, group)
    assert (_status(world, group)["state"], _status(world, group)["description"]) == (
        SUCCESS, f"every pull request in the group is covered: #{second}, #{first}")


def test_a_rebase_group_of_a_covered_pull_request_gets_success(world: GitHubWorld) -> None:
    world.serve()
    _, pr = _approved_item(world)
    group = world.fake.queue(REPO, [pr], method="rebase")
    _deliver(world, group)
    assert (_status(world, group)["state"], _status(world, group)["description"]) == (
        SUCCESS, f"every pull request in the group is covered: #{pr}")
    # the pull request's own commits were read to match the replayed ones
    assert any(r.path.endswith(f"/pulls/{pr}/commits") for r in world.fake.requests)


def test_a_rebase_group_with_a_commit_more_than_the_pull_request_fails(
        world: GitHubWorld) -> None:
    world.serve()
    _, pr = _approved_item(world)
    group = world.fake.queue(REPO, [pr], method="rebase")
    commits = world.fake.queue_commits(REPO, group)
    # one more replayed commit, its message copied from the covered one (count must match)
    extra = {**commits[-1], "sha": "e" * 40, "parents": [commits[-1]["sha"]]}
    commits.insert(0, extra)
    _deliver(world, group)
    # the copy matches first; the real replayed commit is then one too many
    assert _status(world, group)["state"] == "failure"
    assert _status(world, group)["description"].startswith(
        f"commit {commits[1]['sha'][:7]} (\"Work on issue-")


def test_merge_and_squash_groups_stay_green_and_an_extra_commit_fails(
        world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue("Add a widget")
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="carol")
    world.fake.push(REPO, pr, message="Second commit")  # two own commits before the gates
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    comment = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == comment.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    merged = world.fake.queue(REPO, [pr])
    squashed = world.fake.queue(REPO, [pr], method="squash")
    # merge: the pull request's two commits and its merge commit; squash: one commit
    assert len(world.fake.queue_commits(REPO, merged)) == 3
    assert len(world.fake.queue_commits(REPO, squashed)) == 1
    for group in (merged, squashed):
        _deliver(world, group)
        assert _status(world, group)["state"] == SUCCESS
    # a merge group carrying a commit outside every merged pull request's history fails
    forged = world.fake.queue(REPO, [pr])
    commits = world.fake.queue_commits(REPO, forged)
    commits.insert(0, {"sha": "f" * 40, "parents": [forged["base_sha"]],
                       "message": "Sneak in a change", "author": {"name": "mallory"}})
    _deliver(world, forged)
    assert (_status(world, forged)["state"], _status(world, forged)["description"]) == (
        "failure", "commit fffffff (\"Sneak in a change\") is not accounted for by any pull "
                   "request loopgate identified in the group")


def test_every_page_of_a_large_group_is_read(world: GitHubWorld) -> None:
    # GitHub pages a comparison of many commits (per_page ≤ 100): a group of 111 commits
    # is read whole, so a legitimate one passes and a commit on page 2 is still checked.
    world.serve()
    ref = world.issue("Add a widget")
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="carol")
    for n in range(109):
        world.fake.push(REPO, pr, message=f"Step {n}")
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    comment = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == comment.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    group = world.fake.queue(REPO, [pr])
    assert len(world.fake.queue_commits(REPO, group)) == 111
    _deliver(world, group)
    assert _status(world, group)["state"] == SUCCESS
    forged = world.fake.queue(REPO, [pr])
    commits = world.fake.queue_commits(REPO, forged)
    commits.insert(105, {"sha": "d" * 40, "parents": [commits[104]["sha"]],
                         "message": "Late addition", "author": {"name": "mallory"}})
    _deliver(world, forged)
    assert _status(world, forged)["description"].startswith("commit ddddddd (\"Late addition\")")


def test_a_commit_title_naming_a_covered_pull_request_outside_the_group_is_no_cover(
        world: GitHubWorld) -> None:
    # Rebase method: mallory's one commit is titled like #seven's squash commit and bob's
    # covered pull request's one commit like its own. Read as a squash group every commit
    # was accounted for; the queue's own list names mallory's pull request, which is not
    # covered.
    world.serve()
    _, seven = _approved_item(world)
    ref = world.issue("Add a gadget")
    mine = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
    world.fake.repos[REPO].issues[mine].title = f"Add a gadget (#{mine})"
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    comment = world.comment(ref, "approved", as_user="alice")
    [latest] = [c for c in world.services.ports.tracker.list_comments(ref) if c.id == comment.id]
    assert runtime.advance(ref, {"comments": [latest]}).current_node == "complete"
    sneaky = world.fake.open_pr(REPO, "mallory-tweak", author="mallory",
                                title=f"Tweak the limits (#{seven})")
    group = world.fake.queue(REPO, [sneaky, mine], method="rebase")
    titles = [c["message"] for c in world.fake.queue_commits(REPO, group)]
    assert titles == [f"Tweak the limits (#{seven})", f"Add a gadget (#{mine})"]
    _deliver(world, group)
    assert (_status(world, group)["state"], _status(world, group)["description"]) == (
        "failure", f"#{sneaky} is not covered: #{sneaky} delivers no work item")


# -- verify --sha re-derives the group with the performer's own rule ------------------------
def _group_findings(world: GitHubWorld, group: dict) -> tuple[list[str], object]:
    from bot.cli.verify_cmd import verify_sha

    found = verify_sha(world.services, group["head_sha"])
    *items, last = found
    [finding] = last.checks
    return [v.ref for v in items], finding


def test_verify_agrees_with_the_performer_on_a_rebase_group(world: GitHubWorld) -> None:
    # Rebase method: the pull requests' own commits replayed one by one (new shas, GitHub as
    # committer, no merge commit), so no title names a pull request; only the queue's own
    # list names the one queued ahead. verify must name the same pull requests and account
    # for the same commits as the performer did.
    world.serve()
    first_ref, first = _approved_item(world)
    second_ref, second = _approved_item(world, "Add a gadget")
    group = world.fake.queue(REPO, [first, second], method="rebase")
    commits = world.fake.queue_commits(REPO, group)
    assert all(c["committer"]["name"] == "GitHub" and len(c["parents"]) == 1
               for c in commits)
    _deliver(world, group)
    assert _status(world, group)["state"] == SUCCESS
    refs, finding = _group_findings(world, group)
    assert sorted(refs) == sorted([str(second_ref), str(first_ref)])
    assert (finding.published, finding.expected, finding.agrees) == (SUCCESS, SUCCESS, True)


def test_verify_agrees_with_the_performer_failing_a_rebase_group(world: GitHubWorld) -> None:
    # An unlinked pull request queued ahead rides in a rebase group: its replayed commits
    # name no pull request, the queue's list does. The performer fails the group naming it;
    # verify re-derives the same failure (it agrees) instead of a success from head_ref alone.
    world.serve()
    _, pr = _approved_item(world)
    sneaky = world.fake.open_pr(REPO, "mallory-tweak", author="mallory")
    world.fake.push(REPO, sneaky, message="Tweak the widget limits")
    group = world.fake.queue(REPO, [sneaky, pr], method="rebase")
    _deliver(world, group)
    assert _status(world, group)["state"] == "failure"
    _, finding = _group_findings(world, group)
    assert (finding.published, finding.expected, finding.agrees) == ("failure", "failure", True)


def test_verify_names_a_rebase_groups_unaccounted_commit_as_the_performer_does(
        world: GitHubWorld) -> None:
    # The queue's list is empty and one replayed commit is nobody's: the performer fails on
    # commit accounting; verify must account for the commits too, not stop at the titles.
    world.serve()
    _, pr = _approved_item(world)
    group = world.fake.queue(REPO, [pr], method="rebase")
    commits = world.fake.queue_commits(REPO, group)
    commits.insert(0, {**commits[-1], "sha": "e" * 40, "parents": [group["base_sha"]],
                       "message": "Sneak in a change"})
    _deliver(world, group)
    status = _status(world, group)
    assert (status["state"], status["description"]) == (
        "failure", "commit eeeeeee (\"Sneak in a change\") is not accounted for by any pull "
                   "request loopgate identified in the group")
    _, finding = _group_findings(world, group)
    assert (finding.published, finding.expected, finding.agrees) == ("failure", "failure", True)

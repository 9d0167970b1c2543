"""Issue 11 over the GitHub bridge and the loopback fake: team membership lookups (with a
TTL cache, fail closed), the ``loopgate`` commit status written through the outbox on the
delivering pull request's head (fork pull requests on the base repository's head SHA),
and the bad-input checks of ``config check`` and ``serve`` for teams."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from bot.cli import cli
from bridges.github.tracker import GitHubTracker
from engine.approvals import ApprovalRule
from engine.mergegate import GateCheck
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, SECRET, GitHubWorld
from tests.fakes.github import FakeGitHub


def _tracker(world: GitHubWorld) -> GitHubTracker:
    tracker = world.services.ports.tracker
    assert isinstance(tracker, GitHubTracker)
    return tracker


# -- teams -------------------------------------------------------------------------------------
def test_team_membership_is_read_from_github_and_cached(world: GitHubWorld) -> None:
    world.fake.add_team("acme", "reviewers", ["dave"], pending=["erin"])
    tracker = _tracker(world)
    assert tracker.team_membership("acme", "reviewers", "dave") is True
    assert tracker.team_membership("acme", "reviewers", "erin") is False  # pending ≠ member
    assert tracker.team_membership("acme", "reviewers", "mallory") is False  # 404
    before = world.fake.count(route="team-membership")
    assert tracker.team_membership("acme", "Reviewers", "Dave") is True
    assert world.fake.count(route="team-membership") == before  # answered from the cache


def test_a_team_lookup_failure_raises_and_is_not_cached(world: GitHubWorld) -> None:
    world.fake.add_team("acme", "reviewers", ["dave"])
    world.fake.fail_route("GET", "team-membership", 403,
                          message="Resource not accessible by integration")
    tracker = _tracker(world)
    with pytest.raises(TrackerError):
        tracker.team_membership("acme", "reviewers", "dave")
    assert tracker.team_membership("acme", "reviewers", "dave") is True


def test_team_membership_allows_and_a_lookup_failure_refuses_at_the_gate(
        world: GitHubWorld) -> None:
    world.fake.add_team("acme", "reviewers", ["dave"])
    rule = ApprovalRule(approvers=("acme/reviewers",))
    runtime = world.services.runtime
    runtime.settings = _with_rule(runtime.settings, rule)
    ref = world.issue()
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    world.fake.fail_route("GET", "team-membership", 500, times=5)
    refused = world.comment(ref, "approved", as_user="dave")
    state = runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert state.current_node == "human-approval"
    assert "the membership lookup failed for acme/reviewers" in state.parked.reason
    assert world.events(ref, "graph.team_lookup_failed")
    said = [c.body for c in world.fake.comments_on(REPO, ref.number) if "Not counted" in c.body]
    assert said and "@dave" in said[0]
    assert refused.id  # the refused reply stays on the thread
    world.fake._route_failures.clear()  # GitHub is back: dave answers again
    world.comment(ref, "approved", as_user="dave")
    state = runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert state.current_node == "complete"


def _latest(world: GitHubWorld, ref: WorkItemRef):  # noqa: ANN202 -- a Comment
    return world.services.ports.tracker.list_comments(ref)[-1]


def _with_rule(settings, rule):  # noqa: ANN001, ANN202 -- a dataclasses.replace shorthand
    from dataclasses import replace
    return replace(settings, gate_rules={"human-approval": rule})


# -- the commit status through the outbox --------------------------------------------------
def test_the_status_goes_on_a_fork_pull_requests_head_in_the_base_repository(
        world: GitHubWorld) -> None:
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
    world.fake.set_fork(REPO, pr, "bob/widgets")
    tracker = _tracker(world)
    written = tracker.publish_check(WorkItemRef("acme", "widgets", pr),
                                    GateCheck("pending", "acme/widgets#1: at design"))
    sha = world.fake.head_sha(REPO, pr)
    assert written == {"sha": sha, "kind": "status"}
    assert world.fake.commit_state(REPO, sha) == "pending"


def test_a_token_gets_403_from_the_checks_api(fake: FakeGitHub) -> None:
    import requests

    fake.create_repo(REPO)
    fake.open_pr(REPO, "issue-1")
    response = requests.post(f"{fake.api_url}/repos/{REPO}/check-runs",
                             json={"name": "loopgate", "head_sha": fake.head_sha(REPO, 1)},
                             headers={"Authorization": f"token {fake.token}"}, timeout=5)
    assert response.status_code == 403
    assert response.json()["message"] == "You must authenticate via a GitHub App."


def test_a_head_that_moves_while_the_status_is_written_ends_with_the_state(
        world: GitHubWorld) -> None:
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    tracker = _tracker(world)
    first = world.fake.head_sha(REPO, pr)
    hold = world.fake.hold("POST", "status-create", apply=True)
    import threading

    done: list[dict] = []
    writer = threading.Thread(target=lambda: done.append(tracker.publish_check(
        WorkItemRef("acme", "widgets", pr), GateCheck("success", "passed"))))
    writer.start()
    assert hold.arrived.wait(5)
    second = world.fake.push(REPO, pr)  # pushed while the first status is in flight
    hold.release()
    writer.join(10)
    assert not writer.is_alive()
    assert world.fake.commit_state(REPO, first) == "success"
    assert world.fake.commit_state(REPO, second) == "success"
    assert done == [{"sha": second, "kind": "status"}]


# -- bad input: config check and serve name an unknown team (exit 2) -----------------------
@pytest.fixture
def home(tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    fake.create_repo(REPO)
    config = {"authorizedUsers": ["alice"],
              "github": {"repos": [REPO], "apiUrl": fake.api_url, "botLogin": "loopgate-bot",
                         "graphqlUrl": fake.graphql_url, "pollIntervalSeconds": 0},
              "gates": {"human-approval": {"approvals": 2,
                                           "approvers": ["alice", "acme/reviewers"]}},
              "server": {"host": "127.0.0.1", "port": 0}}
    (tmp_path / "loopgate.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def _run(home: Path, *args: str) -> Result:
    argv = ["--db", str(home / "loopgate.db"), "--config", str(home / "loopgate.yaml"), *args]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def test_config_check_names_an_unknown_team(home: Path, fake: FakeGitHub) -> None:
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert ("gates.human-approval.approvers: team acme/reviewers is unknown or loopgate's "
            "credentials cannot read it (GitHub answered 404") in result.output


def test_config_check_names_a_team_the_token_cannot_read(home: Path, fake: FakeGitHub) -> None:
    fake.add_team("acme", "reviewers", ["dave"], visible=False)
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert "gates.human-approval.approvers: team acme/reviewers" in result.output


def test_config_check_accepts_a_readable_team(home: Path, fake: FakeGitHub) -> None:
    fake.add_team("acme", "reviewers", ["dave"])
    result = _run(home, "config", "check")
    assert result.exit_code == 0, result.output
    assert "ok: github team acme/reviewers" in result.output


def test_serve_names_an_unknown_team_and_exits_2(home: Path, fake: FakeGitHub,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", SECRET)
    result = _run(home, "serve")
    assert result.exit_code == 2
    assert "gates.human-approval.approvers: team acme/reviewers is unknown" in result.output


def test_config_check_names_a_rule_for_a_node_that_is_no_human_gate(home: Path) -> None:
    config = yaml.safe_load((home / "loopgate.yaml").read_text())
    config["gates"] = {"design": {"approvals": 2}}
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert "gates.design: pdlc-work-item-loop has no human gate 'design'" in result.output


def test_config_check_names_a_vouching_node_that_is_no_human_gate(home: Path) -> None:
    # Issue 19 §3: mergeGate.vouching lists human gates, the merge node among them.
    config = yaml.safe_load((home / "loopgate.yaml").read_text())
    config["mergeGate"] = {"vouching": ["design", "code-quiz"]}
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert "mergeGate.vouching[0]: pdlc-work-item-loop has no human gate 'design'" in (
        result.output)
    assert ("mergeGate.vouching: must include the merge node 'human-approval' "
            "(mergeGate.after)") in result.output
    config["mergeGate"] = {"vouching": ["code-quiz", "human-approval"]}
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    assert "mergeGate" not in _run(home, "config", "check").output


# -- poll-only installs: the poller follows a push -----------------------------------------
def test_the_poller_puts_the_check_on_a_pushed_head(world: GitHubWorld) -> None:
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    first = world.fake.head_sha(REPO, pr)
    assert world.fake.commit_state(REPO, first) == "pending"
    second = world.fake.push(REPO, pr)
    assert world.fake.commit_state(REPO, second) is None
    report = world.poll()
    assert any(r.reason == "check-queued" for r in report.repos[0].results)
    assert world.fake.commit_state(REPO, second) == "pending"
    world.poll()  # the same head again: nothing new is written
    assert len(world.fake.statuses[(REPO, second)]) == 1
    # The gate was entered at the first head: an approval of that visit covers only what
    # the gate showed then (a fresh-eyes trial, issue 19 §3), so the pushed head sends the
    # item back to the gate as a new visit, and the next approval covers it.
    comment = world.comment(ref, "approved", as_user="alice")
    state = runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert comment.id and world.fake.commit_state(REPO, second) == "pending"
    assert (state.current_node, [v.number for v in state.history("human-approval")]) == (
        "human-approval", [1, 2])
    world.comment(ref, "approved", as_user="alice")
    runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert world.fake.commit_state(REPO, second) == "success"


def test_a_pull_request_opened_after_its_item_passed_is_pending_until_the_gate_covers_it(
        world: GitHubWorld) -> None:
    # Issue 19 §3 (replacing issue 11's "a PR opened later gets success"): a pull request
    # that starts delivering after the merge gate passed is pending, and the item goes
    # back to the gate that did not cover its head.
    world.serve()
    ref = world.issue()
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    world.comment(ref, "approved", as_user="alice")
    assert runtime.advance(ref, {"comments": [_latest(world, ref)]}).current_node == "complete"
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    response = world.webhook("pull_request", "opened", WorkItemRef("acme", "widgets", pr))
    assert response.status_code == 202
    sha = world.fake.head_sha(REPO, pr)
    assert world.fake.commit_state(REPO, sha) == "pending"
    [status] = world.fake.statuses[(REPO, sha)]
    assert status["description"].startswith(
        f"{ref}: #{pr} started delivering after human-approval passed; its head {sha[:7]} "
        "is not covered; now at human-approval (the merge gate)")
    state = runtime.store.load(ref)
    assert (state.current_node, state.status) == ("human-approval", "parked")
    world.comment(ref, "approved", as_user="alice")
    runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert world.fake.commit_state(REPO, sha) == "success"


def test_a_pull_request_delivering_two_items_is_success_only_when_both_passed(
        world: GitHubWorld) -> None:
    one, two = world.issue(), world.issue("Another")
    pr = world.fake.open_pr(REPO, "both", closes=[one.number, two.number])
    runtime = world.services.runtime
    for ref in (one, two):
        runtime.start(ref)
        runtime.force(ref, "human-approval", "test", "tester")
    sha = world.fake.head_sha(REPO, pr)
    world.comment(one, "approved", as_user="alice")
    runtime.advance(one, {"comments": [_latest(world, one)]})
    assert world.fake.commit_state(REPO, sha) == "pending"
    assert world.fake.statuses[(REPO, sha)][-1]["description"] == (
        f"1 of 2 work items passed; waiting: {two}")
    world.comment(two, "approved", as_user="alice")
    runtime.advance(two, {"comments": [_latest(world, two)]})
    assert world.fake.commit_state(REPO, sha) == "success"


# -- App mode: an organisation's teams are read with that organisation's installation -------
def test_an_app_reads_each_organisations_teams_with_its_own_installation(
        tmp_path: Path) -> None:
    from bridges.github.app import AppCredentials, AppInstallations
    from bridges.github.client import GitHubClient
    from bridges.github.graphql import GraphQLClient
    from tests.fakes.github_app import FakeApp, generate_private_key

    app = FakeApp(generate_private_key(), app_id=31, slug="loopgate")
    with FakeGitHub(app=app) as gh:
        for repo in ("acme/widgets", "globex/gadgets"):
            gh.create_repo(repo)
            app.install(repo.split("/")[0])
        gh.add_team("globex", "reviewers", ["dave"])
        repos = ("acme/widgets", "globex/gadgets")
        source = AppInstallations(gh.api_url, AppCredentials(31, generate_private_key(),
                                                             "KEY"), repos)
        tracker = GitHubTracker(GitHubClient(gh.api_url, auth=source, seconds_between_writes=0),
                                GraphQLClient(gh.graphql_url, auth=source), repos=repos)
        assert tracker.team_membership("globex", "reviewers", "dave") is True
        assert tracker.check_team("globex", "reviewers") == ""
        assert "team acme/nobody is unknown" in tracker.check_team("acme", "nobody")


def test_config_check_names_a_rule_the_gate_cannot_take(home: Path) -> None:
    config = yaml.safe_load((home / "loopgate.yaml").read_text())
    config["gates"] = {"code-quiz": {"approvals": 2}}
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert ("gates.code-quiz: a quiz gate passes on one attestation: approvals and "
            "preventSelfApproval apply to review gates") in result.output
    config["gates"] = {"phase-selection": {"approvers": ["alice"]}}
    (home / "loopgate.yaml").write_text(yaml.safe_dump(config))
    result = _run(home, "config", "check")
    assert result.exit_code == 2
    assert "gates.phase-selection: only review gates" in result.output


def test_a_push_after_the_merge_gate_passed_turns_the_check_pending_on_the_new_head(
        world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    runtime = world.services.runtime
    runtime.start(ref)
    runtime.force(ref, "human-approval", "test", "tester")
    world.comment(ref, "approved", as_user="alice")
    runtime.advance(ref, {"comments": [_latest(world, ref)]})
    first = world.fake.head_sha(REPO, pr)
    assert world.fake.commit_state(REPO, first) == "success"
    second = world.fake.push(REPO, pr)
    pull = WorkItemRef("acme", "widgets", pr)
    assert world.webhook("pull_request", "synchronize", pull, before_sha=first).status_code == 202
    assert world.fake.commit_state(REPO, second) == "pending"
    [status] = world.fake.statuses[(REPO, second)]
    assert status["description"].startswith(
        f"{ref}: head {second[:7]} was pushed after human-approval covered {first[:7]}")
    assert runtime.store.load(ref).current_node == "human-approval", [
        (e["kind"], e["data"]) for e in runtime.store.events(ref)][-6:]
    # the same push told twice (a redelivery): one status, not two
    world.webhook("pull_request", "synchronize", pull, before_sha=first)
    assert len(world.fake.statuses[(REPO, second)]) == 1
    world.comment(ref, "approved", as_user="alice")
    runtime.advance(ref, {"comments": [_latest(world, ref)]})
    assert world.fake.commit_state(REPO, second) == "success"
    assert world.fake.commit_state(REPO, first) == "success"  # what was approved stays so


def test_cli_force_to_complete_leaves_the_required_check_pending(
        world: GitHubWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = world.issue()
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number])
    world.services.runtime.start(ref)
    config = world.tmp / "cli.yaml"
    config.write_text(yaml.safe_dump({
        "authorizedUsers": ["alice"],
        "github": {"repos": [REPO], "apiUrl": world.fake.api_url,
                   "graphqlUrl": world.fake.graphql_url, "pollIntervalSeconds": 0}}))
    argv = ["--db", str(world.tmp / "loopgate.db"), "--config", str(config),
            "force", str(ref), "--to", "complete", "--reason", "ship it"]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    world.performer_later().drain(ref)
    sha = world.fake.head_sha(REPO, pr)
    assert world.fake.commit_state(REPO, sha) == "pending"
    assert world.fake.statuses[(REPO, sha)][-1]["description"] == (
        f"{ref}: forced to complete; human-approval never passed its gate")

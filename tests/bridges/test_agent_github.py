"""Issue 24 §2 over the GitHub bridge and the loopback fake: agent authorship read from the
pull request itself (an agent opened it; a commit's ``Co-authored-by`` trailer names an
agent; an agent's e-mail committed it), each needing two human approvals with the
dispatcher's approval not counting; ``agents.requesters`` naming who asked a bot for its
work; the commits read once per head; a failed read keeps the gate waiting; ``check``
and the ``loopgate`` check summary show it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from bot.cli import cli
from engine.checksummary import item_summary
from engine.dispatch import dispatcher
from engine.refs import WorkItemRef
from engine.report import build_report
from engine.state import ItemState
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeGitHub

GATE = "human-approval"
RULE = {"preventSelfApproval": True, "agentAuthored": {"approvals": 2}}
AGENT_MAIL = "agent@ci.example"
CLAUDE = "noreply@anthropic.com"
PEOPLE = ["alice", "bob", "carol", "dave", "erin"]


def _world(fake: FakeGitHub, tmp: Path, **agents: Any) -> GitHubWorld:
    overrides: dict[str, Any] = {"authorizedUsers": PEOPLE, "gates": {GATE: RULE}}
    if agents:
        overrides["agents"] = agents
    return GitHubWorld(fake, tmp, overrides=overrides).build()


@pytest.fixture
def world(github_env: FakeGitHub, tmp_path: Path) -> Iterator[GitHubWorld]:
    w = _world(github_env, tmp_path, emails=[AGENT_MAIL, CLAUDE])
    try:
        yield w
    finally:
        w.close()


def _dispatched_by_alice(world: GitHubWorld) -> WorkItemRef:
    """An item by erin that alice executed (``the-loop execute``): alice dispatched it."""
    ref = world.issue(author="erin")
    world.comment(ref, "the-loop start")
    world.poll()
    world.comment(ref, "the-loop execute")
    world.poll()
    assert dispatcher(world.services.graph, world.state(ref)) == "alice"
    return ref


def _pull(world: GitHubWorld, ref: WorkItemRef, author: str) -> int:
    # GitHub's Copilot coding agent: REST login Copilot, type Bot (no [bot] suffix).
    kind = "Bot" if author == "Copilot" else ""
    return world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author=author,
                              author_type=kind)


def _to_gate(world: GitHubWorld, ref: WorkItemRef) -> None:
    # Forced moves claim no agent node: only the pull request can say agent-authored.
    world.services.runtime.force(ref, GATE, "test: straight to the gate", "tester")


def _answer(world: GitHubWorld, ref: WorkItemRef, login: str) -> ItemState:
    world.comment(ref, "approved", as_user=login)
    latest = world.services.ports.tracker.list_comments(ref)[-1]
    return world.services.runtime.advance(ref, {"comments": [latest]})


def _refusal(state: ItemState) -> str:
    return str(state.surface["approvals"][GATE]["refused"][-1]["reason"])


def _agent_opened(world: GitHubWorld, ref: WorkItemRef) -> list[str]:
    # GitHub's REST login of Copilot's coding agent has no [bot] suffix: the default list.
    # Its one commit (the fake's default) is by the pull request's author.
    pr = _pull(world, ref, "Copilot")
    head = world.fake.head_sha(REPO, pr)[:7]
    return [f"acme/widgets#{pr} was opened by the agent @Copilot",
            f"commit {head} of acme/widgets#{pr} has the agent @Copilot as its author"]


def _co_authored(world: GitHubWorld, ref: WorkItemRef) -> list[str]:
    pr = _pull(world, ref, "dave")
    sha = world.fake.commit(REPO, pr, author=("Dave", "dave@example.com"), author_login="dave",
                            message="Add the widget\n\nCo-authored-by: Claude <" + CLAUDE + ">")
    return [f"commit {sha[:7]} of acme/widgets#{pr} is co-authored by the agent "
            f"Claude <{CLAUDE}>"]


def _agent_committed(world: GitHubWorld, ref: WorkItemRef) -> list[str]:
    pr = _pull(world, ref, "dave")
    sha = world.fake.commit(REPO, pr, author=("Dave", "dave@example.com"), author_login="dave",
                            committer=("CI agent", AGENT_MAIL), message="Add the widget")
    return [f"commit {sha[:7]} of acme/widgets#{pr} has the agent <{AGENT_MAIL}> as its "
            "committer"]


@pytest.mark.parametrize("signal", [_agent_opened, _co_authored, _agent_committed],
                         ids=["bot-author", "co-authored-by", "committer-email"])
def test_agent_authored_work_needs_two_humans_and_not_the_dispatcher(
        world: GitHubWorld, signal: Any) -> None:
    ref = _dispatched_by_alice(world)
    why = signal(world, ref)
    _to_gate(world, ref)

    refused = _answer(world, ref, "alice")
    assert refused.current_node == GATE
    assert _refusal(refused) == (
        "@alice dispatched the agent that did this work (the-loop execute), and this gate "
        "has preventSelfApproval: who asked for the work cannot approve it")

    one = _answer(world, ref, "bob")
    assert one.current_node == GATE
    assert str(one.parked.reason).startswith("1 of 2 approvals (agent-authored): @bob")
    assert one.surface["agent"]["signals"] == why

    assert _answer(world, ref, "carol").current_node == "complete"


def test_a_human_pull_request_needs_the_plain_count(world: GitHubWorld) -> None:
    ref = _dispatched_by_alice(world)
    pr = _pull(world, ref, "dave")
    world.fake.commit(REPO, pr, author=("Dave", "dave@example.com"), author_login="dave",
                      message="Add\n\nCo-authored-by: Bob <1+bob@users.noreply.github.com>")
    _to_gate(world, ref)
    assert _answer(world, ref, "bob").current_node == "complete"


def test_the_commits_are_read_once_per_head(world: GitHubWorld) -> None:
    ref = _dispatched_by_alice(world)
    _agent_committed(world, ref)
    _to_gate(world, ref)
    world.fake.reset_log()
    _answer(world, ref, "alice")
    assert _answer(world, ref, "bob").current_node == GATE
    assert world.fake.count(route="pull-commits") == 1
    # A new head (which also sends the gate back: issue 19 §3) is read again.
    world.fake.commit(REPO, 2, author=("Dave", "dave@example.com"), author_login="dave")
    _answer(world, ref, "carol")
    assert world.fake.count(route="pull-commits") == 2


def test_a_failed_commits_read_keeps_the_gate_waiting(world: GitHubWorld) -> None:
    ref = _dispatched_by_alice(world)
    _pull(world, ref, "dave")
    _to_gate(world, ref)
    world.fake.fail_route("GET", "pull-commits", 502, times=20)
    state = _answer(world, ref, "bob")
    assert state.current_node == GATE
    assert state.parked.unverified
    assert "could not read who authored the work" in str(state.parked.reason)
    assert "commits of pull request acme/widgets#2" in str(state.parked.reason)


# -- agents.requesters -----------------------------------------------------------------------
def test_a_mapped_requester_is_the_dispatcher(github_env: FakeGitHub, tmp_path: Path) -> None:
    world = _world(github_env, tmp_path, requesters={"acme-agent[bot]": "carol"})
    try:
        ref = world.issue(author="erin")
        world.services.runtime.start(ref)
        pr = _pull(world, ref, "acme-agent[bot]")
        _to_gate(world, ref)
        refused = _answer(world, ref, "carol")
        assert _refusal(refused) == (
            "@carol asked the agent for the pull request that delivers this work "
            "(agents.requesters), and this gate has preventSelfApproval: who asked for the "
            "work cannot approve it")
        assert _answer(world, ref, "bob").current_node == GATE
        state = _answer(world, ref, "dave")
        assert state.current_node == "complete"
        report = build_report(world.services.graph, state)
        head = world.fake.head_sha(REPO, pr)[:7]
        assert report["agent"] == {"dispatcher": "carol", "authored": True, "signals": [
            f"acme/widgets#{pr} was opened by the agent @acme-agent[bot]",
            f"commit {head} of acme/widgets#{pr} has the agent @acme-agent[bot] as its author",
            f"@carol asked @acme-agent[bot] for acme/widgets#{pr} (agents.requesters)"]}
    finally:
        world.close()


def test_co_author_names_who_asked_copilot(github_env: FakeGitHub, tmp_path: Path) -> None:
    # GitHub: the coding agent's commits are co-authored by whoever asked for the work.
    world = _world(github_env, tmp_path, requesters={"Copilot": "co-author"})
    try:
        ref = _dispatched_by_alice(world)
        pr = _pull(world, ref, "Copilot")
        world.fake.commit(
            REPO, pr, author=("copilot-swe-agent[bot]",
                              "198982749+Copilot@users.noreply.github.com"),
            author_login="Copilot", author_type="Bot",
            message="Add the widget\n\nCo-authored-by: bob <7+bob@users.noreply.github.com>")
        _to_gate(world, ref)
        assert "@bob asked the agent" in _refusal(_answer(world, ref, "bob"))
        assert "@alice dispatched the agent" in _refusal(_answer(world, ref, "alice"))
        assert _answer(world, ref, "carol").current_node == GATE
        assert _answer(world, ref, "dave").current_node == "complete"
    finally:
        world.close()


# -- shown in check and in the loopgate check ------------------------------------------------
def test_check_and_the_check_summary_show_the_agent(world: GitHubWorld) -> None:
    ref = _dispatched_by_alice(world)
    why = _agent_opened(world, ref)
    _to_gate(world, ref)
    state = _answer(world, ref, "bob")
    services = world.services
    assert build_report(services.graph, state)["agent"] == {
        "dispatcher": "alice", "authored": True, "signals": why}
    summary = item_summary(services.graph, state, "waiting", services.settings)
    assert ("**Agent-authored**: acme/widgets\\#2 was opened by the agent @Copilot; commit "
            in summary)
    assert "as its author — dispatched by @alice\n" in summary
    assert "- approvals: 1 of 2 approvals (agent-authored): @bob\n" in summary
    assert ("- preventSelfApproval: the authors of the work item and of the delivering pull "
            "requests cannot approve, nor who asked for the agent's work (@alice)") in summary

    argv = ["--db", str(world.tmp / "loopgate.db"), "check", str(ref), "--format", "json"]
    shown = CliRunner().invoke(cli, argv)
    assert shown.exit_code in (0, 1), shown.output
    assert json.loads(shown.output)["report"]["agent"] == {
        "dispatcher": "alice", "authored": True, "signals": why}
    text = CliRunner().invoke(cli, argv[:-2])
    assert f"agent-authored: {why[0]}\nagent-authored: {why[1]}\n" in text.output
    assert "dispatched by @alice" in text.output


# -- config check: agents.requesters name real accounts ---------------------------------------
def _config_check(tmp: Path, fake: FakeGitHub, requesters: dict[str, str],
                  monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG", "GITHUB_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    fake.create_repo(REPO)
    config = {"authorizedUsers": ["alice"], "agents": {"requesters": requesters},
              "github": {"repos": [REPO], "apiUrl": fake.api_url, "botLogin": "loopgate-bot",
                         "graphqlUrl": fake.graphql_url, "pollIntervalSeconds": 0}}
    (tmp / "loopgate.yaml").write_text(yaml.safe_dump(config))
    argv = ["--db", str(tmp / "loopgate.db"), "--config", str(tmp / "loopgate.yaml"),
            "config", "check"]
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def test_config_check_refuses_a_requester_github_does_not_know(
        tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.missing_users.add("carl")
    result = _config_check(tmp_path, fake, {"acme-agent[bot]": "carl"}, monkeypatch)
    assert result.exit_code == 2
    assert ("agents.requesters.acme-agent[bot]: GitHub has no account carl (GitHub answered "
            "404)") in result.output


def test_config_check_reads_every_mapped_account(
        tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _config_check(tmp_path, fake, {"acme-agent[bot]": "carol",
                                            "Copilot": "co-author"}, monkeypatch)
    assert result.exit_code == 0, result.output
    for login in ("acme-agent[bot]", "carol", "copilot"):
        assert f"ok: github account {login}\n" in result.output
    assert fake.count(route="user-by-login") == 3


# -- an operator request: the dispatcher may not confirm a move past their agent's gate ------
def test_the_dispatcher_cannot_confirm_a_force_past_an_agent_aware_gate(
        world: GitHubWorld) -> None:
    from tests.bridges.test_dispatcher import comment_delivery

    ref = _dispatched_by_alice(world)
    _agent_opened(world, ref)
    result = world.services.runtime.operator_force(ref, "complete", "ship it", "cli")
    assert result.request is not None and GATE in result.request["nodes"]
    rid = result.request["id"]
    alice = world.comment(ref, f"the-loop confirm {rid}")
    world.dispatcher.handle(comment_delivery(ref, alice))
    refusal = world.state(ref).surface["operatorRequests"][rid]["refused"][0]
    assert (refusal["by"], refusal["reason"]) == ("alice", (
        "@alice dispatched the agent that did this work (the-loop execute), and this gate "
        f"has preventSelfApproval: who asked for the work cannot approve it (at {GATE})"))
    bob = world.comment(ref, f"the-loop confirm {rid}", as_user="bob")
    world.dispatcher.handle(comment_delivery(ref, bob))
    assert world.state(ref).current_node == "complete"


# -- simulate reads the commits too and agrees with the walk ---------------------------------
def test_simulate_reads_the_commits_and_agrees_with_the_walk(world: GitHubWorld) -> None:
    from engine.simulate import simulate_decision

    ref = _dispatched_by_alice(world)
    _agent_committed(world, ref)
    _to_gate(world, ref)
    s = world.services
    world.fake.reset_log()
    sim = simulate_decision(s.graph, s.store, s.ports, s.runtime.settings, ref, "alice", GATE)
    assert [r.method for r in world.fake.requests if r.route != "graphql"] == \
        ["GET"] * len([r for r in world.fake.requests if r.route != "graphql"])
    assert world.fake.count(route="pull-commits") == 1
    assert not sim.counted
    assert _refusal(_answer(world, ref, "alice")) == sim.reason
    sim = simulate_decision(s.graph, s.store, s.ports, s.runtime.settings, ref, "bob", GATE)
    assert (sim.counted, sim.tally) == (True, "1 of 2 approvals (agent-authored): @bob")
    assert _answer(world, ref, "bob").parked.reason == sim.wait


# -- the tracker's read ------------------------------------------------------------------------
def test_pull_commits_reads_every_page_as_github_lists_them(world: GitHubWorld) -> None:
    from bridges.github.tracker import GitHubTracker
    from engine.dispatch import PullCommit

    ref = world.issue()
    pr = _pull(world, ref, "dave")
    opened = world.fake.head_sha(REPO, pr)  # the commit the pull request was opened with
    shas = [world.fake.commit(REPO, pr, author=("Dave", "dave@example.com"),
                              author_login="dave", message=f"step {i}") for i in range(104)]
    last = world.fake.commit(REPO, pr, author=("copilot-swe-agent[bot]",
                                               "198982749+Copilot@users.noreply.github.com"),
                             author_login="Copilot", author_type="Bot",
                             committer=("GitHub", "noreply@github.com"),
                             committer_login="web-flow", message="Fix\n\nCo-authored-by: x <y>")
    tracker = world.services.ports.tracker
    assert isinstance(tracker, GitHubTracker)
    world.fake.reset_log()
    commits = tracker.pull_commits(WorkItemRef("acme", "widgets", pr))
    assert [c.sha for c in commits] == [opened, *shas, last]
    assert world.fake.count(route="pull-commits") == 2  # 100 a page
    assert commits[-1] == PullCommit(
        last, "Fix\n\nCo-authored-by: x <y>", "copilot-swe-agent[bot]",
        "198982749+Copilot@users.noreply.github.com", "GitHub", "noreply@github.com",
        "Copilot", "web-flow", "Bot", "User")
    assert tracker.pull_commits(WorkItemRef("acme", "widgets", pr), last) == commits
    assert world.fake.count(route="pull-commits") == 2  # the same head: kept

"""Issue 24 §2 with §3: an approval gate with ``preventSelfApproval`` and ``agentAuthored``
refuses, besides the item's author and the agent's dispatcher, whoever
``agents.requesters`` names as having asked an agent bot for its pull request (a mapped
login, or the ``Co-authored-by`` of the bot's commits, platform-facts F4). The gate's
review requests must leave those people out too: GitHub would ask someone whose approval
the gate then refuses. Over the GitHub bridge and the loopback fake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeGitHub

GATE = "human-approval"
RULE = {"preventSelfApproval": True, "agentAuthored": {"approvals": 2}}
PEOPLE = ["alice", "bob", "carol", "dave", "erin"]


@pytest.fixture
def make_world(github_env: FakeGitHub, tmp_path: Path) -> Iterator[Any]:
    made: list[GitHubWorld] = []

    def build(requesters: dict[str, str]) -> GitHubWorld:
        world = GitHubWorld(github_env, tmp_path, overrides={
            "authorizedUsers": PEOPLE, "gates": {GATE: RULE},
            "agents": {"requesters": requesters}}).build()
        made.append(world)
        return world

    yield build
    for world in made:
        world.close()


def _left_out(world: GitHubWorld, ref: WorkItemRef) -> dict[str, str]:
    entry = world.state(ref).surface["reviewRequests"][GATE]
    return {left["name"]: left["why"] for left in entry["leftOut"]}


def test_a_mapped_requester_is_not_asked_for_a_review(make_world: Any) -> None:
    world = make_world({"acme-agent[bot]": "carol"})
    ref = world.issue(author="erin")
    world.services.runtime.start(ref)
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number],
                            author="acme-agent[bot]")
    world.services.runtime.force(ref, GATE, "test: straight to the gate", "tester")
    world.serve()

    # erin opened the item, carol asked the agent for its pull request: neither is asked.
    assert world.fake.requested_reviewers(REPO, pr) == (["alice", "bob", "dave"], [])
    assert _left_out(world, ref)["carol"] == (
        "asked the agent for its pull request (agents.requesters; preventSelfApproval)")


def test_a_co_author_who_asked_copilot_is_not_asked_for_a_review(make_world: Any) -> None:
    world = make_world({"Copilot": "co-author"})
    ref = world.issue(author="erin")
    world.services.runtime.start(ref)
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number],
                            author="Copilot", author_type="Bot")
    world.fake.commit(
        REPO, pr, author=("copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com"),
        author_login="Copilot", author_type="Bot",
        message="Add the widget\n\nCo-authored-by: bob <7+bob@users.noreply.github.com>")
    world.services.runtime.force(ref, GATE, "test: straight to the gate", "tester")
    world.serve()

    assert world.fake.requested_reviewers(REPO, pr) == (["alice", "carol", "dave"], [])
    assert "bob" in _left_out(world, ref)


def test_a_failed_commits_read_asks_nobody_and_the_next_event_asks(make_world: Any) -> None:
    world = make_world({"acme-agent[bot]": "carol"})
    ref = world.issue(author="erin")
    world.services.runtime.start(ref)
    pr = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number],
                            author="acme-agent[bot]")
    world.fake.fail_route("GET", "pull-commits", 502, times=20)
    world.services.runtime.force(ref, GATE, "test: straight to the gate", "tester")
    world.serve()

    # Who asked the agent is unknown: nobody is asked rather than maybe the requester.
    assert world.fake.requested_reviewers(REPO, pr) == ([], [])
    entry = world.state(ref).surface["reviewRequests"][GATE]
    assert entry["status"] == "failed"
    assert "pull request acme/widgets#" in entry["error"]

    world.fake.clear_route_failures("GET", "pull-commits")
    world.fake.push(REPO, pr)
    assert world.webhook("pull_request", "synchronize",
                         WorkItemRef("acme", "widgets", pr)).status_code == 202
    assert world.fake.requested_reviewers(REPO, pr) == (["alice", "bob", "dave"], [])

"""Issue 24 §4 over the GitHub bridge and the loopback fake: ``simulate`` reads GitHub (the
item, the delivering pull request, a team) and the fake sees no write request; the store's
revision and the outbox stay as they were; the real walk then does what it said."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml
from click.testing import CliRunner

from bot.cli import cli
from engine.approvals import ApprovalRule
from engine.refs import WorkItemRef
from engine.simulate import Simulation, simulate_decision
from tests.bridges.conftest import REPO, GitHubWorld

GATE = "human-approval"


def _writes(world: GitHubWorld) -> list[tuple[str, str]]:
    # GraphQL queries are POSTs that read; every other non-GET is a write.
    return [(r.method, r.route) for r in world.fake.requests
            if r.method not in {"GET", "HEAD"} and r.route != "graphql"]


def _stored(world: GitHubWorld, ref: WorkItemRef) -> dict[str, Any]:
    state = world.state(ref)
    store = world.services.store
    return {"revision": state.revision, "document": state.to_document(),
            "events": len(store.events(ref)),
            "outbox": [(r.id, r.status) for r in store.effects.rows()]}


def _simulate(world: GitHubWorld, ref: WorkItemRef, login: str) -> Simulation:
    s = world.services
    return simulate_decision(s.graph, s.store, s.ports, s.runtime.settings, ref, login, GATE)


def _answer(world: GitHubWorld, ref: WorkItemRef, login: str) -> Any:
    world.comment(ref, "approved", as_user=login)
    latest = world.services.ports.tracker.list_comments(ref)[-1]
    return world.services.runtime.advance(ref, {"comments": [latest]})


def _at_gate(world: GitHubWorld) -> WorkItemRef:
    world.fake.add_team("acme", "reviewers", ["dave"])
    rule = ApprovalRule(approvals=2, approvers=("alice", "bob", "carol", "acme/reviewers"),
                        prevent_self_approval=True)
    runtime = world.services.runtime
    runtime.settings = replace(runtime.settings, gate_rules={GATE: rule})
    ref = world.issue(author="alice")
    world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
    runtime.start(ref)
    runtime.force(ref, GATE, "test", "tester")
    return ref


def test_simulate_sends_github_no_write_and_leaves_the_store_as_it_was(
        world: GitHubWorld) -> None:
    ref = _at_gate(world)
    before = _stored(world, ref)
    world.fake.reset_log()
    comments = len(world.fake.comments_on(REPO, ref.number))

    answers = {login: _simulate(world, ref, login) for login in ("alice", "bob", "dave")}

    assert _writes(world) == []
    assert world.fake.count(method="GET") > 0  # it did read GitHub
    assert _stored(world, ref) == before
    assert len(world.fake.comments_on(REPO, ref.number)) == comments
    assert [answers[x].counted for x in ("alice", "bob", "dave")] == [False, False, True]
    assert answers["bob"].reason.startswith(f"@bob opened {REPO}#")


def test_simulate_answers_equal_what_the_github_walk_then_does(world: GitHubWorld) -> None:
    ref = _at_gate(world)
    sim = _simulate(world, ref, "alice")
    real = _answer(world, ref, "alice")
    assert not sim.counted
    assert real.surface["approvals"][GATE]["refused"][-1]["reason"] == sim.reason
    assert real.current_node == sim.after_node == GATE

    sim = _simulate(world, ref, "dave")
    real = _answer(world, ref, "dave")
    assert sim.counted and sim.tally == "1 of 2 approvals: @dave"
    assert [a["by"] for a in real.surface["approvals"][GATE]["approvals"]] == ["dave"]

    sim = _simulate(world, ref, "carol")
    real = _answer(world, ref, "carol")
    assert (sim.counted, sim.after_node) == (True, "complete")
    assert real.current_node == "complete"


def test_the_simulate_command_prints_the_answer_and_writes_nothing(
        world: GitHubWorld, tmp_path: Any) -> None:
    ref = _at_gate(world)
    config = tmp_path / "loopgate.yaml"  # the world's: no gates section, so @alice, @bob
    config.write_text(yaml.safe_dump({
        "authorizedUsers": ["alice", "bob"],
        "github": {"repos": [REPO], "apiUrl": world.fake.api_url,
                   "graphqlUrl": world.fake.graphql_url}}))
    before = _stored(world, ref)
    world.fake.reset_log()
    result = CliRunner().invoke(cli, ["--config", str(config), "--db",
                                      str(world.tmp / "loopgate.db"), "simulate", str(ref),
                                      "--as", "mallory", "--approve", GATE])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"{ref}: @mallory's approval at {GATE} would NOT count: @mallory is not among the "
        "approvers of this gate (@alice, @bob)")
    assert result.output.splitlines()[-1] == "(simulated: nothing was written)"
    assert _writes(world) == []
    assert _stored(world, ref) == before

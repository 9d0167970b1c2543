"""Issue 24 §4 ``simulate --codeowners-change`` over the GitHub bridge and the loopback fake:
the code owners recomputed from the repository's CODEOWNERS with the file added, GitHub
sees only reads, and the answers equal the walk's once the file is pushed to the branch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from bot.cli import cli
from engine.approvals import ApprovalRule
from engine.refs import WorkItemRef
from engine.simulate import simulate_decision
from tests.bridges.conftest import REPO, GitHubWorld

GATE = "human-approval"
OWNERS = "/web/ @wendy\n/docs/ @writer\n/lib/ @lead\n"


def _at_gate(world: GitHubWorld) -> tuple[WorkItemRef, int]:
    world.fake.put_file(REPO, ".github/CODEOWNERS", OWNERS)
    runtime = world.services.runtime
    runtime.settings = replace(runtime.settings, gate_rules={GATE: ApprovalRule.from_json(
        {"approvers": ["codeowners"], "codeowners": "all-files"}, f"gates.{GATE}")})
    ref = world.issue(author="alice")
    branch = f"issue-{ref.number}"
    pr = world.fake.open_pr(REPO, branch, closes=[ref.number], author="bob")
    world.fake.put_file(REPO, "web/app.ts", "export {}\n", ref=branch)
    runtime.start(ref)
    runtime.force(ref, GATE, "test", "tester")
    return ref, pr


def _answer(world: GitHubWorld, ref: WorkItemRef, login: str) -> Any:
    world.comment(ref, "approved", as_user=login)
    latest = world.services.ports.tracker.list_comments(ref)[-1]
    return world.services.runtime.advance(ref, {"comments": [latest]})


def test_a_simulated_change_equals_the_walk_once_the_file_is_pushed(
        world: GitHubWorld) -> None:
    ref, pr = _at_gate(world)
    s = world.services
    world.fake.reset_log()
    sim = simulate_decision(s.graph, s.store, s.ports, s.runtime.settings, ref, "wendy", GATE,
                            changes=["lib/core.py"])
    assert {r.method for r in world.fake.requests if r.route != "graphql"} == {"GET"}
    assert sim.owners is not None
    assert sim.owners.files == (("lib/core.py", ("@lead",)), ("web/app.ts", ("@wendy",)))
    assert (sim.counted, sim.after_node) == (True, GATE)
    assert "no code owner approved lib/core.py yet" in sim.wait

    world.fake.put_file(REPO, "lib/core.py", "x = 1\n", ref=f"issue-{ref.number}")
    real = _answer(world, ref, "wendy")
    assert (real.current_node, real.parked.reason) == (GATE, sim.wait)
    lead = simulate_decision(s.graph, s.store, s.ports, s.runtime.settings, ref, "lead", GATE)
    assert (lead.counted, lead.after_node) == (True, "complete")
    assert _answer(world, ref, "lead").current_node == "complete"


def test_the_cli_shows_the_owners_with_the_file_added(world: GitHubWorld,
                                                      tmp_path: Path) -> None:
    ref, _ = _at_gate(world)
    config = {"authorizedUsers": ["alice", "bob"],
              "github": {"repos": [REPO], "apiUrl": world.fake.api_url,
                         "graphqlUrl": world.fake.graphql_url, "pollIntervalSeconds": 0},
              "gates": {GATE: {"approvers": ["codeowners"], "codeowners": "all-files"}}}
    (tmp_path / "loopgate.yaml").write_text(yaml.safe_dump(config))
    before = world.state(ref).revision
    world.fake.reset_log()
    result = CliRunner().invoke(cli, [
        "--db", str(world.tmp / "loopgate.db"), "--config", str(tmp_path / "loopgate.yaml"),
        "simulate", str(ref), "--codeowners-change", "lib/core.py"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{ref}: if its pull requests also changed lib/core.py"
    assert "  lib/core.py (added): @lead" in lines
    assert "  web/app.ts: @wendy" in lines
    assert "may approve at human-approval: the code owners of the changed files (@lead, " \
           "@wendy)" in lines
    assert {r.method for r in world.fake.requests if r.route != "graphql"} == {"GET"}
    assert world.state(ref).revision == before

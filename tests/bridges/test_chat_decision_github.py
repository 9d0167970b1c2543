"""Issue 20 §1 over the GitHub bridge and the loopback fake: one chat decision (a Slack
Approve click, as the bot hands it over) applies the gate's rule once, so whose work it is
— the issue, its delivering pull requests — and the team are read from GitHub once each,
and the echo comment is posted as before."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from engine import events as ev
from engine.approvals import ApprovalRule
from engine.hooks.chat_decision import decision_marker
from tests.bridges.conftest import REPO, GitHubWorld

GATE = "human-approval"


def test_one_approve_click_reads_the_items_authorship_from_github_once(
        world: GitHubWorld) -> None:
    world.fake.add_team("acme", "reviewers", ["dave"])
    rule = ApprovalRule(approvers=("alice", "acme/reviewers"), prevent_self_approval=True)
    runtime = world.services.runtime
    runtime.settings = replace(runtime.settings, gate_rules={GATE: rule})
    ref = world.issue(author="alice")
    world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
    runtime.start(ref)
    runtime.force(ref, GATE, "test", "tester")
    world.fake.reset_log()

    result = runtime.advance(ref, ev.Decision(GATE, "approved", "dave", via="slack"))

    assert isinstance(result, ev.Moved) and result.to == "complete"
    reads = Counter(r.route for r in world.fake.requests if r.method == "GET")
    issue_reads = [r for r in world.fake.requests
                   if r.method == "GET" and r.path.endswith(f"/issues/{ref.number}")]
    assert len(issue_reads) == 1, reads  # the item's author, once
    assert reads["issue"] == 1 and reads["team-membership"] == 1, reads
    [echo] = [c for c in world.fake.comments_on(REPO, ref.number)
              if decision_marker(GATE) in c.body]
    assert echo.body.startswith(f"✅ **Approved** at `{GATE}` by @dave — from Slack.")

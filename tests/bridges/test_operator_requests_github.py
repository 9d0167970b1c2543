"""Operator requests over the GitHub bridge (issue 19 §5): the request is posted on the
issue (fake GitHub), and a ``the-loop confirm <id>`` reply reaches the runtime through the
dispatcher even while the item waits at an agent node; it counts through the gates' own
authorization: a non-approver and the item's own author (``preventSelfApproval``) are
refused with the reason on the thread, an authorized reviewer's reply applies it."""

from __future__ import annotations

import re
from dataclasses import replace

from bridges.ingress.dispatcher import HANDLED
from engine.approvals import ApprovalRule
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.bridges.test_dispatcher import comment_delivery, start_delivery


def _selected(world: GitHubWorld, ref: WorkItemRef) -> None:
    world.dispatcher.handle(start_delivery(ref))
    execute = world.comment(ref, "the-loop execute", as_user="alice")
    world.dispatcher.handle(comment_delivery(ref, execute))
    assert world.state(ref).current_node == "brainstorming"


def _posted_request(world: GitHubWorld, ref: WorkItemRef, rid: str) -> str:
    bodies = [c.body for c in world.fake.comments_on(REPO, ref.number)
              if f"<!-- the-loop:operator-request {rid} -->" in c.body]
    assert len(bodies) == 1
    return bodies[0]


def test_a_skip_request_is_posted_and_only_an_authorized_reply_applies_it(
        world: GitHubWorld) -> None:
    ref = world.issue()
    _selected(world, ref)
    result = world.services.runtime.operator_skip(ref, ["code-quiz"], "trivial change", "cli")
    assert result.accepted == {} and result.request is not None
    rid = result.request["id"]
    body = _posted_request(world, ref, rid)
    assert f"the-loop confirm {rid}" in body and "`code-quiz`" in body
    assert "code-quiz" not in world.state(ref).skips

    mallory = world.comment(ref, f"the-loop confirm {rid}", as_user="mallory")
    outcome = world.dispatcher.handle(comment_delivery(ref, mallory))
    assert (outcome.status, outcome.reason) == (HANDLED, "operator-request")
    assert "code-quiz" not in world.state(ref).skips
    said = [c.body for c in world.fake.comments_on(REPO, ref.number)
            if "did not count" in c.body]
    assert said and said[0].startswith(
        f"`the-loop confirm {rid}` by @mallory did not count: @mallory is not among the "
        "approvers of this gate (@alice, @bob) (at code-quiz).")
    assert world.events(ref, "graph.operator_confirmation_refused")[0]["by"] == "mallory"

    bob = world.comment(ref, f"the-loop confirm {rid}", as_user="bob")
    world.dispatcher.handle(comment_delivery(ref, bob))
    skip = world.state(ref).skips["code-quiz"]
    assert (skip.confirmed_by, skip.confirmed_via, skip.request) == ("bob", "reply", rid)
    assert world.state(ref).current_node == "brainstorming"  # a confirmation answers no gate


def test_the_items_author_cannot_confirm_a_force_past_a_gate_that_forbids_self_approval(
        world: GitHubWorld) -> None:
    runtime = world.services.runtime
    runtime.settings = replace(runtime.settings, gate_rules={
        "human-approval": ApprovalRule(prevent_self_approval=True)})
    ref = world.issue(author="alice")
    _selected(world, ref)
    result = runtime.operator_force(ref, "complete", "ship it", "cli")
    assert result.request is not None and "human-approval" in result.request["nodes"]
    rid = result.request["id"]
    alice = world.comment(ref, f"Yes.\nthe-loop confirm {rid}", as_user="alice")
    world.dispatcher.handle(comment_delivery(ref, alice))
    assert world.state(ref).current_node == "brainstorming"
    refusal = world.state(ref).surface["operatorRequests"][rid]["refused"][0]
    assert refusal["by"] == "alice"
    assert re.match(r"@alice opened this work item, and this gate has preventSelfApproval",
                    refusal["reason"])
    bob = world.comment(ref, f"the-loop confirm {rid}", as_user="bob")
    world.dispatcher.handle(comment_delivery(ref, bob))
    state = world.state(ref)
    assert state.current_node == "complete"
    assert state.forced[-1].confirmed_by == "bob"


def test_a_confirm_line_with_no_pending_request_is_not_fed_to_the_runtime(
        world: GitHubWorld) -> None:
    ref = world.issue()
    _selected(world, ref)
    c = world.comment(ref, "the-loop confirm 0badc0de", as_user="bob")
    assert world.dispatcher.handle(comment_delivery(ref, c)).reason == "not-at-gate"

"""Issue 24 §3, a pull request that appears after the gate opened: while the item waits at
human-approval (an approval gate that covers pull requests), a pull request opened — or
linked by an edited body — is asked for reviews in the same visit, by the entry's
leave-out rules, once per pull request (a second delivery asks nothing more), with the
merge gate on or off. Over the GitHub bridge, the webhook receiver and the loopback
fake."""

from __future__ import annotations

from typing import Any

from engine.graph.compiler import shipped_graph
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld

GATE = "human-approval"
ROUTE = "review-request"
RULE = {"approvers": ["alice", "bob", "carol", "dave"], "preventSelfApproval": True}


def _to_gate(world: GitHubWorld) -> tuple[WorkItemRef, int]:
    """An item by alice, a pull request by bob; every skippable node declared away, so
    the walk goes straight to human-approval (its entry chain asks carol and dave)."""
    ref = world.issue(author="alice")
    pull = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number], author="bob")
    world.comment(ref, "the-loop start")
    world.poll()
    skippable = [n.id for n in shipped_graph().ordered() if n.skippable] + ["explainer"]
    rows = "\n".join(f"- [ ] {token}" for token in skippable)
    world.comment(ref, f"the-loop execute\n{rows}", as_user="alice")
    world.poll()
    assert world.state(ref).current_node == GATE, world.state(ref).parked
    return ref, pull


def _world(world: GitHubWorld, **overrides: Any) -> GitHubWorld:
    world.overrides.update(gates={GATE: RULE}, **overrides)
    world.restart()
    return world


def _pull(number: int) -> WorkItemRef:
    return WorkItemRef("acme", "widgets", number)


def test_a_pull_request_opened_at_the_gate_is_asked_in_the_same_visit_once(
        world: GitHubWorld) -> None:
    _world(world)
    ref, first = _to_gate(world)
    assert world.fake.requested_reviewers(REPO, first) == (["carol", "dave"], [])
    world.serve()

    second = world.fake.open_pr(REPO, "more-widgets", closes=[ref.number], author="dave")
    assert world.webhook("pull_request", "opened", _pull(second)).status_code == 202

    # Same leave-out rules: alice opened the item, bob and dave each opened a pull request.
    assert world.fake.requested_reviewers(REPO, second) == (["carol"], [])
    assert world.fake.requested_reviewers(REPO, first) == (["carol", "dave"], [])
    state = world.state(ref)
    assert state.current_node == GATE
    assert state.visit(GATE).number == 1
    entry = state.surface["reviewRequests"][GATE]
    assert entry["visit"] == 1 and entry["pulls"] == [first, second]
    assert entry["status"] == "sent"
    assert entry["asked"] == [{"pull": first, "reviewers": ["carol", "dave"], "teams": []},
                              {"pull": second, "reviewers": ["carol"], "teams": []}]
    assert {left["name"]: left["why"] for left in entry["leftOut"]}["dave"] == (
        f"opened #{second}: GitHub does not ask a pull request's author")
    assert world.events(ref, "graph.reviews_requested")[-1] == {
        "node": GATE, "visit": 1, "pulls": [second], "reviewers": ["carol"], "teams": [],
        "late": True}

    # A second delivery for the same pull request (a push) asks nothing more.
    asked = world.fake.count(route=ROUTE)
    world.fake.push(REPO, second)
    assert world.webhook("pull_request", "synchronize", _pull(second)).status_code == 202
    assert world.fake.count(route=ROUTE) == asked


def test_a_pull_request_linked_later_is_asked_with_the_merge_gate_off(
        world: GitHubWorld) -> None:
    _world(world, mergeGate={"enabled": False})
    ref, first = _to_gate(world)
    world.serve()
    other = world.fake.open_pr(REPO, "side-work", author="erin")  # delivers nothing yet
    assert world.webhook("pull_request", "opened", _pull(other)).status_code == 202
    assert world.fake.requested_reviewers(REPO, other) == ([], [])

    world.fake.link_pr(REPO, other, [ref.number])
    assert world.webhook("pull_request", "edited", _pull(other)).status_code == 202

    assert world.fake.requested_reviewers(REPO, other) == (["carol", "dave"], [])
    assert world.state(ref).surface["reviewRequests"][GATE]["pulls"] == [first, other]

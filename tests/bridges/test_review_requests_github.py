"""Issue 24 §3 over the GitHub bridge and the loopback fake: when human-approval (an
approval gate that covers a pull request) opens, loopgate asks the approvers it waits on
for reviews on the delivering pull request — once per gate visit (a replayed delivery and
a restart ask nothing more; a new visit asks again), users and teams, never the pull
request's author nor (preventSelfApproval) the work item's author, honouring
``reviewRequests.unavailable`` and ``reviewRequests.max`` — and GitHub's 422 is handled:
the others are still asked, the refused one is recorded and shown, the gate is untouched.
"""

from __future__ import annotations

from typing import Any

from engine.graph.compiler import shipped_graph
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from engine.report import build_report, render_table
from tests.bridges.conftest import REPO, GitHubWorld

GATE = "human-approval"
ROUTE = "review-request"


def _configure(world: GitHubWorld, rule: dict[str, Any], requests: dict[str, Any]) -> None:
    world.overrides.update(gates={GATE: rule}, reviewRequests=requests)
    world.restart()


def _to_gate(world: GitHubWorld, *, pr_author: str = "bob", executor: str = "alice",
             files: dict[str, str] | None = None) -> tuple[WorkItemRef, int]:
    """An item by alice with an open pull request by ``pr_author`` changing ``files``;
    ``executor`` declares every skippable node away, so the walk goes straight to
    human-approval (its entry chain runs)."""
    ref = world.issue(author="alice")
    pull = world.fake.open_pr(REPO, f"issue-{ref.number}", closes=[ref.number],
                              author=pr_author)
    for path, text in (files or {}).items():
        world.fake.put_file(REPO, path, text, ref=f"issue-{ref.number}")
    world.comment(ref, "the-loop start")
    world.poll()
    skippable = [n.id for n in shipped_graph().ordered() if n.skippable] + ["explainer"]
    rows = "\n".join(f"- [ ] {token}" for token in skippable)
    world.comment(ref, f"the-loop execute\n{rows}", as_user=executor)
    world.poll()
    assert world.state(ref).current_node == GATE, world.state(ref).parked
    return ref, pull


def _answer(world: GitHubWorld, ref: WorkItemRef, text: str, login: str) -> Any:
    world.comment(ref, text, as_user=login)
    latest = world.services.ports.tracker.list_comments(ref)[-1]
    return world.services.runtime.advance(ref, {"comments": [latest]})


def _teams(world: GitHubWorld) -> None:
    world.fake.add_team("acme", "reviewers", ["rita"])
    world.fake.add_team("acme", "qa", ["quinn"])


def test_users_and_teams_are_asked_once_per_visit_never_the_authors(world: GitHubWorld) -> None:
    _teams(world)
    _configure(world, {"approvers": ["alice", "bob", "carol", "acme/reviewers", "other/ops"],
                       "preventSelfApproval": True}, {})
    ref, pull = _to_gate(world)

    assert world.fake.count(route=ROUTE) == 1
    assert world.fake.requested_reviewers(REPO, pull) == (["carol"], ["reviewers"])
    entry = world.state(ref).surface["reviewRequests"][GATE]
    assert entry["status"] == "sent" and entry["visit"] == 1
    assert entry["asked"] == [{"pull": pull, "reviewers": ["carol"], "teams": ["reviewers"]}]
    assert {left["name"]: left["why"] for left in entry["leftOut"]} == {
        "alice": "opened this work item (preventSelfApproval)",
        "bob": f"opened #{pull}: GitHub does not ask a pull request's author",
        "other/ops": "a team of other, not of acme: GitHub asks only teams of the "
                     "repository's organization",
    }
    assert world.events(ref, "graph.reviews_requested") == [
        {"node": GATE, "visit": 1, "pulls": [pull], "reviewers": ["carol"],
         "teams": ["reviewers"]}]


def test_the_dispatcher_is_not_asked_when_the_rule_counts_them_an_author(
        world: GitHubWorld) -> None:
    world.overrides["authorizedUsers"] = ["alice", "bob", "erin"]
    _configure(world, {"approvers": ["carol", "erin", "dave"], "preventSelfApproval": True,
                       "agentAuthored": {"approvals": 2}}, {})
    ref, pull = _to_gate(world, executor="erin")
    assert world.fake.requested_reviewers(REPO, pull) == (["carol", "dave"], [])
    [left] = world.state(ref).surface["reviewRequests"][GATE]["leftOut"]
    assert left == {"name": "erin",
                    "why": "dispatched the agent (the-loop execute; preventSelfApproval)"}


def test_a_replayed_delivery_and_a_restart_ask_nothing_more(world: GitHubWorld) -> None:
    _configure(world, {"approvers": ["carol"]}, {})
    ref, _pull = _to_gate(world)
    assert world.fake.count(route=ROUTE) == 1

    world.poll()  # the poller reads the thread again
    execute = next(c for c in world.services.ports.tracker.list_comments(ref)
                   if "the-loop execute" in c.body)
    world.services.runtime.advance(ref, {"comments": [execute]})  # a delivery replayed
    world.restart()
    world.poll()
    world.performer_later().drain()  # nothing owed is left to carry out either

    assert world.fake.count(route=ROUTE) == 1
    assert world.state(ref).current_node == GATE


def test_a_new_visit_asks_again(world: GitHubWorld) -> None:
    _configure(world, {"approvers": ["carol", "dave"]}, {})
    ref, pull = _to_gate(world)
    world.fake.reset_log()

    # carol's changes send the item back; every node before the gate is declared away,
    # so the walk comes straight back: visit 2 of human-approval.
    state = _answer(world, ref, "changes requested: rename the widget", "carol")
    assert state.current_node == GATE and state.visit(GATE).number == 2

    assert world.fake.count(route=ROUTE) == 1
    assert world.state(ref).surface["reviewRequests"][GATE]["visit"] == 2
    # carol answered this round already; GitHub keeps the earlier requests (none twice).
    assert world.fake.requested_reviewers(REPO, pull) == (["carol", "dave"], [])


def test_the_unavailable_list_and_the_cap(world: GitHubWorld) -> None:
    _teams(world)
    _configure(world, {"approvers": ["carol", "dave", "erin", "acme/qa", "acme/reviewers",
                                     "frank"]},
               {"unavailable": ["Dave", "acme/qa"], "max": 3})
    ref, pull = _to_gate(world)

    assert world.fake.requested_reviewers(REPO, pull) == (["carol", "erin"], ["reviewers"])
    left = {x["name"]: x["why"] for x in world.state(ref).surface["reviewRequests"][GATE]
            ["leftOut"]}
    assert left == {"dave": "unavailable (reviewRequests.unavailable)",
                    "acme/qa": "unavailable (reviewRequests.unavailable)",
                    "frank": "over the cap of 3 review requests (reviewRequests.max)"}


def test_the_default_cap_is_fifteen(world: GitHubWorld) -> None:
    people = [f"user{i:02}" for i in range(20)]
    _configure(world, {"approvers": people}, {})
    _ref, pull = _to_gate(world)
    asked, _ = world.fake.requested_reviewers(REPO, pull)
    assert asked == people[:15]


def test_a_422_asks_the_others_records_the_refused_and_never_gates(world: GitHubWorld) -> None:
    world.fake.set_access(REPO, users=["alice", "bob", "carol", "dave"])
    _configure(world, {"approvers": ["carol", "mallory", "dave"]}, {})
    ref, pull = _to_gate(world)

    # One request for all three (422: mallory has no access), then one per name.
    assert world.fake.count(route=ROUTE) == 4
    assert world.fake.count(route=ROUTE, status=422) == 2
    assert world.fake.requested_reviewers(REPO, pull) == (["carol", "dave"], [])
    state = world.state(ref)
    entry = state.surface["reviewRequests"][GATE]
    assert [(r["name"], r["pull"]) for r in entry["refused"]] == [("mallory", pull)]
    assert "Reviews may only be requested from collaborators" in entry["refused"][0]["why"]
    [logged] = world.events(ref, "graph.review_request_refused")
    assert logged["refused"][0]["name"] == "mallory"
    assert state.current_node == GATE and state.parked.node == GATE  # still waiting
    shown = render_table(build_report(shipped_graph(), state))
    assert f"review requested on #{pull}: @carol, @dave" in shown
    assert f"review request refused on #{pull} for mallory: " in shown

    state = _answer(world, ref, "approved", "carol")  # the gate decides as ever
    assert state.current_node == "complete"
    assert world.fake.count(route=ROUTE) == 4  # and nothing is asked again


def test_the_pull_request_author_is_refused_by_github_as_by_the_fake(
        world: GitHubWorld) -> None:
    # The fake behaves as GitHub: asking a pull request's author is a 422 for the whole
    # request (loopgate never sends it: the author is left out before asking).
    ref = world.issue(author="alice")
    pull = world.fake.open_pr(REPO, "b", closes=[ref.number], author="bob")
    tracker = world.services.ports.tracker
    try:
        tracker.request_reviewers(WorkItemRef("acme", "widgets", pull), ["carol", "bob"], [])
    except TrackerError as exc:
        assert exc.permanent
        assert "Review cannot be requested from pull request author" in str(exc)
    else:
        raise AssertionError("GitHub refuses to ask a pull request's author")
    assert world.fake.requested_reviewers(REPO, pull) == ([], [])


def test_a_codeowners_rule_asks_the_owners_of_the_changed_files(world: GitHubWorld) -> None:
    _teams(world)
    world.fake.put_file(REPO, ".github/CODEOWNERS", "*  @lead\n/web/  @acme/reviewers\n")
    _configure(world, {"approvers": ["codeowners", "carol"]}, {})
    ref, pull = _to_gate(world, files={"web/app.ts": "export {}\n", "README.md": "hi\n"})
    assert world.fake.requested_reviewers(REPO, pull) == (["lead", "carol"], ["reviewers"])
    entry = world.state(ref).surface["reviewRequests"][GATE]
    assert (entry["reviewers"], entry["teams"]) == (["lead", "carol"], ["reviewers"])


def test_review_requests_can_be_turned_off(world: GitHubWorld) -> None:
    _configure(world, {"approvers": ["carol"]}, {"enabled": False})
    ref, _pull = _to_gate(world)
    assert world.fake.count(route=ROUTE) == 0
    assert "reviewRequests" not in world.state(ref).surface

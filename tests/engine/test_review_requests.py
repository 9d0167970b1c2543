"""Issue 24 §3 in the engine: whom a gate visit asks for reviews (:func:`engine.reviewers.
plan`), carrying the request out with GitHub's all-or-nothing refusal
(:func:`engine.reviewers.send`), the effect's stored shape, and the author's notices when
a gate passes and when the item completes (once each, per visit)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.codeowners import Ownership
from engine.effects import RequestReviews, effect_from_json, effect_to_json
from engine.local.memory_tracker import MemoryTracker
from engine.ports import TrackerCapabilities, TrackerError
from engine.refs import WorkItemRef
from engine.reviewers import ReviewPlan, plan, record_result, send, summary_lines
from engine.store.memory import MemoryStore
from engine.story import AUTHOR_NOTICE
from tests.engine.runtime_support import REF, make_runtime, say
from tests.engine.test_visits import Walk

PULL = WorkItemRef("acme", "widgets", 12)


# -- plan -------------------------------------------------------------------------------
def test_users_and_teams_in_the_rules_order_without_the_barred() -> None:
    chosen = plan(["@Carol", "acme/Web", "bob", "carol", "loopgate[bot]"], owner="acme",
                  excluded={"BOB": "opened #12", "loopgate[bot]": "loopgate itself"})
    assert chosen == ReviewPlan(("Carol",), ("Web",), (("bob", "opened #12"),
                                                       ("loopgate[bot]", "loopgate itself")))


def test_unavailable_people_and_teams_and_foreign_teams_are_left_out() -> None:
    chosen = plan(["carol", "dave", "acme/qa", "acme/web", "zeta/ops"], owner="Acme",
                  excluded={}, unavailable=["@DAVE", "ACME/QA"])
    assert (chosen.reviewers, chosen.teams) == (("carol",), ("web",))
    assert dict(chosen.left_out) == {
        "dave": "unavailable (reviewRequests.unavailable)",
        "acme/qa": "unavailable (reviewRequests.unavailable)",
        "zeta/ops": "a team of zeta, not of Acme: GitHub asks only teams of the "
                    "repository's organization"}


def test_the_cap_counts_people_and_teams_together() -> None:
    chosen = plan(["a", "acme/t1", "b", "acme/t2"], owner="acme", excluded={}, cap=3)
    assert (chosen.reviewers, chosen.teams) == (("a", "b"), ("t1",))
    assert chosen.left_out == (("acme/t2", "over the cap of 3 review requests "
                                           "(reviewRequests.max)"),)


def test_codeowners_are_the_owners_of_the_changed_files() -> None:
    owners = Ownership(".github/CODEOWNERS", (("a.py", ("@lead", "@acme/web")),
                                              ("b.py", ("@lead",))))
    chosen = plan(["codeowners", "carol"], owner="acme", excluded={}, owners=owners)
    assert (chosen.reviewers, chosen.teams) == (("lead", "carol"), ("web",))
    unknown = plan(["codeowners"], owner="acme", excluded={},
                   owners=Ownership(problem="no CODEOWNERS file in .github/, /, docs/"))
    assert unknown.empty
    assert unknown.left_out == (("codeowners", "the code owners: no CODEOWNERS file in "
                                               ".github/, /, docs/"),)


# -- send -------------------------------------------------------------------------------
def _effect(**kw: Any) -> RequestReviews:
    return RequestReviews(REF, kw.get("node", "human-approval"), kw.get("visit", 1),
                          kw.get("pulls", (12,)), kw.get("reviewers", ("carol", "mallory")),
                          kw.get("teams", ("web",)))


def test_one_request_when_github_accepts_it() -> None:
    tracker = MemoryTracker()
    result = send(_effect(), tracker)
    assert tracker.review_requests[PULL] == [(("carol", "mallory"), ("web",))]
    assert result == {"node": "human-approval", "visit": 1, "sent": 1, "pulls": [
        {"pull": 12, "reviewers": ["carol", "mallory"], "teams": ["web"], "refused": []}]}


def test_a_refusal_asks_each_name_once_and_keeps_the_refused() -> None:
    tracker = MemoryTracker()
    tracker.refuse_reviewers = {"mallory"}
    result = send(_effect(), tracker)
    assert tracker.review_requests[PULL] == [(("carol",), ()), ((), ("web",))]
    [entry] = result["pulls"]
    assert (entry["reviewers"], entry["teams"]) == (["carol"], ["web"])
    assert entry["refused"] == [{"name": "mallory", "kind": "user",
                                 "why": "422: cannot request mallory"}]
    assert result["sent"] == 4  # the refused request, then one per name: never a loop


class _Down:
    capabilities = TrackerCapabilities(review_requests=True)

    def request_reviewers(self, *args: Any) -> None:
        raise TrackerError("GitHub answered 502")


def test_a_transient_failure_is_raised_for_the_row_to_wait() -> None:
    with pytest.raises(TrackerError):
        send(_effect(), _Down())


class _Undeclared(_Down):
    capabilities = TrackerCapabilities()


def test_a_tracker_that_cannot_ask_records_why() -> None:
    # Issue 20 §2: what a tracker declares decides, not which methods it happens to have.
    result = send(_effect(), _Undeclared())
    assert result["error"] == "this tracker cannot request reviews"


def test_the_result_is_recorded_only_for_the_visit_that_asked() -> None:
    surface: dict[str, Any] = {"reviewRequests": {"human-approval": {
        "visit": 2, "status": "queued", "reviewers": ["carol"], "teams": []}}}
    record_result(surface, _effect(visit=1), {"pulls": []})  # an old visit's row
    assert surface["reviewRequests"]["human-approval"]["status"] == "queued"
    assert summary_lines(surface, "human-approval", "acme") == [
        "review requests: asking @carol on GitHub"]
    record_result(surface, _effect(visit=2), {"pulls": [
        {"pull": 12, "reviewers": ["carol"], "teams": ["web"],
         "refused": [{"name": "mallory", "kind": "user", "why": "not a collaborator"}]}]})
    assert summary_lines(surface, "human-approval", "acme") == [
        "review requested on #12: @carol, @acme/web",
        "review request refused on #12 for mallory: not a collaborator"]


def test_the_effect_round_trips_through_its_stored_shape() -> None:
    effect = _effect(visit=3)
    doc = effect_to_json(effect)
    assert doc == {"kind": "request-reviews", "target": "acme/widgets#7",
                   "node": "human-approval", "visit": 3, "pulls": [12],
                   "reviewers": ["carol", "mallory"], "teamReviewers": ["web"]}
    assert effect_from_json(doc) == effect


# -- the author's notices -----------------------------------------------------------------
class _Notices:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def send(self, ref: WorkItemRef, event: str, data: Any) -> None:
        self.sent.append((event, dict(data)))

    def authors(self) -> list[dict[str, Any]]:
        return [data for event, data in self.sent if event == AUTHOR_NOTICE]


def test_a_gate_pass_and_the_completion_notify_the_author_once_each() -> None:
    runtime = make_runtime(MemoryStore())
    notices = _Notices()
    runtime.ports.notifier = notices
    runtime.start(REF)
    runtime.advance(REF, say(runtime, "alice", "select"))
    runtime.complete(REF, "a", "agent-1")
    approve = say(runtime, "alice", "approve")
    runtime.advance(REF, approve)
    runtime.advance(REF, approve)  # replayed: nothing new
    runtime.advance(REF, {})
    assert notices.authors() == [
        {"kind": "gate-passed", "node": "select", "visit": 1, "what": "phases selected",
         "by": "@alice", "nextNode": "a", "nextDescription": "", "complete": False},
        {"kind": "gate-passed", "node": "gate", "visit": 1, "what": "approved",
         "by": "alice", "nextNode": "b", "nextDescription": "", "complete": False},
        {"kind": "complete", "node": "done", "visit": 1},
    ]


def test_the_last_gate_tells_the_author_the_item_is_complete_in_one_notice() -> None:
    walk = Walk()
    notices = _Notices()
    walk.runtime.ports.notifier = notices
    walk.runtime.force(REF, "human-approval", "test: to the last gate", "t")
    assert walk.reply("alice", "approved").status == "complete"
    assert notices.authors() == [
        {"kind": "gate-passed", "node": "human-approval", "visit": 1, "what": "approved",
         "by": "@alice", "nextNode": "complete", "nextDescription": "the work item is done",
         "complete": True}]


def test_the_loopgate_checks_summary_says_who_was_asked() -> None:
    from engine.checksummary import waiting_on

    walk = Walk()
    walk.runtime.force(REF, "human-approval", "test: to the last gate", "t")
    state = walk.runtime.store.load(REF)
    assert state is not None
    state.surface["reviewRequests"] = {"human-approval": {
        "visit": 1, "status": "sent", "asked": [{"pull": 12, "reviewers": ["carol"],
                                                 "teams": ["web"]}],
        "refused": [{"pull": 12, "name": "mallory", "kind": "user", "why": "no access"}],
        "leftOut": [{"name": "bob", "why": "opened #12: GitHub does not ask a pull "
                                           "request's author"}]}}
    lines = waiting_on(walk.runtime.graph, state, walk.runtime.settings)
    assert lines[-3:] == [  # md(): written literally (a "#" would link)
        "- review requested on \\#12: @carol, @acme/web",
        "- review request refused on \\#12 for mallory: no access",
        "- not asked: bob (opened \\#12: GitHub does not ask a pull request's author)"]

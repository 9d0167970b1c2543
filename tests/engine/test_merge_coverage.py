"""Issue 19 §3 and §4 over the in-memory tracker: the ``loopgate`` check is bound to the
heads the vouching gates covered, and a merge queue's group is re-checked per pull request.

The GitHub-side walks (webhooks, check runs, the fake's merge queue) are in
tests/bridges/test_merge_queue.py and tests/e2e/test_e2e_merge_gate.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.approvals import ApprovalRule
from engine.effects import PublishMergeGroup, effect_from_json, effect_to_json
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.mergegate import (
    COVERAGE_KEY,
    FAILURE,
    PENDING,
    SUCCESS,
    GateCheck,
    bind_to_head,
    group_check,
    on_head,
    queue_pulls,
    vouching_nodes,
)
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
PR = WorkItemRef("acme", "widgets", 8)
USERS = ("alice", "bob", "carol")


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _runtime(tracker: MemoryTracker, **settings: object) -> Runtime:
    config = EngineSettings(authorized_users=USERS, merge_gate=True, **settings)  # type: ignore[arg-type]
    return Runtime(shipped_graph(), MemoryStore(),
                   Ports(tracker, MemoryArtifactStore(), clock=Clock()), config)


def _approved(runtime: Runtime, tracker: MemoryTracker, who: str = "alice") -> str:
    comment = tracker.add_comment_as(REF, who, "approved")
    return runtime.advance(REF, {"comments": [comment]}).current_node


def _at_merge_gate(tracker: MemoryTracker, **settings: object) -> Runtime:
    runtime = _runtime(tracker, **settings)
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    return runtime


def _last(tracker: MemoryTracker, number: int = 8) -> GateCheck:
    return tracker.checks[WorkItemRef("acme", "widgets", number)][-1]  # type: ignore[return-value]


# -- which gates vouch ------------------------------------------------------------------------
def test_the_vouching_gates_default_to_code_quiz_through_the_merge_node() -> None:
    graph = shipped_graph()
    assert vouching_nodes(graph, "human-approval") == ("code-quiz", "human-approval")
    assert vouching_nodes(graph, "complete") == ("code-quiz", "human-approval")
    assert vouching_nodes(graph, "code-quiz") == ("code-quiz",)
    assert vouching_nodes(graph, "human-approval", ("human-approval",)) == ("human-approval",)


def test_a_pass_records_the_heads_it_covered() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, author="bob", head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    assert _approved(runtime, tracker) == "complete"
    coverage = runtime.store.load(REF).surface[COVERAGE_KEY]
    assert coverage["gates"] == ["code-quiz", "human-approval"]
    entry = coverage["nodes"]["human-approval"]
    assert (entry["heads"], entry["authors"]) == ({"8": "a" * 40}, {"8": "bob"})
    assert "code-quiz" not in coverage["nodes"]  # forced over: it vouches for nothing
    assert (_last(tracker).state, _last(tracker).head_sha) == (SUCCESS, "a" * 40)


def test_unreadable_heads_cover_nothing() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    comment = tracker.add_comment_as(REF, "alice", "approved")
    tracker.failing.add("delivering_pull_requests")
    assert runtime.advance(REF, {"comments": [comment]}).current_node == "complete"
    entry = runtime.store.load(REF).surface[COVERAGE_KEY]["nodes"]["human-approval"]
    assert entry["heads"] == {} and "could not be read" in entry["error"]
    tracker.failing.clear()
    runtime.publish_gate(REF)
    assert _last(tracker).state == PENDING


# -- a push, a late pull request --------------------------------------------------------------
def test_a_push_after_the_merge_gate_sends_the_item_back_and_says_why() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    assert _last(tracker).state == SUCCESS
    tracker.push(8, "b" * 40)
    runtime.publish_gate(REF, pulls=(8,))
    check = _last(tracker)
    assert check.state == PENDING
    assert check.description.startswith(
        "acme/widgets#7: head bbbbbbb was pushed after human-approval covered aaaaaaa; now at "
        "human-approval (the merge gate): waiting for")
    state = runtime.store.load(REF)
    assert (state.current_node, state.status) == ("human-approval", "parked")
    [moved] = [e["data"] for e in runtime.store.events(REF) if e["kind"] == "graph.head_moved"]
    assert moved == {"from": "complete", "to": "human-approval", "pull": 8, "head": "b" * 40,
                     "covered": "a" * 40, "reason": "head bbbbbbb was pushed after "
                                                    "human-approval covered aaaaaaa"}
    # The gate's second visit is open and undecided (issue 19 §2): the first visit's
    # "approved" no longer speaks for the new head.
    visits = state.history("human-approval")
    assert [v.number for v in visits] == [1, 2]
    assert visits[0].decision is not None and visits[0].decision.outcome == "approved"
    assert visits[1].open and visits[1].decision is None
    assert "human-approval" not in state.decisions
    assert _approved(runtime, tracker) == "complete"
    assert runtime.store.load(REF).history("human-approval")[1].decision is not None
    assert (_last(tracker).state, _last(tracker).head_sha) == (SUCCESS, "b" * 40)


def test_a_push_never_sends_the_item_forward() -> None:
    # Sent back before the merge node (here by a force), the earlier pass of human-approval
    # is still on record: a push then leaves the pointer where it is.
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    runtime.force(REF, "implementation", "rework", "tester")
    tracker.push(8, "b" * 40)
    runtime.publish_gate(REF, pulls=(8,))
    assert runtime.store.load(REF).current_node == "implementation"
    assert _last(tracker).state == PENDING


def test_the_same_head_again_changes_nothing() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    runtime.publish_gate(REF, pulls=(8,))
    assert runtime.store.load(REF).current_node == "complete"
    assert _last(tracker).state == SUCCESS


def test_a_pull_request_linked_after_the_gate_passed_stays_pending() -> None:
    tracker = MemoryTracker()
    runtime = _at_merge_gate(tracker)
    assert _approved(runtime, tracker) == "complete"
    tracker.add_pull_request(REF, 9, head_sha="c" * 40)
    runtime.publish_gate(REF, pulls=(9,))
    check = _last(tracker, 9)
    assert check.state == PENDING
    assert ("#9 started delivering after human-approval passed; its head ccccccc is not "
            "covered") in check.description
    assert runtime.store.load(REF).current_node == "human-approval"


def test_self_approval_by_linking_the_pull_request_late_is_refused() -> None:
    # alice's pull request does not deliver the item when alice approves it; she links it
    # afterwards ("Closes #7"): the head is not covered, the item goes back, and her
    # second approval is refused, since she authored a delivering pull request now.
    tracker = MemoryTracker()
    rule = ApprovalRule(prevent_self_approval=True)
    runtime = _at_merge_gate(tracker, gate_rules={"human-approval": rule})
    assert _approved(runtime, tracker, "alice") == "complete"
    tracker.add_pull_request(REF, 9, author="alice", head_sha="d" * 40)
    runtime.publish_gate(REF, pulls=(9,))
    assert _last(tracker, 9).state == PENDING
    assert _approved(runtime, tracker, "alice") == "human-approval"
    assert "@alice opened acme/widgets#9" in str(runtime.store.load(REF).parked.reason)
    assert _last(tracker, 9).state == PENDING
    assert _approved(runtime, tracker, "bob") == "complete"
    assert _last(tracker, 9).state == SUCCESS


def test_an_approver_who_authored_the_covered_pull_request_fails_the_check() -> None:
    # The authors recorded at the decision and the authors now both count (issue 19 §3).
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, author="alice", head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)  # no preventSelfApproval here: alice may approve
    _approved(runtime, tracker, "alice")
    state = runtime.store.load(REF)
    coverage = state.surface[COVERAGE_KEY]
    check = GateCheck(SUCCESS, "acme/widgets#7: work item complete")
    assert bind_to_head(state, check, 8, "a" * 40).state == SUCCESS
    verdict = bind_to_head(state, check, 8, "a" * 40, self_approval_node="human-approval")
    assert verdict.state == FAILURE
    assert "@alice approved human-approval and authored #8" in verdict.description
    coverage["nodes"]["human-approval"]["authors"] = {}
    verdict = bind_to_head(state, check, 8, "a" * 40, authors_now=("Alice",),
                           self_approval_node="human-approval")
    assert verdict.state == FAILURE


def test_a_success_bound_to_one_head_is_pending_on_another() -> None:
    check = GateCheck(SUCCESS, "ok", head_sha="a" * 40)
    assert on_head(check, "a" * 40) is check
    moved = on_head(check, "b" * 40)
    assert (moved.state, moved.description) == (
        PENDING, "head bbbbbbb is newer than aaaaaaa, the head the gates covered")


# -- the merge queue (issue 19 §4) ------------------------------------------------------------
def test_queue_pulls_reads_the_ref_and_the_group_commits() -> None:
    ref = "refs/heads/gh-readonly-queue/main/pr-12-" + "f" * 40
    assert queue_pulls(ref) == [12]
    assert queue_pulls(ref, ["Merge pull request #11 from acme/issue-3\n\nWidgets",
                             "Gadgets (#12)", "Tidy up, see #40"]) == [12, 11]
    assert queue_pulls("refs/heads/main") == []


def test_group_check_is_never_a_blanket_success() -> None:
    ok = GateCheck(SUCCESS, "acme/widgets#7: work item complete")
    waiting = GateCheck(PENDING, "acme/widgets#9: at code-quiz")
    assert group_check([]).state == FAILURE
    assert group_check([(8, ok)]).state == SUCCESS
    verdict = group_check([(8, ok), (10, waiting)])
    assert verdict.state == FAILURE
    assert verdict.description == "#10 is not covered: acme/widgets#9: at code-quiz"


def test_a_merge_group_is_success_only_for_covered_heads() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    group_ref = "refs/heads/gh-readonly-queue/main/pr-8-" + "0" * 40
    assert runtime.publish_merge_group(PR, "1" * 40, "0" * 40, group_ref)
    [check] = tracker.commit_checks["1" * 40]
    assert (check.state, check.description) == (  # type: ignore[attr-defined]
        SUCCESS, "every pull request in the group is covered: #8")
    # a second pull request in the group that delivers no work item: failure naming it
    tracker.group_messages["2" * 40] = ["Merge pull request #8 from acme/issue-7",
                                        "Merge pull request #11 from acme/other"]
    runtime.publish_merge_group(PR, "2" * 40, "0" * 40, group_ref)
    [check] = tracker.commit_checks["2" * 40]
    assert (check.state, check.description) == (  # type: ignore[attr-defined]
        FAILURE, "#11 is not covered: #11 delivers no work item")


def test_a_merge_group_fails_for_a_head_pushed_after_the_gates() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    tracker.push(8, "b" * 40)  # no synchronize seen yet
    runtime.publish_merge_group(PR, "3" * 40, "0" * 40,
                                "refs/heads/gh-readonly-queue/main/pr-8-" + "0" * 40)
    [check] = tracker.commit_checks["3" * 40]
    assert check.state == FAILURE  # type: ignore[attr-defined]
    assert check.description == (  # type: ignore[attr-defined]
        "#8 is not covered: acme/widgets#7: head bbbbbbb was pushed after human-approval "
        "covered aaaaaaa")


def test_the_merge_group_effect_survives_its_round_trip() -> None:
    effect = PublishMergeGroup(PR, "1" * 40, "0" * 40, "refs/heads/gh-readonly-queue/main/pr-8-x")
    assert effect_from_json(effect_to_json(effect)) == effect


def test_the_stale_code_quiz_notice_says_new_commits_arrived() -> None:
    from bot.slack.blocks.notices import quiz_stale_notice
    from engine.hooks.quiz import HEADS_ENTRY, _binds_heads

    assert _binds_heads([HEADS_ENTRY]) and not _binds_heads(["design.md"])
    text, _ = quiz_stale_notice(REF, "code-quiz",
                                why="the delivering pull requests got new commits")
    assert text == ("♻️ Code quiz on acme/widgets#7: the delivering pull requests got new "
                    "commits and a new quiz will follow")
    text, _ = quiz_stale_notice(REF, "spec-quiz")
    assert "the spec changed and a new quiz will follow" in text


def test_a_head_pushed_while_the_gate_was_read_is_not_covered_by_its_approval() -> None:
    # A fresh-eyes trial: Alice reviewed head a; b was pushed before her "approved" was
    # processed (poll-only, or during her review). The pass covers only what the gate
    # showed at its entry, so b is not covered: the gate asks again, as a new visit.
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    tracker.push(8, "b" * 40)  # no event reached loopgate yet
    assert _approved(runtime, tracker) == "human-approval"
    state = runtime.store.load(REF)
    assert state.surface[COVERAGE_KEY]["nodes"]["human-approval"]["heads"] == {}
    assert [v.number for v in state.history("human-approval")] == [1, 2]
    assert state.history("human-approval")[1].open
    runtime.publish_gate(REF, pulls=(8,))
    assert _last(tracker).state == PENDING
    assert _approved(runtime, tracker) == "complete"  # read at b, approved at b
    assert (_last(tracker).state, _last(tracker).head_sha) == (SUCCESS, "b" * 40)


def test_a_merge_group_whose_commits_cannot_all_be_read_fails() -> None:
    # Issue 19 §4: never a partial list; GitHub counting more commits than were read is a
    # failure naming why (a transient failure is retried instead: the queue waits).
    from engine.ports import TrackerError
    from engine.queuegroup import GroupCommit

    class Truncated(MemoryTracker):
        def merge_group_commit_list(self, owner: str, repo: str, base: str, head: str
                                    ) -> list[GroupCommit]:
            raise TrackerError("the merge group 1111111 has 3100 commits; loopgate read 3000",
                               permanent=True)

    tracker = Truncated()
    tracker.add_pull_request(REF, 8, head_sha="a" * 40)
    runtime = _at_merge_gate(tracker)
    _approved(runtime, tracker)
    runtime.publish_merge_group(PR, "1" * 40, "0" * 40,
                                "refs/heads/gh-readonly-queue/main/pr-8-" + "0" * 40)
    [check] = tracker.commit_checks["1" * 40]
    assert (check.state, check.description) == (  # type: ignore[attr-defined]
        FAILURE, "could not read every commit of the group (the merge group 1111111 has 3100 "
                 "commits; loopgate read 3000)")

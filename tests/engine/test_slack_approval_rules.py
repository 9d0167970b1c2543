"""Issue 11 §2 meets issue 12 §1 at the engine: a Slack click — the bot's event
``{"comments": [reply by the linked login], "via": "slack", "expectNode": node}`` — goes
through the gate's approval rules like a GitHub reply, and only a counted one is mirrored
on the issue. The runtime walks the shipped graph over the in-memory tracker; the item is
forced onto a gate (no hook runs) and answered as the ingresses do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.approvals import ApprovalRule
from engine.graph.compiler import shipped_graph
from engine.hooks.chat_decision import decision_body as slack_reply_body
from engine.hooks.chat_decision import decision_marker as slack_decision_marker
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports, TrackerError
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
USERS = ("alice", "bob", "carol")
GATE = "human-approval"
MIRROR = slack_decision_marker(GATE)


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _runtime(rules: dict[str, ApprovalRule], tracker: MemoryTracker,
             node: str = GATE) -> Runtime:
    settings = EngineSettings(authorized_users=USERS, gate_rules=rules)
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    runtime.force(REF, node, "test: straight to the gate", "tester")
    return runtime


def _click(runtime: Runtime, login: str, outcome: str = "approved", text: str = "",
           node: str = GATE) -> ItemState:
    reply = Comment(0, login, slack_reply_body(outcome, text))
    return runtime.advance(REF, {"comments": [reply], "via": "slack", "expectNode": node})


def _reply(runtime: Runtime, tracker: MemoryTracker, author: str, body: str) -> ItemState:
    return runtime.advance(REF, {"comments": [tracker.add_comment_as(REF, author, body)]})


def _bodies(tracker: MemoryTracker, needle: str) -> list[str]:
    return [c.body for c in tracker.comments_on(REF) if needle in c.body]


def test_a_repeated_slack_approval_counts_once_and_is_mirrored_once() -> None:
    tracker = MemoryTracker()
    runtime = _runtime({GATE: ApprovalRule(approvals=2)}, tracker)

    first = _click(runtime, "alice").surface["approvals"][GATE]["approvals"]
    state = _click(runtime, "alice")

    assert state.current_node == GATE
    [recorded] = state.surface["approvals"][GATE]["approvals"]
    assert (recorded["by"], recorded["via"]) == ("alice", "slack")
    assert recorded == first[0]  # the repeat left the record as it was (its time too)
    assert len(_bodies(tracker, MIRROR)) == 1
    assert str(state.parked.reason).startswith("1 of 2 approvals: @alice — ")


def test_a_slack_click_repeating_a_github_approval_is_not_mirrored() -> None:
    tracker = MemoryTracker()
    runtime = _runtime({GATE: ApprovalRule(approvals=2)}, tracker)

    _reply(runtime, tracker, "alice", "approved")
    state = _click(runtime, "alice")

    [recorded] = state.surface["approvals"][GATE]["approvals"]
    assert (recorded["by"], recorded["via"]) == ("alice", "reply")
    assert _bodies(tracker, MIRROR) == []


def test_a_slack_approval_with_new_comments_replaces_the_earlier_one_and_is_mirrored() -> None:
    tracker = MemoryTracker()
    runtime = _runtime({GATE: ApprovalRule(approvals=2)}, tracker)

    _click(runtime, "alice")
    _click(runtime, "alice", "approved-with-comments", "Rename foo.")
    state = _click(runtime, "alice", "approved-with-comments", "Rename foo.")  # repeat

    [recorded] = state.surface["approvals"][GATE]["approvals"]
    assert (recorded["outcome"], recorded["body"]) == (
        "approved-with-comments", "approved with comments\n\n> Rename foo.")
    assert [b.splitlines()[0] for b in _bodies(tracker, MIRROR)] == [
        f"✅ **Approved** at `{GATE}` by @alice — from Slack.",
        f"✅ **Approved with comments** at `{GATE}` by @alice — from Slack."]
    state = _click(runtime, "bob")
    assert state.current_node == "complete"
    assert state.decisions[GATE]["outcome"] == "approved-with-comments"
    assert state.decisions[GATE]["approvers"] == ["@alice", "@bob"]
    assert [(e["by"], e["body"]) for e in state.surface["reviewComments"]] == [
        ("@alice", "approved with comments\n\n> Rename foo.")]


def test_slack_review_comments_at_two_gates_are_both_recorded() -> None:
    # Slack decisions carry no comment id: the second gate's must not read as "already
    # recorded" because the first gate's entry also has none.
    tracker = MemoryTracker()
    runtime = _runtime({}, tracker, node="requirements-approval")
    state = _click(runtime, "alice", "approved-with-comments", "R1 is vague.",
                   node="requirements-approval")
    assert state.current_node == "design"
    runtime.force(REF, "design-approval", "test: on to the next gate", "tester")

    state = _click(runtime, "carol", "approved-with-comments", "Draw the sequence.",
                   node="design-approval")

    assert state.current_node != "design-approval"
    assert [(e["node"], e["by"], e["body"].splitlines()[-1])
            for e in state.surface["reviewComments"]] == [
        ("requirements-approval", "@alice", "> R1 is vague."),
        ("design-approval", "@carol", "> Draw the sequence.")]


def test_the_authors_slack_click_reaching_a_self_approval_gate_is_refused_not_mirrored() -> None:
    # The bot's pre-check refuses it first; the gate must refuse it too (one rule).
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    runtime = _runtime({GATE: ApprovalRule(prevent_self_approval=True)}, tracker)

    state = _click(runtime, "alice")

    assert state.current_node == GATE
    assert state.surface["approvals"][GATE]["approvals"] == []
    [refused] = state.surface["approvals"][GATE]["refused"]
    assert (refused["by"], refused["via"]) == ("alice", "slack")
    assert "commentId" not in refused
    assert _bodies(tracker, MIRROR) == []
    [said] = _bodies(tracker, "Not counted")
    assert said.startswith(f"🚫 **Not counted — `{GATE}`**: the decision by @alice (Slack) "
                           "does not count: @alice opened this work item, and this gate has "
                           "preventSelfApproval")


def test_a_slack_click_by_a_team_member_counts_with_the_team() -> None:
    tracker = MemoryTracker()
    tracker.set_team("acme/reviewers", ["dave"])
    runtime = _runtime({GATE: ApprovalRule(approvers=("acme/reviewers",))}, tracker)

    state = _click(runtime, "dave")

    assert state.current_node == "complete"
    [recorded] = state.surface["approvals"][GATE]["approvals"]
    assert (recorded["by"], recorded["via"], recorded["team"]) == (
        "dave", "slack", "acme/reviewers")
    assert len(_bodies(tracker, MIRROR)) == 1


class TeamsDown(MemoryTracker):
    """GitHub's team endpoint failing (a 5xx, a token without read:org)."""

    def team_membership(self, org: str, team: str, login: str) -> bool:
        raise TrackerError(f"GET /orgs/{org}/teams/{team}/memberships/{login}: 502")


def test_a_slack_click_whose_team_lookup_raises_is_refused_fail_closed() -> None:
    tracker = TeamsDown()
    runtime = _runtime({GATE: ApprovalRule(approvers=("acme/reviewers",))}, tracker)

    state = _click(runtime, "dave")

    assert state.current_node == GATE
    assert GATE not in state.decisions
    [refused] = state.surface["approvals"][GATE]["refused"]
    assert refused["reason"] == (
        "@dave is not among the approvers of this gate (@acme/reviewers); the membership "
        "lookup failed for acme/reviewers (GET /orgs/acme/teams/reviewers/memberships/dave: "
        "502)")
    assert _bodies(tracker, MIRROR) == []
    kinds = [e["kind"] for e in runtime.store.events(REF)]
    assert "graph.team_lookup_failed" in kinds and "graph.approval_refused" in kinds

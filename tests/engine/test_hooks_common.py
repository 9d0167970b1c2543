"""set-phase-label, log-entry, deliver-assignment, request-review, notify (issue #2 §3)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.effects import PENDING, RUNNING, Notify, PostComment
from engine.graph.compiler import shipped_graph
from engine.hooks.markers import SELF_MARKER, assignment_marker
from engine.hooks.registry import REGISTRY
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.perform import InlinePerformer
from engine.ports import Ports
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.sqlite import SqliteStore
from tests.engine.runtime_support import StepClock
from tests.engine.test_hooks_support import REF, Harness, RecordingNotifier


# -- set-phase-label ------------------------------------------------------------------------
def test_set_phase_label_replaces_other_phase_labels_only() -> None:
    h = Harness()
    h.tracker.set_labels(REF, ["bug", "loop:start", "loop:requirements", "loop:elsewhere"])
    result = h.run("design", "set-phase-label", chain="entry")
    assert result.kind == "pass"
    assert h.tracker.labels(REF) == ["bug", "loop:start", "loop:elsewhere", "loop:design"]


def test_set_phase_label_is_idempotent() -> None:
    h = Harness()
    h.run("design", "set-phase-label", chain="entry")
    h.run("design", "set-phase-label", chain="entry")
    assert h.tracker.labels(REF) == ["loop:design"]


def test_set_phase_label_skips_a_node_without_phase() -> None:
    h = Harness()
    h.tracker.set_labels(REF, ["loop:test-planning"])
    result = h.run("spec-quiz", "set-phase-label", chain="entry")
    assert result.kind == "skip"
    assert h.tracker.labels(REF) == ["loop:test-planning"]


def test_set_phase_label_degrades_on_tracker_failure() -> None:
    h = Harness()
    h.tracker.down = True
    result = h.run("design", "set-phase-label", chain="entry")
    assert result.kind == "pass"
    assert h.log == [
        (
            "graph.hook_degraded",
            {
                "node": "design",
                "hook": "set-phase-label",
                "reason": "could not read the labels: labels: tracker unavailable "
                          "(simulated)",
            },
        )
    ]
    # Still labelled: the add is an effect, retried by the performer while GitHub is down.
    assert [(e.kind, o) for e, o in h.performed] == [("add-label", "retry")]


# -- log-entry ------------------------------------------------------------------------------
def test_log_entry_appends_node_entered() -> None:
    h = Harness()
    assert h.run("design", "log-entry", chain="entry").kind == "pass"
    assert h.log == [("graph.node_entered", {"node": "design", "actor": "agent"})]


# -- deliver-assignment ---------------------------------------------------------------------
def test_deliver_assignment_names_artifacts_command_and_claim() -> None:
    h = Harness()
    h.enter("requirements-definition", at="2026-03-01T10:00:00Z")
    assert h.run("requirements-definition", "deliver-assignment", chain="entry").kind == "pass"
    [comment] = h.tracker.comments_on(REF)
    assert "Produce: `requirements.md` or `bugfix.md`" in comment.body
    assert "Command: `requirements`" in comment.body
    assert "`loopgate complete acme/widgets#7 --node requirements-definition`" in comment.body
    assert "Required non-empty sections: `## Requirements`" in comment.body
    assert assignment_marker("requirements-definition", "2026-03-01T10:00:00Z") in comment.body
    assert SELF_MARKER in comment.body


def test_a_second_visit_within_the_same_second_gets_its_own_assignment() -> None:
    # A fast walk back (changes requested, a stale quiz) re-enters a node within the clock's
    # second of its first entry: the second visit is a new entry, so a new assignment.
    at, node = "2026-03-01T10:00:00Z", "requirements-definition"
    h = Harness()
    h.enter(node, at=at)
    h.state.begin_visit(node, at)
    assert h.run(node, "deliver-assignment", chain="entry").kind == "pass"
    h.state.revision += 1
    h.state.begin_visit(node, at)  # visit 2, same second
    assert h.run(node, "deliver-assignment", chain="entry").kind == "pass"
    first, second = h.tracker.comments_on(REF)
    assert assignment_marker(node, at) in first.body
    assert assignment_marker(node, at, 2) in second.body
    assert assignment_marker(node, at) not in second.body
    assert assignment_marker(node, at, 2) == (
        "<!-- the-loop:assignment requirements-definition entered=2026-03-01T10:00:00Z "
        "visit=2 -->")


def test_deliver_assignment_tells_a_human_gate_not_to_claim() -> None:
    h = Harness()
    h.enter("requirements-approval")
    h.run("requirements-approval", "deliver-assignment", chain="entry")
    [comment] = h.tracker.comments_on(REF)
    assert "human gate: do not claim" in comment.body
    assert "loopgate complete" not in comment.body
    assert "@alice, @Bob" in comment.body


def test_deliver_assignment_is_idempotent_per_entry() -> None:
    h = Harness()
    h.enter("design", at="2026-03-01T10:00:00Z")
    h.run("design", "deliver-assignment", chain="entry")
    h.run("design", "deliver-assignment", chain="entry")
    assert len(h.tracker.comments_on(REF)) == 1
    h.state.revision += 3  # the first visit committed; so did the review that sent it back
    h.enter("design", at="2026-03-02T10:00:00Z")  # re-entered after changes requested
    h.run("design", "deliver-assignment", chain="entry")
    assert len(h.tracker.comments_on(REF)) == 2


def test_a_failed_assignment_post_is_an_effect_to_retry_not_a_lost_comment() -> None:
    # Issue 10 §1: the hook decides, the performer posts; a tracker failure is the
    # performer's to retry, so nothing is logged as degraded and nothing is lost.
    h = Harness()
    h.enter("design")
    h.tracker.failing = {"add_comment"}
    assert h.run("design", "deliver-assignment", chain="entry").kind == "pass"
    assert h.kinds() == []
    [(effect, outcome)] = h.performed
    assert isinstance(effect, PostComment) and "Assignment — `design`" in effect.body
    assert outcome == "retry"


# -- request-review -------------------------------------------------------------------------
def test_request_review_asks_reviewers_in_a_comment() -> None:
    h = Harness()
    h.enter("design-approval")
    assert h.run("design-approval", "request-review", chain="entry").kind == "pass"
    [comment] = h.tracker.comments_on(REF)
    assert "@alice, @Bob: please review `design.md`, `testing-plan.md`" in comment.body
    for words in ("`approved`", "`approved with comments`", "`changes requested`"):
        assert words in comment.body
    assert h.notifier.sent == []  # the gate's own `notify` hook announces it


@pytest.mark.parametrize("gate, event", [("requirements-approval", "phase-approval-pending"),
                                         ("design-approval", "phase-approval-pending"),
                                         ("human-approval", "pr-review-pending")])
def test_entering_a_review_gate_of_the_shipped_graph_sends_one_notice(gate: str,
                                                                      event: str) -> None:
    h = Harness()
    h.enter(gate)
    for ref in h.graph.node(gate).entry:
        assert h.run(gate, ref.name, chain="entry", params=ref.params).kind in ("pass", "skip")
    assert h.notifier.events() == [event]
    assert [e["node"] for _, _, e in h.notifier.sent] == [gate]


# -- notify ---------------------------------------------------------------------------------
def test_notify_sends_the_event_with_quiz_details() -> None:
    h = Harness()
    h.state.surface["quiz"] = {
        "spec-quiz": {
            "digest": "0123456789ab",
            "kind": "spec",
            "comments": [{"id": 5, "url": "https://x/5", "target": "acme/widgets#7"}],
            "location": "docs/specs/issue-7/explainer/explainer.html",
            "viewCommands": ["gh api ...", "curl ..."],
        }
    }
    assert h.run("spec-quiz", "notify", chain="entry").kind == "pass"
    [(_, event, data)] = h.notifier.sent
    assert event == "quiz-pending"
    assert data["commentUrls"] == ["https://x/5"]
    assert data["location"] == "docs/specs/issue-7/explainer/explainer.html"
    assert data["viewCommands"] == ["gh api ...", "curl ..."]
    assert data["workItem"] == "acme/widgets#7" and data["node"] == "spec-quiz"


def test_notify_never_gates_and_never_calls_the_notifier_itself() -> None:
    # A notice is an effect sent after commit: a notifier outage cannot touch the gate.
    h = Harness()
    h.notifier.fail = True
    ctx = h.ctx("requirements-approval", "notify", chain="entry")
    result = REGISTRY.get("notify").fn(ctx)
    assert result.kind == "pass"
    assert h.log == [] and h.notifier.sent == []
    [row] = h.queued
    assert isinstance(row.effect, Notify)
    assert (row.effect.event, row.effect.data["node"]) == ("phase-approval-pending",
                                                          "requirements-approval")


# -- a node entry retried after its transaction was lost ------------------------------------
def test_an_entry_retried_from_the_same_committed_revision_posts_nothing_new() -> None:
    h = Harness()
    h.state.revision = 5
    h.enter("design", at="2026-03-01T10:00:00Z")
    h.run("design", "deliver-assignment", chain="entry")
    # the transaction never committed: the retry starts from revision 5 with a new time
    h.enter("design", at="2026-03-01T10:00:07Z")
    assert h.run("design", "deliver-assignment", chain="entry").reason == (
        "deliver-assignment: already posted")
    [comment] = h.tracker.comments_on(REF)
    assert "<!-- the-loop:entry design rev=5 -->" in comment.body
    # a later, committed visit of the same node gets its own assignment
    h.state.revision = 9
    h.enter("design", at="2026-03-01T11:00:00Z")
    h.run("design", "deliver-assignment", chain="entry")
    assert len(h.tracker.comments_on(REF)) == 2


def test_an_effect_interrupted_after_commit_is_carried_out_once(tmp_path: Path) -> None:
    """Decide, commit, then act (issue 10 §1): the process dies while a committed effect
    is performed; the state stands, and the next performer finishes the effect without
    posting anything twice."""
    tracker, artifacts = MemoryTracker(), MemoryArtifactStore()
    notifier = RecordingNotifier()
    store = SqliteStore(tmp_path / "loopgate.db")
    settings = EngineSettings(authorized_users=("alice",))
    runtime = Runtime(shipped_graph(), store,
                      Ports(tracker, artifacts, notifier, StepClock()),  # a new second per read
                      settings)
    runtime.start(REF)
    runtime.force(REF, "test-planning", "test setup", "tester")
    artifacts.write(REF, "testing-plan.md",
                    "---\nstatus: approved\n---\n## Test matrix\n\n| a | b |\n")

    class Killed(BaseException):
        """The process dies while the notice (after the review request) is sent."""

    def die(*args: object) -> None:
        raise Killed()

    notifier.send = die  # type: ignore[method-assign]
    with pytest.raises(Killed):
        runtime.complete(REF, "test-planning", "agent")
    assert store.load(REF).current_node == "design-approval"  # committed before acting
    del notifier.send
    [stuck] = store.effects.rows(REF, statuses=[RUNNING])
    assert stuck.effect.kind == "notify"

    later = StepClock()
    later.now = lambda: datetime(2030, 1, 1, tzinfo=UTC)  # type: ignore[method-assign]
    InlinePerformer(store, Ports(tracker, artifacts, notifier, later), settings).drain(REF)
    assert notifier.events() == ["phase-selection-pending", "phase-approval-pending"]
    requests = [c for c in tracker.comments_on(REF)
                if "<!-- the-loop:review-request design-approval " in c.body]
    assert len(requests) == 1
    assigned = [c for c in tracker.comments_on(REF)
                if "<!-- the-loop:assignment design-approval " in c.body]
    assert len(assigned) == 1
    assert store.effects.rows(REF, statuses=[PENDING, RUNNING]) == []


def test_the_assignment_says_what_command_means_where_its_procedure_is_and_the_spec_dir() -> None:
    # Issue 23 §1: "Command:" is explained and its procedure is reachable from the comment.
    h = Harness()
    h.enter("design")
    h.run("design", "deliver-assignment", chain="entry")
    [comment] = h.tracker.comments_on(REF)
    assert ("- Command: `design` — the procedure to follow at this node (what to read, what "
            "to write, how to claim); print it with `loopgate procedure design` "
            "(`templates/commands/design.md` in loopgate)") in comment.body
    assert "- Where: the spec directory `docs/specs/issue-7/`" in comment.body
    assert (Path(__file__).resolve().parents[2] / "templates/commands/design.md").is_file()

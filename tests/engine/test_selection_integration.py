"""Phase selection end to end: the shipped graph, the runtime, an in-memory store and
tracker (issue #2 §6 acceptance)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.graph.compiler import shipped_graph
from engine.hooks.markers import CONFIRMATION_MARKER, PHASE_SELECTION_MARKER
from engine.local.checkout import CheckoutArtifactStore
from engine.local.memory_tracker import MemoryTracker
from engine.ports import Comment, Ports
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore
from tests.engine.test_hooks_support import REF, FixedClock, RecordingNotifier

EXPLAINER_NODES = ("spec-explainer", "spec-quiz", "code-explainer", "code-quiz")


@dataclass
class World:
    runtime: Runtime
    store: MemoryStore
    tracker: MemoryTracker
    artifacts: CheckoutArtifactStore

    def reply(self, author: str, body: str) -> Comment:
        return self.tracker.add_comment_as(REF, author, body)

    def advance_with(self, *comments: Comment):
        return self.runtime.advance(REF, {"comments": list(comments)})

    def checklist(self) -> Comment:
        [found] = [c for c in self.tracker.comments_on(REF) if PHASE_SELECTION_MARKER in c.body]
        return found

    def confirmations(self) -> list[str]:
        return [c.body for c in self.tracker.comments_on(REF) if CONFIRMATION_MARKER in c.body]

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.store.events(REF)]


@pytest.fixture
def world(tmp_path: Path) -> World:
    tracker, store = MemoryTracker(), MemoryStore()
    artifacts = CheckoutArtifactStore(tmp_path, "docs/specs")
    ports = Ports(tracker, artifacts, RecordingNotifier(), FixedClock())
    runtime = Runtime(shipped_graph(), store, ports, EngineSettings(authorized_users=("alice",)))
    runtime.start(REF)
    return World(runtime, store, tracker, artifacts)


def test_start_posts_the_checklist_once_and_labels_the_item(world: World) -> None:
    world.runtime.start(REF)  # idempotent: no second checklist
    world.runtime.advance(REF, {})
    assert world.checklist().body.count("- [x] ") == 16  # 15 phases and the explainer row
    assert world.tracker.labels(REF) == ["loop:phase-selection"]
    state = world.store.load(REF)
    assert state.current_node == "phase-selection"
    assert state.status == "parked"


def test_unauthorized_reply_never_selects(world: World) -> None:
    state = world.advance_with(world.reply("mallory", "the-loop execute\n- [ ] brainstorming"))
    assert state.current_node == "phase-selection"
    assert state.skips == {} and "phase-selection" not in state.decisions
    assert world.confirmations() == []


def test_reply_without_keyword_waits(world: World) -> None:
    state = world.advance_with(world.reply("alice", "I'll look later"))
    assert state.current_node == "phase-selection"
    assert "the-loop execute" in state.parked.reason


def test_tick_in_place_plus_bare_keyword_selects_via_checklist(world: World) -> None:
    checklist = world.checklist()
    body = checklist.body.replace("- [x] brainstorming", "- [ ] brainstorming")
    body = body.replace("- [ ] design-critic-review", "- [x] design-critic-review")
    world.tracker.edit_comment(checklist.id, body, "alice")
    state = world.advance_with(world.reply("alice", "The-Loop Execute"))
    assert state.decisions["phase-selection"]["via"] == "checklist"
    assert state.skips["brainstorming"].token == "brainstorming"
    assert state.skips["brainstorming"].by == "@alice"
    assert state.opt_ins["design-critic-review"].by == "@alice"
    assert state.nodes["brainstorming"].outcome == "skipped"
    assert state.current_node == "requirements-definition"
    assert "graph.opt_ins_selected" in world.kinds()


def test_checklist_in_the_reply_wins(world: World) -> None:
    checklist = world.checklist()
    world.tracker.edit_comment(
        checklist.id, checklist.body.replace("- [x] design\n", "- [ ] design\n"), "alice"
    )
    state = world.advance_with(world.reply("alice", "the-loop execute\n- [x] design"))
    assert state.decisions["phase-selection"]["via"] == "reply"
    assert "design" not in state.skips
    assert state.current_node == "brainstorming"


def test_unticking_a_protected_phase_is_refused_and_said(world: World) -> None:
    state = world.advance_with(world.reply("alice", "the-loop execute\n- [ ] human-approval"))
    assert state.decisions["phase-selection"]["refused"] == ["human-approval"]
    assert "human-approval" not in state.skips
    [text] = world.confirmations()
    assert "Refused: `human-approval`" in text


def test_declaring_every_phase_away_reaches_the_final_gate(world: World) -> None:
    rows = "\n".join(
        f"- [ ] {n}"
        for n in [
            "brainstorming", "requirements-definition", "requirements-approval", "design",
            "test-planning", "design-approval", "tasks-breakdown", "implementation",
            "verification", "self-review", "critic-review", "security-review", "evidence",
            "capability-docs", "reviewer-briefing", "explainer",
        ]
    )  # fmt: skip
    state = world.advance_with(world.reply("alice", f"the-loop execute\n{rows}"))
    assert state.current_node == "human-approval"
    for node in EXPLAINER_NODES:
        assert state.skips[node].token == "explainer"
        assert state.nodes[node].outcome == "skipped"
    frozen = {n["id"]: n for n in state.decisions["phase-selection"]["frozenGraph"]["nodes"]}
    assert frozen["design-critic-review"]["skipped"] and frozen["design-critic-review"]["optIn"]
    assert frozen["design"]["skipped"] and not frozen["design"]["optIn"]
    approved = world.reply("alice", "approved")
    assert world.advance_with(approved).status == "complete"


def test_the_explainer_row_absent_keeps_the_explainer_on(world: World) -> None:
    state = world.advance_with(world.reply("alice", "the-loop execute\n- [ ] brainstorming"))
    assert not set(EXPLAINER_NODES) & set(state.skips)
    assert state.decisions["phase-selection"]["explainer"] is True
    [text] = world.confirmations()
    assert "Explainer and quizzes: on" in text.splitlines()


def test_a_tracker_outage_leaves_the_gate_waiting(world: World) -> None:
    reply = world.reply("alice", "the-loop execute")
    world.tracker.down = True
    state = world.advance_with(reply)
    assert state.current_node == "phase-selection"
    assert state.status == "parked"
    assert "could not read the phase-selection checklist" in state.parked.reason
    assert state.skips == {} and state.decisions == {}
    world.tracker.down = False
    state = world.advance_with(world.reply("alice", "the-loop execute"))
    assert state.current_node == "brainstorming"


def test_selection_notices_feed_the_slack_card(world: World) -> None:
    """The card is posted on entry and rewritten once a selection is made (issue 4 §3)."""
    notifier = world.runtime.ports.notifier
    pending = [d for (_, e, d) in notifier.sent if e == "phase-selection-pending"]
    assert pending == [{"node": "phase-selection", "url": world.checklist().url}]
    world.advance_with(world.reply("alice", "the-loop execute"))
    [done] = [d for (_, e, d) in notifier.sent if e == "phase-selection-done"]
    assert done["decision"]["by"] == "@alice"
    assert "Explainer and quizzes: on" in done["confirmation"]


def test_an_execute_reply_of_an_earlier_visit_does_not_choose_for_a_later_one(
        world: World) -> None:
    # Issue 19 §2: the gate re-entered (an operator moved the item back) is chosen for again;
    # the visit-1 reply offered again (catch-up, a redelivery) does not decide visit 2.
    first = world.reply("alice", "the-loop execute")
    assert world.advance_with(first).current_node == "brainstorming"
    state = world.runtime.force(REF, "phase-selection", "choose again", "tester")
    assert state.visit("phase-selection").number == 2
    state = world.advance_with(first)
    assert state.current_node == "phase-selection"
    assert str(state.parked.reason).endswith(
        "(not counted: @alice replied `the-loop execute` before visit 2 began; reply again)")
    # positive control: a reply written during visit 2 chooses
    again = world.reply("alice", "the-loop execute")
    state = world.advance_with(again)
    assert state.current_node == "brainstorming"
    assert state.decisions["phase-selection"]["commentId"] == again.id


def test_a_slack_selection_on_a_later_visit_still_counts(world: World) -> None:
    # A Slack click is a comment with no id (bot/slack/listeners/actions/execute.py): the visit
    # binding of GitHub replies must not refuse it.
    first = world.reply("alice", "the-loop execute")
    assert world.advance_with(first).current_node == "brainstorming"
    world.runtime.force(REF, "phase-selection", "choose again", "tester")
    click = Comment(id=0, author="alice", body="the-loop execute")
    state = world.runtime.advance(REF, {"comments": [click], "via": "slack",
                                        "expectNode": "phase-selection"})
    assert state.current_node == "brainstorming"
    assert state.decisions["phase-selection"]["via"] == "slack"

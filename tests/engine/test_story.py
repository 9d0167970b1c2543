"""Issue 23 §2, the thread tells the story: one line when a gate passes (selection,
approval) and when the item completes, naming who and the next step, once per visit."""

from __future__ import annotations

from typing import Any

from engine.local.memory_tracker import MemoryTracker
from engine.refs import WorkItemRef
from engine.store.memory import MemoryStore
from engine.story import COMPLETED_MARKER, gate_passed_marker
from tests.engine.runtime_support import REF, compile_mini, make_runtime, say
from tests.engine.test_visits import GATE, Walk


def _lines(tracker: MemoryTracker, needle: str) -> list[str]:
    return [c.body.splitlines()[0] for c in tracker.comments_on(REF) if needle in c.body]


def test_a_gate_passed_on_its_second_visit_is_announced_once_naming_who_and_next() -> None:
    walk = Walk()
    walk.deliver()
    walk.reply("alice", "changes requested: R1 is vague")
    assert _lines(walk.tracker, "the-loop:gate-passed") == []  # sent back: not a pass
    walk.deliver()
    walk.reply("bob", "approved")
    assert _lines(walk.tracker, gate_passed_marker(GATE, 2)) == [
        f"✅ `{GATE}` passed — approved by @bob (visit 2). Next: `design` — write design.md "
        "— architecture, security design, testing strategy."]
    walk.runtime.advance(REF, {})  # nothing new happened: nothing said again
    walk.runtime.advance(REF, {"comments": [walk.replies[-1]]})
    assert len(_lines(walk.tracker, "the-loop:gate-passed")) == 1
    posted = [c for c in walk.tracker.comments_on(REF) if "gate-passed" in c.body][0]
    assert posted.author == walk.tracker.bot_login
    assert "<!-- the-loop:agent-comment -->" in posted.body  # never read as an answer


def test_the_last_gate_says_the_item_is_complete_and_no_second_line_follows() -> None:
    walk = Walk()
    walk.runtime.force(REF, "human-approval", "test: to the last gate", "t")
    state = walk.reply("alice", "approved with comments: rename foo")
    assert state.status == "complete"
    assert _lines(walk.tracker, "the-loop:gate-passed human-approval") == [
        "✅ `human-approval` passed — approved with comments by @alice. "
        "The work item is complete."]
    assert _lines(walk.tracker, COMPLETED_MARKER) == []


def test_selection_and_completion_on_a_walk_ending_at_a_code_node() -> None:
    runtime = make_runtime(MemoryStore())
    tracker: Any = runtime.ports.tracker
    runtime.start(REF)
    runtime.advance(REF, say(runtime, "alice", "select"))
    assert _lines(tracker, gate_passed_marker("select", 1)) == [
        "✅ `select` passed — phases selected by @alice. Next: `a`."]
    runtime.complete(REF, "a", "agent-1")
    state = runtime.advance(REF, say(runtime, "alice", "approve"))
    assert state.status == "complete"
    assert _lines(tracker, gate_passed_marker("gate", 1)) == [
        "✅ `gate` passed — approved by alice. Next: `b`."]
    assert _lines(tracker, COMPLETED_MARKER) == [
        "🏁 acme/widgets#7 is complete: every gate on its walk passed."]
    runtime.advance(REF, {})
    assert len(_lines(tracker, COMPLETED_MARKER)) == 1


def test_a_quiz_attestation_is_announced_with_the_attester() -> None:
    mapping = {
        "version": 1, "name": "quiz", "start": "quiz",
        "nodes": [{"id": "quiz", "actor": "human", "description": "take the quiz",
                   "exit": ["t-attest"]},
                  {"id": "ship", "actor": "agent", "description": "ship it"},
                  {"id": "done", "actor": "code", "terminal": True}],
        "edges": [{"from": "quiz", "to": "ship", "on": "pass"},
                  {"from": "ship", "to": "done", "on": "pass"}],
    }
    runtime = make_runtime(MemoryStore(), compile_mini(mapping))
    tracker: Any = runtime.ports.tracker
    runtime.start(REF)
    runtime.advance(REF, {"attestation": {"comment_id": 5, "url": "u"}})
    assert _lines(tracker, gate_passed_marker("quiz", 1)) == [
        "✅ `quiz` passed — attested by alice. Next: `ship` — ship it."]


def test_the_phase_selection_confirms_itself_and_gets_no_second_line() -> None:
    walk = Walk()  # forced past the selection; a fresh item answers it for real
    fresh = WorkItemRef("acme", "widgets", 8)
    walk.runtime.start(fresh)
    reply = walk.tracker.add_comment_as(fresh, "alice", "the-loop execute")
    state = walk.runtime.advance(fresh, {"comments": [reply]})
    assert state.current_node != "phase-selection"
    bodies = [c.body for c in walk.tracker.comments_on(fresh)]
    assert sum("the-loop:selection-confirmation" in b for b in bodies) == 1
    assert not any("the-loop:gate-passed" in b for b in bodies)

"""The quiz gates end to end through the runtime: the four Gherkin scenarios of the
explainer design's Testing strategy, on the shipped graph with in-memory ports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from engine.effects import PENDING
from engine.graph.compiler import shipped_graph
from engine.hooks.markers import SELF_MARKER, attestation_line, quiz_marker
from engine.local.checkout import CheckoutArtifactStore
from engine.local.memory_tracker import MemoryTracker
from engine.perform import InlinePerformer
from engine.ports import Comment, Ports
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore
from tests.engine.test_hooks_support import NOW, REF, FixedClock, RecordingNotifier


class LaterClock:
    """A clock an hour past the fixed one: every back-off is over."""

    def now(self) -> datetime:
        return NOW + timedelta(hours=1)


EXPLAINER_NODES = ("spec-explainer", "spec-quiz", "code-explainer", "code-quiz")
# Everything before the spec explainer, so a walk reaches it at once.
SPEC_CHAIN = (
    "brainstorming", "requirements-definition", "requirements-approval", "design",
    "test-planning", "design-approval",
)  # fmt: skip
RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | docs/specs/issue-7/explainer/explainer.html |
| Published as | committed HTML |
| Questions | 3 |
"""


@dataclass
class World:
    runtime: Runtime
    store: MemoryStore
    tracker: MemoryTracker
    artifacts: CheckoutArtifactStore
    notifier: RecordingNotifier

    def select(self, *unticked: str) -> ItemState:
        rows = "\n".join(f"- [ ] {token}" for token in unticked)
        reply = self.tracker.add_comment_as(REF, "alice", f"the-loop execute\n{rows}")
        return self.runtime.advance(REF, {"comments": [reply]})

    def write(self, name: str, text: str) -> None:
        """Write ``name`` into the item's spec directory in the checkout."""
        path = self.artifacts.workspace / self.artifacts.spec_dir(REF) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")

    def write_spec(self, design: str = "design v1\n") -> None:
        self.write("requirements.md", "requirements v1\n")
        self.write("design.md", design)
        self.write("testing-plan.md", "plan v1\n")
        self.write("explainer/explainer.html", "<html>quiz</html>")
        self.write("evidence/spec-explainer.md", RECORD)

    def quiz_comments(self) -> list[Comment]:
        return [c for c in self.tracker.comments_on(REF) if "the-loop:quiz spec-quiz" in c.body]

    def tick(self, comment: Comment, editor: str) -> dict[str, object]:
        body = comment.body.replace(attestation_line("spec"), attestation_line("spec", True))
        self.tracker.edit_comment(comment.id, body, editor)
        return {"attestation": {"comment_id": comment.id, "url": comment.url}}

    def events(self, kind: str) -> list[dict[str, object]]:
        return [e["data"] for e in self.store.events(REF) if e["kind"] == kind]


@pytest.fixture
def world(tmp_path: Path) -> World:
    tracker, store = MemoryTracker(), MemoryStore()
    artifacts = CheckoutArtifactStore(tmp_path, "docs/specs")
    notifier = RecordingNotifier()
    ports = Ports(tracker, artifacts, notifier, FixedClock())
    runtime = Runtime(shipped_graph(), store, ports, EngineSettings(authorized_users=("alice",)))
    runtime.start(REF)
    return World(runtime, store, tracker, artifacts, notifier)


def _at_spec_quiz(world: World) -> Comment:
    state = world.select(*SPEC_CHAIN)
    assert state.current_node == "spec-explainer"
    world.write_spec()
    state = world.runtime.complete(REF, "spec-explainer", "agent")
    assert state.current_node == "spec-quiz", state.parked
    [comment] = world.quiz_comments()
    return comment


def test_a_tick_by_an_authorized_user_advances_the_spec_quiz(world: World) -> None:
    """Scenario: a tick by an authorized user advances the spec quiz

    Given a work item waiting at spec-quiz with loopgate's quiz comment posted
    And the comment carries the spec digest and view commands for the committed page
    When the authorized user "alice" ticks the attestation box
    And the quiz_attestation event names that comment
    Then the item moves on to tasks-breakdown
    And the decision at spec-quiz records that "@alice" attested
    """
    comment = _at_spec_quiz(world)
    assert SELF_MARKER in comment.body
    assert "gh api -H 'Accept: application/vnd.github.raw'" in comment.body
    pending = [d for _, e, d in world.notifier.sent if e == "quiz-pending"]
    assert pending[0]["commentUrls"] == [comment.url]
    assert len(pending[0]["viewCommands"]) == 2

    state = world.runtime.advance(REF, world.tick(comment, "alice"))

    assert state.current_node == "tasks-breakdown"
    decision = state.decisions["spec-quiz"]
    assert decision["attestedBy"] == "@alice"
    assert decision["comment"] == comment.url
    assert state.nodes["spec-quiz"].outcome == "pass"
    assert world.events("graph.quiz_attested") == [
        {"node": "spec-quiz", "by": "@alice", "comment": comment.url}
    ]


def test_a_tick_by_an_unauthorized_user_is_refused(world: World) -> None:
    """Scenario: a tick by an unauthorized user is refused

    Given a work item waiting at spec-quiz with loopgate's quiz comment posted
    When "mallory", who is not an authorized user, ticks the attestation box
    And the same tick is delivered twice (poller and webhook)
    Then the item keeps waiting at spec-quiz
    And no decision is recorded
    And graph.quiz_refused is logged once, naming mallory
    """
    comment = _at_spec_quiz(world)
    event = world.tick(comment, "mallory")

    world.runtime.advance(REF, event)
    state = world.runtime.advance(REF, event)

    assert state.current_node == "spec-quiz"
    assert state.status == "parked"
    assert "spec-quiz" not in state.decisions
    assert world.events("graph.quiz_refused") == [{"node": "spec-quiz", "editor": "mallory"}]


def test_an_unticked_explainer_row_skips_all_four_nodes(world: World) -> None:
    """Scenario: an unticked explainer row skips all four nodes

    Given a work item at phase-selection
    When "alice" replies with the execute keyword and the explainer row unticked
    Then spec-explainer, spec-quiz, code-explainer and code-quiz are declared skipped
      under the token "explainer", by "@alice"
    And walking the item records each of them as skipped, with no quiz comment posted
    And the confirmation says "Explainer and quizzes: off, as declared by @alice"
    """
    state = world.select(*SPEC_CHAIN, "explainer")

    for node in EXPLAINER_NODES:
        skip = state.skips[node]
        assert (skip.via, skip.token, skip.by, skip.reason) == (
            "selection", "explainer", "@alice", "",
        )  # fmt: skip
    assert state.nodes["spec-explainer"].outcome == "skipped"
    assert state.nodes["spec-quiz"].outcome == "skipped"
    assert state.current_node == "tasks-breakdown"
    assert world.quiz_comments() == []
    confirmation = [
        c.body for c in world.tracker.comments_on(REF) if "Phase selection recorded" in c.body
    ]
    assert (
        "Explainer and quizzes: off, as declared by @alice — spec-explainer, spec-quiz, "
        "code-explainer, code-quiz skipped"
    ) in confirmation[0].splitlines()


def test_a_changed_spec_sends_the_spec_quiz_back_to_the_explainer(world: World) -> None:
    """Scenario: a changed spec sends the spec quiz back to the explainer

    Given a work item waiting at spec-quiz with a quiz comment bound to the spec digest
    When design.md changes and "alice" ticks the old comment
    Then the spec quiz answers stale and the item goes back to spec-explainer
    When the explainer is claimed complete again
    Then a new quiz comment is posted with the new digest
    And a tick on the old comment is ignored while a tick on the new one advances
    """
    old = _at_spec_quiz(world)
    world.write("design.md", "design v2\n")

    state = world.runtime.advance(REF, world.tick(old, "alice"))

    assert state.current_node == "spec-explainer"
    assert state.nodes["spec-quiz"].outcome == "stale"
    assert "spec-quiz" not in state.decisions
    assert "quiz-stale" in world.notifier.events()

    state = world.runtime.complete(REF, "spec-explainer", "agent")
    assert state.current_node == "spec-quiz"
    new = [c for c in world.quiz_comments() if c.id != old.id]
    assert len(new) == 1
    new_digest = state.surface["quiz"]["spec-quiz"]["digest"]
    assert quiz_marker("spec-quiz", new_digest) in new[0].body
    assert quiz_marker("spec-quiz", new_digest) not in old.body

    attestation = {"attestation": {"comment_id": old.id, "url": old.url}}
    assert world.runtime.advance(REF, attestation).current_node == "spec-quiz"
    state = world.runtime.advance(REF, world.tick(new[0], "alice"))
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["comment"] == new[0].url


def test_a_quiz_comment_lost_to_an_outage_is_posted_once_the_tracker_answers(
        world: World) -> None:
    """Design "Error handling" and issue 10 §1: a failed post is retried, never lost; while
    it waits the gate says so, and once posted it is recorded for the gate and the
    quiz-pending notice links it."""
    world.select(*SPEC_CHAIN)
    world.write_spec()
    world.tracker.failing = {"add_comment"}
    state = world.runtime.complete(REF, "spec-explainer", "agent")
    assert state.current_node == "spec-quiz"
    assert world.quiz_comments() == []
    waiting = world.store.effects.rows(REF, statuses=[PENDING])
    assert [r.effect.kind for r in waiting][:2] == ["post-comment", "notify"]
    assert waiting[0].attempts == 1 and "simulated" in waiting[0].last_error
    world.tracker.failing = set()
    state = world.runtime.advance(REF, {})
    assert "is being posted" in state.parked.reason

    later = Ports(world.tracker, world.artifacts, world.notifier, LaterClock())
    InlinePerformer(world.store, later, world.runtime.settings).drain(REF)

    [comment] = world.quiz_comments()
    state = world.store.load(REF)
    assert state.surface["quiz"]["spec-quiz"]["comments"][0]["id"] == comment.id
    assert state.surface["quiz"]["spec-quiz"]["posting"] == []
    pending = [d for _, e, d in world.notifier.sent if e == "quiz-pending"]
    assert pending[-1]["commentUrls"] == [comment.url]
    state = world.runtime.advance(REF, world.tick(comment, "alice"))
    assert state.current_node == "tasks-breakdown"


def test_once_the_quiz_comment_is_posted_the_wait_stops_saying_it_is_being_posted(
        world: World) -> None:
    """Issue 23 ("Smaller"): the wait decided while the comment was queued said "being
    posted"; recording the post rewords it to what the gate waits for now."""
    world.select(*SPEC_CHAIN)
    world.write_spec()
    world.tracker.failing = {"add_comment"}
    state = world.runtime.complete(REF, "spec-explainer", "agent")
    world.tracker.failing = set()
    state = world.runtime.advance(REF, {})
    assert state.parked.reason.startswith("the spec-quiz comment is being posted")

    later = Ports(world.tracker, world.artifacts, world.notifier, LaterClock())
    InlinePerformer(world.store, later, world.runtime.settings).drain(REF)

    assert len(world.quiz_comments()) == 1
    state = world.store.load(REF)
    assert state.current_node == "spec-quiz"
    assert state.parked.reason == (
        "waiting for an authorized user to tick the spec quiz box on spec-quiz")


# -- issue 19 §2: a quiz attestation is bound to the visit it answers ----------------------
def _back_to_spec_quiz(world: World, old: Comment) -> ItemState:
    state = world.runtime.advance(REF, world.tick(old, "alice"))
    assert state.current_node == "tasks-breakdown"
    state = world.runtime.force(REF, "spec-quiz", "explain it again", "tester")
    assert state.current_node == "spec-quiz" and state.visit("spec-quiz").number == 2
    return state


def test_an_earlier_visits_quiz_tick_does_not_pass_a_later_visit(world: World) -> None:
    old = _at_spec_quiz(world)
    _back_to_spec_quiz(world, old)
    # the visit-1 tick offered again (a redelivery, a poll) does not pass visit 2
    state = world.runtime.advance(REF, {"attestation": {"comment_id": old.id, "url": old.url}})
    assert state.current_node == "spec-quiz"
    why = (f"comment {old.id} is the spec-quiz quiz comment of an earlier visit; a tick there "
           "does not count for visit 2: tick the new quiz comment")
    assert str(state.parked.reason).startswith(why)
    # visit 2 posted its own quiz comment; the old one is never reused
    [new] = [c for c in world.quiz_comments() if c.id != old.id]
    assert state.surface["quiz"]["spec-quiz"]["visit"] == 2
    assert state.surface["quiz"]["spec-quiz"]["earlier"] == [old.id]
    # an un-tick and re-tick of the old box by an authorized user does not count either
    unticked = old.body.replace(attestation_line("spec", True), attestation_line("spec"))
    world.tracker.edit_comment(old.id, unticked, "alice")
    state = world.runtime.advance(REF, world.tick(old, "alice"))
    assert state.current_node == "spec-quiz"
    assert str(state.parked.reason) == why
    assert [c["id"] for c in state.surface["quiz"]["spec-quiz"]["comments"]] == [new.id]
    told = [c for c in world.tracker.comments_on(REF) if "Not counted" in c.body]
    assert len(told) == 1 and f"does not count: {why}" in told[0].body
    # positive control: a tick on visit 2's own comment passes
    state = world.runtime.advance(REF, world.tick(new, "alice"))
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["comment"] == new.url


def test_a_typed_quiz_line_of_an_earlier_visit_does_not_pass_a_later_one(
        world: World) -> None:
    world.tracker.comments_editable = False  # offline: the typed line attests
    _at_spec_quiz(world)
    line = world.tracker.add_comment_as(REF, "alice", attestation_line("spec", True))
    assert world.runtime.advance(REF, {"comments": [line]}).current_node == "tasks-breakdown"
    world.runtime.force(REF, "spec-quiz", "explain it again", "tester")
    state = world.runtime.advance(REF, {"comments": [line]})  # offered again
    assert state.current_node == "spec-quiz"
    assert "not counted: @alice (it was written before visit 2 began; reply again with the " \
           "line)" in str(state.parked.reason)
    again = world.tracker.add_comment_as(REF, "alice", attestation_line("spec", True))
    state = world.runtime.advance(REF, {"comments": [again]})
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["commentId"] == again.id


def test_a_quiz_entered_again_through_its_edge_posts_a_new_comment(world: World) -> None:
    # The walk's own way back (the entry hook runs): same spec, same digest, and still the
    # visit-1 comment, ticked, is not reused; a tick replayed on it does not count.
    old = _at_spec_quiz(world)
    _back_to_spec_quiz(world, old)
    world.runtime.force(REF, "spec-explainer", "explain it again", "tester")
    state = world.runtime.complete(REF, "spec-explainer", "agent")
    assert state.current_node == "spec-quiz" and state.visit("spec-quiz").number == 3
    fresh = [c for c in world.quiz_comments() if c.id != old.id]
    assert fresh and state.surface["quiz"]["spec-quiz"]["visit"] == 3
    assert old.id in state.surface["quiz"]["spec-quiz"]["earlier"]
    state = world.runtime.advance(REF, {"attestation": {"comment_id": old.id, "url": old.url}})
    assert state.current_node == "spec-quiz"
    state = world.runtime.advance(REF, world.tick(fresh[-1], "alice"))
    assert state.current_node == "tasks-breakdown"

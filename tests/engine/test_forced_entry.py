"""A forced move enters the node like any move (issue 19 §2: "entering a node (walk, skip
or force) opens a visit"): the entry chain runs at once — a quiz posts its comment, an
approval gate asks for reviews — on a visit recorded as forced; no exit chain runs, so no
gate is decided. And issue 24 §3 at the engine: a pull request that appears while the
gate's visit is open is asked in that visit, and a failed read there asks nothing (the
next event asks). Shipped graph over the in-memory ports."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.effects import EffectRow, PostComment
from engine.graph.compiler import shipped_graph
from engine.local.checkout import CheckoutArtifactStore
from engine.local.memory_tracker import MemoryTracker
from engine.perform import DONE_OUTCOME, FAILED_OUTCOME, Outcome, apply_result
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore
from tests.engine.test_hooks_support import REF, FixedClock, RecordingNotifier

PULL = WorkItemRef(REF.owner, REF.repo, 12)
LATER = WorkItemRef(REF.owner, REF.repo, 13)
RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | docs/specs/issue-7/explainer/explainer.html |
| Published as | committed HTML |
| Questions | 3 |
"""


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.tracker, self.store = MemoryTracker(), MemoryStore()
        self.tracker.set_issue(REF, "Widgets", author="alice")
        self.artifacts = CheckoutArtifactStore(tmp_path, "docs/specs")
        self.notifier = RecordingNotifier()
        ports = Ports(self.tracker, self.artifacts, self.notifier, FixedClock())
        self.runtime = Runtime(shipped_graph(), self.store, ports,
                               EngineSettings(authorized_users=("alice", "bob", "carol")))
        self.runtime.start(REF)

    def write(self, name: str, text: str) -> None:
        path = self.artifacts.workspace / self.artifacts.spec_dir(REF) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")

    def events(self, kind: str) -> list[dict[str, object]]:
        return [e["data"] for e in self.store.events(REF) if e["kind"] == kind]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_a_forced_move_onto_a_quiz_posts_its_comment_at_once(world: World) -> None:
    for name, text in (("requirements.md", "r\n"), ("design.md", "d\n"),
                       ("testing-plan.md", "t\n"), ("explainer/explainer.html", "<p>q</p>"),
                       ("evidence/spec-explainer.md", RECORD)):
        world.write(name, text)

    state = world.runtime.force(REF, "spec-quiz", "the explainer was written by hand", "ops")

    assert state.current_node == "spec-quiz"
    visit = state.visit("spec-quiz")
    assert visit is not None and visit.forced and visit.number == 1
    [quiz] = [c for c in world.tracker.comments_on(REF) if "the-loop:quiz spec-quiz" in c.body]
    stored = world.store.load(REF)  # the performer recorded the posted comment
    assert stored is not None and stored.surface["quiz"]["spec-quiz"]["visit"] == 1
    assert [c["id"] for c in stored.surface["quiz"]["spec-quiz"]["comments"]] == [quiz.id]
    assert state.forced[-1].to_node == "spec-quiz" and state.forced[-1].by == "ops"
    assert world.events("graph.forced")[-1]["to"] == "spec-quiz"
    # No exit chain ran: nothing is decided, the gate waits for its tick.
    assert state.nodes["spec-quiz"].outcome == "" and "spec-quiz" not in state.decisions


def test_a_forced_move_onto_an_approval_gate_asks_for_reviews_at_once(world: World) -> None:
    world.tracker.add_pull_request(REF, PULL.number, author="carol")

    state = world.runtime.force(REF, "human-approval", "reviewed elsewhere", "ops")

    assert world.tracker.review_requests[PULL] == [(("alice", "bob"), ())]
    entry = state.surface["reviewRequests"]["human-approval"]
    assert (entry["visit"], entry["pulls"]) == (1, [PULL.number])
    assert state.visit("human-approval").forced
    assert state.nodes["human-approval"].outcome == ""
    assert "human-approval" not in state.decisions
    assert state.current_node == "human-approval"


def test_a_pull_request_that_appears_later_is_asked_and_a_failed_read_asks_nothing(
        world: World) -> None:
    world.tracker.add_pull_request(REF, PULL.number, author="carol")
    world.runtime.force(REF, "human-approval", "reviewed elsewhere", "ops")
    before = world.store.load(REF)
    assert before is not None
    world.tracker.add_pull_request(REF, LATER.number, author="dave")
    world.tracker.failing.add("delivering_pull_requests")

    assert world.runtime.publish_gate(REF, pulls=(LATER.number,)) is False

    assert LATER not in world.tracker.review_requests
    after = world.store.load(REF)
    assert after is not None
    assert after.surface["reviewRequests"] == before.surface["reviewRequests"]

    world.tracker.failing.discard("delivering_pull_requests")
    # The merge gate is off here: True only because a review request was queued.
    assert world.runtime.publish_gate(REF, pulls=(LATER.number,)) is True
    assert world.runtime.publish_gate(REF, pulls=(LATER.number,)) is False  # once per PR

    assert world.tracker.review_requests[LATER] == [(("alice", "bob"), ())]
    assert world.tracker.review_requests[PULL] == [(("alice", "bob"), ())]
    entry = world.store.load(REF).surface["reviewRequests"]["human-approval"]  # type: ignore[union-attr]
    assert entry["pulls"] == [PULL.number, LATER.number]
    assert entry["asked"] == [
        {"pull": PULL.number, "reviewers": ["alice", "bob"], "teams": []},
        {"pull": LATER.number, "reviewers": ["alice", "bob"], "teams": []}]


def _spec_written(world: World) -> None:
    for name, text in (("requirements.md", "r\n"), ("design.md", "d\n"),
                       ("testing-plan.md", "t\n"), ("explainer/explainer.html", "<p>q</p>"),
                       ("evidence/spec-explainer.md", RECORD)):
        world.write(name, text)


def test_a_quiz_comment_posted_for_an_earlier_visit_never_answers_a_forced_one(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 19 §2 against a post whose answer was lost (a timeout: GitHub created the
    comment, the performer did not hear it, so its row is retried and the visit records
    no comment): alice ticks that comment during visit 1; an operator then forces the
    item onto the quiz again (visit 2), which posts its own comment. When the old row is
    retried, the performer finds the old comment by its marker: it must be named an
    earlier visit's, not become visit 2's, so alice's visit-1 tick — offered late (the
    poller's cycle after the webhook's) — does not pass visit 2."""
    from engine import events as ev
    from engine.perform import _with_key
    from tests.engine import test_hooks_support as support

    _spec_written(world)
    # A reply offered to loopgate: visits now begin after it (after_comment), and a
    # comment loopgate posts later has a larger id whichever visit it was posted for.
    hello = world.tracker.add_comment_as(REF, "bob", "looking at it")
    world.runtime.advance(REF, {"comments": [hello]})
    world.tracker.failing.add("add_comment")
    world.runtime.force(REF, "spec-quiz", "the explainer was written by hand", "ops")
    [row] = [r for r in world.store.effects.rows(REF, statuses=["pending"])
             if isinstance(r.effect, PostComment) and r.effect.record == "quiz:spec-quiz"]
    assert isinstance(row.effect, PostComment)
    body = _with_key(row.effect.body, row.key)
    old = world.tracker.add_comment_as(REF, "loopgate-bot", body)  # GitHub did create it
    world.tracker.edit_comment(old.id, old.body.replace("- [ ]", "- [x]", 1), "alice")
    world.tracker.failing.discard("add_comment")

    state = world.runtime.force(REF, "spec-quiz", "the quiz looked stuck", "ops")
    assert state.visit("spec-quiz").number == 2  # type: ignore[union-attr]
    # The entry posts its own comment: the old one carries an earlier visit's row marker.
    assert state.surface["quiz"]["spec-quiz"]["comments"] == []
    assert state.surface["quiz"]["spec-quiz"]["earlierPosting"] == [row.key]
    monkeypatch.setattr(support, "NOW", support.NOW + timedelta(minutes=5))  # rows due
    assert world.runtime.on_commit.drain(REF) == 4  # type: ignore[attr-defined]

    stored = world.store.load(REF)
    assert stored is not None
    entry = stored.surface["quiz"]["spec-quiz"]
    [new] = [c.id for c in world.tracker.comments_on(REF)
             if "the-loop:quiz spec-quiz" in c.body and c.id != old.id]
    assert [c["id"] for c in entry["comments"]] == [new]
    assert entry["earlier"] == [old.id] and entry["posting"] == []

    late = world.runtime.advance(REF, ev.Attestation(old.id, old.url, expected_node="spec-quiz"))
    assert late.state.current_node == "spec-quiz"
    assert late.state.parked.reason == (
        f"comment {old.id} is the spec-quiz quiz comment of an earlier visit; a tick there "
        "does not count for visit 2: tick the new quiz comment")

    # Visit 2's own comment, ticked during visit 2, passes.
    ticked = world.tracker.get_comment(new).body.replace("- [ ]", "- [x]", 1)
    world.tracker.edit_comment(new, ticked, "bob")
    passed = world.runtime.advance(REF, ev.Attestation(new, "", expected_node="spec-quiz"))
    assert passed.state.nodes["spec-quiz"].outcome == "pass"


def _row(key: str) -> EffectRow:
    return EffectRow(1, key, REF, PostComment(REF, "quiz", record="quiz:spec-quiz"))


def _done(comment_id: int) -> Outcome:
    return Outcome(DONE_OUTCOME, {"id": comment_id, "url": "u", "target": str(REF)})


def test_a_failed_quiz_post_re_queued_by_an_operator_is_still_the_visit_s_comment() -> None:
    surface: dict[str, Any] = {"quiz": {"spec-quiz": {"visit": 1, "comments": [],
                                                     "posting": ["k1"]}}}
    apply_result(surface, _row("k1"), Outcome(FAILED_OUTCOME, error="422 Validation Failed"))
    entry = surface["quiz"]["spec-quiz"]
    assert (entry["posting"], entry["postFailed"], entry["failedKeys"]) == (
        [], "422 Validation Failed", ["k1"])

    apply_result(surface, _row("k1"), _done(5))  # `loopgate effects retry`: the same row
    entry = surface["quiz"]["spec-quiz"]
    assert [c["id"] for c in entry["comments"]] == [5]
    assert "postFailed" not in entry and "failedKeys" not in entry and "earlier" not in entry


@pytest.mark.parametrize("entry", [{"visit": 1, "comments": []},
                                   {"visit": 1, "comments": [], "posting": [],
                                    "postFailed": "a 502"}],
                         ids=["before-posting", "failed-before-failedKeys"])
def test_an_entry_stored_before_these_keys_records_its_post_as_before(
        entry: dict[str, Any]) -> None:
    surface: dict[str, Any] = {"quiz": {"spec-quiz": dict(entry)}}
    apply_result(surface, _row("k1"), _done(5))
    assert [c["id"] for c in surface["quiz"]["spec-quiz"]["comments"]] == [5]

"""Issue 19 §2: a decision is bound to the visit it answered. A reply written during visit 1
of a gate, held back there (GitHub could not say who edited it) and offered again after the
gate was sent back and entered again, must not decide visit 2; a reply written during
visit 2 does. Real clients against the fake GitHub, whose GraphQL rate limit holds the
first reading back (platform-facts F3)."""

from __future__ import annotations

from engine.approvals import VIA_REPLY, Approval
from engine.hooks.feedback import _during
from engine.ports import Comment
from engine.refs import WorkItemRef
from engine.visits import Visit
from tests.bridges.conftest import GitHubWorld
from tests.fakes.github import FakeComment

GATE = "human-approval"
NOTE = "@alice's reply was written during visit 1; not counted for visit 2"


def _as_event(c: FakeComment) -> dict[str, list[Comment]]:
    return {"comments": [Comment(c.id, c.author, c.body, created_at=c.created_at)]}


def _second_visit(world: GitHubWorld) -> tuple[WorkItemRef, FakeComment, FakeComment]:
    """Alice approves on visit 1 (held back), Bob sends the item back, the gate is entered
    again; returns (ref, alice's reply, bob's reply)."""
    ref = world.issue()
    rt = world.services.runtime
    rt.start(ref)
    rt.force(ref, GATE, "test", "tester")
    world.poll()
    world.fake.advance(2)
    alice = world.comment(ref, "approved", as_user="alice")
    world.fake.graphql_rate_limit(1)
    world.poll()
    state = world.state(ref)
    assert state.current_node == GATE and state.parked.unverified is True
    world.fake.advance(2)
    bob = world.comment(ref, "changes requested: rename the widget", as_user="bob")
    rt.advance(ref, _as_event(bob))
    assert world.state(ref).current_node != GATE
    world.fake.advance(60)
    rt.force(ref, GATE, "rework done", "tester")
    return ref, alice, bob


def test_a_visit_1_reply_offered_again_does_not_decide_visit_2(world: GitHubWorld) -> None:
    ref, alice, bob = _second_visit(world)
    visit = world.state(ref).visit(GATE)
    assert visit is not None and visit.number == 2 and visit.after_comment == bob.id
    world.services.ports.tracker.graphql.guard.clear()
    world.poll()
    state = world.state(ref)
    assert state.current_node == GATE
    assert GATE not in state.decisions
    first, second = state.history(GATE)
    assert first.decision is not None and first.decision.by == "@bob"
    assert first.decision.outcome == "changes-requested" and second.decision is None
    assert state.surface["approvals"][GATE]["approvals"] == []
    # The poller offers alice's held-back reply, then bob's (webhook-fed before): each is
    # named in its event's wait and logged.
    named = [(e["node"], e["author"], e["commentId"], e["reason"])
             for e in world.events(ref, "graph.comment_not_counted")]
    assert named == [
        (GATE, "alice", alice.id, NOTE),
        (GATE, "bob", bob.id, NOTE.replace("alice", "bob"))]
    assert NOTE.replace("alice", "bob") in state.parked.reason
    # Offered once more: still not counted, and not named a second time.
    world.services.runtime.advance(ref, _as_event(alice))
    state = world.state(ref)
    assert state.current_node == GATE and GATE not in state.decisions
    assert "not counted" not in state.parked.reason
    assert len(world.events(ref, "graph.comment_not_counted")) == 2


def test_a_reply_written_during_visit_2_decides_it(world: GitHubWorld) -> None:
    ref, _, bob = _second_visit(world)
    world.services.ports.tracker.graphql.guard.clear()
    world.fake.advance(2)
    again = world.comment(ref, "approved", as_user="alice")
    assert again.id > bob.id
    world.poll()
    state = world.state(ref)
    assert state.current_node != GATE
    assert state.decisions[GATE]["by"] == "@alice"
    assert state.decisions[GATE]["commentId"] == again.id
    assert [v.decision.comment_id if v.decision else None
            for v in state.history(GATE)][-1] == again.id


def test_the_anchor_round_trips_and_old_visits_read_as_none() -> None:
    visit = Visit(2, "2026-01-01T00:00:10Z", after_comment=41)
    assert visit.to_json()["afterComment"] == 41
    assert Visit.from_json(visit.to_json()) == visit
    assert Visit.from_json({"visit": 2, "enteredAt": "x"}).after_comment == 0


def test_without_an_anchor_the_reply_time_decides() -> None:
    # A visit begun before anchors were kept (or before any comment was seen): created_at
    # against the visit's entry, assuming GitHub's clock is not behind loopgate's.
    old = Visit(2, "2026-01-01T00:00:10Z")

    def reply(at: str, cid: int) -> Approval:
        return Approval("alice", "approved", at, VIA_REPLY, "u", cid, "approved")

    assert not _during(old, reply("2026-01-01T00:00:09Z", 5))
    assert _during(old, reply("2026-01-01T00:00:10Z", 5))
    anchored = Visit(2, "2026-01-01T00:00:10Z", after_comment=7)
    assert not _during(anchored, reply("2026-01-01T00:01:00Z", 7))  # ids, not clocks
    assert _during(anchored, reply("2026-01-01T00:00:00Z", 8))

"""A re-tick that restores a body seen before reaches the gate: the dispatcher's content
key of a quiz tick names the edit's time (``updated_at``), so an un-tick and re-tick of an
earlier visit's quiz comment — the very text that passed visit 1 — is no duplicate. The
gate decides by its own rule (a tick counts only on its current visit's comment, by an
authorized editor per GraphQL): here it does not count, and the thread says why instead
of nothing happening. The poller reading the same edit adds no second notice.
Over the webhook receiver, the poller and the loopback fake GitHub."""

from __future__ import annotations

from bridges.github.router import quiz_key
from engine.hooks.markers import attestation_line
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeComment


def _ref(comment: FakeComment) -> WorkItemRef:
    return WorkItemRef("acme", "widgets", comment.number)


def _edit(world: GitHubWorld, comment: FakeComment, body: str, before: str) -> int:
    """``alice`` edits ``comment`` to ``body`` a few seconds later; GitHub's webhook."""
    world.fake.advance(5)
    world.fake.edit_comment(comment.id, body, "alice")
    return world.webhook("issue_comment", "edited", _ref(comment), comment_id=comment.id,
                         sender="alice", previous_body=before).status_code


def test_a_re_tick_of_an_earlier_visits_quiz_comment_reaches_the_gate_and_is_told(
        world: GitHubWorld) -> None:
    world.serve()
    old = world.to_spec_quiz(world.issue())
    ref = _ref(old)
    unticked = old.body
    ticked = unticked.replace(attestation_line("spec"), attestation_line("spec", True))
    assert _edit(world, old, ticked, unticked) == 202
    assert world.state(ref).current_node == "tasks-breakdown"
    state = world.services.runtime.force(ref, "spec-quiz", "explain it again", "tester")
    assert state.visit("spec-quiz").number == 2
    [new] = [c for c in world.quiz_comments(ref) if c.id != old.id]

    # alice un-ticks and re-ticks visit 1's comment: the very text that passed visit 1.
    assert _edit(world, old, unticked, ticked) == 200  # an un-tick is routed nowhere
    assert _edit(world, old, ticked, unticked) == 202

    state = world.state(ref)
    assert state.current_node == "spec-quiz"
    why = (f"comment {old.id} is the spec-quiz quiz comment of an earlier visit; a tick "
           "there does not count for visit 2: tick the new quiz comment")
    assert state.parked.reason.startswith(why)
    told = [c for c in world.fake.comments_on(REPO, ref.number) if "Not counted" in c.body]
    assert len(told) == 1 and why in told[0].body

    # The poller reads the same edit: no second notice, the gate still waits.
    world.poll()
    assert len([c for c in world.fake.comments_on(REPO, ref.number)
                if "Not counted" in c.body]) == 1
    assert world.state(ref).current_node == "spec-quiz"

    # Positive control: visit 2's own comment, ticked by alice, passes.
    ticked_new = new.body.replace(attestation_line("spec"), attestation_line("spec", True))
    assert _edit(world, new, ticked_new, new.body) == 202
    assert world.state(ref).current_node == "tasks-breakdown"


def test_the_tick_key_names_the_edit_time() -> None:
    assert quiz_key(7, "body", "2026-03-01T12:00:05Z") == (
        f"{quiz_key(7, 'body')}@2026-03-01T12:00:05Z")
    assert quiz_key(7, "body", "2026-03-01T12:00:05Z") != quiz_key(7, "body",
                                                                  "2026-03-01T12:00:10Z")

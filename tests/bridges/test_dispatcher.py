"""The dispatcher over the real runtime, shipped graph, hooks and GitHub tracker (fake):
quiz_attestation only re-evaluates a waiting gate, exactly-once handling, observers,
starting work, graceful stop."""

from __future__ import annotations

import threading

import pytest

from bridges.github.router import COMMENT, QUIZ_ATTESTATION, START, comment_key, quiz_key
from bridges.github.webhook import Delivery
from bridges.ingress.dispatcher import DROPPED, DUPLICATE, HANDLED, RETRY, DispatchResult
from engine.effects import RUNNING
from engine.ports import Comment
from engine.refs import WorkItemRef
from tests.bridges.conftest import GitHubWorld
from tests.fakes.github import FakeComment


def _comment(c: FakeComment, number: int) -> Comment:
    return Comment(c.id, c.author, c.body, c.created_at, c.updated_at, c.node_id,
                   f"https://github.com/acme/widgets/issues/{number}#issuecomment-{c.id}", number)


def comment_delivery(ref: WorkItemRef, c: FakeComment, delivery_id: str = "") -> Delivery:
    return Delivery(delivery_id or f"d-comment-{c.id}", "github", COMMENT,
                    "issue_comment.created",
                    {"ref": ref, "comment": _comment(c, ref.number), "key": comment_key(c.id),
                     "pull_request": False})


def quiz_delivery(ref: WorkItemRef, c: FakeComment, delivery_id: str = "d-quiz") -> Delivery:
    return Delivery(delivery_id, "github", QUIZ_ATTESTATION, "issue_comment.edited",
                    {"ref": ref, "comment_id": c.id, "node_id": c.node_id, "url": "u",
                     "key": quiz_key(c.id, c.body), "pull_request": False})


def start_delivery(ref: WorkItemRef) -> Delivery:
    return Delivery(f"d-start-{ref.number}", "github", START, "issues.labeled",
                    {"ref": ref, "key": f"start:{ref}", "by": "alice"})


def test_a_quiz_attestation_never_starts_an_item(world: GitHubWorld) -> None:
    ref = world.issue()
    c = world.comment(ref, "- [x] I have read the spec explainer and taken the spec quiz.")
    result = world.dispatcher.handle(quiz_delivery(ref, c))
    assert result == DispatchResult(DROPPED, "no-gate", (str(ref),))
    assert world.services.store.load(ref) is None


def test_a_quiz_attestation_away_from_a_human_gate_is_dropped_no_gate(world: GitHubWorld) -> None:
    ref = world.issue()
    world.comment(ref, "the-loop start")
    world.poll()
    world.comment(ref, "the-loop execute\n" + "\n".join(
        f"- [ ] {t}" for t in ("brainstorming", "requirements-definition",
                               "requirements-approval", "design", "test-planning",
                               "design-approval")))
    world.poll()
    assert world.state(ref).current_node == "spec-explainer"  # an agent node
    c = world.comment(ref, "anything")
    revision = world.state(ref).revision
    result = world.dispatcher.handle(quiz_delivery(ref, c))
    assert (result.status, result.reason) == (DROPPED, "no-gate")
    assert world.state(ref).revision == revision  # nothing written
    assert world.fake.count(route="graphql", method="POST") >= 0


def test_a_quiz_attestation_re_evaluates_the_waiting_gate(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    result = world.dispatcher.handle(quiz_delivery(ref, quiz))
    assert (result.status, result.reason) == (HANDLED, "evaluated")
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["attestedBy"] == "@alice"


def test_a_failed_lookup_is_retry_and_its_key_stays_open(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    world.fake.graphql_rate_limit(1)
    first = world.dispatcher.handle(quiz_delivery(ref, quiz, "d-1"))
    assert (first.status, first.reason) == (RETRY, "unverified")
    assert world.state(ref).current_node == "spec-quiz"
    world.services.ports.tracker.graphql.guard.clear()  # the reset has come
    again = world.dispatcher.handle(quiz_delivery(ref, quiz, "d-1"))
    assert (again.status, again.reason) == (HANDLED, "evaluated")
    assert world.state(ref).current_node == "tasks-breakdown"


def test_the_same_delivery_id_is_handled_once_even_after_a_restart(world: GitHubWorld) -> None:
    ref = world.issue()
    c = world.comment(ref, "the-loop start")
    assert world.dispatcher.handle(comment_delivery(ref, c, "guid-1")).status == HANDLED
    assert world.dispatcher.handle(comment_delivery(ref, c, "guid-1")) == DispatchResult(
        DUPLICATE, "delivery-id")
    world.restart()
    assert world.dispatcher.handle(comment_delivery(ref, c, "guid-1")).status == DUPLICATE
    # another delivery of the same comment (the poller's) shares the content key
    assert world.dispatcher.handle(comment_delivery(ref, c, "poll:comment")) == DispatchResult(
        DUPLICATE, "content-key")


def test_comment_observers_see_every_human_comment(world: GitHubWorld) -> None:
    seen: list[tuple[str, int]] = []
    world.dispatcher.comment_observers.append(lambda r, c: seen.append((str(r), c.id)))
    world.dispatcher.comment_observers.append(lambda r, c: 1 / 0)  # a broken observer
    ref = world.issue()
    c = world.comment(ref, "loopgate link 123456", as_user="carol")
    result = world.dispatcher.handle(comment_delivery(ref, c))
    assert (result.status, result.reason) == (DROPPED, "not-started")
    assert seen == [(str(ref), c.id)]


def test_an_authorized_start_comment_starts_and_others_do_not(world: GitHubWorld) -> None:
    ref = world.issue()
    mallory = world.comment(ref, "The-Loop Start please", as_user="mallory")
    assert world.dispatcher.handle(comment_delivery(ref, mallory)).reason == "not-started"
    assert world.services.store.load(ref) is None
    alice = world.comment(ref, "The-Loop Start please", as_user="Alice")
    assert world.dispatcher.handle(comment_delivery(ref, alice)).reason == "started-by-comment"
    assert world.state(ref).current_node == "phase-selection"


def test_a_start_delivery_starts_once(world: GitHubWorld) -> None:
    ref = world.issue()
    assert world.dispatcher.handle(start_delivery(ref)).reason == "started-by-label"
    assert world.state(ref).current_node == "phase-selection"
    other = Delivery("d-other", "github", START, "issues.labeled",
                     {"ref": ref, "key": "start:again", "by": "alice"})
    assert world.dispatcher.handle(other).reason == "already-started"
    assert len(world.events(ref, "graph.started")) == 1


def test_a_comment_away_from_a_gate_is_not_fed_to_the_runtime(world: GitHubWorld) -> None:
    ref = world.issue()
    world.dispatcher.handle(start_delivery(ref))
    world.services.runtime.force(ref, "design", "test", "tester")
    c = world.comment(ref, "approved")
    assert world.dispatcher.handle(comment_delivery(ref, c)).reason == "not-at-gate"


def test_a_comment_on_a_pull_request_reaches_the_item_it_delivers(world: GitHubWorld) -> None:
    ref = world.issue()
    world.dispatcher.handle(start_delivery(ref))
    pr = world.fake.open_pr("acme/widgets", "feature", closes=[ref.number])
    c = world.fake.add_comment("acme/widgets", pr, "the-loop execute", as_user="alice")
    delivery = Delivery("d-pr", "github", COMMENT, "issue_comment.created",
                        {"ref": WorkItemRef("acme", "widgets", pr), "comment": _comment(c, pr),
                         "key": comment_key(c.id), "pull_request": True})
    result = world.dispatcher.handle(delivery)
    assert (result.status, result.refs) == (HANDLED, (str(ref),))
    assert world.state(ref).current_node != "phase-selection"


def test_stop_finishes_the_event_in_hand_and_drains_the_queue(world: GitHubWorld) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(ref: WorkItemRef, comment: Comment) -> None:
        entered.set()
        release.wait(5)

    world.dispatcher.comment_observers.append(slow)
    world.dispatcher.start()
    ref = world.issue()
    first = world.dispatcher.submit(comment_delivery(ref, world.comment(ref, "one")))
    second = world.dispatcher.submit(comment_delivery(ref, world.comment(ref, "two")))
    assert entered.wait(5)
    stopper = threading.Thread(target=world.dispatcher.stop, kwargs={"timeout": 10})
    stopper.start()
    late = world.dispatcher.submit(comment_delivery(ref, world.comment(ref, "three")))
    release.set()
    stopper.join(10)
    assert first.result(5).reason == "not-started"
    assert second.result(5).reason == "not-started"
    assert late.result(1) == DispatchResult(DROPPED, "shutting-down")
    assert not world.dispatcher.running


@pytest.mark.parametrize("kind", ["unknown", COMMENT])
def test_a_delivery_without_an_item_is_dropped(world: GitHubWorld, kind: str) -> None:
    result = world.dispatcher.handle(Delivery("d-x", "github", kind, "", {"ref": None}))
    assert (result.status, result.reason) == (DROPPED, "no-item")


def test_a_reply_read_during_a_github_outage_is_offered_again(world: GitHubWorld) -> None:
    ref = world.issue()
    world.dispatcher.handle(start_delivery(ref))
    reply = world.comment(ref, "the-loop execute")
    world.fake.rest_rate_limit(1)
    first = world.dispatcher.handle(comment_delivery(ref, reply, "d-reply"))
    assert (first.status, first.reason) == (RETRY, "unverified")
    assert world.state(ref).current_node == "phase-selection"
    world.services.ports.tracker.client.guard.clear()
    again = world.dispatcher.handle(comment_delivery(ref, reply, "d-reply"))
    assert (again.status, again.reason) == (HANDLED, "advanced")
    assert world.state(ref).current_node != "phase-selection"


def test_a_start_cut_short_after_its_commit_posts_its_checklist_once(
    world: GitHubWorld, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decide, commit, then act (issue 10 §1): a kill while the checklist is being posted
    leaves the committed start and the checklist in the outbox; the next performer posts
    it exactly once, and a replayed start delivery changes nothing."""
    ref = world.issue()
    services = world.services
    tracker = services.ports.tracker

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("SIGKILL stand-in")

    monkeypatch.setattr(tracker, "add_comment", killed)
    with pytest.raises(KeyboardInterrupt):
        services.runtime.start(ref)
    monkeypatch.undo()
    assert world.state(ref).current_node == "phase-selection"
    [stuck] = services.store.effects.rows(ref, statuses=[RUNNING])
    assert stuck.effect.kind == "post-comment"
    result = world.dispatcher.handle(start_delivery(ref))
    assert (result.status, result.reason) == (DROPPED, "already-started")

    for _ in range(2):  # a second pass finds nothing left to do
        world.performer_later().drain(ref)
        checklists = [c for c in world.fake.comments_on("acme/widgets", ref.number)
                      if "<!-- the-loop:phase-selection -->" in c.body]
        assert len(checklists) == 1
    assert world.state(ref).surface["phaseSelection"]["commentId"] == checklists[0].id


"""The conditional poller against the fake with the real clients: one conditional request
per stream, 304s free, de-duplication by key across overlapping windows, quiz ticks as
single deliveries marked seen only after evaluation, restart safety, the start label."""

from __future__ import annotations

from bridges.github.router import quiz_key
from bridges.ingress.bridge_state import PollCursor
from bridges.ingress.dispatcher import HANDLED
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld


def _observed(world: GitHubWorld) -> list[int]:
    seen: list[int] = []
    world.dispatcher.comment_observers.append(lambda ref, c: seen.append(c.id))
    return seen


def test_a_quiet_repository_costs_three_conditional_requests_and_nothing_counted(
        world: GitHubWorld) -> None:
    # Issue 11 §1 added the third stream: open pull requests' heads (the loopgate check).
    ref = world.issue()
    world.comment(ref, "hello")
    world.poll()
    world.poll()  # the overlap window re-read once after a change
    world.fake.reset_log()
    for _ in range(3):
        report = world.poll()
        assert report.requests == 3
        assert report.repos[0].not_modified == 3
    assert world.fake.count() == 9
    assert world.fake.count(status=304) == 9
    assert world.fake.count(counted=True) == 0
    assert {r.route for r in world.fake.requests} == {"repo-comments", "repo-issues", "pulls"}
    assert all(r.conditional for r in world.fake.requests)


def test_a_new_human_comment_is_delivered_once_across_overlapping_windows(
        world: GitHubWorld) -> None:
    seen = _observed(world)
    ref = world.issue()
    first = world.comment(ref, "one")
    world.poll()
    second = world.comment(ref, "two")  # same second as the cursor, most likely
    world.poll()
    world.poll()
    world.fake.advance(2)
    third = world.comment(ref, "three")
    world.poll()
    world.poll()
    assert seen == [first.id, second.id, third.id]


def test_the_cursor_overlaps_and_keeps_its_etag(world: GitHubWorld) -> None:
    ref = world.issue()
    comment = world.comment(ref, "x")
    world.poll()
    cursor = world.dispatcher.state.get_cursor(REPO, "comments")
    assert cursor.cursor < comment.updated_at  # reaches back before the newest update
    world.poll()
    settled = world.dispatcher.state.get_cursor(REPO, "comments")
    assert settled.etag and settled.etag_since == settled.cursor


def test_an_old_comment_edited_now_is_not_a_new_comment(world: GitHubWorld) -> None:
    seen = _observed(world)
    ref = world.issue()
    old = world.comment(ref, "written before the window")
    world.fake.advance(30)
    since = world.fake.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    world.dispatcher.state.set_cursor(REPO, "comments", PollCursor(since))
    world.fake.advance(1)
    world.fake.edit_comment(old.id, "edited inside the window", "alice")
    report = world.poll()
    assert report.repos[0].requests >= 1 and report.repos[0].not_modified == 0
    assert seen == []


def test_a_quiz_tick_is_one_delivery_and_advances_the_gate(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    world.fake.reset_log()
    report = world.poll()
    quiz_results = [r for r in report.repos[0].results if r.reason == "evaluated"]
    assert len(quiz_results) == 1
    assert world.state(ref).current_node == "tasks-breakdown"
    body, edited_at = world.fake.comments[quiz.id].body, world.fake.comments[quiz.id].updated_at
    assert world.dispatcher.state.seen(REPO, "quiz", [quiz_key(quiz.id, body, edited_at)])
    edits_queries = [q for q in world.fake.graphql_log if "CommentEdits" in q["query"]]
    assert len(edits_queries) == 1
    again = world.poll()
    assert again.repos[0].deliveries == 0


def test_ticks_of_one_cycle_are_looked_up_in_one_query(world: GitHubWorld) -> None:
    refs = [world.issue(f"item {i}") for i in range(3)]
    quizzes = [world.to_spec_quiz(ref) for ref in refs]
    for quiz in quizzes:
        world.tick(quiz, "alice")
    world.fake.reset_log()
    world.poll()
    edits_queries = [q for q in world.fake.graphql_log if "CommentEdits" in q["query"]]
    assert len(edits_queries) == 1
    assert len(edits_queries[0]["variables"]["ids"]) == 3
    assert [world.state(r).current_node for r in refs] == ["tasks-breakdown"] * 3


def test_a_rate_limited_lookup_waits_and_is_retried_next_cycle(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    world.fake.graphql_rate_limit(1)
    report = world.poll()
    assert report.repos[0].retries == 1
    assert report.limited_until is not None  # the loop waits for the reset
    assert world.state(ref).current_node == "spec-quiz"
    assert "spec-quiz" not in world.state(ref).decisions
    body, edited_at = world.fake.comments[quiz.id].body, world.fake.comments[quiz.id].updated_at
    assert not world.dispatcher.state.seen(REPO, "quiz", [quiz_key(quiz.id, body, edited_at)])
    # still limited: the next cycle sends no GraphQL query and keeps the key open
    sent = world.fake.count(route="graphql")
    assert world.poll().repos[0].retries == 1
    assert world.fake.count(route="graphql") == sent
    world.services.ports.tracker.graphql.guard.clear()  # the reset time has come
    world.poll()
    assert world.state(ref).current_node == "tasks-breakdown"
    assert world.state(ref).decisions["spec-quiz"]["attestedBy"] == "@alice"


def test_restart_between_cycles_loses_and_repeats_nothing(world: GitHubWorld) -> None:
    seen = _observed(world)
    ref = world.issue()
    before = [world.comment(ref, f"before {i}").id for i in range(3)]
    world.poll()
    world.restart()
    seen_after = _observed(world)
    world.poll()  # nothing new: nothing delivered again
    world.fake.advance(1)
    after = [world.comment(ref, f"after {i}").id for i in range(2)]
    world.restart()
    seen_last = _observed(world)
    world.poll()
    world.poll()
    assert seen == before
    assert seen_after == []
    assert seen_last == after


def test_restart_mid_quiz_keeps_the_tick_and_decides_once(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    world.fake.graphql_rate_limit(1)
    world.poll()  # deferred
    world.restart()  # the GraphQL guard is gone with the process; the key stayed unseen
    world.poll()
    world.restart()
    world.poll()
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert len(world.events(ref, "graph.quiz_attested")) == 1


def test_the_start_label_starts_an_item(world: GitHubWorld) -> None:
    ref = world.issue()
    world.fake.create_issue(REPO, "labelled later")
    pr = world.fake.open_pr(REPO, "feature")
    world.fake.add_label(REPO, pr, "loop:start")
    world.poll()
    assert world.services.store.load(ref) is None
    world.fake.add_label(REPO, ref.number, "loop:start")
    report = world.poll()
    assert [r.reason for r in report.repos[0].results] == ["started-by-label"]
    assert world.state(ref).current_node == "phase-selection"
    assert world.services.store.load(WorkItemRef("acme", "widgets", pr)) is None
    assert world.poll().repos[0].deliveries == 0  # started items are not started again


def test_an_authorized_start_comment_starts_an_item(world: GitHubWorld) -> None:
    ref = world.issue()
    world.comment(ref, "the-loop start", as_user="mallory")
    world.poll()
    assert world.services.store.load(ref) is None
    world.comment(ref, "the-loop start", as_user="bob")
    report = world.poll()
    assert any(r.reason == "started-by-comment" and r.status == HANDLED
               for r in report.repos[0].results)
    assert world.state(ref).current_node == "phase-selection"


def test_a_window_larger_than_a_page_never_hides_new_comments_behind_a_304(
        world: GitHubWorld) -> None:
    world.services.ports.tracker.client.per_page = 2
    seen = _observed(world)
    ref = world.issue()
    burst = [world.comment(ref, f"burst {i}").id for i in range(3)]  # one second, 2 pages
    world.poll()
    late = world.comment(ref, "late")  # lands on a later page of the same window
    world.poll()
    assert seen == [*burst, late.id]
    world.fake.advance(10)
    quiet = world.comment(ref, "a quiet moment later")
    world.poll()
    world.poll()
    world.fake.reset_log()
    world.poll()  # the window has shrunk to one page again: back to free 304s
    assert seen[-1] == quiet.id and len(seen) == 5
    # comments, labels and (issue 11) open pull requests: three free 304s
    assert world.fake.count(status=304) == 3 and world.fake.count(counted=True) == 0

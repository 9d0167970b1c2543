"""The quiz gates over the GitHub bridge: the four Gherkin scenarios of the explainer
design's Testing strategy and the bridge-path abuse cases of its Security table, driven
through the loopback fake GitHub with the real receiver, poller, PyGithub and gql."""

from __future__ import annotations

import json

from bridges.github.webhook import sign
from engine.hooks.markers import attestation_line
from engine.refs import WorkItemRef
from tests.bridges.conftest import EXPLAINER_NODES, REPO, SECRET, SPEC_CHAIN, GitHubWorld
from tests.fakes.github import FakeComment, wait_for


def _tick_by_webhook(world: GitHubWorld, quiz: FakeComment, editor: str | None, *,
                     sender: str = "alice", editor_type: str = "User") -> int:
    before = world.fake.comments[quiz.id].body
    world.tick(quiz, editor, editor_type=editor_type)
    response = world.webhook("issue_comment", "edited", WorkItemRef("acme", "widgets",
                                                                    quiz.number),
                             comment_id=quiz.id, sender=sender, previous_body=before)
    return response.status_code


def test_a_tick_by_an_authorized_user_advances_the_spec_quiz(world: GitHubWorld) -> None:
    """Scenario: a tick by an authorized user advances the spec quiz

    Given a work item waiting at spec-quiz with loopgate's quiz comment on the GitHub issue
    When the authorized user "alice" ticks the attestation box
    And GitHub delivers the issue_comment "edited" webhook (its sender says "mallory")
    Then GraphQL names "alice" as the latest editor
    And the item moves on to tasks-breakdown
    And the decision at spec-quiz records that "@alice" attested, with the comment link
    """
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    assert _tick_by_webhook(world, quiz, "alice", sender="mallory") == 202
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    decision = state.decisions["spec-quiz"]
    assert decision["attestedBy"] == "@alice"
    assert decision["comment"] == f"https://github.com/{REPO}/issues/{ref.number}" \
                                  f"#issuecomment-{quiz.id}"
    assert decision["via"] == "tick"
    assert world.events(ref, "graph.quiz_attested") == [
        {"node": "spec-quiz", "by": "@alice", "comment": decision["comment"]}]
    assert world.fake.invalid_queries == []


def test_a_tick_by_an_unauthorized_user_is_refused(world: GitHubWorld) -> None:
    """Scenario: a tick by an unauthorized user is refused

    Given a work item waiting at spec-quiz
    When "mallory", who is not authorized, ticks the box
    And the webhook's sender claims "alice"
    And the poller sees the same tick too
    Then the item keeps waiting at spec-quiz with no decision
    And graph.quiz_refused is logged once, naming mallory
    """
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    _tick_by_webhook(world, quiz, "mallory", sender="alice")
    world.poll()
    state = world.state(ref)
    assert state.current_node == "spec-quiz" and state.status == "parked"
    assert "spec-quiz" not in state.decisions
    assert world.events(ref, "graph.quiz_refused") == [{"node": "spec-quiz",
                                                        "editor": "mallory"}]


def test_an_unticked_explainer_row_skips_all_four_nodes(world: GitHubWorld) -> None:
    """Scenario: an unticked explainer row skips all four nodes

    Given a work item at phase-selection on GitHub
    When "alice" replies with the execute keyword and the explainer row unticked (webhook)
    Then spec-explainer, spec-quiz, code-explainer and code-quiz are declared skipped
      under the token "explainer", by "@alice"
    And the walk records them skipped with no quiz comment on the issue
    And the confirmation comment says "Explainer and quizzes: off, as declared by @alice"
    """
    world.serve()
    ref = world.issue()
    world.fake.add_label(REPO, ref.number, "loop:start")
    world.webhook("issues", "labeled", ref, label="loop:start", sender="alice")
    rows = "\n".join(f"- [ ] {t}" for t in (*SPEC_CHAIN, "explainer"))
    reply = world.comment(ref, f"the-loop execute\n{rows}")
    world.webhook("issue_comment", "created", ref, comment_id=reply.id, sender="alice")
    state = world.state(ref)
    for node in EXPLAINER_NODES:
        skip = state.skips[node]
        assert (skip.via, skip.token, skip.by) == ("selection", "explainer", "@alice")
    assert state.nodes["spec-explainer"].outcome == "skipped"
    assert state.nodes["spec-quiz"].outcome == "skipped"
    assert state.current_node == "tasks-breakdown"
    assert world.quiz_comments(ref) == []
    bodies = [c.body for c in world.fake.comments_on(REPO, ref.number)]
    confirmation = [b for b in bodies if "Explainer and quizzes:" in b]
    assert ("Explainer and quizzes: off, as declared by @alice — spec-explainer, spec-quiz, "
            "code-explainer, code-quiz skipped") in confirmation[0].splitlines()


def test_a_changed_spec_sends_the_spec_quiz_back_to_the_explainer(world: GitHubWorld) -> None:
    """Scenario: a changed spec sends the spec quiz back to the explainer

    Given a work item waiting at spec-quiz with a quiz comment bound to the spec digest
    When design.md changes on GitHub and "alice" ticks the old comment
    Then the spec quiz answers stale and the item goes back to spec-explainer
    When the explainer is claimed complete again
    Then a new quiz comment with a new digest is posted on the issue
    And a tick on the old comment does nothing while a tick on the new one advances
    """
    world.serve()
    ref = world.issue()
    old = world.to_spec_quiz(ref)
    world.write(ref, "design.md", "design v2\n")
    _tick_by_webhook(world, old, "alice")
    state = world.state(ref)
    assert state.current_node == "spec-explainer"
    assert state.nodes["spec-quiz"].outcome == "stale"
    assert "spec-quiz" not in state.decisions

    state = world.services.runtime.complete(ref, "spec-explainer", "agent")
    assert state.current_node == "spec-quiz"
    old_now, new = world.quiz_comments(ref)
    assert old_now.id == old.id and "digest=" in new.body
    assert _digest(new.body) != _digest(old.body)

    world.fake.advance(1)
    world.fake.edit_comment(old.id, world.fake.comments[old.id].body + " ", "alice")
    world.webhook("issue_comment", "edited", ref, comment_id=old.id, sender="alice")
    assert world.state(ref).current_node == "spec-quiz"
    _tick_by_webhook(world, new, "alice")
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["commentId"] == new.id


def _digest(body: str) -> str:
    return body.split("digest=", 1)[1].split(" ", 1)[0]


def test_a_tick_seen_by_poller_and_webhook_makes_one_decision(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.fake.reset_log()
    _tick_by_webhook(world, quiz, "alice")
    decided = dict(world.state(ref).decisions["spec-quiz"])
    report = world.poll()
    assert [r.status for r in report.repos[0].results] in ([], ["duplicate"])
    assert world.state(ref).decisions["spec-quiz"] == decided
    assert len(world.events(ref, "graph.quiz_attested")) == 1
    assert len([e for e in world.services.store.events(ref)
                if e["kind"] == "graph.advanced" and e["data"].get("from") == "spec-quiz"]) == 1
    edits = [q for q in world.fake.graphql_log if "CommentEdits" in q["query"]]
    assert len(edits) == 1  # the poller did not even ask GitHub again


def test_the_latest_unauthorized_editor_after_an_authorized_one_waits(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice")
    world.fake.advance(1)
    body = world.fake.comments[quiz.id].body
    world.fake.edit_comment(quiz.id, body + "\nthanks!", "mallory")  # still ticked
    world.poll()
    state = world.state(ref)
    assert state.current_node == "spec-quiz" and "spec-quiz" not in state.decisions
    assert world.events(ref, "graph.quiz_refused") == [{"node": "spec-quiz",
                                                        "editor": "mallory"}]
    world.fake.advance(1)
    world.fake.edit_comment(quiz.id, body, "alice")  # the authorized user ticks again
    world.poll()
    assert world.state(ref).current_node == "tasks-breakdown"


def test_a_bot_editor_waits(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "alice", editor_type="Bot")  # a Bot account named like a user
    world.poll()
    state = world.state(ref)
    assert state.current_node == "spec-quiz" and "spec-quiz" not in state.decisions
    assert world.events(ref, "graph.quiz_refused") == [{"node": "spec-quiz", "editor": "alice"}]


def test_a_rate_limited_graphql_answer_waits_and_is_retried(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.fake.graphql_rate_limit(1)
    _tick_by_webhook(world, quiz, "alice")
    assert world.state(ref).current_node == "spec-quiz"  # fail closed: waits
    assert world.events(ref, "graph.quiz_attested") == []
    world.services.ports.tracker.graphql.guard.clear()  # the limit resets
    world.poll()  # the tick was not recorded as handled, so the poller retries it
    assert world.state(ref).current_node == "tasks-breakdown"


# -- abuse cases of the design's Security table, through the bridge ----------------------
def test_abuse_1_an_unauthorized_tick_is_refused_and_logged(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "mallory")
    world.poll()
    world.poll()
    assert world.state(ref).current_node == "spec-quiz"
    assert world.events(ref, "graph.quiz_refused") == [{"node": "spec-quiz",
                                                        "editor": "mallory"}]


def test_abuse_2_an_unknown_editor_fails_closed(world: GitHubWorld) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, None)  # a deleted account: GitHub names nobody
    world.poll()
    assert world.state(ref).current_node == "spec-quiz"
    unverified = world.events(ref, "graph.quiz_unverified")
    assert unverified and unverified[-1]["commentId"] == quiz.id


def test_abuse_4_approved_text_elsewhere_never_attests(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    ticked = attestation_line("spec", True)
    world.write(ref, "explainer/explainer.html", f"<p>approved</p>\n{ticked}\n")
    note = world.comment(ref, "approved — looks good", as_user="alice")
    quoted = world.comment(ref, f"> {ticked}", as_user="alice")  # not a line of its own
    for c in (note, quoted):
        world.webhook("issue_comment", "created", ref, comment_id=c.id, sender="alice")
    assert world.state(ref).current_node == "spec-quiz"
    assert "spec-quiz" not in world.state(ref).decisions
    assert world.fake.comments[quiz.id].body.count("- [ ]") == 1


def test_abuse_6_a_forged_checkbox_comment_is_ignored(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    forged = world.comment(ref, world.fake.comments[quiz.id].body, as_user="mallory")
    world.tick(forged, "alice")  # even an authorized tick on the copy does not count
    world.webhook("issue_comment", "edited", ref, comment_id=forged.id, sender="alice")
    world.poll()
    state = world.state(ref)
    assert state.current_node == "spec-quiz" and "spec-quiz" not in state.decisions
    assert world.events(ref, "graph.quiz_attested") == []


def test_a_forged_quiz_event_cannot_claim_an_editor(world: GitHubWorld) -> None:
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    # the box is NOT ticked on GitHub; a delivery claims a ticked body and sender alice
    headers, body = world.fake.webhook("issue_comment", "edited", repo=REPO,
                                       number=ref.number, comment_id=quiz.id, sender="alice")
    payload = json.loads(body)
    payload["comment"]["body"] = payload["comment"]["body"].replace(
        attestation_line("spec"), attestation_line("spec", True))
    forged = json.dumps(payload).encode()
    headers["X-Hub-Signature-256"] = sign(forged, SECRET)  # even correctly signed
    assert world.post(headers, forged).status_code == 202
    assert world.dispatcher.wait_idle(10)
    assert world.state(ref).current_node == "spec-quiz"
    assert "spec-quiz" not in world.state(ref).decisions


def test_a_webhook_tick_whose_lookup_was_limited_is_retried_without_the_poller(
    world: GitHubWorld,
) -> None:
    """Issue 3: a limited query makes the gate wait and is retried — with webhooks only,
    by the inbox replay of ``loopgate serve`` (its supervisor joins that thread before the
    store closes: issue 10 §4, this test used to segfault on a loaded machine)."""
    world.serve(replay_every=0.05)
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.fake.graphql_rate_limit(1)
    assert _tick_by_webhook(world, quiz, "alice") == 202
    assert world.state(ref).current_node == "spec-quiz"
    assert len(world.dispatcher.inbox.owed()) == 1  # the tick, still owed
    world.services.ports.tracker.graphql.guard.clear()  # the reset has come
    assert wait_for(lambda: world.state(ref).current_node == "tasks-breakdown", timeout=10)
    assert world.state(ref).decisions["spec-quiz"]["attestedBy"] == "@alice"
    assert wait_for(lambda: world.dispatcher.inbox.owed() == [], timeout=10)


def _untick(world: GitHubWorld, quiz: FakeComment, editor: str) -> None:
    body = world.fake.comments[quiz.id].body
    world.fake.edit_comment(quiz.id, body.replace(attestation_line("spec", True),
                                                  attestation_line("spec")), editor)


def test_an_authorized_re_tick_after_a_refused_tick_passes_by_webhook(world: GitHubWorld) -> None:
    """A refused tick must not block the real one: the re-ticked text is identical, so its
    content key is the refused tick's (found by a break-it review)."""
    world.serve()
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    _tick_by_webhook(world, quiz, "mallory")
    assert world.state(ref).current_node == "spec-quiz"
    _untick(world, quiz, "alice")
    assert _tick_by_webhook(world, quiz, "alice") == 202
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["attestedBy"] == "@alice"


def test_an_authorized_re_tick_after_a_refused_tick_passes_by_the_poller(
    world: GitHubWorld,
) -> None:
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.tick(quiz, "mallory")
    world.poll()
    assert world.state(ref).current_node == "spec-quiz"
    world.fake.advance(5)  # alice notices a few seconds later
    _untick(world, quiz, "alice")
    world.tick(quiz, "alice")
    world.poll()
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["attestedBy"] == "@alice"
    assert world.events(ref, "graph.quiz_refused") == [{"node": "spec-quiz",
                                                        "editor": "mallory"}]


def test_a_deleted_quiz_comment_is_posted_again_on_the_next_comment(world: GitHubWorld) -> None:
    """Design "Error handling": a deleted checkbox comment is reposted (found stuck by a
    break-it review: later events never reposted a comment that had been recorded)."""
    ref = world.issue()
    quiz = world.to_spec_quiz(ref)
    world.fake.delete_comment(quiz.id)
    world.comment(ref, "I can't find the quiz box", as_user="alice")
    world.poll()
    [again] = world.quiz_comments(ref)
    assert again.id != quiz.id
    assert parse_quiz_digest(again.body) == parse_quiz_digest(quiz.body)
    world.fake.advance(5)
    world.tick(again, "alice")
    world.poll()
    assert world.state(ref).current_node == "tasks-breakdown"


def parse_quiz_digest(body: str) -> str:
    [marker] = [m for m in body.splitlines() if "the-loop:quiz" in m]
    return marker


def test_a_re_tick_of_an_earlier_visits_quiz_comment_does_not_pass_the_next_visit(
        world: GitHubWorld) -> None:
    """Issue 19 §2 over GitHub: the spec quiz passed on visit 1, an operator moved the item
    back to it (visit 2, same spec, same digest). alice un-ticks and re-ticks visit 1's
    comment: it does not pass visit 2 (its ticked body is the tick already handled). The
    next event posts visit 2's own quiz comment; her tick there passes."""
    world.serve()
    ref = world.issue()
    old = world.to_spec_quiz(ref)
    assert _tick_by_webhook(world, old, "alice") == 202
    assert world.state(ref).current_node == "tasks-breakdown"
    world.services.runtime.force(ref, "spec-quiz", "explain it again", "tester")
    _untick(world, old, "alice")
    assert _tick_by_webhook(world, old, "alice") == 202
    assert world.state(ref).current_node == "spec-quiz"
    assert world.state(ref).decision("spec-quiz") is None
    asked = world.comment(ref, "Is the quiz still current?", as_user="bob")
    assert world.webhook("issue_comment", "created", ref, comment_id=asked.id,
                         sender="bob").status_code == 202
    [new] = [c for c in world.quiz_comments(ref) if c.id != old.id]
    state = world.state(ref)
    assert state.surface["quiz"]["spec-quiz"]["earlier"] == [old.id]
    assert _tick_by_webhook(world, new, "alice") == 202
    state = world.state(ref)
    assert state.current_node == "tasks-breakdown"
    assert state.decisions["spec-quiz"]["commentId"] == new.id
